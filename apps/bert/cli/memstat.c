/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * memstat.c - read smaps_rollup and meminfo (see memstat.h).
 */
#include <stdio.h>
#include <string.h>

#include "memstat.h"

static bool read_kv(const char *path, const char *const *keys, long *vals, int n)
{
	FILE *f = fopen(path, "re");
	char line[256];

	if (!f)
		return false;
	for (int i = 0; i < n; i++)
		vals[i] = 0;
	while (fgets(line, sizeof(line), f)) {
		for (int i = 0; i < n; i++) {
			size_t k = strlen(keys[i]);
			long v;

			if (!strncmp(line, keys[i], k) && line[k] == ':' && sscanf(line + k + 1, "%ld", &v) == 1)
				vals[i] = v;
		}
	}
	fclose(f);
	return true;
}

bool memstat_proc(pid_t pid, struct memstat_proc *out)
{
	static const char *const keys[] = { "Rss", "Pss", "Pss_Anon", "Pss_Shmem", "Anonymous" };
	char path[64];
	long v[5];

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	if (!read_kv(path, keys, v, 5))
		return false;
	out->rss_kb = v[0];
	out->pss_kb = v[1];
	out->pss_anon_kb = v[2];
	out->pss_shmem_kb = v[3];
	out->anon_kb = v[4];
	return true;
}

bool memstat_sys(struct memstat_sys *out)
{
	static const char *const keys[] = { "Shmem", "AnonPages", "Cached" };
	long v[3];

	if (!read_kv("/proc/meminfo", keys, v, 3))
		return false;
	out->shmem_kb = v[0];
	out->anon_kb = v[1];
	out->cached_kb = v[2];
	return true;
}

const char *memstat_mib(long kb, char *buf, int len)
{
	snprintf(buf, (size_t)len, "%.1f MiB", (double)kb / 1024.0);
	return buf;
}
