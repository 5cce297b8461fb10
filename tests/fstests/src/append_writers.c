/* append_writers FILE PROCS RECORDS: PROCS processes append RECORDS
 * fixed-size records each with O_APPEND; then every record must be whole,
 * and each writer's records present and in order. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define REC 64

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: see the comment at the top of append_writers.c\n");
		return 2;
	}
	int procs = atoi(argv[2]), recs = atoi(argv[3]);
	for (int p = 0; p < procs; p++) {
		if (fork() == 0) {
			int fd = open(argv[1], O_WRONLY | O_APPEND | O_CREAT, 0644);
			char r[REC];
			for (int i = 0; i < recs; i++) {
				memset(r, 'a' + p, REC);
				char head[16];
				int hl = snprintf(head, sizeof(head), "%02d:%06d:", p, i);
				memcpy(r, head, (size_t)hl); /* no terminating NUL inside the record */
				r[REC - 1] = '\n';
				if (write(fd, r, REC) != REC)
					_exit(1);
			}
			_exit(0);
		}
	}
	int fails = 0, st;
	while (wait(&st) > 0)
		fails += !WIFEXITED(st) || WEXITSTATUS(st);
	FILE *f = fopen(argv[1], "r");
	char line[REC + 8];
	int *next = calloc((size_t)procs, sizeof(int)), bad = 0, total = 0;
	if (!f || !next) {
		perror(argv[1]);
		return 1;
	}
	while (fgets(line, sizeof(line), f)) {
		int p, i;
		if (strlen(line) != REC || sscanf(line, "%d:%d:", &p, &i) != 2 || p < 0 || p >= procs ||
		    i != next[p]++)
			bad++;
		total++;
	}
	printf("%d writers, %d records, %d malformed or out of order, %d writer failures\n", procs,
	       total, bad, fails);
	fclose(f);
	free(next);
	return 0;
}
