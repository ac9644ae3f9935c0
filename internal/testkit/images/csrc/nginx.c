/* nginx: a stand-in for nginx's master process in critest's nginx images.
 * critest checks that `pidof nginx` finds the PID in /var/run/nginx.pid and
 * that /proc/1/cmdline contains "master process". So this program re-execs
 * itself with nginx's process title as argv[0] (the comm stays "nginx"),
 * writes its PID file, and runs `httpd -f` (busybox) as its child to serve
 * /usr/share/nginx/html, forwarding SIGTERM/SIGINT/SIGQUIT and exiting with
 * the child's status. Usage: nginx [PORT] (default 80). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define TITLE "nginx: master process nginx -g daemon off;"
#define SELF "/usr/sbin/nginx"

static volatile pid_t child;

static void forward(int signo) {
	if (child > 0) {
		kill(child, signo);
	}
}

int main(int argc, char **argv) {
	const char *port = argc > 1 ? argv[1] : "80";
	if (strcmp(argv[0], TITLE) != 0) {
		char *args[] = {TITLE, (char *)port, NULL};
		execv(SELF, args);
		perror("nginx: re-exec " SELF);
		return 1;
	}
	FILE *pidfile = fopen("/var/run/nginx.pid", "w");
	if (pidfile == NULL || fprintf(pidfile, "%d\n", (int)getpid()) < 0 || fclose(pidfile) != 0) {
		perror("nginx: write /var/run/nginx.pid");
		return 1;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = forward;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	child = fork();
	if (child < 0) {
		perror("nginx: fork");
		return 1;
	}
	if (child == 0) {
		execl("/bin/httpd", "httpd", "-f", "-p", port, "-h", "/usr/share/nginx/html", (char *)NULL);
		perror("nginx: exec /bin/httpd");
		_exit(127);
	}
	fprintf(stderr, "nginx: master process %d serving port %s (worker %d)\n", (int)getpid(), port, (int)child);
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, 0);
		if (pid < 0 && errno == EINTR) {
			continue;
		}
		if (pid < 0) {
			perror("nginx: waitpid");
			return 1;
		}
		if (pid == child) {
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		}
	}
}
