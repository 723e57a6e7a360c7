/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * model_cluster.c - npushm_cluster_load: one model load for a whole cluster,
 * over the caller's collectives (npushm_cluster.h has the contract).
 *
 * Phases, every rank taking part in every collective so that a local
 * failure becomes a vote instead of a hang:
 *  1. offer: the root broadcasts name, size, content hash and its own
 *     verdict on the file; every rank checks the name against its own
 *     argument, each host's loader that the name is free; allgather of
 *     verdicts (struct vote);
 *  2. transfer: the file in chunks through the caller's chunk buffer,
 *     written by each receiving loader into a memory file;
 *  3. stage: each loader loads its copy under a staging name and compares
 *     the content hash with the root's; allgather of verdicts;
 *  4. commit: each loader publishes the real name on its staged region and
 *     drops the staging name; allgather of verdicts; where any host failed,
 *     the hosts that published remove the name again.
 * A collective that fails ends the load on this rank at once: its staging
 * name (if any) is removed and nothing is published; before phase 4 no
 * real name exists anywhere.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "npushm_cluster.h"

#define OFFER_MAGIC 0x4e504d4cu	/* "NPML" */
#define STAGING_PREFIX "npccl-staging."
#define CHUNK_MAX (4u << 20)
#define MSG_LEN 232

struct offer {			/* root -> all */
	uint32_t magic;
	int32_t cause;		/* NPUSHM_CLUSTER_OK or why the root cannot offer the file */
	uint64_t size;
	uint8_t hash[16];
	uint32_t mode;
	uint32_t pad;
	char name[NPUSHM_NAME_MAX + 1];
	char msg[MSG_LEN];
};

struct vote {			/* every rank -> all */
	int32_t cause;
	int32_t loader;		/* this rank loads for its host */
	int32_t dedup;
	int32_t published;
	char msg[MSG_LEN];
};

struct share {
	const npushm_cluster_ops_t *ops;
	int root;
	bool loader;		/* this rank loads for its host */
	npushm_dev_t *dev;
	char staging[NPUSHM_NAME_MAX + 1];
	bool staged, published;
	int memfd;
	int filefd;
	struct vote *votes;
	npushm_cluster_result_t *res;
	char comm_err[600];	/* why the failed collective failed */
	bool nomem;		/* ... it did not: no memory for the chunk buffer */
};

static void hex16(const uint8_t h[16], char out[33])
{
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", h[i]);
}

static void vote_fail(struct vote *v, npushm_cluster_cause_t cause, const char *fmt, ...)
	NPI_PRINTF(3, 4);
static void vote_fail(struct vote *v, npushm_cluster_cause_t cause, const char *fmt, ...)
{
	va_list ap;
	if (v->cause)
		return;		/* the first reason stays */
	v->cause = cause;
	va_start(ap, fmt);
	vsnprintf(v->msg, sizeof(v->msg), fmt, ap);
	va_end(ap);
}

/* a collective's verdict: false (and why, kept) when it failed */
static bool collective_ok(struct share *s, int rc)
{
	if (!rc)
		return true;
	if (!s->comm_err[0]) {
		const char *why = s->ops->last_error ? s->ops->last_error(s->ops->ctx) : NULL;
		snprintf(s->comm_err, sizeof(s->comm_err), "%s", why && *why ? why : "a collective failed");
	}
	return false;
}

/* every rank's vote */
static bool exchange(struct share *s, struct vote *mine)
{
	return collective_ok(s, s->ops->allgather(s->ops->ctx, mine, s->votes, sizeof(*mine)));
}

static int host_of(const struct share *s, int rank)
{
	return s->ops->host_of(s->ops->ctx, rank);
}

static const char *host_name(const struct share *s, int rank)
{
	const char *n = s->ops->host_name ? s->ops->host_name(s->ops->ctx, rank) : NULL;
	return n ? n : "?";
}

/* The per-host report from the last exchange and the first failure. */
static int summarize(struct share *s, const char *phase, npushm_cluster_cause_t *cause,
		     char *first, size_t firstlen)
{
	char *rep = s->res->report;
	size_t len = 0;
	int bad = 0;
	*cause = NPUSHM_CLUSTER_OK;
	first[0] = 0;
	rep[0] = 0;
	for (int i = 0; i < s->ops->nranks; i++) {
		const struct vote *v = &s->votes[i];
		if (!v->loader && !v->cause)
			continue;
		int w = snprintf(rep + len, NPUSHM_CLUSTER_REPORT_LEN - len,
				 "%shost %d (rank %d on %.40s): %s", len ? "; " : "", host_of(s, i), i,
				 host_name(s, i), v->cause ? v->msg : phase);
		if (w > 0 && len + (size_t)w < NPUSHM_CLUSTER_REPORT_LEN)
			len += (size_t)w;
		if (v->cause && !bad++) {
			*cause = (npushm_cluster_cause_t)v->cause;
			snprintf(first, firstlen, "host %d (rank %d on %.40s): %s", host_of(s, i), i,
				 host_name(s, i), v->msg);
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
				npi_log(NPUSHM_LOG_INFO, "cluster load: removing the stale staging name %s "
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
		o->cause = NPUSHM_CLUSTER_INPUT;
		snprintf(o->msg, sizeof(o->msg), "the root was given no model file to read");
		return;
	}
	/* O_NONBLOCK: a FIFO without a writer is refused below, not waited on. */
	s->filefd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (s->filefd < 0 || fstat(s->filefd, &st) || !S_ISREG(st.st_mode)) {
		o->cause = NPUSHM_CLUSTER_INPUT;
		snprintf(o->msg, sizeof(o->msg), "cannot read the model file '%.150s' on the root: %s",
			 path, s->filefd < 0 ? strerror(errno) : "not a regular file");
		return;
	}
	fcntl(s->filefd, F_SETFL, 0);
	if (npushm_file_hash(path, o->hash, hex) != NPUSHM_OK) {
		o->cause = NPUSHM_CLUSTER_INPUT;
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
		vote_fail(v, NPUSHM_CLUSTER_HOST, "no npushm device: %s", npushm_last_error());
		return;
	}
	drop_stale_staging(s);
	npushm_status_t ns = npushm_region_open(s->dev, o->name, 0, &r);
	if (ns == NPUSHM_OK)
		npushm_region_close(r);
	if (ns == NPUSHM_OK || ns == NPUSHM_ERR_ACCESS) {
		vote_fail(v, NPUSHM_CLUSTER_INPUT, "the name '%.100s' is already published on this "
			  "host; remove it first or choose another", o->name);
		return;
	}
	if (ns != NPUSHM_ERR_NOT_FOUND) {
		vote_fail(v, NPUSHM_CLUSTER_HOST, "cannot look up the name '%.100s': %s", o->name,
			  npushm_last_error());
		return;
	}
	if (s->root != s->ops->rank) {
		s->memfd = memfd_create("npushm-cluster-model", MFD_CLOEXEC);
		if (s->memfd < 0 || ftruncate(s->memfd, (off_t)o->size))
			vote_fail(v, NPUSHM_CLUSTER_HOST, "cannot make a memory file of %llu bytes: %s",
				  (unsigned long long)o->size, strerror(errno));
	}
}

/* phase 2: the bytes; a local failure is remembered, the broadcasts go on.
 * False when a collective failed. */
static bool transfer(struct share *s, const struct offer *o, struct vote *v)
{
	const npushm_cluster_ops_t *ops = s->ops;
	size_t chunk = (size_t)(o->size < CHUNK_MAX ? (o->size ? o->size : 1) : CHUNK_MAX);
	void *buf = ops->chunk_alloc ? ops->chunk_alloc(ops->ctx, chunk) : malloc(chunk);
	bool ok = true;
	if (!buf && !ops->chunk_alloc) {
		/* this rank cannot take part in the broadcasts: its peers' fail */
		s->nomem = true;
		snprintf(s->comm_err, sizeof(s->comm_err), "no memory for a chunk of %zu bytes", chunk);
		return false;
	}
	if (!buf)
		return collective_ok(s, -1);
	for (uint64_t off = 0; off < o->size && ok; off += chunk) {
		size_t n = (size_t)(o->size - off < chunk ? o->size - off : chunk);
		if (ops->rank == s->root && !v->cause && pread(s->filefd, buf, n, (off_t)off) != (ssize_t)n)
			vote_fail(v, NPUSHM_CLUSTER_INPUT, "reading the model file at byte %llu failed: %s",
				  (unsigned long long)off, errno ? strerror(errno) : "short read");
		ok = collective_ok(s, ops->broadcast(ops->ctx, buf, n, s->root));
		if (ok && s->memfd >= 0 && !v->cause && pwrite(s->memfd, buf, n, (off_t)off) != (ssize_t)n)
			vote_fail(v, NPUSHM_CLUSTER_HOST, "writing the received bytes failed: %s",
				  strerror(errno));
	}
	if (ops->chunk_alloc)
		ops->chunk_free(ops->ctx, buf);
	else
		free(buf);
	return ok;
}

/* phase 3 on a loader: load under the staging name, compare hashes */
static void stage(struct share *s, const char *path, const struct offer *o, struct vote *v)
{
	char src[64], want[33];
	npushm_load_result_t lr;
	npushm_load_opts_t lo = { .mode = o->mode };
	if (s->ops->rank != s->root) {
		snprintf(src, sizeof(src), "/proc/self/fd/%d", s->memfd);
		path = src;
	}
	hex16(o->hash, want);
	snprintf(s->staging, sizeof(s->staging), STAGING_PREFIX "%ld.%s", (long)getpid(), want);
	npushm_status_t ls = npushm_model_load(s->dev, path, s->staging, &lo, &lr);
	if (ls != NPUSHM_OK) {
		/* a file that is no model is the caller's input, the rest this host's trouble */
		vote_fail(v, ls == NPUSHM_ERR_FORMAT ? NPUSHM_CLUSTER_INPUT : NPUSHM_CLUSTER_HOST,
			  "loading %s failed: %s", s->ops->rank == s->root ? "the model file" :
			  "the received copy", npushm_last_error());
		return;
	}
	s->staged = true;
	v->dedup = lr.deduplicated;
	if (memcmp(lr.hash, o->hash, 16))
		vote_fail(v, NPUSHM_CLUSTER_HASH, "content hash on arrival is %s, the root's is %s "
			  "(the file changed on the root during the load, or the bytes were corrupted)",
			  lr.hash_hex, want);
}

/* phase 4 on a loader: the real name on the staged region */
static void commit(struct share *s, const struct offer *o, struct vote *v)
{
	npushm_region_t *r;
	if (npushm_region_open(s->dev, s->staging, 0, &r) != NPUSHM_OK) {
		vote_fail(v, NPUSHM_CLUSTER_HOST, "the staged copy vanished: %s", npushm_last_error());
		return;
	}
	if (npushm_region_publish(r, o->name, o->mode, 0) != NPUSHM_OK)
		vote_fail(v, NPUSHM_CLUSTER_HOST, "publishing '%.100s' failed: %s", o->name,
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
	struct npi_saved_error e;
	npi_error_save(&e);
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
	npi_error_restore(&e);
}

/* the loader of a host: the root on its host, else the host's lowest rank */
static bool is_loader(const struct share *s, int rank)
{
	int h = host_of(s, rank);
	if (h == host_of(s, s->root))
		return rank == s->root;
	for (int i = 0; i < s->ops->nranks; i++)
		if (host_of(s, i) == h)
			return i == rank;
	return false;
}

static int count_hosts(const struct share *s)
{
	int n = 0;
	for (int i = 0; i < s->ops->nranks; i++) {
		int j = 0;
		while (j < i && host_of(s, j) != host_of(s, i))
			j++;
		n += j == i;
	}
	return n;
}

static const npushm_status_t cause_status[] = {
	[NPUSHM_CLUSTER_OK] = NPUSHM_OK,
	[NPUSHM_CLUSTER_INPUT] = NPUSHM_ERR_INVALID,
	[NPUSHM_CLUSTER_MISMATCH] = NPUSHM_ERR_INVALID,
	[NPUSHM_CLUSTER_HASH] = NPUSHM_ERR_CORRUPT,
	[NPUSHM_CLUSTER_HOST] = NPUSHM_ERR_SYSTEM,
	[NPUSHM_CLUSTER_NO_MEMORY] = NPUSHM_ERR_NO_MEMORY,
	[NPUSHM_CLUSTER_TRANSPORT] = NPUSHM_ERR_PROTOCOL,
};

static npushm_status_t fail(npushm_cluster_result_t *res, npushm_cluster_cause_t cause,
			    const char *fmt, ...) NPI_PRINTF(3, 4);
static npushm_status_t fail(npushm_cluster_result_t *res, npushm_cluster_cause_t cause,
			    const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	res->cause = cause;
	return npi_fail(cause_status[cause], 0, "%s", msg);
}

npushm_status_t npushm_cluster_load(const npushm_cluster_ops_t *ops, int root, const char *path,
				    const char *name, uint32_t mode,
				    npushm_cluster_result_t *result)
{
	npushm_cluster_result_t local;
	struct share s = { .ops = ops, .root = root, .memfd = -1, .filefd = -1,
			   .res = result ? result : &local };
	struct offer o = { .magic = OFFER_MAGIC };
	struct vote mine = { 0 };
	npushm_cluster_cause_t cause = NPUSHM_CLUSTER_OK;
	char first[400];

	memset(s.res, 0, sizeof(*s.res));
	if (!ops || !ops->host_of || !ops->broadcast || !ops->allgather || ops->nranks < 1 ||
	    ops->rank < 0 || ops->rank >= ops->nranks || !ops->chunk_alloc != !ops->chunk_free)
		return fail(s.res, NPUSHM_CLUSTER_INPUT, "cluster load: the ranks' table is incomplete "
			    "(host_of, broadcast, allgather, rank within nranks, and chunk_alloc "
			    "with chunk_free)");
	s.res->nhosts = count_hosts(&s);
	if (root < 0 || root >= ops->nranks)
		return fail(s.res, NPUSHM_CLUSTER_INPUT, "model load: root %d is not a rank of "
			    "this communicator (0..%d)", root, ops->nranks - 1);
	s.votes = calloc((size_t)ops->nranks, sizeof(*s.votes));
	if (!s.votes)
		return fail(s.res, NPUSHM_CLUSTER_NO_MEMORY, "model load: no memory for %d votes",
			    ops->nranks);
	s.loader = is_loader(&s, ops->rank);
	mine.loader = s.loader;

	/* 1. the offer */
	if (ops->rank == root) {
		o.mode = mode ? mode : 0640;
		if (!name || npushm_name_check(name) != NPUSHM_OK) {
			o.cause = NPUSHM_CLUSTER_INPUT;
			snprintf(o.msg, sizeof(o.msg), "bad model name on the root: %s",
				 !name ? "no name given" : npushm_last_error());
		} else if (!strncmp(name, STAGING_PREFIX, strlen(STAGING_PREFIX))) {
			o.cause = NPUSHM_CLUSTER_INPUT;
			snprintf(o.msg, sizeof(o.msg), "bad model name on the root: the prefix "
				 STAGING_PREFIX " is reserved for staging copies");
		} else if (!strncmp(name, NPUSHM_HASH_ALIAS_PREFIX, strlen(NPUSHM_HASH_ALIAS_PREFIX))) {
			/* as npushm_model_load */
			o.cause = NPUSHM_CLUSTER_INPUT;
			snprintf(o.msg, sizeof(o.msg), "bad model name on the root: the prefix "
				 NPUSHM_HASH_ALIAS_PREFIX " is reserved for content-hash aliases");
		} else if (mode & ~0666u) {
			o.cause = NPUSHM_CLUSTER_INPUT;
			snprintf(o.msg, sizeof(o.msg), "mode %o has bits outside 0666", mode);
		} else {
			snprintf(o.name, sizeof(o.name), "%s", name);
			root_offer(&s, path, &o);
		}
	}
	if (!collective_ok(&s, ops->broadcast(ops->ctx, &o, sizeof(o), root)))
		goto comm_failed;
	if (o.magic != OFFER_MAGIC) {
		fail(s.res, NPUSHM_CLUSTER_MISMATCH, "model load: rank %d is not in a model load with "
		     "root %d (mismatched calls)", root, root);
		goto out;
	}
	memcpy(s.res->hash, o.hash, 16);
	hex16(o.hash, s.res->hash_hex);
	s.res->source_size = o.size;
	if (o.cause)
		vote_fail(&mine, (npushm_cluster_cause_t)o.cause, "%s", o.msg);
	else if (!name || strcmp(name, o.name))
		vote_fail(&mine, NPUSHM_CLUSTER_MISMATCH, "this rank was given the name '%.60s', the "
			  "root '%.60s'", name ? name : "(NULL)", o.name);
	else if (s.loader)
		loader_check(&s, &o, &mine);
	if (!exchange(&s, &mine))
		goto comm_failed;
	if (summarize(&s, "ready", &cause, first, sizeof(first)))
		goto refused;

	/* 2. the bytes; 3. the staged copies */
	if (!transfer(&s, &o, &mine))
		goto comm_failed;
	if (s.loader && !mine.cause)
		stage(&s, path, &o, &mine);
	if (!exchange(&s, &mine))
		goto comm_failed;
	if (summarize(&s, "verified copy staged", &cause, first, sizeof(first)))
		goto refused;
	s.res->deduplicated = mine.dedup;

	/* 4. the names */
	if (s.loader)
		commit(&s, &o, &mine);
	if (!exchange(&s, &mine))
		goto comm_failed;
	if (summarize(&s, "published", &cause, first, sizeof(first)))
		goto refused;
	s.res->published = s.res->nhosts;
	cleanup(&s, &o, true);
	return NPUSHM_OK;

refused:
	fail(s.res, cause, "model load of '%.100s' on %d host(s) failed, nothing is published: %s",
	     o.name[0] ? o.name : name ? name : "?", s.res->nhosts, first);
	goto out;
comm_failed:
	snprintf(s.res->report, sizeof(s.res->report), "this host (rank %d): %s", ops->rank,
		 s.comm_err);
	fail(s.res, s.nomem ? NPUSHM_CLUSTER_NO_MEMORY : NPUSHM_CLUSTER_TRANSPORT,
	     "model load of '%.100s' failed, nothing is "
	     "published from this host: %s", o.name[0] ? o.name : name ? name : "?", s.comm_err);
out:
	cleanup(&s, &o, false);
	return cause_status[s.res->cause];
}
