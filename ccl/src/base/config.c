/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * config.c - reads the NPCCL_* environment variables when a communicator or
 * unique id is created.
 * docs/ccl.md lists them; invalid values fall back to the defaults with a
 * warning through the log.
 */
#include "npccl_internal.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static struct npccl_config cfg;
static pthread_once_t cfg_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t cfg_lock = PTHREAD_MUTEX_INITIALIZER;

/* Held across fork(), like the log lock (status.c): a bootstrap root thread may be reloading. */
static void cfg_lock_take(void)
{
	pthread_mutex_lock(&cfg_lock);
}

static void cfg_lock_drop(void)
{
	pthread_mutex_unlock(&cfg_lock);
}

__attribute__((constructor)) static void cfg_lock_atfork(void)
{
	pthread_atfork(cfg_lock_take, cfg_lock_drop, cfg_lock_drop);
}

static long env_long(const char *name, long def, long lo, long hi)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return def;
	char *end;
	long v = strtol(s, &end, 0);
	int shift = 0;
	if (*end == 'k' || *end == 'K')
		shift = 10, end++;
	else if (*end == 'm' || *end == 'M')
		shift = 20, end++;
	else if (*end == 'g' || *end == 'G')
		shift = 30, end++;
	bool fits = v >= 0 ? v <= LONG_MAX >> shift : v >= LONG_MIN >> shift;
	if (fits)
		v = (long)((unsigned long)v << shift);
	if (*end || !fits || v < lo || v > hi) {
		npccl_log(NPCCL_LOG_WARN, "%s=%s is not a number in [%ld, %ld]; using %ld", name,
			  s, lo, hi, def);
		return def;
	}
	return v;
}

/* NPCCL_ALGO: "ring" (every collective that has it) or
 * "allreduce=ring,broadcast=tree". */
static void parse_algo(struct npccl_config *k)
{
	const char *s = getenv("NPCCL_ALGO");
	if (!s || !*s)
		return;
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", s);
	char *save = NULL;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		const char *aname = eq ? eq + 1 : tok;
		npccl_algo_t a = npccl_algo_from_name(aname);
		if (a == NPCCL_NUM_ALGOS) {
			npccl_log(NPCCL_LOG_WARN, "NPCCL_ALGO: unknown algorithm '%s' ignored",
				  aname);
			continue;
		}
		if (!eq) {
			for (int c = 0; c < NPCCL_NUM_COLLS; c++)
				k->algo[c] = a;
			continue;
		}
		*eq = 0;
		int found = 0;
		for (int c = 0; c < NPCCL_NUM_COLLS; c++)
			if (!strcasecmp(tok, npccl_coll_name((npccl_coll_t)c))) {
				k->algo[c] = a;
				found = 1;
			}
		if (!found)
			npccl_log(NPCCL_LOG_WARN, "NPCCL_ALGO: unknown collective '%s' ignored",
				  tok);
	}
}

static void load_into(struct npccl_config *k)
{
	memset(k, 0, sizeof(*k));
	k->timeout_ms = (int)env_long("NPCCL_TIMEOUT_MS", 30000, 1, 86400000);
	k->bootstrap_timeout_ms = (int)env_long("NPCCL_BOOTSTRAP_TIMEOUT_MS", 60000, 1, 86400000);
	k->disable_shm = env_long("NPCCL_DISABLE_SHM", 0, 0, 1);
	k->disable_cma = env_long("NPCCL_DISABLE_CMA", 0, 0, 1);
	k->disable_space = env_long("NPCCL_DISABLE_SPACE", 0, 0, 1);
	k->shm_slot_bytes = (size_t)env_long("NPCCL_SHM_SLOT_BYTES", 128 << 10, 4096, 64 << 20);
	k->shm_slot_bytes = ALIGN_UP(k->shm_slot_bytes, 64);
	k->shm_slots = (int)env_long("NPCCL_SHM_SLOTS", 4, 2, 64);
	k->fp_chunk_bytes = (size_t)env_long("NPCCL_SHM_CHUNK_BYTES", 512 << 10, 4096, 256 << 20);
	k->fp_chunk_bytes = ALIGN_UP(k->fp_chunk_bytes, 4096);
	k->fp_direct_max = (size_t)env_long("NPCCL_SHM_DIRECT_MAX", 16 << 10, 0, 1 << 20);
	k->shm_nt_min = (size_t)env_long("NPCCL_SHM_NT_MIN", 8 << 20, 0, 1L << 40);
	k->stage_nt = (int)env_long("NPCCL_SHM_STAGE_NT", -1, -1, 1);
	k->probe_min = (size_t)env_long("NPCCL_SHM_PROBE_MIN", 32 << 10, 0, 1L << 40);
	k->pipeline_chunk = (size_t)env_long("NPCCL_PIPELINE_CHUNK", 256 << 10, 1024, 256 << 20);
	k->pipeline_chunk = ALIGN_UP(k->pipeline_chunk, 64);
	k->spin_us = (int)env_long("NPCCL_SPIN_US", 100, 0, 10000000);
	k->deterministic = env_long("NPCCL_DETERMINISTIC", 0, 0, 1);
	parse_algo(k);
	const char *f = getenv("NPCCL_FAULT_INJECT");
	if (f)
		snprintf(k->fault, sizeof(k->fault), "%s", f);
	const char *t = getenv("NPCCL_TRANSPORT");
	k->transport = TRANSPORT_AUTO;
	if (t && *t && strcasecmp(t, "auto")) {
		if (!strcasecmp(t, "tcp"))
			k->transport = TRANSPORT_TCP;
		else if (!strcasecmp(t, "rdma") || !strcasecmp(t, "ib"))
			k->transport = TRANSPORT_RDMA;
		else	/* no silent choice: communicator creation fails (rdma_probe) */
			k->transport = TRANSPORT_INVALID;
		snprintf(k->transport_str, sizeof(k->transport_str), "%s", t);
	}
	const char *d = getenv("NPCCL_IB_DEV");
	if (d)
		snprintf(k->ib_dev, sizeof(k->ib_dev), "%s", d);
	k->ib_gid_index = (int)env_long("NPCCL_IB_GID_INDEX", -1, -1, 65535);
	k->ib_timeout = (int)env_long("NPCCL_IB_TIMEOUT", 18, 1, 31);
	k->ib_retry = (int)env_long("NPCCL_IB_RETRY_CNT", 7, 0, 7);
	k->rdma_slots = (int)env_long("NPCCL_RDMA_SLOTS", 4, 2, 16);
	k->rdma_zcopy = env_long("NPCCL_RDMA_ZCOPY", 1, 0, 1);
	k->rdma_cache_bytes = (size_t)env_long("NPCCL_RDMA_CACHE_BYTES", 1L << 30, 0, 1L << 40);
}

static void load(void)
{
	load_into(&cfg);
}

const struct npccl_config *npccl_config(void)
{
	pthread_once(&cfg_once, load);
	return &cfg;
}

/* Called when a communicator or unique id is created, so a process sees the
 * environment as it is then (tests change it between communicators). The
 * other threads' communicators read cfg without the lock while it runs: it
 * is rewritten only when the environment changed, and then at once, never
 * cleared first (a reader saw a chunk size or timeout of 0). */
void npccl_config_reload(void)
{
	struct npccl_config next;

	pthread_once(&cfg_once, load);
	load_into(&next);
	pthread_mutex_lock(&cfg_lock);
	if (memcmp(&next, &cfg, sizeof(cfg)))
		memcpy(&cfg, &next, sizeof(cfg));
	pthread_mutex_unlock(&cfg_lock);
}
