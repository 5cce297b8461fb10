/* renameat2 [-n|-x] OLD NEW: rename with RENAME_NOREPLACE (-n) or
 * RENAME_EXCHANGE (-x); prints "ok" or the errno name. */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	unsigned flags = 0;
	int i = 1;
	if (argc == 4 && strcmp(argv[1], "-n") == 0) { flags = RENAME_NOREPLACE; i = 2; }
	else if (argc == 4 && strcmp(argv[1], "-x") == 0) { flags = RENAME_EXCHANGE; i = 2; }
	else if (argc != 3) { fprintf(stderr, "usage: renameat2 [-n|-x] OLD NEW\n"); return 2; }
	if (renameat2(AT_FDCWD, argv[i], AT_FDCWD, argv[i + 1], flags) == 0)
		puts("ok");
	else
		printf("%s\n", strerrorname_np(errno));
	return 0;
}
