/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * content_hash.h - the content hash of a model file, which names its
 * published copy ("xxh3:<hex>") and finds it again for deduplication.
 *
 * XXH3-128 (libxxhash) of the concatenated XXH3-128 digests (canonical,
 * big-endian) of the file's 8 MiB blocks, in file order; the last block may
 * be short. The blocks hash independently, so each loader thread hashes the
 * block it copies while that block is still in its cache. With the xxhash
 * command line tools the same value comes out of:
 *
 *   split -b 8M FILE part. && for p in part.*; do xxhsum -H2 "$p"; done |
 *	cut -d' ' -f1 | xxd -r -p | xxhsum -H2
 *
 * Not thread-safe per object; separate objects are independent.
 */
#ifndef NPUSHM_CONTENT_HASH_H
#define NPUSHM_CONTENT_HASH_H

#include <stddef.h>
#include <stdint.h>

#include <xxhash.h>

#include "npushm.h"

#define NPI_HASH_BLOCK (8ull << 20)

/* Fed the file's bytes in order, from offset 0. */
struct npi_content_hash {
	XXH3_state_t *block;		/* the block being fed */
	XXH3_state_t *top;		/* over the finished blocks' digests */
	uint64_t pos;			/* bytes fed so far */
};

/* NO_MEMORY when the hash states cannot be allocated. */
npushm_status_t npi_content_hash_init(struct npi_content_hash *c);
void npi_content_hash_update(struct npi_content_hash *c, const void *p, size_t n);
/* The hash of everything fed, canonical (big-endian) into @out. */
void npi_content_hash_final(struct npi_content_hash *c, uint8_t out[16]);
void npi_content_hash_free(struct npi_content_hash *c);

/* The hash of the whole file open as @fd (read from offset 0; @path for messages). */
npushm_status_t npi_content_hash_fd(int fd, const char *path, uint8_t out[16]);

/*
 * XXH3-128 of @n bytes, one-shot and streaming, for the bulk of the data:
 * through libxxhash's run-time SIMD dispatch (AVX2/AVX-512 where the CPU has
 * them) when the linked libxxhash has it. The shared library does; Debian's
 * static libxxhash.a does not, so a fully static program hashes with
 * libxxhash's baseline code. The values are the same either way.
 */
XXH128_hash_t npi_xxh3_128(const void *p, size_t n);
void npi_xxh3_128_update(XXH3_state_t *s, const void *p, size_t n);

/* The hash from the @n block digests a parallel pass computed (canonical each). */
void npi_content_hash_combine(const uint8_t (*blocks)[16], uint64_t n, uint8_t out[16]);

#endif
