/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * model_share.c - npccl_model_load: one model load for a whole cluster.
 *
 * The root reads a safetensors file, every other host receives it over the
 * communicator, and each host publishes it as a libnpushm model under the
 * same name and content hash, all or none (npccl.h describes the contract).
 *
 * Phases, every rank taking part in every collective so that a local
 * failure becomes a vote instead of a hang:
 *  1. offer: the root broadcasts name, size, content hash and its own
 *     verdict on the file; every rank checks the name against its own
 *     argument, each host's loader that the name is free; allgather of
 *     verdicts (struct vote);
 *  2. transfer: the file in chunks through an npccl_mem_alloc buffer
 *     (registered for the RDMA transport's zero-copy path), written by each
 *     receiving loader into a memory file;
 *  3. stage: each loader loads its copy under a staging name and compares
 *     the content hash with the root's; allgather of verdicts;
 *  4. commit: each loader publishes the real name on its staged region and
 *     drops the staging name; allgather of verdicts; where any host failed,
 *     the hosts that published remove the name again.
 * A collective that fails (dead, stopped or mismatched rank) ends the load
 * on this rank at once: its staging name (if any) is removed and nothing is
 * published; before phase 4 no real name exists anywhere.
 */
#include "npccl_internal.h"
#include "transport/transport.h"
#include "algo/algo.h"
#include "dispatch/dispatch.h"
#include "queue/queue.h"
#include "setup/setup.h"
#include "npushm.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define OFFER_MAGIC 0x4e504d4cu	/* "NPML" */
#define STAGING_PREFIX "npccl-staging."
#define CHUNK_MAX (4u << 20)
#define MSG_LEN 232

struct offer {			/* root -> all */
	uint32_t magic;
	int32_t status;		/* NPCCL_OK or why the root cannot offer the file */
	uint64_t size;
	uint8_t hash[16];
	uint32_t mode;
	uint32_t pad;
	char name[NPUSHM_NAME_MAX + 1];
	char msg[MSG_LEN];
};

struct vote {			/* every rank -> all */
	int32_t status;
	int32_t loader;		/* this rank loads for its host */
	int32_t dedup;
	int32_t published;
	char msg[MSG_LEN];
};

struct share {
	struct npccl_comm *c;
	int root;
	bool loader;		/* this rank loads for its host */
	npushm_dev_t *dev;
	char staging[NPUSHM_NAME_MAX + 1];
	bool staged, published;
	int memfd;
	int filefd;
	struct vote *votes;
	npccl_model_load_result_t *res;
	char comm_err[600];	/* a failed collective's message, kept across later calls */
};

static void hex16(const uint8_t h[16], char out[33])
{
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", h[i]);
}

static void vote_fail(struct vote *v, npccl_status_t st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void vote_fail(struct vote *v, npccl_status_t st, const char *fmt, ...)
{
	va_list ap;
	if (v->status)
		return;		/* the first reason stays */
	v->status = st;
	va_start(ap, fmt);
	vsnprintf(v->msg, sizeof(v->msg), fmt, ap);
	va_end(ap);
}

/* every rank's vote; the collective's status */
static npccl_status_t exchange(struct share *s, struct vote *mine)
{
	return npccl_allgather(mine, s->votes, sizeof(*mine), NPCCL_UINT8, s->c);
}

/* The per-host report from the last exchange and the first failure. */
static int summarize(struct share *s, const char *phase, npccl_status_t *st, char *first,
		     size_t firstlen)
{
	struct npccl_comm *c = s->c;
	char *rep = s->res->report;
	size_t len = 0;
	int bad = 0;
	*st = NPCCL_OK;
	first[0] = 0;
	rep[0] = 0;
	for (int i = 0; i < c->nranks; i++) {
		const struct vote *v = &s->votes[i];
		if (!v->loader && !v->status)
			continue;
		int w = snprintf(rep + len, NPCCL_MODEL_REPORT_LEN - len, "%shost %d (rank %d on %.40s): %s",
				 len ? "; " : "", c->host_of[i], i, c->peers[i].info.hostname,
				 v->status ? v->msg : phase);
		if (w > 0 && len + (size_t)w < NPCCL_MODEL_REPORT_LEN)
			len += (size_t)w;
		if (v->status && !bad++) {
			*st = (npccl_status_t)v->status;
			snprintf(first, firstlen, "host %d (rank %d on %.40s): %s", c->host_of[i], i,
				 c->peers[i].info.hostname, v->msg);
		}
	}
	return bad;
}

/* Staging names of processes that no longer exist (a loader killed between
 * its staging load and the publish) are removed. */
static void drop_stale_staging(struct share *s)
{
	npushm_region_list_t *l;
	if (npushm_dev_list_regions(s->dev, &l) != NPUSHM_OK)
		return;
	for (size_t i = 0; i < npushm_region_list_count(l); i++) {
		const npushm_region_entry_t *e = npushm_region_list_at(l, i);
		for (size_t k = 0; k < e->name_count; k++) {
			const char *n = e->names[k].name;
			long pid;
			if (strncmp(n, STAGING_PREFIX, strlen(STAGING_PREFIX)))
				continue;
			pid = strtol(n + strlen(STAGING_PREFIX), NULL, 10);
			if (pid > 0 && kill((pid_t)pid, 0) && errno == ESRCH) {
				npccl_log(NPCCL_LOG_INFO, "model load: removing the stale staging name %s "
					  "(its process is gone)", n);
				npushm_model_remove(s->dev, n);
			}
		}
	}
	npushm_region_list_free(l);
}

/* phase 1 on the root: the file's size and content hash */
static void root_offer(struct share *s, const char *path, struct offer *o)
{
	struct stat st;
	char hex[33];
	if (!path) {
		o->status = NPCCL_ERR_INVALID_ARG;
		snprintf(o->msg, sizeof(o->msg), "the root was given no file (path NULL)");
		return;
	}
	s->filefd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->filefd < 0 || fstat(s->filefd, &st) || !S_ISREG(st.st_mode)) {
		o->status = NPCCL_ERR_INVALID_ARG;
		snprintf(o->msg, sizeof(o->msg), "cannot read the model file '%.150s' on the root: %s",
			 path, s->filefd < 0 ? strerror(errno) : "not a regular file");
		return;
	}
	if (npushm_file_hash(path, o->hash, hex) != NPUSHM_OK) {
		o->status = NPCCL_ERR_INVALID_ARG;
		snprintf(o->msg, sizeof(o->msg), "cannot hash '%.100s': %s", path, npushm_last_error());
		return;
	}
	o->size = (uint64_t)st.st_size;
}

/* phase 1 on a loader: a device and a free name */
static void loader_check(struct share *s, const struct offer *o, struct vote *v)
{
	npushm_region_t *r;
	if (npushm_dev_open(NPUSHM_BACKEND_AUTO, &s->dev) != NPUSHM_OK) {
		vote_fail(v, NPCCL_ERR_SYSTEM, "no npushm device: %s", npushm_last_error());
		return;
	}
	drop_stale_staging(s);
	npushm_status_t ns = npushm_region_open(s->dev, o->name, 0, &r);
	if (ns == NPUSHM_OK)
		npushm_region_close(r);
	if (ns == NPUSHM_OK || ns == NPUSHM_ERR_ACCESS) {
		vote_fail(v, NPCCL_ERR_INVALID_ARG, "the name '%.100s' is already published on this "
			  "host; remove it first or choose another", o->name);
		return;
	}
	if (ns != NPUSHM_ERR_NOT_FOUND) {
		vote_fail(v, NPCCL_ERR_SYSTEM, "cannot look up the name '%.100s': %s", o->name,
			  npushm_last_error());
		return;
	}
	if (s->root != s->c->rank) {
		s->memfd = memfd_create("npccl-model", MFD_CLOEXEC);
		if (s->memfd < 0 || ftruncate(s->memfd, (off_t)o->size))
			vote_fail(v, NPCCL_ERR_SYSTEM, "cannot make a memory file of %llu bytes: %s",
				  (unsigned long long)o->size, strerror(errno));
	}
}

/* phase 2: the bytes; a local failure is remembered, the broadcasts go on */
static npccl_status_t transfer(struct share *s, const struct offer *o, struct vote *v)
{
	struct npccl_comm *c = s->c;
	size_t chunk = (size_t)MIN((uint64_t)CHUNK_MAX, o->size ? o->size : 1);
	void *buf;
	npccl_status_t st = npccl_mem_alloc(c, chunk, &buf);
	if (st)
		return st;
	uint64_t k = 0;
	for (uint64_t off = 0; off < o->size && !st; off += chunk, k++) {
		size_t n = (size_t)MIN((uint64_t)chunk, o->size - off);
		if (c->fault_kind == FAULT_LOAD_KILL && c->fault_rank == c->rank && c->fault_seq == k)
			raise(SIGKILL);	/* tests: a rank killed mid-broadcast */
		if (c->rank == s->root && !v->status && pread(s->filefd, buf, n, (off_t)off) != (ssize_t)n)
			vote_fail(v, NPCCL_ERR_SYSTEM, "reading the model file at byte %llu failed: %s",
				  (unsigned long long)off, errno ? strerror(errno) : "short read");
		st = npccl_broadcast(buf, buf, n, NPCCL_UINT8, s->root, c);
		if (!st && c->fault_kind == FAULT_LOAD_CORRUPT && c->fault_rank == c->rank &&
		    c->fault_seq == k)
			((unsigned char *)buf)[n / 2] ^= 0x5a;	/* tests: bytes damaged on arrival */
		if (!st && s->memfd >= 0 && !v->status &&
		    pwrite(s->memfd, buf, n, (off_t)off) != (ssize_t)n)
			vote_fail(v, NPCCL_ERR_SYSTEM, "writing the received bytes failed: %s",
				  strerror(errno));
	}
	if (st)		/* npccl_mem_free starts a new error text */
		snprintf(s->comm_err, sizeof(s->comm_err), "%s", npccl_comm_last_error(c));
	npccl_status_t st2 = npccl_mem_free(c, buf);
	return st ? st : st2;
}

/* phase 3 on a loader: load under the staging name, compare hashes */
static void stage(struct share *s, const char *path, const struct offer *o, struct vote *v)
{
	char src[64], want[33];
	npushm_load_result_t lr;
	npushm_load_opts_t lo = { .mode = o->mode };
	if (s->c->rank != s->root) {
		snprintf(src, sizeof(src), "/proc/self/fd/%d", s->memfd);
		path = src;
	}
	hex16(o->hash, want);
	snprintf(s->staging, sizeof(s->staging), STAGING_PREFIX "%ld.%s", (long)getpid(), want);
	npushm_status_t ls = npushm_model_load(s->dev, path, s->staging, &lo, &lr);
	if (ls != NPUSHM_OK) {
		/* a file that is no model is the caller's input, the rest this host's trouble */
		vote_fail(v, ls == NPUSHM_ERR_FORMAT ? NPCCL_ERR_INVALID_ARG : NPCCL_ERR_SYSTEM,
			  "loading %s failed: %s", s->c->rank == s->root ? "the model file" :
			  "the received copy", npushm_last_error());
		return;
	}
	s->staged = true;
	v->dedup = lr.deduplicated;
	if (memcmp(lr.hash, o->hash, 16))
		vote_fail(v, NPCCL_ERR_PROTOCOL, "content hash on arrival is %s, the root's is %s "
			  "(the file changed on the root during the load, or the bytes were corrupted)",
			  lr.hash_hex, want);
}

/* phase 4 on a loader: the real name on the staged region */
static void commit(struct share *s, const struct offer *o, struct vote *v)
{
	npushm_region_t *r;
	if (npushm_region_open(s->dev, s->staging, 0, &r) != NPUSHM_OK) {
		vote_fail(v, NPCCL_ERR_SYSTEM, "the staged copy vanished: %s", npushm_last_error());
		return;
	}
	if (npushm_region_publish(r, o->name, o->mode, 0) != NPUSHM_OK)
		vote_fail(v, NPCCL_ERR_SYSTEM, "publishing '%.100s' failed: %s", o->name,
			  npushm_last_error());
	else
		s->published = true;
	npushm_region_close(r);
	npushm_name_unlink(s->dev, s->staging);
	s->staged = false;
	v->published = s->published;
}

static void cleanup(struct share *s, const struct offer *o, bool keep)
{
	if (s->published && !keep)
		npushm_model_remove(s->dev, o->name);
	if (s->staged)
		npushm_model_remove(s->dev, s->staging);
	if (s->memfd >= 0)
		close(s->memfd);
	if (s->filefd >= 0)
		close(s->filefd);
	if (s->dev)
		npushm_dev_close(s->dev);
	free(s->votes);
}

/* the loader of host h: the root on its host, else the host's lowest rank */
static bool is_loader(struct npccl_comm *c, int root, int rank)
{
	int h = c->host_of[rank];
	if (h == c->host_of[root])
		return rank == root;
	for (int i = 0; i < c->nranks; i++)
		if (c->host_of[i] == h)
			return i == rank;
	return false;
}

npccl_status_t npccl_model_load(npccl_comm_t c, int root, const char *path, const char *name,
				uint32_t mode, npccl_model_load_result_t *result)
{
	npccl_model_load_result_t local;
	struct share s = { .c = c, .root = root, .memfd = -1, .filefd = -1,
			   .res = result ? result : &local };
	struct offer o = { .magic = OFFER_MAGIC };
	struct vote mine = { 0 };
	char first[400], errsave[600];
	npccl_status_t st;

	if (!c)
		return NPCCL_ERR_INVALID_ARG;
	tls_error_clear(c);
	memset(s.res, 0, sizeof(*s.res));
	s.res->nhosts = c->nhosts;
	if (root < 0 || root >= c->nranks) {
		tls_error_set(c, "model load: root %d is not a rank of this communicator (0..%d)", root,
			      c->nranks - 1);
		return NPCCL_ERR_INVALID_ARG;
	}
	s.votes = calloc((size_t)c->nranks, sizeof(*s.votes));
	if (!s.votes)
		return NPCCL_ERR_NOMEM;
	s.loader = is_loader(c, root, c->rank);
	mine.loader = s.loader;

	/* 1. the offer */
	if (c->rank == root) {
		o.mode = mode ? mode : 0640;
		if (!name || npushm_name_check(name) != NPUSHM_OK ||
		    !strncmp(name, STAGING_PREFIX, strlen(STAGING_PREFIX))) {
			o.status = NPCCL_ERR_INVALID_ARG;
			snprintf(o.msg, sizeof(o.msg), "bad model name on the root: %s",
				 !name ? "NULL" : npushm_name_check(name) ? npushm_last_error()
				 : "the prefix " STAGING_PREFIX " is reserved for staging copies");
		} else if (mode & ~0666u) {
			o.status = NPCCL_ERR_INVALID_ARG;
			snprintf(o.msg, sizeof(o.msg), "mode %o has bits outside 0666", mode);
		} else {
			snprintf(o.name, sizeof(o.name), "%s", name);
			root_offer(&s, path, &o);
		}
	}
	st = npccl_broadcast(&o, &o, sizeof(o), NPCCL_UINT8, root, c);
	if (st)
		goto comm_failed;
	if (o.magic != OFFER_MAGIC) {
		st = NPCCL_ERR_MISMATCH;
		tls_error_set(c, "model load: rank %d is not in a model load with root %d (mismatched "
			      "calls)", root, root);
		goto out;
	}
	memcpy(s.res->hash, o.hash, 16);
	hex16(o.hash, s.res->hash_hex);
	s.res->source_size = o.size;
	if (o.status)
		vote_fail(&mine, (npccl_status_t)o.status, "%s", o.msg);
	else if (!name || strcmp(name, o.name))
		vote_fail(&mine, NPCCL_ERR_MISMATCH, "this rank was given the name '%.60s', the root "
			  "'%.60s'", name ? name : "(NULL)", o.name);
	else if (s.loader)
		loader_check(&s, &o, &mine);
	st = exchange(&s, &mine);
	if (st)
		goto comm_failed;
	if (summarize(&s, "ready", &st, first, sizeof(first)))
		goto refused;

	/* 2. the bytes; 3. the staged copies */
	st = transfer(&s, &o, &mine);
	if (st)
		goto comm_failed;
	if (s.loader && !mine.status)
		stage(&s, path, &o, &mine);
	st = exchange(&s, &mine);
	if (st)
		goto comm_failed;
	if (summarize(&s, "verified copy staged", &st, first, sizeof(first)))
		goto refused;
	s.res->deduplicated = mine.dedup;

	/* 4. the names */
	if (s.loader)
		commit(&s, &o, &mine);
	st = exchange(&s, &mine);
	if (st)
		goto comm_failed;
	if (summarize(&s, "published", &st, first, sizeof(first)))
		goto refused;
	s.res->published = c->nhosts;
	cleanup(&s, &o, true);
	return NPCCL_OK;

refused:
	tls_error_set(c, "model load of '%.100s' on %d host(s) failed, nothing is published: %s",
		      o.name[0] ? o.name : name ? name : "?", c->nhosts, first);
	goto out;
comm_failed:
	snprintf(errsave, sizeof(errsave), "%s",
		 s.comm_err[0] ? s.comm_err : npccl_comm_last_error(c));
	snprintf(s.res->report, sizeof(s.res->report), "this host (rank %d): %s", c->rank, errsave);
	tls_error_set(c, "model load of '%.100s' failed, nothing is published from this host: %s",
		      o.name[0] ? o.name : name ? name : "?", errsave);
out:
	cleanup(&s, &o, false);
	return st;
}
