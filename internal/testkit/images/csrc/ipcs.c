/* ipcs [-m]: lists the System V shared memory segments of the caller's IPC
 * namespace from /proc/sysvipc/shm, in util-linux's layout. Debian's busybox
 * lacks ipcs, and critest's HostIpc specs call `ipcs -m`. */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-m") != 0) {
			fprintf(stderr, "ipcs: only -m is supported\n");
			return 2;
		}
	}
	FILE *f = fopen("/proc/sysvipc/shm", "r");
	if (f == NULL) {
		perror("ipcs: /proc/sysvipc/shm");
		return 1;
	}
	printf("\n------ Shared Memory Segments --------\n");
	printf("%-10s %-10s %-10s %-10s %-10s %-10s\n", "key", "shmid", "owner", "perms", "bytes", "nattch");
	char line[512];
	if (fgets(line, sizeof line, f) == NULL) { /* header */
		fclose(f);
		return 0;
	}
	while (fgets(line, sizeof line, f) != NULL) {
		long long key, id, perms, size, cpid, lpid, nattch, uid;
		if (sscanf(line, "%lld %lld %llo %lld %lld %lld %lld %lld", &key, &id, &perms, &size, &cpid, &lpid, &nattch, &uid) == 8) {
			printf("0x%08llx %-10lld %-10lld %-10llo %-10lld %-10lld\n", key & 0xffffffffLL, id, uid, perms, size, nattch);
		}
	}
	fclose(f);
	printf("\n");
	return 0;
}
