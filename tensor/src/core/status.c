/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * status.c - status codes, the per-thread error message and the log sink.
 *
 * Contracts: npt_fail() formats the message into thread-local storage and
 * returns its status so callers can `return npt_fail(...)`. Log messages go
 * to the user's callback, or to stderr only when $NPT_LOG asks for it; the
 * library never prints otherwise.
 */
#include "core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static _Thread_local char npt_errbuf[1024] = "no error";

static npt_log_fn log_fn;
static void *log_arg;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static int env_level = -2; /* -2 unread, -1 silent */

NPT_API const char *npt_strerror(npt_status_t s)
{
	switch (s) {
	case NPT_OK: return "success";
	case NPT_E_INVAL: return "invalid argument";
	case NPT_E_SHAPE: return "shapes do not broadcast or do not match";
	case NPT_E_RANK: return "rank exceeds NPT_MAX_DIMS (32)";
	case NPT_E_OVERFLOW: return "size overflows";
	case NPT_E_DTYPE: return "dtype not supported by this operation";
	case NPT_E_READONLY: return "tensor is read-only (read-only buffer or broadcast view)";
	case NPT_E_AXIS: return "axis out of range or repeated";
	case NPT_E_EMPTY: return "reduction over an empty range has no identity";
	case NPT_E_VALUE: return "value not allowed";
	case NPT_E_NOMEM: return "out of memory";
	case NPT_E_WOULD_COPY: return "a copy is needed but expansion mode VIEW forbids it";
	case NPT_E_UNSUPPORTED: return "not supported";
	}
	return "unknown nptensor status";
}

NPT_API const char *npt_last_error(void)
{
	return npt_errbuf;
}

npt_status_t npt_fail(npt_status_t s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(npt_errbuf, sizeof(npt_errbuf), fmt, ap);
	va_end(ap);
	return s;
}

char *npt_shape_str(char *buf, size_t len, int ndim, const int64_t *shape)
{
	size_t o = 0;

	o += snprintf(buf + o, len - o, "(");
	for (int i = 0; i < ndim && o < len; i++)
		o += snprintf(buf + o, len - o, "%s%lld", i ? "," : "", (long long)shape[i]);
	if (ndim == 1 && o < len)
		o += snprintf(buf + o, len - o, ",");
	if (o < len)
		snprintf(buf + o, len - o, ")");
	return buf;
}

static int read_env_level(void)
{
	const char *e = getenv("NPT_LOG");

	if (!e || !*e)
		return -1;
	if (!strcasecmp(e, "error")) return NPT_LOG_ERROR;
	if (!strcasecmp(e, "warn") || !strcmp(e, "1")) return NPT_LOG_WARN;
	if (!strcasecmp(e, "info")) return NPT_LOG_INFO;
	if (!strcasecmp(e, "debug")) return NPT_LOG_DEBUG;
	return NPT_LOG_WARN;
}

NPT_API void npt_set_log_callback(npt_log_fn fn, void *arg)
{
	pthread_mutex_lock(&log_lock);
	log_fn = fn;
	log_arg = arg;
	pthread_mutex_unlock(&log_lock);
}

void npt_log(npt_log_level_t lvl, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&log_lock);
	if (env_level == -2)
		env_level = read_env_level();
	if (log_fn) {
		npt_log_fn fn = log_fn;
		void *arg = log_arg;

		pthread_mutex_unlock(&log_lock);
		fn(lvl, msg, arg);
		return;
	}
	if ((int)lvl <= env_level)
		fprintf(stderr, "nptensor: %s\n", msg);
	pthread_mutex_unlock(&log_lock);
}
