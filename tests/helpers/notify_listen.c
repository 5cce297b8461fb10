/* Stand in for systemd's end of sd_notify: bind a datagram socket and print
 * each message as one line ('|' for newlines), until one contains WORD.
 *   notify_listen SOCKET_PATH TIMEOUT_MS WORD   exit 0: WORD seen, 1: timeout */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: notify_listen SOCKET_PATH TIMEOUT_MS WORD\n");
		return 2;
	}
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(argv[1]) >= sizeof(sa.sun_path))
		return 2;
	strcpy(sa.sun_path, argv[1]);
	unlink(argv[1]);
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror(argv[1]);
		return 2;
	}
	/* the socket exists: whoever waits for it may start the daemon */
	printf("listening\n");
	fflush(stdout);
	int timeout = atoi(argv[2]);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	while (poll(&p, 1, timeout) == 1) {
		char buf[4096];
		ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
		if (n < 0)
			break;
		buf[n] = '\0';
		for (char *c = buf; *c; c++)
			if (*c == '\n')
				*c = '|';
		printf("%s\n", buf);
		fflush(stdout);
		if (strstr(buf, argv[3]))
			return 0;
	}
	return 1;
}
