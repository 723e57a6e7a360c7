/* SPDX-License-Identifier: MIT */
/*
 * model_copy_direct.c - the loader's copy when the region can be written
 * through a mapping: read(2) straight into the mapped region (one copy, from
 * the page cache into the region), on up to LOAD_DIRECT_THREADS threads, and
 * hash the data in file order as the chunks land, while they are still in
 * the cache.
 *
 * Used for the kmod backend (its regions are allocated up front) and for a
 * posix region whose tmpfs gives it huge pages (the backend allocates all of
 * it first, so a full tmpfs is an error here rather than a SIGBUS in the
 * middle of the copy). The digest is the same XXH3-128 of the whole file as
 * model_copy.c computes: the data has no holes (safetensors.c), so hashing
 * the tensors in file order hashes every byte after the header.
 *
 * Chunks of 8 MiB are claimed in order from a shared cursor and read in
 * 256 KiB pieces. Whichever thread lands the piece that is next in file
 * order becomes the hasher and hashes everything landed from there on, so
 * the thread on the earliest chunk hashes each piece while it is still in
 * its L2; the others go on copying. Only the calling thread reports
 * progress (bytes hashed so far).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model_load.h"

#define LOAD_DIRECT_CHUNK (8u << 20)	/* claimed at a time: 4 huge pages */
#define LOAD_DIRECT_PIECE (256u << 10)	/* read at a time, hashed while in L2 */
#define LOAD_DIRECT_THREADS 4

struct direct {
	struct load *ld;
	pthread_mutex_t mu;
	uint64_t nchunks;
	uint64_t next;			/* next chunk to claim */
	uint64_t *landed;		/* per chunk: bytes from its start in the region */
	uint64_t hashed;		/* file-data bytes hashed, in order */
	bool hashing;			/* a thread is hashing */
	bool failed;
	struct npi_saved_error err;	/* the first failure, for the calling thread */
	XXH3_state_t *xs;
};

/* Tensor index holding file-data offset @pos (the data has no holes). */
static size_t tensor_at(const struct npi_st_header *h, uint64_t pos)
{
	size_t lo = 0, hi = h->count;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (h->tensors[mid].begin <= pos)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Walk file data [@pos, @end) tensor piece by tensor piece: read it from the
 * file into the region (@read) or hash it from the region (!@read).
 */
static npushm_status_t walk(struct direct *d, uint64_t pos, uint64_t end, bool read)
{
	const struct load *ld = d->ld;
	const struct npi_st_header *h = ld->h;
	size_t ti = tensor_at(h, pos);

	while (pos < end) {
		const struct npi_st_tensor *t;
		uint8_t *dst;
		uint64_t k;
		size_t got;
		int err;

		while (h->tensors[ti].end <= pos)
			ti++;
		t = &h->tensors[ti];
		k = (t->end < end ? t->end : end) - pos;
		dst = (uint8_t *)ld->map + ld->l.dst[ti] + (pos - t->begin);
		if (!read) {
			XXH3_128bits_update(d->xs, dst, (size_t)k);
			pos += k;
			continue;
		}
		err = npi_pread_full(ld->fd, dst, (size_t)k, h->data_start + pos, &got);
		if (err)
			return npi_fail(NPUSHM_ERR_IO, err, "cannot read '%s' at offset %llu", ld->path,
					(unsigned long long)(h->data_start + pos));
		if (got != k)
			return npi_fail(NPUSHM_ERR_IO, 0,
					"'%s' ended at %llu bytes while %llu were expected: it was truncated while loading",
					ld->path, (unsigned long long)(h->data_start + pos + got),
					(unsigned long long)ld->st0.st_size);
		pos += k;
	}
	return NPUSHM_OK;
}

/*
 * Called with d->mu held: hash everything landed from d->hashed on. The
 * thread reading the earliest unhashed chunk hashes each piece right after
 * reading it; a later chunk's pieces wait for it, and are hashed by whoever
 * lands the piece that makes them next.
 */
static void hash_landed(struct direct *d)
{
	if (d->hashing)
		return;
	d->hashing = true;
	while (!d->failed && d->hashed < d->ld->h->data_len) {
		uint64_t c = d->hashed / LOAD_DIRECT_CHUNK;
		uint64_t upto = c * LOAD_DIRECT_CHUNK + d->landed[c], from = d->hashed;

		if (upto <= from)
			break;
		pthread_mutex_unlock(&d->mu);
		walk(d, from, upto, false);
		pthread_mutex_lock(&d->mu);
		d->hashed = upto;
	}
	d->hashing = false;
}

/* Copy chunks until none is left or a thread failed; @report: the caller's thread. */
static void copy_chunks(struct direct *d, bool report)
{
	const uint64_t total = d->ld->h->data_len;

	for (;;) {
		uint64_t c, pos, end, to, done;

		pthread_mutex_lock(&d->mu);
		if (d->failed || d->next == d->nchunks) {
			pthread_mutex_unlock(&d->mu);
			return;
		}
		c = d->next++;
		pthread_mutex_unlock(&d->mu);

		end = (c + 1) * LOAD_DIRECT_CHUNK < total ? (c + 1) * LOAD_DIRECT_CHUNK : total;
		for (pos = c * LOAD_DIRECT_CHUNK; pos < end; pos = to) {
			npushm_status_t st;
			bool stop;

			to = pos + LOAD_DIRECT_PIECE < end ? pos + LOAD_DIRECT_PIECE : end;
			st = walk(d, pos, to, true);
			pthread_mutex_lock(&d->mu);
			if (st && !d->failed)
				npi_error_save(&d->err);
			if (st) {
				d->failed = true;
			} else {
				d->landed[c] = to - c * LOAD_DIRECT_CHUNK;
				hash_landed(d);
			}
			stop = d->failed;
			done = d->hashed;
			pthread_mutex_unlock(&d->mu);
			if (stop)
				return;
			if (report)
				npi_load_progress(d->ld, NPUSHM_LOAD_COPY, done, total);
		}
	}
}

static void *copy_thread(void *arg)
{
	copy_chunks(arg, false);
	return NULL;
}

static unsigned thread_count(uint64_t nchunks)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned n = cpus > 0 ? (unsigned)cpus : 1;

	if (n > LOAD_DIRECT_THREADS)
		n = LOAD_DIRECT_THREADS;
	if (n > nchunks)
		n = nchunks ? (unsigned)nchunks : 1;
	return n;
}

npushm_status_t npi_load_copy_direct(struct load *ld)
{
	const struct npi_st_header *h = ld->h;
	struct direct d = { .ld = ld, .mu = PTHREAD_MUTEX_INITIALIZER };
	pthread_t threads[LOAD_DIRECT_THREADS];
	unsigned n, started = 0;
	npushm_status_t st = NPUSHM_OK;

	d.nchunks = (h->data_len + LOAD_DIRECT_CHUNK - 1) / LOAD_DIRECT_CHUNK;
	d.landed = calloc(d.nchunks ? d.nchunks : 1, sizeof(*d.landed));
	d.xs = XXH3_createState();
	if (!d.landed || !d.xs) {
		st = npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot allocate the copy state");
		goto out;
	}
	XXH3_128bits_reset(d.xs);
	XXH3_128bits_update(d.xs, ld->prefix, h->data_start);
	npi_load_progress(ld, NPUSHM_LOAD_COPY, 0, h->data_len);

	n = thread_count(d.nchunks);
	while (started + 1 < n && !pthread_create(&threads[started], NULL, copy_thread, &d))
		started++;		/* fewer threads than asked for is only slower */
	copy_chunks(&d, true);
	for (unsigned i = 0; i < started; i++)
		pthread_join(threads[i], NULL);

	if (d.failed) {
		st = npi_error_restore(&d.err);
		goto out;
	}
	XXH128_canonicalFromHash((XXH128_canonical_t *)ld->hash, XXH3_128bits_digest(d.xs));
	npi_hex(ld->hash, 16, ld->hash_hex);
	npi_load_progress(ld, NPUSHM_LOAD_COPY, h->data_len, h->data_len);
out:
	free(d.landed);
	XXH3_freeState(d.xs);
	return st;
}
