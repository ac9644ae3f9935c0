/* pause: the sandbox's PID 1. Sleeps until SIGINT or SIGTERM (then exits 0)
 * and reaps any zombie re-parented to it. Built static, so the image needs
 * nothing else. Same behaviour as Kubernetes' build/pause/linux/pause.c. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void sigdown(int signo) {
	psignal(signo, "Shutting down, got signal");
	exit(0);
}

static void sigreap(int signo) {
	(void)signo;
	while (waitpid(-1, NULL, WNOHANG) > 0) {
	}
}

int main(int argc, char **argv) {
	(void)argc;
	(void)argv;
	struct sigaction down, reap;
	memset(&down, 0, sizeof down);
	memset(&reap, 0, sizeof reap);
	down.sa_handler = sigdown;
	reap.sa_handler = sigreap;
	reap.sa_flags = SA_NOCLDSTOP;
	if (sigaction(SIGINT, &down, NULL) < 0 || sigaction(SIGTERM, &down, NULL) < 0 ||
	    sigaction(SIGCHLD, &reap, NULL) < 0) {
		perror("sigaction");
		return 1;
	}
	/* Printed only once the handlers are in place, so a supervisor (or a
	 * test) that sees it knows a signal will now be handled. */
	if (getpid() != 1) {
		fprintf(stderr, "Warning: pause should be the first process\n");
	}
	for (;;) {
		pause();
	}
}
