/* pgrep PATTERN: prints the PIDs of processes whose name (comm) matches the
 * extended regular expression PATTERN; exits 1 if none does. Debian's
 * busybox lacks pgrep, and critest calls it. */
#include <ctype.h>
#include <dirent.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc != 2) {
		fprintf(stderr, "usage: pgrep PATTERN\n");
		return 2;
	}
	regex_t re;
	if (regcomp(&re, argv[1], REG_EXTENDED | REG_NOSUB) != 0) {
		fprintf(stderr, "pgrep: bad pattern %s\n", argv[1]);
		return 2;
	}
	DIR *proc = opendir("/proc");
	if (proc == NULL) {
		perror("pgrep: /proc");
		return 3;
	}
	int found = 0;
	pid_t self = getpid();
	struct dirent *d;
	while ((d = readdir(proc)) != NULL) {
		if (!isdigit((unsigned char)d->d_name[0]) || atoi(d->d_name) == self) {
			continue;
		}
		char path[300], comm[64] = "";
		snprintf(path, sizeof path, "/proc/%s/comm", d->d_name);
		FILE *f = fopen(path, "r");
		if (f == NULL) {
			continue;
		}
		if (fgets(comm, sizeof comm, f) != NULL) {
			comm[strcspn(comm, "\n")] = '\0';
		}
		fclose(f);
		if (regexec(&re, comm, 0, NULL, 0) == 0) {
			printf("%s\n", d->d_name);
			found = 1;
		}
	}
	closedir(proc);
	return found ? 0 : 1;
}
