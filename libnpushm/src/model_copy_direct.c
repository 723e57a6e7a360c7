/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * model_copy_direct.c - the loader's copy when the region can be written
 * through a mapping: read(2) straight into the mapped region (one copy, from
 * the page cache into the region), on up to LOAD_DIRECT_THREADS threads,
 * each hashing what it has just read while it is still in its cache.
 *
 * Used for the kmod backend (its regions are allocated up front) and for a
 * posix region whose tmpfs gives it huge pages (the backend allocates all of
 * it first, so a full tmpfs is an error here rather than a SIGBUS in the
 * middle of the copy).
 *
 * The threads claim the file's 8 MiB hash blocks (content_hash.h) in order
 * from a shared cursor. A thread reads its block's data in 256 KiB pieces,
 * each into its place in the region, and feeds each piece to the block's
 * hash right after reading it; the header bytes at the start of the file
 * are hashed from memory. The block digests give the same content hash as
 * the sequential path (model_copy.c). Only the calling thread reports
 * progress (bytes copied so far, by all threads).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "content_hash.h"
#include "loader.h"

#define LOAD_DIRECT_PIECE (256u << 10)	/* read at a time, hashed while in L2 */
#define LOAD_DIRECT_THREADS 4

struct direct {
	struct load *ld;
	uint64_t nblocks;
	uint8_t (*digest)[16];		/* per block */
	atomic_uint_fast64_t next;	/* next block to claim */
	atomic_uint_fast64_t copied;	/* file-data bytes in the region */
	atomic_bool failed;
	pthread_mutex_t mu;		/* guards err */
	struct npi_saved_error err;	/* the first failure, for the calling thread */
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
 * Read file data [@pos, @end) into the region, tensor piece by tensor
 * piece, feeding each piece to @xs once it is in place.
 */
static npushm_status_t read_hash(const struct load *ld, uint64_t pos, uint64_t end, XXH3_state_t *xs)
{
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
		err = npi_pread_full(ld->fd, dst, (size_t)k, h->data_start + pos, &got);
		if (err)
			return npi_fail(NPUSHM_ERR_IO, err, "cannot read '%s' at offset %llu", ld->path,
					(unsigned long long)(h->data_start + pos));
		if (got != k)
			return npi_fail(NPUSHM_ERR_IO, 0,
					"'%s' ended at %llu bytes while %llu were expected: it was truncated while loading",
					ld->path, (unsigned long long)(h->data_start + pos + got),
					(unsigned long long)ld->st0.st_size);
		npi_xxh3_128_update(xs, dst, (size_t)k);
		pos += k;
	}
	return NPUSHM_OK;
}

/* Copy and hash block @b (file bytes [b * NPI_HASH_BLOCK, ...)). */
static npushm_status_t copy_block(struct direct *d, uint64_t b, XXH3_state_t *xs, bool report)
{
	const struct load *ld = d->ld;
	const uint64_t start = ld->h->data_start, fsize = start + ld->h->data_len;
	uint64_t pos = b * NPI_HASH_BLOCK;
	uint64_t end = fsize - pos < NPI_HASH_BLOCK ? fsize : pos + NPI_HASH_BLOCK;

	XXH3_128bits_reset(xs);
	if (pos < start) {
		uint64_t k = (end < start ? end : start) - pos;

		npi_xxh3_128_update(xs, ld->prefix + pos, (size_t)k);
		pos += k;
	}
	while (pos < end) {
		uint64_t to = end - pos < LOAD_DIRECT_PIECE ? end : pos + LOAD_DIRECT_PIECE;
		npushm_status_t st = read_hash(ld, pos - start, to - start, xs);
		uint64_t done;

		if (st)
			return st;
		done = atomic_fetch_add(&d->copied, to - pos) + (to - pos);
		pos = to;
		if (atomic_load(&d->failed))
			return NPUSHM_OK;	/* the failing thread has the message */
		if (report)
			npi_load_progress(ld, NPUSHM_LOAD_COPY, done, ld->h->data_len);
	}
	XXH128_canonicalFromHash((XXH128_canonical_t *)d->digest[b], XXH3_128bits_digest(xs));
	return NPUSHM_OK;
}

/* Stop every thread; the first to fail keeps its message for the caller. */
static void record_failure(struct direct *d)
{
	pthread_mutex_lock(&d->mu);
	if (!atomic_exchange(&d->failed, true))
		npi_error_save(&d->err);
	pthread_mutex_unlock(&d->mu);
}

/* Copy blocks until none is left or a thread failed; @report: the caller's thread. */
static void copy_blocks(struct direct *d, bool report)
{
	XXH3_state_t *xs = XXH3_createState();

	if (!xs) {
		npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot allocate a hash state");
		record_failure(d);
		return;
	}
	while (!atomic_load(&d->failed)) {
		uint64_t b = atomic_fetch_add(&d->next, 1);
		npushm_status_t st;

		if (b >= d->nblocks)
			break;
		st = copy_block(d, b, xs, report);
		if (st) {
			record_failure(d);
			break;
		}
	}
	XXH3_freeState(xs);
}

static void *copy_thread(void *arg)
{
	copy_blocks(arg, false);
	return NULL;
}

static unsigned thread_count(uint64_t nblocks)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned n = cpus > 0 ? (unsigned)cpus : 1;

	if (n > LOAD_DIRECT_THREADS)
		n = LOAD_DIRECT_THREADS;
	if (n > nblocks)
		n = (unsigned)nblocks;
	return n;
}

npushm_status_t npi_load_copy_direct(struct load *ld)
{
	const struct npi_st_header *h = ld->h;
	struct direct d = { .ld = ld, .mu = PTHREAD_MUTEX_INITIALIZER };
	pthread_t threads[LOAD_DIRECT_THREADS];
	unsigned n, started = 0;
	npushm_status_t st = NPUSHM_OK;

	/* The file holds at least the 8-byte length, so there is a block. */
	d.nblocks = (h->data_start + h->data_len + NPI_HASH_BLOCK - 1) / NPI_HASH_BLOCK;
	d.digest = calloc(d.nblocks, sizeof(*d.digest));
	if (!d.digest)
		return npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot allocate the copy state");
	npi_load_progress(ld, NPUSHM_LOAD_COPY, 0, h->data_len);

	n = thread_count(d.nblocks);
	while (started + 1 < n && !pthread_create(&threads[started], NULL, copy_thread, &d))
		started++;		/* fewer threads than asked for is only slower */
	copy_blocks(&d, true);
	for (unsigned i = 0; i < started; i++)
		pthread_join(threads[i], NULL);

	if (atomic_load(&d.failed)) {
		st = npi_error_restore(&d.err);
		goto out;
	}
	npi_content_hash_combine((const uint8_t (*)[16])d.digest, d.nblocks, ld->hash);
	npi_hex(ld->hash, 16, ld->hash_hex);
	npi_load_progress(ld, NPUSHM_LOAD_COPY, h->data_len, h->data_len);
out:
	free(d.digest);
	return st;
}
