/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * unpack.c - packed weights back to plain float32, read from their tag alone
 * (no oneDNN needed): what a process does with a layout made for another
 * CPU or library when the model has no plain copy of the weight.
 *
 * A tag of pack.c spells out the whole blocked layout: "onednn-V/ISA/DT/
 * kK.nN/padPK.PN/strSK.SN/blk<b0><d0><b1><d1>..." (then "/x<flags>.<mask>/
 * scales-per-n" for int8). Element (k, n) of the [K, N] operand is at
 *   (k / BK) * SK + (n / BN) * SN + inner(k % BK, n % BN)
 * with BK, BN the products of the inner blocks along k and n, and inner the
 * mixed-radix number whose digits are the inner blocks in tag order (the
 * first the most significant), each digit the block's share of its
 * dimension's remainder. DT f32: float32; bf16: bfloat16 (widened exactly);
 * bf16x3: two such bf16 blocks, the high terms then the low ones from the
 * next 64-byte boundary, each element their sum;
 * s8: the N float32 scales padded to 64 bytes, then int8 values
 * (w = q * scale[n]); anything after the blocked bytes (int8's compensation)
 * is not read.
 *
 * Contracts: a tag that is not exactly this grammar, with a dtype this
 * library knows, is refused before a byte is read (NPT_E_UNSUPPORTED), as is
 * one with no NUL in its first NPT_PACK_TAG_MAX bytes (nothing past them is
 * read); numbers above 2^40 and blocks whose product exceeds the padding
 * are refused before any arithmetic on them; a
 * layout whose sizes, strides or blocks would reach outside @nbytes, or
 * whose shape is not the caller's, is NPT_E_INVAL. Thread-safe.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define MAX_BLKS 6

typedef struct {
	int dt;                 /* NPT_F32, NPT_BF16, NPT_PACKED_BF16X3 or NPT_I8 */
	int64_t K, N, padK, padN, strK, strN;
	int nblk;
	int64_t blk[MAX_BLKS];
	int idx[MAX_BLKS];      /* 0: along k, 1: along n */
} layout_t;

/* "<digits>" at *p into *v (> 0), advancing *p */
static int number(const char **p, int64_t *v)
{
	char *end;
	long long x;

	if (**p < '0' || **p > '9')
		return 0;
	x = strtoll(*p, &end, 10);
	if (x <= 0 || x > (1ll << 40))
		return 0;
	*v = x;
	*p = end;
	return 1;
}

static int expect(const char **p, const char *lit)
{
	size_t n = strlen(lit);

	if (strncmp(*p, lit, n))
		return 0;
	*p += n;
	return 1;
}

static int parse(const char *tag, layout_t *l)
{
	const char *p = tag, *slash;

	memset(l, 0, sizeof(*l));
	if (!expect(&p, "onednn-") || !(slash = strchr(p, '/')) || !(slash = strchr(slash + 1, '/')))
		return 0;
	p = slash + 1;   /* past the version and the ISA: the bytes do not depend on them */
	if (expect(&p, "f32/"))
		l->dt = NPT_F32;
	else if (expect(&p, "bf16/"))
		l->dt = NPT_BF16;
	else if (expect(&p, "bf16x3/"))
		l->dt = NPT_PACKED_BF16X3;
	else if (expect(&p, "s8/"))
		l->dt = NPT_I8;
	else
		return 0;
	if (!expect(&p, "k") || !number(&p, &l->K) || !expect(&p, ".n") || !number(&p, &l->N) ||
	    !expect(&p, "/pad") || !number(&p, &l->padK) || !expect(&p, ".") ||
	    !number(&p, &l->padN) || !expect(&p, "/str") || !number(&p, &l->strK) ||
	    !expect(&p, ".") || !number(&p, &l->strN) || !expect(&p, "/blk"))
		return 0;
	while (*p >= '0' && *p <= '9') {
		if (l->nblk == MAX_BLKS || !number(&p, &l->blk[l->nblk]) || (*p != 'k' && *p != 'n'))
			return 0;
		l->idx[l->nblk++] = *p++ == 'n';
	}
	if (l->dt == NPT_I8) {
		/* oneDNN's compensation flags and mask, then the scales' note */
		if (!expect(&p, "/x") || !(p = strchr(p, '/')) || !expect(&p, "/scales-per-n"))
			return 0;
	}
	return *p == '\0';
}

/* inner blocks along dimension @d: their product, or 0 when it does not
 * divide the padding (a product above the padding never does: checked
 * before it can overflow) */
static int64_t block_of(const layout_t *l, int d)
{
	int64_t b = 1, pad = d ? l->padN : l->padK;

	for (int i = 0; i < l->nblk; i++)
		if (l->idx[i] == d && (__builtin_mul_overflow(b, l->blk[i], &b) || b > pad))
			return 0;
	return pad % b ? 0 : b;
}

static int64_t offset_of(const layout_t *l, int64_t k, int64_t n, int64_t bk, int64_t bn)
{
	int64_t rem[2] = { k % bk, n % bn }, div[2] = { bk, bn }, inner = 0;

	for (int i = 0; i < l->nblk; i++) {
		int d = l->idx[i];

		div[d] /= l->blk[i];
		inner = inner * l->blk[i] + rem[d] / div[d] % l->blk[i];
	}
	return k / bk * l->strK + n / bn * l->strN + inner;
}

NPT_API npt_status_t npt_unpack_weight(const char *tag, const void *data, size_t nbytes,
				       int64_t n, int64_t k, float *dst)
{
	layout_t l;
	int64_t bk, bn, cells;
	size_t esz, sb = 0, lo = 0;
	const char *base = data;

	if (!tag || !data || !dst)
		return npt_fail(NPT_E_INVAL, "unpack_weight: tag, data and dst are required");
	if (npt_tag_too_long(tag))
		return npt_fail(NPT_E_UNSUPPORTED, "unpack_weight: the layout tag has no NUL in its "
				"first %d bytes (NPT_PACK_TAG_MAX): it is no tag of npt_pack_query; "
				"nothing was read", NPT_PACK_TAG_MAX);
	if (!parse(tag, &l))
		return npt_fail(NPT_E_UNSUPPORTED, "unpack_weight: layout '%s' is not one this "
				"library can read (it reads the blocked layouts of npt_pack_query: "
				"onednn-VERSION/ISA/f32|bf16|bf16x3|s8/...); nothing was read", tag);
	if (l.K != k || l.N != n)
		return npt_fail(NPT_E_INVAL, "unpack_weight: layout '%s' holds a [%lld, %lld] "
				"weight, not [%lld, %lld]", tag, (long long)l.N, (long long)l.K,
				(long long)n, (long long)k);
	bk = block_of(&l, 0);
	bn = block_of(&l, 1);
	esz = l.dt == NPT_F32 ? 4 : l.dt == NPT_I8 ? 1 : 2;
	if (l.dt == NPT_I8)
		sb = ((size_t)n * sizeof(float) + 63) / 64 * 64;
	if (!bk || !bn || l.padK < k || l.padN < n ||
	    __builtin_mul_overflow(l.padK, l.padN, &cells) ||
	    (uint64_t)cells > (nbytes - (nbytes < sb ? nbytes : sb)) / esz || nbytes < sb ||
	    (l.dt == NPT_PACKED_BF16X3 && (lo = ((size_t)cells * 2 + 63) / 64 * 64) >
	     nbytes - (size_t)cells * 2))
		return npt_fail(NPT_E_INVAL, "unpack_weight: layout '%s' does not fit its %zu "
				"bytes (padding, blocks or size)", tag, nbytes);
	base += sb;
	for (int64_t r = 0; r < n; r++) {
		for (int64_t c = 0; c < k; c++) {
			int64_t o = offset_of(&l, c, r, bk, bn);
			float v;

			if (o < 0 || o >= cells)
				return npt_fail(NPT_E_INVAL, "unpack_weight: layout '%s' puts element "
						"(%lld, %lld) outside its bytes", tag,
						(long long)r, (long long)c);
			if (l.dt == NPT_F32) {
				memcpy(&v, base + o * 4, 4);
			} else if (l.dt == NPT_BF16) {
				uint16_t h;

				memcpy(&h, base + o * 2, 2);
				v = npt_bf16_to_f32(h);
			} else if (l.dt == NPT_PACKED_BF16X3) {
				uint16_t h, t;

				memcpy(&h, base + o * 2, 2);
				memcpy(&t, base + lo + o * 2, 2);
				v = npt_bf16_to_f32(h) + npt_bf16_to_f32(t);
			} else {
				float sc;

				memcpy(&sc, (const char *)data + r * 4, 4);
				v = (float)(int8_t)base[o] * sc;
			}
			dst[r * k + c] = v;
		}
	}
	return NPT_OK;
}
