/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * hostid.c - who shares a host with whom. Two ranks may use shared memory
 * when they run on the same kernel boot (/proc/sys/kernel/random/boot_id)
 * in the same network namespace (its inode): network namespaces are how
 * the tests model separate hosts, and abstract Unix sockets (used to pass
 * region descriptors) are per network namespace. The pid namespace inode
 * tells whether a peer's pid can be checked through /proc and pidfd_open.
 */
#include "npccl_internal.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

static uint64_t ns_inode(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return 0;
	return ((uint64_t)st.st_dev << 32) ^ (uint64_t)st.st_ino;
}

void host_identity_get(struct host_identity *out)
{
	char boot[64] = "";
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	if (f) {
		if (!fgets(boot, sizeof(boot), f))
			boot[0] = 0;
		fclose(f);
	}
	if (!boot[0])	/* no procfs: fall back to the host name */
		gethostname(boot, sizeof(boot) - 1);
	uint64_t net = ns_inode("/proc/self/ns/net");
	uint64_t h = XXH64(boot, strlen(boot), 0x6e70636c);
	out->host_id = XXH64(&net, sizeof(net), h);
	out->pidns_id = ns_inode("/proc/self/ns/pid");
	memset(out->hostname, 0, sizeof(out->hostname));
	gethostname(out->hostname, sizeof(out->hostname) - 1);
}
