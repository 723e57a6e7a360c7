/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * dtype.c - dtype sizes and names, NumPy-compatible type promotion and
 * casting rules, and the bf16 <-> f32 conversions (round to nearest even).
 *
 * Contracts: promotion is by dtype only (NumPy's np.promote_types; NumPy
 * 1.24's value-based casting of 0-d arrays is not mirrored, see
 * docs/tensor.md). Where NumPy's result is a type this library lacks
 * (i8 + u8 -> i16), the next wider available type is used (i32).
 */
#include "core.h"

#include <string.h>

static const size_t dt_size[NPT_NDTYPES] = { 1, 1, 1, 4, 8, 2, 2, 4, 8 };
static const char *const dt_name[NPT_NDTYPES] = {
	"bool", "int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64"
};

NPT_API size_t npt_dtype_size(npt_dtype_t dt)
{
	return (unsigned)dt < NPT_NDTYPES ? dt_size[dt] : 0;
}

NPT_API const char *npt_dtype_name(npt_dtype_t dt)
{
	return (unsigned)dt < NPT_NDTYPES ? dt_name[dt] : "invalid-dtype";
}

int npt_dtype_is_float(npt_dtype_t d)
{
	return d == NPT_F16 || d == NPT_BF16 || d == NPT_F32 || d == NPT_F64;
}

int npt_dtype_is_int(npt_dtype_t d)
{
	return d == NPT_I8 || d == NPT_U8 || d == NPT_I32 || d == NPT_I64;
}

npt_dtype_t npt_rt(npt_dtype_t d)
{
	return (d == NPT_F16 || d == NPT_BF16) ? NPT_F32 : d;
}

/* kind order as NumPy's casting uses it: b < u < i < f */
static int kind(npt_dtype_t d)
{
	switch (d) {
	case NPT_BOOL: return 0;
	case NPT_U8: return 1;
	case NPT_I8: case NPT_I32: case NPT_I64: return 2;
	default: return 3;
	}
}

/* rank of a float type: f16 and bf16 are incomparable (-> f32) */
static int frank(npt_dtype_t d)
{
	return d == NPT_F64 ? 3 : d == NPT_F32 ? 2 : 1;
}

NPT_API npt_status_t npt_promote_types(npt_dtype_t a, npt_dtype_t b, npt_dtype_t *out)
{
	if (!out)
		return npt_fail(NPT_E_INVAL, "promote_types: out is NULL");
	if ((unsigned)a >= NPT_NDTYPES || (unsigned)b >= NPT_NDTYPES)
		return npt_fail(NPT_E_INVAL, "promote_types: invalid dtype code %d or %d", a, b);
	if (a == b) {
		*out = a;
		return NPT_OK;
	}
	if (a == NPT_BOOL || b == NPT_BOOL) {
		*out = a == NPT_BOOL ? b : a;
		return NPT_OK;
	}
	int fa = npt_dtype_is_float(a), fb = npt_dtype_is_float(b);

	if (!fa && !fb) {
		if ((a == NPT_I8 && b == NPT_U8) || (a == NPT_U8 && b == NPT_I8))
			*out = NPT_I32; /* NumPy: int16 */
		else
			*out = dt_size[a] >= dt_size[b] ? a : b;
		return NPT_OK;
	}
	if (fa && fb) {
		if (frank(a) == 1 && frank(b) == 1)
			*out = NPT_F32; /* f16 with bf16 */
		else
			*out = frank(a) >= frank(b) ? a : b;
		return NPT_OK;
	}
	npt_dtype_t f = fa ? a : b, i = fa ? b : a;

	if (i == NPT_I8 || i == NPT_U8)
		*out = f;
	else
		*out = NPT_F64;
	return NPT_OK;
}

npt_dtype_t npt_float_for(npt_dtype_t d)
{
	switch (d) {
	case NPT_BOOL: case NPT_I8: case NPT_U8: return NPT_F16;
	case NPT_I32: case NPT_I64: return NPT_F64;
	default: return d;
	}
}

int npt_can_cast_same_kind(npt_dtype_t from, npt_dtype_t to)
{
	npt_dtype_t p;

	if (from == to)
		return 1;
	/* a safe cast: promoting the pair gives `to` */
	if (npt_promote_types(from, to, &p) == NPT_OK && p == to &&
	    !(from == NPT_I8 && to == NPT_U8))
		return 1;
	return kind(to) >= kind(from) && !(kind(from) == 2 && kind(to) == 1);
}

uint16_t npt_f32_to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40); /* quiet NaN, sign kept */
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

float npt_bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}
