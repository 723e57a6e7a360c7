/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * pack.c - the packer behind `npushm load --dtype f32`: which tensors get a
 * layout packed for this machine's GEMM, and the packing itself, both from
 * libnptensor (npt_pack_query, npt_pack_weight: oneDNN's blocked layout for
 * this CPU, tagged with library, version, ISA, shape and blocking).
 *
 * Packed: 2-D float32 tensors named "*.weight" outside the embeddings (what
 * a transformer's linear layers read through npt_linear), when libnptensor
 * has a layout for the shape: in float32 (--dtype f32), rounded to bfloat16
 * (--dtype bf16), quantised to int8 per output channel (--dtype int8) or, on
 * CPUs with AMX, as float32 kept in two bfloat16 terms for three bf16
 * products (--dtype bf16x3, npt_pack_query_bf16x3). Everything else stays plain only.
 * --dtype q4: the same tensors in libnptensor's 4-bit groups (npt_q4_pack: 32
 * elements per f16 scale, as llama.cpp's Q4_0) when K divides by 32, tagged
 * "npt-q4_0/g32-f16/NxK"; not a GEMM layout but the input of npt_q4_linear,
 * which a decoder engine calls for it (other engines ignore the tag).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <nptensor.h>

#include "pack.h"

static int wanted(const npushm_tensor_t *t)
{
	size_t n = t->name_len;

	return t->dtype == NPUSHM_DTYPE_F32 && t->ndim == 2 && n > 7 &&
	       !strcmp(t->name + n - 7, ".weight") && !strstr(t->name, "embeddings");
}

static int packed_count;
static char first_refusal[512];

/* what a GEMM packer asks libnptensor for: a precision, or float32 as two bf16 terms */
struct layout_kind {
	npt_dtype_t dt;
	bool bf16x3;
};

static uint64_t pack_size(void *arg, const npushm_tensor_t *t, char tag[NPUSHM_LAYOUT_TAG_MAX])
{
	const struct layout_kind *kind = arg;
	size_t nbytes = 0;
	npt_status_t s;

	if (!wanted(t))
		return 0;
	s = kind->bf16x3 ? npt_pack_query_bf16x3(t->shape[0], t->shape[1], tag,
						 NPUSHM_LAYOUT_TAG_MAX, &nbytes) :
	    npt_pack_query(kind->dt, t->shape[0], t->shape[1], tag, NPUSHM_LAYOUT_TAG_MAX, &nbytes);
	if (s) {
		if (!first_refusal[0])
			snprintf(first_refusal, sizeof(first_refusal), "%s", npt_last_error());
		return 0;
	}
	packed_count++;
	return nbytes;
}

const char *cli_packer_nothing_packed(void)
{
	return !packed_count && first_refusal[0] ? first_refusal : NULL;
}

void cli_packer_warn_unpacked(const char *prog, const char *dtype)
{
	if (dtype && cli_packer_nothing_packed())
		fprintf(stderr, "%s: --dtype %s: no weight was packed, the model holds its plain "
			"weights only: %s\n", prog, dtype, cli_packer_nothing_packed());
}

static int pack(void *arg, const npushm_tensor_t *t, const char *tag, void *dst, uint64_t nbytes,
		char *why, size_t why_size)
{
	npt_tensor_t *w = NULL;
	npt_status_t s;

	(void)arg;
	s = npt_tensor_from_data((void *)t->data, NPT_F32, 2, t->shape, NULL, NPT_BORROW_READONLY,
				 NULL, NULL, &w);
	if (!s)
		s = npt_pack_weight(w, tag, dst, (size_t)nbytes);
	if (s)
		snprintf(why, why_size, "%s", npt_last_error());
	npt_tensor_free(w);
	return s ? -1 : 0;
}

static uint64_t q4_size(void *arg, const npushm_tensor_t *t, char tag[NPUSHM_LAYOUT_TAG_MAX])
{
	size_t nbytes = 0;

	(void)arg;
	if (!wanted(t) || npt_q4_size(t->shape[0], t->shape[1], &nbytes))
		return 0;
	snprintf(tag, NPUSHM_LAYOUT_TAG_MAX, "%s/%lldx%lld", CLI_Q4_TAG, (long long)t->shape[0],
		 (long long)t->shape[1]);
	return nbytes;
}

static int q4_pack(void *arg, const npushm_tensor_t *t, const char *tag, void *dst,
		   uint64_t nbytes, char *why, size_t why_size)
{
	npt_tensor_t *w = NULL;
	npt_status_t s;

	(void)arg;
	(void)tag;
	s = npt_tensor_from_data((void *)t->data, NPT_F32, 2, t->shape, NULL, NPT_BORROW_READONLY,
				 NULL, NULL, &w);
	if (!s)
		s = npt_q4_pack(w, dst, (size_t)nbytes);
	if (s)
		snprintf(why, why_size, "%s", npt_last_error());
	npt_tensor_free(w);
	return s ? -1 : 0;
}

const npushm_packer_t *cli_packer(const char *dtype)
{
	static const npushm_packer_t pq = { .size = q4_size, .pack = q4_pack };

	static const struct layout_kind f32 = { NPT_F32, false }, bf16 = { NPT_BF16, false },
		i8 = { NPT_I8, false }, x3 = { NPT_F32, true };
	static const npushm_packer_t pf = { .size = pack_size, .pack = pack, .arg = (void *)&f32 };
	static const npushm_packer_t pb = { .size = pack_size, .pack = pack, .arg = (void *)&bf16 };
	static const npushm_packer_t pi = { .size = pack_size, .pack = pack, .arg = (void *)&i8 };
	static const npushm_packer_t px = { .size = pack_size, .pack = pack, .arg = (void *)&x3 };

	if (!strcmp(dtype, "f32"))
		return &pf;
	if (!strcmp(dtype, "q4"))
		return &pq;
	if (!strcmp(dtype, "bf16"))
		return &pb;
	if (!strcmp(dtype, "bf16x3"))
		return &px;
	return !strcmp(dtype, "int8") ? &pi : NULL;
}

const char *cli_layouts_summary(npushm_model_t *m, char *buf, size_t len)
{
	size_t n = npushm_model_layout_count(m), plen = 0, only = npushm_model_accept_packed_only(m);
	const char *first = NULL;
	npushm_layout_t l;

	for (size_t i = 0; i < n; i++) {
		const char *slash;

		if (npushm_model_layout_at(m, i, &l))
			continue;
		if (!first) {
			first = l.tag;
			slash = strchr(first, '/');
			slash = slash ? strchr(slash + 1, '/') : NULL;
			plen = slash ? (size_t)(slash - first) : strlen(first);
		} else if (strncmp(first, l.tag, plen) || (l.tag[plen] && l.tag[plen] != '/')) {
			snprintf(buf, len, "%zu mixed%s", n, only ? ", packed only" : "");
			return buf;
		}
	}
	if (!first)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%zu %.*s%s", n, (int)plen, first, only ? ", packed only" : "");
	return buf;
}
