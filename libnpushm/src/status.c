/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * status.c - status names, the per-thread last error, and logging.
 *
 * Contract: npi_fail() is the only writer of the thread's error state; the
 * message it stores is what npushm_last_error() returns until the same
 * thread fails again. Logging goes to the callback set by npushm_log_set(),
 * or to stderr only when $NPUSHM_LOG names a level; otherwise nowhere.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static __thread npushm_status_t tl_status;
static __thread int tl_errno;
static __thread char tl_msg[1024];

NPUSHM_API const char *npushm_strerror(npushm_status_t status)
{
	switch (status) {
	case NPUSHM_OK: return "success";
	case NPUSHM_ERR_INVALID: return "invalid argument";
	case NPUSHM_ERR_NO_MEMORY: return "out of memory";
	case NPUSHM_ERR_NO_SPACE: return "no space left in the shared-memory pool";
	case NPUSHM_ERR_QUOTA: return "per-user quota exceeded";
	case NPUSHM_ERR_NOT_FOUND: return "no such name, model or tensor";
	case NPUSHM_ERR_EXISTS: return "name already published";
	case NPUSHM_ERR_ACCESS: return "permission denied";
	case NPUSHM_ERR_SEALED: return "region is sealed";
	case NPUSHM_ERR_BUSY: return "region is busy";
	case NPUSHM_ERR_NAME: return "invalid name";
	case NPUSHM_ERR_UNSUPPORTED: return "not supported by this backend";
	case NPUSHM_ERR_NO_DEVICE: return "backend not available";
	case NPUSHM_ERR_IO: return "I/O error";
	case NPUSHM_ERR_FORMAT: return "malformed safetensors file";
	case NPUSHM_ERR_CORRUPT: return "region holds no valid model";
	case NPUSHM_ERR_PROTOCOL: return "unexpected message from peer";
	case NPUSHM_ERR_SYSTEM: return "system error";
	}
	return "unknown status";
}

NPUSHM_API const char *npushm_last_error(void)
{
	return tl_msg;
}

NPUSHM_API int npushm_last_errno(void)
{
	return tl_errno;
}

npushm_status_t npi_fail(npushm_status_t st, int err, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(tl_msg, sizeof(tl_msg), fmt, ap);
	va_end(ap);
	n = strlen(tl_msg);
	if (err && n + 4 < sizeof(tl_msg))
		snprintf(tl_msg + n, sizeof(tl_msg) - n, " (%s)", strerror(err));
	tl_status = st;
	tl_errno = err;
	npi_log(NPUSHM_LOG_DEBUG, "failure: %s", tl_msg);
	return st;
}

void npi_error_prefix(const char *fmt, ...)
{
	char prefix[512], old[sizeof(tl_msg)];
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, tl_msg, sizeof(old));
	n = strlen(prefix);
	if (n + 2 >= sizeof(tl_msg))
		n = sizeof(tl_msg) - 3;
	memcpy(tl_msg, prefix, n);
	memcpy(tl_msg + n, ": ", 2);
	n += 2;
	memcpy(tl_msg + n, old, sizeof(tl_msg) - n - 1);
	tl_msg[sizeof(tl_msg) - 1] = '\0';
}

void npi_error_save(struct npi_saved_error *s)
{
	s->status = tl_status;
	s->err = tl_errno;
	memcpy(s->msg, tl_msg, sizeof(s->msg));
}

npushm_status_t npi_error_restore(const struct npi_saved_error *s)
{
	tl_status = s->status;
	tl_errno = s->err;
	memcpy(tl_msg, s->msg, sizeof(tl_msg));
	return s->status;
}

npushm_status_t npi_status_from_errno(int err)
{
	switch (err) {
	case 0: return NPUSHM_OK;
	case EINVAL: case EBADF: case E2BIG: case ENOTTY: return NPUSHM_ERR_INVALID;
	case ENOMEM: return NPUSHM_ERR_NO_MEMORY;
	case ENOSPC: case EFBIG: return NPUSHM_ERR_NO_SPACE;
	case EDQUOT: return NPUSHM_ERR_QUOTA;
	case ENOENT: return NPUSHM_ERR_NOT_FOUND;
	case EEXIST: return NPUSHM_ERR_EXISTS;
	case EACCES: case EPERM: return NPUSHM_ERR_ACCESS;
	case EBUSY: case ETXTBSY: return NPUSHM_ERR_BUSY;
	case ENAMETOOLONG: return NPUSHM_ERR_NAME;
	case EOPNOTSUPP: case ENOSYS: case EXDEV: return NPUSHM_ERR_UNSUPPORTED;
	case ENODEV: case ENXIO: return NPUSHM_ERR_NO_DEVICE;
	case EIO: return NPUSHM_ERR_IO;
	default: return NPUSHM_ERR_SYSTEM;
	}
}

/* ------------------------------------------------------------------- log */

static npushm_log_fn log_fn;
static void *log_arg;
static npushm_log_level_t log_level;
/* $NPUSHM_LOG is read once, by whichever thread logs (or sets) first */
static pthread_once_t log_env_once = PTHREAD_ONCE_INIT;

static npushm_log_level_t level_from_env(void)
{
	const char *v = getenv("NPUSHM_LOG");

	if (!v || !*v)
		return NPUSHM_LOG_NONE;
	if (!strcmp(v, "error"))
		return NPUSHM_LOG_ERROR;
	if (!strcmp(v, "warn"))
		return NPUSHM_LOG_WARN;
	if (!strcmp(v, "info"))
		return NPUSHM_LOG_INFO;
	if (!strcmp(v, "debug"))
		return NPUSHM_LOG_DEBUG;
	/* asked for logs, in a word we do not know: say so where they would have gone */
	fprintf(stderr, "libnpushm: NPUSHM_LOG is '%s', which is no log level; use error, warn, info or debug (logging nothing)\n",
		v);
	return NPUSHM_LOG_NONE;
}

static void log_env_init(void)
{
	log_level = level_from_env();
}

NPUSHM_API void npushm_log_set(npushm_log_fn fn, void *arg, npushm_log_level_t level)
{
	pthread_once(&log_env_once, log_env_init);
	log_fn = fn;
	log_arg = arg;
	log_level = fn ? level : level_from_env();
}

void npi_log(npushm_log_level_t level, const char *fmt, ...)
{
	static const char *const names[] = { "", "error", "warn", "info", "debug" };
	char msg[1024];
	va_list ap;

	pthread_once(&log_env_once, log_env_init);
	if (level == NPUSHM_LOG_NONE || level > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (log_fn)
		log_fn(log_arg, level, msg);
	else
		fprintf(stderr, "libnpushm %s: %s\n", names[level], msg);
}
