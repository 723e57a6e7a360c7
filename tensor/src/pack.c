/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * pack.c - linear weights in the GEMM's own layout, made once (by a model
 * loader, into shared memory) and used in place by every process.
 *
 * The layout is the one oneDNN's matmul asks for (format_tag any) for the
 * weight [N, K] as the product's [K, N] operand, on this CPU with this
 * library. Its tag spells out everything the bytes depend on: "onednn",
 * the library version, the CPU ISA oneDNN runs with, the dtype, K and N,
 * the padded dims, the outer strides and the inner blocks. A process uses
 * packed bytes only when the tag it would make itself is the same string,
 * so it never reads a layout it does not understand: another CPU, another
 * oneDNN or another shape is refused with both tags in the message, and
 * the caller goes on with the plain weight.
 *
 * Three precisions. float32: only layouts whose column blocks are outermost
 * are packed ("BA16a64b" on AVX-512: K blocks of 16 inside N blocks of 64,
 * each N block contiguous). bfloat16: the weights rounded to nearest even
 * in oneDNN's bf16 layout, where it has real bf16 kernels (AVX512_BF16;
 * its reference code elsewhere means nothing is packed); linear then
 * rounds its input to bf16 and accumulates in float32. int8: per-output-channel symmetric weights,
 * scale[n] = max_k |W[n, k]| / 127, W8 = round(W / scale) in [-127, 127];
 * the bytes are the N float scales (padded to 64 bytes) then oneDNN's s8
 * layout for an s8 x s8 product (with the compensation it appends for
 * signed inputs on VNNI); linear quantises its input per row and
 * accumulates exactly in int32 (linear.c, gemm.c). bf16x3 (since 1.3, only
 * where oneDNN's bf16 product runs on AMX tiles): float32 weights as two
 * bf16 terms, hi = W rounded to bf16 and lo = W - hi rounded to bf16, each
 * in oneDNN's bf16 layout (hi, then lo at the next 64-byte boundary);
 * linear splits its input the same way and sums three bf16 products with
 * float32 accumulation, x w ~ xh wh + xh wl + xl wh, leaving out xl wl and
 * the rounding of the low terms: each product is off by less than 2^-16 of
 * its terms' magnitude (PyTorch's "high" float32 matmul precision), and on
 * AMX the three run faster than one float32 product on FMAs. The loader stores the
 * tag and the bytes; the tensor holds a pointer to the bytes (never
 * copied) and its descriptor.
 *
 * Contracts: thread-safe (oneDNN objects are made per call); the packed
 * bytes must outlive the tensor they are attached to.
 */
#include "internal.h"
#include "backend/onednn.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PACK_PROBE_M 128   /* rows of the product the layout is asked for */

static const char *isa_name(dnnl_cpu_isa_t isa)
{
	switch (isa) {
	case dnnl_cpu_isa_sse41: return "sse41";
	case dnnl_cpu_isa_avx: return "avx";
	case dnnl_cpu_isa_avx2: return "avx2";
	case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
	case dnnl_cpu_isa_avx512_core: return "avx512_core";
	case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
	case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
	case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
	default: return NULL;
	}
}

/* is @md a layout whose N blocks are outermost, each contiguous (f32), or
 * oneDNN's blocked s8 layout (int8)? */
static int sliceable(const dnnl_memory_desc_t *md, int64_t *nb)
{
	const dnnl_blocking_desc_t *b = &md->format_desc.blocking;

	if (md->data_type == dnnl_s8 || md->data_type == dnnl_bf16)
		return md->format_kind == dnnl_blocked && md->ndims == 2 && !md->offset0 &&
		       b->inner_nblks >= 1 && (*nb = b->inner_blks[0]) > 0;
	if (md->format_kind != dnnl_blocked || md->ndims != 2 || md->offset0 ||
	    md->extra.flags || b->inner_nblks != 2 || b->inner_idxs[0] != 0 ||
	    b->inner_idxs[1] != 1 || b->inner_blks[1] <= 0 || 64 % b->inner_blks[1])
		return 0;
	/* an N block holds all of K: padded K x the N block */
	if (b->strides[1] != md->padded_dims[0] * b->inner_blks[1] ||
	    b->strides[0] != b->inner_blks[0] * b->inner_blks[1])
		return 0;
	*nb = b->inner_blks[1];
	return 1;
}

/* the weights descriptor oneDNN wants for [K, N]; its tag into @tag */
/* bytes before the s8 weights: the N scales, padded to 64 */
static size_t scale_bytes(int dt, int64_t N)
{
	return dt == NPT_I8 ? ((size_t)N * sizeof(float) + 63) / 64 * 64 : 0;
}

/* where a bf16x3 layout's low terms start: after the high ones, 64-byte aligned */
static size_t lo_offset(size_t md_bytes)
{
	return (md_bytes + 63) / 64 * 64;
}

/* the bytes of layout @md in precision @dt: scales, the blocked weights, bf16x3's low terms */
static size_t layout_bytes(int dt, int64_t N, size_t md_bytes)
{
	return scale_bytes(dt, N) + (dt == NPT_PACKED_BF16X3 ? lo_offset(md_bytes) : 0) + md_bytes;
}

static npt_status_t wanted(const npt_dnnl_t *D, dnnl_engine_t eng, int dt, int64_t N,
			   int64_t K, dnnl_memory_desc_t *out, char *tag, size_t tag_size)
{
	int i8 = dt == NPT_I8, x3 = dt == NPT_PACKED_BF16X3, bf = dt == NPT_BF16 || x3;
	dnnl_data_type_t in = i8 ? dnnl_s8 : bf ? dnnl_bf16 : dnnl_f32;
	dnnl_data_type_t acc = i8 ? dnnl_s32 : dnnl_f32;
	dnnl_dims_t sd = { PACK_PROBE_M, K }, wd = { K, N }, dd = { PACK_PROBE_M, N };
	dnnl_memory_desc_t src, wei, dst;
	dnnl_primitive_desc_t pd = NULL;
	dnnl_matmul_desc_t mm;
	const dnnl_memory_desc_t *w;
	const dnnl_version_t *v = D->dnnl_version();
	const dnnl_blocking_desc_t *b;
	const char *impl = "", *isa = isa_name(D->dnnl_get_effective_cpu_isa());
	char full[2 * NPT_PACK_TAG_MAX];
	int64_t nb;
	npt_status_t s = NPT_OK;
	int n;

	if ((i8 || bf) && npt_gemm_lowp_wrong(i8))
		return npt_fail(NPT_E_UNSUPPORTED, "pack: oneDNN's %s product gave a wrong result "
				"in libnptensor's self-check on this CPU; the float32 weights are "
				"used", i8 ? "int8" : "bf16");
	D->omp_set_num_threads(1);
	if (D->dnnl_memory_desc_init_by_tag(&src, 2, sd, in, dnnl_ab) ||
	    D->dnnl_memory_desc_init_by_tag(&dst, 2, dd, acc, dnnl_ab) ||
	    D->dnnl_memory_desc_init_by_tag(&wei, 2, wd, in, dnnl_format_tag_any) ||
	    D->dnnl_matmul_desc_init(&mm, &src, &wei, NULL, &dst) ||
	    D->dnnl_primitive_desc_create(&pd, &mm, NULL, eng, NULL))
		return npt_fail(NPT_E_UNSUPPORTED, "pack: oneDNN has no matmul for a [%lld, %lld] "
				"weight here", (long long)N, (long long)K);
	D->dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
	w = D->dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
	if (x3 && !strstr(impl, "amx")) {
		s = npt_fail(NPT_E_UNSUPPORTED, "pack: bf16x3 needs AMX: oneDNN runs bf16 products "
			     "on %s here, where three of them are slower than one float32 product; "
			     "pack the weights as float32", impl);
		goto out;
	}
	if (!w || !strncmp(impl, "ref", 3) || !isa || !sliceable(w, &nb) ||
	    (x3 && D->dnnl_memory_desc_get_size(w) !=
	     (size_t)(w->padded_dims[0] * w->padded_dims[1]) * 2)) {
		s = npt_fail(NPT_E_UNSUPPORTED, "pack: oneDNN (%s) keeps a [%lld, %lld] weight in "
			     "a layout npushm does not pack; the plain weight is used",
			     impl, (long long)N, (long long)K);
		goto out;
	}
	*out = *w;
	b = &w->format_desc.blocking;
	/* the whole tag first, so that a short buffer is told the size it needs */
	n = snprintf(full, sizeof(full), "onednn-%d.%d.%d/%s/%s/k%lld.n%lld/pad%lld.%lld/"
		     "str%lld.%lld/blk", v->major, v->minor, v->patch, isa,
		     i8 ? "s8" : x3 ? "bf16x3" : bf ? "bf16" : "f32",
		     (long long)K, (long long)N, (long long)w->padded_dims[0],
		     (long long)w->padded_dims[1], (long long)b->strides[0],
		     (long long)b->strides[1]);
	(void)nb;
	for (int i = 0; i < b->inner_nblks && n > 0 && (size_t)n < sizeof(full); i++)
		n += snprintf(full + n, sizeof(full) - (size_t)n, "%lld%c",
			      (long long)b->inner_blks[i], b->inner_idxs[i] ? 'n' : 'k');
	if (i8 && n > 0 && (size_t)n < sizeof(full))
		n += snprintf(full + n, sizeof(full) - (size_t)n, "/x%llx.%d/scales-per-n",
			      (unsigned long long)w->extra.flags, w->extra.compensation_mask);
	if (n < 0 || (size_t)n >= sizeof(full) || (size_t)n >= tag_size)
		s = npt_fail(NPT_E_INVAL, "pack: the tag needs %d bytes, the buffer has %zu", n + 1,
			     tag_size);
	else
		memcpy(tag, full, (size_t)n + 1);
out:
	D->dnnl_primitive_desc_destroy(pd);
	return s;
}

/* the precision a tag names: NPT_F32, NPT_I8, or -1 */
static int tag_dtype(const char *tag)
{
	const char *p = strchr(tag, '/');

	p = p ? strchr(p + 1, '/') : NULL;
	if (p && !strncmp(p, "/f32/", 5))
		return NPT_F32;
	if (p && !strncmp(p, "/s8/", 4))
		return NPT_I8;
	if (p && !strncmp(p, "/bf16/", 6))
		return NPT_BF16;
	if (p && !strncmp(p, "/bf16x3/", 8))
		return NPT_PACKED_BF16X3;
	return -1;
}

static npt_status_t check_weight(const char *op, const npt_tensor_t *w)
{
	char a[NPT_SHAPE_STRLEN];

	if (!w)
		return npt_fail(NPT_E_INVAL, "%s: the weight is NULL", op);
	if (w->packed_only)
		return npt_plain_refused(op, w);
	if (w->dtype != NPT_F32 || w->ndim != 2 || w->shape[0] < 1 || w->shape[1] < 1)
		return npt_fail(NPT_E_SHAPE, "%s: the weight is %s of shape %s; packing takes a "
				"float32 [out_features, in_features] weight", op,
				npt_dtype_name(w->dtype), npt_shape_str(a, sizeof(a), w->ndim, w->shape));
	return NPT_OK;
}

static const npt_dnnl_t *onednn(const char *op, dnnl_engine_t *eng)
{
	const npt_dnnl_t *D = npt_gemm_onednn((void **)eng);

	if (!D)
		npt_fail(NPT_E_UNSUPPORTED, "%s: the GEMM runs on OpenBLAS here (%s), which has no "
			 "packed layout to store", op, npt_dnnl_why()[0] ? npt_dnnl_why() :
			 "oneDNN is not usable");
	return D;
}

static npt_status_t query(int dt, int64_t n, int64_t k, char *tag, size_t tag_size,
			  size_t *nbytes)
{
	dnnl_memory_desc_t md;
	dnnl_engine_t eng;
	const npt_dnnl_t *D;
	npt_status_t s;

	if (!tag || !tag_size || !nbytes)
		return npt_fail(NPT_E_INVAL, "pack_query: tag, tag_size and nbytes are required");
	if (n < 1 || k < 1 || n > (1 << 24) || k > (1 << 24))
		return npt_fail(NPT_E_SHAPE, "pack_query: a [%lld, %lld] weight: both sizes must "
				"be in 1..16777216", (long long)n, (long long)k);
	if (!(D = onednn("pack_query", &eng)))
		return NPT_E_UNSUPPORTED;
	if ((s = wanted(D, eng, dt, n, k, &md, tag, tag_size)))
		return s;
	*nbytes = layout_bytes(dt, n, D->dnnl_memory_desc_get_size(&md));
	return NPT_OK;
}

NPT_API npt_status_t npt_pack_query(npt_dtype_t dt, int64_t n, int64_t k, char *tag,
				    size_t tag_size, size_t *nbytes)
{
	if (dt != NPT_F32 && dt != NPT_I8 && dt != NPT_BF16)
		return npt_fail(NPT_E_DTYPE, "pack_query: %s: weights pack as float32, bfloat16 "
				"or int8 (bf16x3: npt_pack_query_bf16x3)", npt_dtype_name(dt));
	return query(dt, n, k, tag, tag_size, nbytes);
}

NPT_API npt_status_t npt_pack_query_bf16x3(int64_t n, int64_t k, char *tag, size_t tag_size,
					   size_t *nbytes)
{
	return query(NPT_PACKED_BF16X3, n, k, tag, tag_size, nbytes);
}

/* w = hi + lo in two bf16 terms (npt_bf16_split), each [N, K] in rows of K */
static void split_weight(const npt_tensor_t *w, uint16_t *hi, uint16_t *lo)
{
	int64_t N = w->shape[0], K = w->shape[1];
	const float *p = (const float *)npt_tensor_ptr((npt_tensor_t *)w);

	for (int64_t n = 0; n < N; n++)
		for (int64_t k = 0; k < K; k++)
			npt_bf16_split(p[n * w->strides[0] + k * w->strides[1]], &hi[n * K + k],
				       &lo[n * K + k]);
}

/* W8[n, k] = round(W[n, k] / scale[n]), scale[n] = max |W[n, :]| / 127 (1 for a zero row) */
static void quantize_weight(const npt_tensor_t *w, float *scale, int8_t *q)
{
	int64_t N = w->shape[0], K = w->shape[1];
	const float *p = (const float *)npt_tensor_ptr((npt_tensor_t *)w);

	for (int64_t n = 0; n < N; n++) {
		float amax = 0;

		for (int64_t k = 0; k < K; k++)
			amax = fmaxf(amax, fabsf(p[n * w->strides[0] + k * w->strides[1]]));
		scale[n] = amax > 0 ? amax / 127.0f : 1.0f;
		for (int64_t k = 0; k < K; k++) {
			float v = nearbyintf(p[n * w->strides[0] + k * w->strides[1]] / scale[n]);

			q[n * K + k] = (int8_t)fminf(127.0f, fmaxf(-127.0f, v));
		}
	}
}

/* oneDNN's reorder of the [N, K] weight at @src (strides @str for [K, N], type @type)
 * into layout @md at @dst */
static npt_status_t reorder(const npt_dnnl_t *D, dnnl_engine_t eng, const npt_tensor_t *w,
			    const void *src, const dnnl_dims_t str, dnnl_data_type_t type,
			    const dnnl_memory_desc_t *md, void *dst)
{
	dnnl_dims_t dims = { w->shape[1], w->shape[0] };
	dnnl_memory_desc_t plain;
	dnnl_primitive_desc_t pd = NULL;
	dnnl_primitive_t prim = NULL;
	dnnl_memory_t from = NULL, to = NULL;
	dnnl_stream_t stream = NULL;
	npt_status_t s = NPT_OK;

	if (D->dnnl_memory_desc_init_by_strides(&plain, 2, dims, type, str))
		return npt_fail(NPT_E_INVAL, "pack_weight: oneDNN refuses the weight's strides");
	D->omp_set_num_threads(npt_pool_threads());
	if (D->dnnl_reorder_primitive_desc_create(&pd, &plain, eng, md, eng, NULL) ||
	    D->dnnl_primitive_create(&prim, pd) ||
	    D->dnnl_stream_create(&stream, eng, dnnl_stream_default_flags) ||
	    D->dnnl_memory_create(&from, &plain, eng, (void *)src) ||
	    D->dnnl_memory_create(&to, md, eng, dst)) {
		s = npt_fail(NPT_E_NOMEM, "pack_weight: oneDNN cannot make the reorder (out of "
			     "memory?)");
		goto out;
	}
	dnnl_exec_arg_t args[2] = { { DNNL_ARG_FROM, from }, { DNNL_ARG_TO, to } };

	if (D->dnnl_primitive_execute(prim, stream, 2, args) || D->dnnl_stream_wait(stream))
		s = npt_fail(NPT_E_NOMEM, "pack_weight: oneDNN's reorder failed");
out:
	D->dnnl_memory_destroy(to);
	D->dnnl_memory_destroy(from);
	if (stream)
		D->dnnl_stream_destroy(stream);
	D->dnnl_primitive_destroy(prim);
	D->dnnl_primitive_desc_destroy(pd);
	return s;
}

NPT_API npt_status_t npt_pack_weight(npt_tensor_t *w, const char *tag, void *dst, size_t nbytes)
{
	char want[NPT_PACK_TAG_MAX];
	dnnl_memory_desc_t md;
	npt_tensor_t *c = NULL;
	void *tmp = NULL;
	dnnl_engine_t eng;
	const npt_dnnl_t *D;
	npt_status_t s;
	int dt;
	size_t sb, mb;

	if ((s = check_weight("pack_weight", w)))
		return s;
	if (!tag || !dst)
		return npt_fail(NPT_E_INVAL, "pack_weight: tag and dst are required");
	if ((uintptr_t)dst % 64)
		return npt_fail(NPT_E_INVAL, "pack_weight: dst must be 64-byte aligned");
	if (npt_tag_too_long(tag))
		return npt_fail(NPT_E_INVAL, "pack_weight: the layout tag has no NUL in its first "
				"%d bytes (NPT_PACK_TAG_MAX): pass the tag npt_pack_query gave",
				NPT_PACK_TAG_MAX);
	if ((dt = tag_dtype(tag)) < 0)
		return npt_fail(NPT_E_INVAL, "pack_weight: layout '%s' names no precision this "
				"library packs (f32, bf16, bf16x3, s8)", tag);
	if (!(D = onednn("pack_weight", &eng)))
		return NPT_E_UNSUPPORTED;
	if ((s = wanted(D, eng, dt, w->shape[0], w->shape[1], &md, want, sizeof(want))))
		return s;
	if (strcmp(tag, want))
		return npt_fail(NPT_E_INVAL, "pack_weight: layout '%s' is not the one this CPU and "
				"library make for this weight ('%s')", tag, want);
	sb = scale_bytes(dt, w->shape[0]);
	mb = D->dnnl_memory_desc_get_size(&md);
	if (nbytes != layout_bytes(dt, w->shape[0], mb))
		return npt_fail(NPT_E_INVAL, "pack_weight: layout '%s' takes %zu bytes, not %zu",
				tag, layout_bytes(dt, w->shape[0], mb), nbytes);
	if ((s = npt_tensor_eval(w)))
		return s;
	if (w->strides[0] <= 0 || w->strides[1] <= 0) {
		if ((s = npt_tensor_contiguous(w, &c)) || (s = npt_tensor_eval(c)))
			goto out;
		w = c;
	}
	if (dt == NPT_I8 || dt == NPT_PACKED_BF16X3) {
		size_t n = (size_t)(w->shape[0] * w->shape[1]);
		dnnl_dims_t rows = { 1, w->shape[1] };

		if (!(tmp = malloc(dt == NPT_I8 ? n : 2 * n * sizeof(uint16_t)))) {
			s = npt_fail(NPT_E_NOMEM, "pack_weight: out of memory");
			goto out;
		}
		if (dt == NPT_I8) {
			memset(dst, 0, sb);
			quantize_weight(w, dst, tmp);
			s = reorder(D, eng, w, tmp, rows, dnnl_s8, &md, (char *)dst + sb);
		} else {
			split_weight(w, tmp, (uint16_t *)tmp + n);
			s = reorder(D, eng, w, tmp, rows, dnnl_bf16, &md, dst);
			memset((char *)dst + mb, 0, lo_offset(mb) - mb);
			if (!s)
				s = reorder(D, eng, w, (uint16_t *)tmp + n, rows, dnnl_bf16, &md,
					    (char *)dst + lo_offset(mb));
		}
	} else {
		dnnl_dims_t str = { w->strides[1], w->strides[0] };

		s = reorder(D, eng, w, npt_tensor_ptr(w), str, dnnl_f32, &md, dst);
	}
out:
	npt_tensor_free(c);
	free(tmp);
	return s;
}

/* the descriptor of layout @tag for @w, when this CPU and library read it
 * (else why, in the words of @op: set_packed or from_packed) */
static npt_status_t readable(const char *op, npt_tensor_t *w, const char *tag, size_t nbytes,
			     dnnl_memory_desc_t *md, int *dtp, size_t *sbp, size_t *lop)
{
	char want[NPT_PACK_TAG_MAX];
	dnnl_engine_t eng;
	const npt_dnnl_t *D;
	npt_status_t s = NPT_OK;
	int dt;
	size_t sb;

	if (npt_tag_too_long(tag))
		return npt_fail(NPT_E_UNSUPPORTED, "%s: the layout tag has no NUL in its first %d "
				"bytes (NPT_PACK_TAG_MAX): it is no tag of npt_pack_query, so the "
				"packed weights are not read", op, NPT_PACK_TAG_MAX);
	if ((dt = tag_dtype(tag)) < 0)
		return npt_fail(NPT_E_UNSUPPORTED, "%s: the packed weights (layout '%s') are in a "
				"precision this library does not read; the plain weights are used",
				op, tag);
	if (!(D = onednn(op, &eng)) ||
	    (s = wanted(D, eng, dt, w->shape[0], w->shape[1], md, want, sizeof(want)))) {
		char why[512];

		snprintf(why, sizeof(why), "%s", npt_last_error());
		return npt_fail(D ? s : NPT_E_UNSUPPORTED, "%s: the packed weights (layout '%s') "
				"are not used: %s", op, tag, why);
	}
	if (strcmp(tag, want))
		return npt_fail(NPT_E_UNSUPPORTED, "%s: the packed weights were made for '%s' but "
				"this CPU and library use '%s'; the plain weights are used (load the "
				"model again on this machine to pack it for it)", op, tag, want);
	sb = scale_bytes(dt, w->shape[0]);
	if (nbytes != layout_bytes(dt, w->shape[0], D->dnnl_memory_desc_get_size(md)))
		return npt_fail(NPT_E_INVAL, "%s: layout '%s' takes %zu bytes, the packed "
				"data has %zu", op, tag,
				layout_bytes(dt, w->shape[0], D->dnnl_memory_desc_get_size(md)),
				nbytes);
	*dtp = dt;
	*sbp = sb;
	*lop = dt == NPT_PACKED_BF16X3 ? lo_offset(D->dnnl_memory_desc_get_size(md)) : 0;
	return NPT_OK;
}

/* attach layout @tag (checked) at @data to @w, for @op */
static npt_status_t attach(const char *op, npt_tensor_t *w, const char *tag, const void *data,
			   size_t nbytes)
{
	dnnl_memory_desc_t md, *keep;
	npt_status_t s;
	int dt = 0;
	size_t sb = 0, lo = 0;

	if ((s = readable(op, w, tag, nbytes, &md, &dt, &sb, &lo)))
		return s;
	if (!(keep = malloc(sizeof(*keep))))
		return npt_fail(NPT_E_NOMEM, "%s: out of memory", op);
	*keep = md;
	npt_eval_lock();
	free(w->packed_md);
	w->packed_md = keep;
	w->packed = (const char *)data + sb;
	w->packed_scales = dt == NPT_I8 ? data : NULL;
	w->packed_lo = lo ? (const char *)data + lo : NULL;
	w->packed_dt = dt;
	npt_eval_unlock();
	return NPT_OK;
}

NPT_API npt_status_t npt_tensor_set_packed(npt_tensor_t *w, const char *tag, const void *data,
					   size_t nbytes)
{
	npt_status_t s;

	if ((s = check_weight("set_packed", w)))
		return s;
	if (!tag && !data) {
		npt_eval_lock();
		w->packed = NULL;
		w->packed_scales = NULL;
		w->packed_lo = NULL;
		w->packed_dt = 0;
		free(w->packed_md);
		w->packed_md = NULL;
		npt_eval_unlock();
		return NPT_OK;
	}
	if (!tag || !data || (uintptr_t)data % 64)
		return npt_fail(NPT_E_INVAL, "set_packed: a tag and 64-byte aligned data are "
				"required (both NULL detaches)");
	return attach("set_packed", w, tag, data, nbytes);
}

NPT_API npt_status_t npt_tensor_from_packed(const char *tag, const void *data, size_t nbytes,
					    int64_t n, int64_t k, npt_tensor_t **out)
{
	int64_t shape[2] = { n, k };
	npt_tensor_t *w;
	npt_status_t s;

	if (!out)
		return npt_fail(NPT_E_INVAL, "from_packed: out is NULL");
	*out = NULL;
	if (!tag || !data || (uintptr_t)data % 64 || n < 1 || k < 1)
		return npt_fail(NPT_E_INVAL, "from_packed: a tag, 64-byte aligned data and a "
				"weight shape of at least [1, 1] are required");
	/* a placeholder plain view: never read (npt_plain_refused guards every reader) */
	if ((s = npt_tensor_wrap("from_packed", (void *)data, NPT_F32, 2, shape,
				 (int64_t[]){ 0, 0 }, NPT_BORROW_READONLY, NULL, NULL, &w)))
		return s;
	w->packed_only = 1;
	if ((s = attach("from_packed", w, tag, data, nbytes))) {
		npt_tensor_free(w);
		return s;
	}
	*out = w;
	return NPT_OK;
}
