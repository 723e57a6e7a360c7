/* SPDX-License-Identifier: MIT */
/*
 * content_hash.c - the model content hash (see content_hash.h): XXH3-128
 * over the XXH3-128 digests of the file's 8 MiB blocks.
 */
#include <errno.h>
#include <string.h>

#include "content_hash.h"
#include "internal.h"

npushm_status_t npi_content_hash_init(struct npi_content_hash *c)
{
	c->block = XXH3_createState();
	c->top = XXH3_createState();
	c->pos = 0;
	if (!c->block || !c->top) {
		npi_content_hash_free(c);
		return npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot allocate the hash state");
	}
	XXH3_128bits_reset(c->block);
	XXH3_128bits_reset(c->top);
	return NPUSHM_OK;
}

/* Close the block being fed: its digest goes into the top-level hash. */
static void end_block(struct npi_content_hash *c)
{
	XXH128_canonical_t d;

	XXH128_canonicalFromHash(&d, XXH3_128bits_digest(c->block));
	XXH3_128bits_update(c->top, &d, sizeof(d));
	XXH3_128bits_reset(c->block);
}

void npi_content_hash_update(struct npi_content_hash *c, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		uint64_t room = NPI_HASH_BLOCK - c->pos % NPI_HASH_BLOCK;
		size_t k = n < room ? n : (size_t)room;

		XXH3_128bits_update(c->block, b, k);
		c->pos += k;
		b += k;
		n -= k;
		if (c->pos % NPI_HASH_BLOCK == 0)
			end_block(c);
	}
}

void npi_content_hash_final(struct npi_content_hash *c, uint8_t out[16])
{
	if (c->pos % NPI_HASH_BLOCK)
		end_block(c);
	XXH128_canonicalFromHash((XXH128_canonical_t *)out, XXH3_128bits_digest(c->top));
}

void npi_content_hash_free(struct npi_content_hash *c)
{
	XXH3_freeState(c->block);
	XXH3_freeState(c->top);
	c->block = NULL;
	c->top = NULL;
}

void npi_content_hash_combine(const uint8_t (*blocks)[16], uint64_t n, uint8_t out[16])
{
	XXH128_canonicalFromHash((XXH128_canonical_t *)out, XXH3_128bits(blocks, (size_t)n * 16));
}
