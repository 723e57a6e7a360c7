/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * model_copy.c - stream a safetensors file's data into its region while
 * computing the file's content hash (content_hash.h).
 *
 * The loading thread reads 1 MiB chunks into a ring of LOAD_SLOTS buffers
 * and hashes them; a writer thread scatters each chunk over the tensors it
 * covers, which is where the region's pages get allocated (the expensive
 * part on fresh memory), so reading and hashing overlap with allocation.
 * The progress callback runs on the loading thread; a writer failure comes
 * back to the loading thread with its message.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "content_hash.h"
#include "loader.h"

struct copier {
	struct load *ld;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint8_t *buf[LOAD_SLOTS];
	size_t len[LOAD_SLOTS];
	uint64_t pos[LOAD_SLOTS];
	unsigned head, tail;		/* filled: head - tail, reader fills head */
	bool done, failed;
	size_t ti;			/* writer's tensor cursor */
	struct npi_saved_error err;	/* the writer's failure, for the loading thread */
};

/* Scatter file data [@pos, @pos + @n) over the tensors it covers. */
static npushm_status_t scatter(struct copier *c, const uint8_t *buf, uint64_t pos, size_t n)
{
	const struct npi_st_header *h = c->ld->h;
	size_t used = 0;

	while (used < n) {
		const struct npi_st_tensor *t;
		uint64_t in_t, k;
		npushm_status_t st;

		while (c->ti < h->count && h->tensors[c->ti].end <= pos + used)
			c->ti++;
		t = &h->tensors[c->ti];
		in_t = pos + used - t->begin;
		k = t->end - (pos + used);
		if (k > n - used)
			k = n - used;
		if (c->ld->l.dst[c->ti] != NPI_NOT_STORED) {
			st = npi_load_put(c->ld->r, c->ld->map, buf + used, (size_t)k,
					  c->ld->l.dst[c->ti] + in_t);
			if (st)
				return st;
		}
		used += (size_t)k;
	}
	return NPUSHM_OK;
}

static void *writer_main(void *arg)
{
	struct copier *c = arg;

	for (;;) {
		unsigned slot;
		npushm_status_t st;

		pthread_mutex_lock(&c->mu);
		while (c->head == c->tail && !c->done && !c->failed)
			pthread_cond_wait(&c->cv, &c->mu);
		if (c->failed || c->head == c->tail) {
			pthread_mutex_unlock(&c->mu);
			return NULL;
		}
		slot = c->tail % LOAD_SLOTS;
		pthread_mutex_unlock(&c->mu);
		st = scatter(c, c->buf[slot], c->pos[slot], c->len[slot]);
		pthread_mutex_lock(&c->mu);
		if (st) {
			npi_error_save(&c->err);
			c->failed = true;
		}
		c->tail++;
		pthread_cond_broadcast(&c->cv);
		pthread_mutex_unlock(&c->mu);
		if (st)
			return NULL;
	}
}

/* Stream the data section into place, hashing the whole file on the way. */
npushm_status_t npi_load_copy(struct load *ld)
{
	const struct npi_st_header *h = ld->h;
	struct copier c = { .ld = ld, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
	uint64_t pos = 0, total = h->data_len;
	struct npi_content_hash ch = { 0 };
	npushm_status_t st;
	pthread_t writer;
	bool writer_running = false;

	st = npi_content_hash_init(&ch);
	for (int i = 0; i < LOAD_SLOTS && !st; i++) {
		c.buf[i] = aligned_alloc(4096, LOAD_CHUNK);
		if (!c.buf[i])
			st = npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot allocate the copy buffers");
	}
	if (st)
		goto out;
	npi_content_hash_update(&ch, ld->prefix, h->data_start);
	npi_load_progress(ld, NPUSHM_LOAD_COPY, 0, total);
	if (total && pthread_create(&writer, NULL, writer_main, &c)) {
		st = npi_fail(NPUSHM_ERR_SYSTEM, errno, "cannot start the copy thread");
		goto out;
	}
	writer_running = total > 0;
	while (pos < total) {
		size_t want = total - pos < LOAD_CHUNK ? (size_t)(total - pos) : LOAD_CHUNK;
		unsigned slot;
		size_t got;
		int err;

		pthread_mutex_lock(&c.mu);
		while (c.head - c.tail == LOAD_SLOTS && !c.failed)
			pthread_cond_wait(&c.cv, &c.mu);
		slot = c.head % LOAD_SLOTS;
		pthread_mutex_unlock(&c.mu);
		if (c.failed)
			break;
		err = npi_pread_full(ld->fd, c.buf[slot], want, h->data_start + pos, &got);
		if (err) {
			st = npi_fail(NPUSHM_ERR_IO, err, "cannot read '%s' at offset %llu", ld->path,
				      (unsigned long long)(h->data_start + pos));
			break;
		}
		if (got != want) {
			st = npi_fail(NPUSHM_ERR_IO, 0,
				      "'%s' ended at %llu bytes while %llu were expected: it was truncated while loading",
				      ld->path, (unsigned long long)(h->data_start + pos + got),
				      (unsigned long long)ld->st0.st_size);
			break;
		}
		npi_content_hash_update(&ch, c.buf[slot], got);
		pthread_mutex_lock(&c.mu);
		c.len[slot] = got;
		c.pos[slot] = pos;
		c.head++;
		pthread_cond_broadcast(&c.cv);
		pthread_mutex_unlock(&c.mu);
		pos += got;
		npi_load_progress(ld, NPUSHM_LOAD_COPY, pos, total);
	}
	pthread_mutex_lock(&c.mu);
	c.done = true;
	if (st)
		c.failed = true;
	pthread_cond_broadcast(&c.cv);
	pthread_mutex_unlock(&c.mu);
	if (writer_running)
		pthread_join(writer, NULL);
	if (!st && c.failed)
		st = npi_error_restore(&c.err);
	if (st)
		goto out;
	npi_content_hash_final(&ch, ld->hash);
	npi_hex(ld->hash, 16, ld->hash_hex);
out:
	for (int i = 0; i < LOAD_SLOTS; i++)
		free(c.buf[i]);
	npi_content_hash_free(&ch);
	return st;
}
