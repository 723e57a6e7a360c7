/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * memstat.h - memory figures for npushm-bert --stats and the shared-weights
 * benchmark (bench/weights, which builds this file too): per-process
 * RSS/PSS from /proc/PID/smaps_rollup and the system-wide Shmem/AnonPages
 * from /proc/meminfo (MemAvailable is too noisy on these machines).
 */
#ifndef NPUSHM_MEMSTAT_H
#define NPUSHM_MEMSTAT_H

#include <stdbool.h>
#include <sys/types.h>

struct memstat_proc {
	long rss_kb, pss_kb, pss_anon_kb, pss_shmem_kb, anon_kb;
};

struct memstat_sys {
	long shmem_kb, anon_kb, cached_kb;
};

/* false if the process is gone or its file unreadable. */
bool memstat_proc(pid_t pid, struct memstat_proc *out);
bool memstat_sys(struct memstat_sys *out);
/* "417.6 MiB" */
const char *memstat_mib(long kb, char *buf, int len);

#endif
