/* seekdir_check DIR N: creates N files, reads the directory part way,
 * remembers positions with telldir, deletes and adds entries, then checks
 * that seekdir to each remembered position resumes at the same entry and
 * that one pass sees every entry that existed throughout exactly once. */

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	int n = atoi(argv[2]);
	char path[4096];
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/f%06d", argv[1], i);
		int fd = open(path, O_CREAT | O_WRONLY, 0644);
		if (fd < 0) { perror(path); return 1; }
		close(fd);
	}
	DIR *d = opendir(argv[1]);
	long pos[64];
	char name[64][256];
	int np = 0, bad = 0, seen_count = 0;
	struct dirent *e;
	int k = 0;
	while ((e = readdir(d)) && np < 64) {
		if (k++ % (n / 64 + 1) == 0) {
			pos[np] = telldir(d);
			struct dirent *nx = readdir(d);
			if (!nx)
				break;
			snprintf(name[np], 256, "%s", nx->d_name);
			np++;
		}
	}
	/* churn: remove some files that were not remembered, add new ones */
	for (int i = 1; i < n; i += 7) {
		snprintf(path, sizeof(path), "%s/f%06d", argv[1], i);
		int keep = 0;
		for (int j = 0; j < np; j++)
			keep |= strcmp(name[j], path + strlen(argv[1]) + 1) == 0;
		if (!keep)
			unlink(path);
	}
	for (int i = 0; i < n / 10; i++) {
		snprintf(path, sizeof(path), "%s/new%06d", argv[1], i);
		close(open(path, O_CREAT | O_WRONLY, 0644));
	}
	for (int j = 0; j < np; j++) {
		seekdir(d, pos[j]);
		e = readdir(d);
		if (!e || strcmp(e->d_name, name[j]) != 0) {
			printf("seekdir %d: expected %s got %s\n", j, name[j], e ? e->d_name : "(end)");
			bad++;
		}
	}
	/* a full pass: the survivors of the original set, each once */
	rewinddir(d);
	char *seen = calloc((size_t)n, 1);
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "f", 1) != 0 || strlen(e->d_name) != 7)
			continue;
		int i = atoi(e->d_name + 1);
		if (i < 0 || i >= n || seen[i]++) {
			printf("entry %s seen twice\n", e->d_name);
			bad++;
		}
		seen_count++;
	}
	int expect = 0;
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/f%06d", argv[1], i);
		if (access(path, F_OK) == 0) {
			expect++;
			if (!seen[i]) {
				printf("entry f%06d missing\n", i);
				bad++;
			}
		}
	}
	closedir(d);
	free(seen);
	fprintf(stderr, "seekdir: %d positions checked, %d of %d entries seen\n", np, seen_count, expect);
	printf("seekdir: %s\n", bad ? "MISMATCH" : "positions stable and every entry seen once");
	return bad ? 1 : 0;
}
