/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * status.c - status texts, names of dtypes/ops/collectives/algorithms, and
 * the diagnostic log (optional callback, else stderr gated by NPCCL_LOG).
 * Library code never prints except through npccl_log().
 */
#include "npccl_internal.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static const char *const status_text[NPCCL_NUM_STATUS] = {
	[NPCCL_OK] = "success",
	[NPCCL_ERR_INVALID_ARG] = "invalid argument",
	[NPCCL_ERR_NOMEM] = "out of memory",
	[NPCCL_ERR_SYSTEM] = "system call failed",
	[NPCCL_ERR_BOOTSTRAP] = "communicator bootstrap failed",
	[NPCCL_ERR_TIMEOUT] = "a peer did not arrive within the deadline",
	[NPCCL_ERR_PEER_DEAD] = "a peer process died or closed its connection",
	[NPCCL_ERR_MISMATCH] = "ranks made mismatched calls",
	[NPCCL_ERR_PROTOCOL] = "corrupt or foreign data on a connection",
	[NPCCL_ERR_ABORTED] = "communicator aborted",
	[NPCCL_ERR_UNSUPPORTED] = "not supported",
	[NPCCL_IN_PROGRESS] = "in progress (not completed yet)",
};

const char *npccl_strerror(npccl_status_t st)
{
	if ((unsigned)st < NPCCL_NUM_STATUS && status_text[st])
		return status_text[st];
	return "unknown npccl status";
}

static const char *const dtype_names[] = { "i8", "u8", "i32", "u32", "i64", "u64",
					   "f16", "bf16", "f32", "f64" };
static const size_t dtype_sizes[] = { 1, 1, 4, 4, 8, 8, 2, 2, 4, 8 };
static const char *const redop_names[] = { "sum", "prod", "min", "max", "avg" };
static const char *const coll_names[] = { "allreduce", "allgather", "reduce_scatter",
					  "broadcast", "reduce", "gather", "scatter",
					  "alltoall", "barrier", "send", "recv" };
static const char *const algo_names[] = { "auto", "ring", "tree", "recdoubling",
					  "rabenseifner", "direct", "shm", "hier", "cma",
					  "canonical" };

const char *npccl_dtype_name(npccl_dtype_t d)
{
	return (unsigned)d < NPCCL_NUM_DTYPES ? dtype_names[d] : "?";
}

size_t npccl_dtype_size(npccl_dtype_t d)
{
	return (unsigned)d < NPCCL_NUM_DTYPES ? dtype_sizes[d] : 0;
}

const char *npccl_redop_name(npccl_redop_t op)
{
	return (unsigned)op < NPCCL_NUM_REDOPS ? redop_names[op] : "?";
}

const char *npccl_coll_name(npccl_coll_t c)
{
	return (unsigned)c < NPCCL_NUM_COLLS ? coll_names[c] : "?";
}

const char *npccl_algo_name(npccl_algo_t a)
{
	return (unsigned)a < NPCCL_NUM_ALGOS ? algo_names[a] : "?";
}

npccl_algo_t npccl_algo_from_name(const char *name)
{
	for (int i = 0; i < NPCCL_NUM_ALGOS; i++)
		if (!strcasecmp(name, algo_names[i]))
			return (npccl_algo_t)i;
	return NPCCL_NUM_ALGOS;
}

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static npccl_log_fn log_fn;
static void *log_user;
static int log_level = -1;

/*
 * Ranks may be forked from a process whose bootstrap root thread is
 * running (npccl_get_unique_id starts it): hold the lock across fork() so
 * that a child never starts with it taken by a thread it does not have.
 */
static void log_lock_take(void)
{
	pthread_mutex_lock(&log_lock);
}

static void log_lock_drop(void)
{
	pthread_mutex_unlock(&log_lock);
}

__attribute__((constructor)) static void log_lock_atfork(void)
{
	pthread_atfork(log_lock_take, log_lock_drop, log_lock_drop);
}

void npccl_set_log_callback(npccl_log_fn fn, void *user)
{
	pthread_mutex_lock(&log_lock);
	log_fn = fn;
	log_user = user;
	pthread_mutex_unlock(&log_lock);
}

static int env_log_level(void)
{
	const char *s = getenv("NPCCL_LOG");
	if (!s)
		return 0;
	if (!strcasecmp(s, "error"))
		return NPCCL_LOG_ERROR;
	if (!strcasecmp(s, "warn"))
		return NPCCL_LOG_WARN;
	if (!strcasecmp(s, "info"))
		return NPCCL_LOG_INFO;
	if (!strcasecmp(s, "debug"))
		return NPCCL_LOG_DEBUG;
	return atoi(s);
}

void npccl_log(npccl_log_level_t level, const char *fmt, ...)
{
	char msg[1024];
	pthread_mutex_lock(&log_lock);
	if (log_level < 0)
		log_level = env_log_level();
	npccl_log_fn fn = log_fn;
	void *user = log_user;
	int lvl = log_level;
	pthread_mutex_unlock(&log_lock);
	if (!fn && (int)level > lvl)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (fn)
		fn(level, msg, user);
	else
		fprintf(stderr, "npccl: %s\n", msg);
}

uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- per-thread error text ------------------------------------------------
 * npccl_comm_last_error() answers from the calling thread's own last call on
 * that communicator; a thread that made none sees the communicator's last
 * failure (shown_err, under q_lock). Each thread keeps the texts of the last
 * TLS_SLOTS communicators it used, so calls on one (a framework's second
 * communicator, its cleanup) do not wipe another's text; the least recently
 * used slot is taken for a further one. */
#define TLS_SLOTS 4
struct tls_err {
	struct npccl_comm *comm;
	unsigned long used;
	char msg[800];
};
static __thread struct tls_err tls_err[TLS_SLOTS];
static __thread unsigned long tls_clock;

static struct tls_err *tls_slot(struct npccl_comm *c, bool take)
{
	struct tls_err *old = &tls_err[0];

	for (int i = 0; i < TLS_SLOTS; i++) {
		if (tls_err[i].comm == c) {
			tls_err[i].used = ++tls_clock;
			return &tls_err[i];
		}
		if (tls_err[i].used < old->used)
			old = &tls_err[i];
	}
	if (!take)
		return NULL;
	old->comm = c;
	old->used = ++tls_clock;
	old->msg[0] = 0;
	return old;
}

void tls_error_clear(struct npccl_comm *c)
{
	tls_slot(c, true)->msg[0] = 0;
}

void tls_error_set(struct npccl_comm *c, const char *fmt, ...)
{
	va_list ap;
	char tmp[sizeof(tls_err[0].msg)];

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	memcpy(tls_slot(c, true)->msg, tmp, sizeof(tmp));
}

void tls_error_forget(struct npccl_comm *c)
{
	struct tls_err *e = tls_slot(c, false);

	if (e) {
		e->comm = NULL;
		e->used = 0;
	}
}

const char *npccl_comm_last_error(npccl_comm_t c)
{
	if (!c)
		return "no communicator";
	struct tls_err *e = tls_slot(c, false);
	if (!e) {
		e = tls_slot(c, true);
		pthread_mutex_lock(&c->q_lock);
		snprintf(e->msg, sizeof(e->msg), "%s", c->shown_err);
		pthread_mutex_unlock(&c->q_lock);
	}
	return e->msg;
}
