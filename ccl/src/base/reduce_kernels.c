/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * reduce_kernels.c - elementwise reductions for every dtype and operation.
 *
 * Each kernel is a plain loop compiled three times (x86-64-v4 = AVX-512,
 * x86-64-v3 = AVX2/F16C/FMA, baseline) with target_clones; the loader picks
 * the best for the CPU, so the same binary runs in a VM without AVX-512.
 * Signed integers are added and multiplied as unsigned (wrap-around, no
 * undefined behaviour). f16 and bf16 are widened to f32, combined, and
 * rounded back to nearest even. dst may alias a source in reduce_into.
 * Floating-point MIN/MAX are commutative, so every algorithm and every rank
 * agree: a NaN operand gives NaN (as IEEE 754-2019 minimum/maximum and
 * torch.minimum do), and -0 is below +0.
 */
#include "npccl_internal.h"

#include <math.h>
#include <string.h>

#ifdef __SANITIZE_THREAD__
/* ThreadSanitizer builds (the sanitizers suite): the clones' resolvers run
 * before its runtime is up and crash the loader */
#define CLONES
#else
#define CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif

static inline float bf2f(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static inline uint16_t f2bf(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
	uint32_t qnan = (u >> 16) | 0x40u;
	return (uint16_t)(((u & 0x7fffffffu) > 0x7f800000u) ? qnan : rounded);
}

float bf16_to_f32(uint16_t h) { return bf2f(h); }
uint16_t f32_to_bf16(float f) { return f2bf(f); }
float f16_to_f32(uint16_t h)
{
	_Float16 x;
	memcpy(&x, &h, 2);
	return (float)x;
}
uint16_t f32_to_f16(float f)
{
	_Float16 x = (_Float16)f;
	uint16_t h;
	memcpy(&h, &x, 2);
	return h;
}

#define OP_SUM(a, b) ((a) + (b))
#define OP_PROD(a, b) ((a) * (b))
#define OP_MIN(a, b) ((b) < (a) ? (b) : (a))
#define OP_MAX(a, b) ((b) > (a) ? (b) : (a))
/* floating point: whether b, not a, is the result (x, y: their values) */
#define TAKE_B_MIN(x, y) (!isnan(x) && (isnan(y) || (y) < (x) || ((y) == (x) && signbit(y))))
#define TAKE_B_MAX(x, y) (!isnan(x) && (isnan(y) || (y) > (x) || ((y) == (x) && !signbit(y))))

/* integer kernels: T storage, U arithmetic type for sum/prod */
#define INT_KERNELS(name, T, U)                                                        \
	CLONES static void name##_sum(T *d, const T *a, const T *b, size_t n)          \
	{ for (size_t i = 0; i < n; i++) d[i] = (T)((U)a[i] + (U)b[i]); }              \
	CLONES static void name##_prod(T *d, const T *a, const T *b, size_t n)         \
	{ for (size_t i = 0; i < n; i++) d[i] = (T)((U)a[i] * (U)b[i]); }              \
	CLONES static void name##_min(T *d, const T *a, const T *b, size_t n)          \
	{ for (size_t i = 0; i < n; i++) d[i] = OP_MIN(a[i], b[i]); }                  \
	CLONES static void name##_max(T *d, const T *a, const T *b, size_t n)          \
	{ for (size_t i = 0; i < n; i++) d[i] = OP_MAX(a[i], b[i]); }

#define FLT_KERNELS(name, T)                                                           \
	CLONES static void name##_sum(T *d, const T *a, const T *b, size_t n)          \
	{ for (size_t i = 0; i < n; i++) d[i] = a[i] + b[i]; }                         \
	CLONES static void name##_prod(T *d, const T *a, const T *b, size_t n)         \
	{ for (size_t i = 0; i < n; i++) d[i] = a[i] * b[i]; }                         \
	CLONES static void name##_min(T *d, const T *a, const T *b, size_t n)          \
	{ for (size_t i = 0; i < n; i++) d[i] = TAKE_B_MIN(a[i], b[i]) ? b[i] : a[i]; } \
	CLONES static void name##_max(T *d, const T *a, const T *b, size_t n)          \
	{ for (size_t i = 0; i < n; i++) d[i] = TAKE_B_MAX(a[i], b[i]) ? b[i] : a[i]; }

#define HALF_KERNELS(name, TOF, FROMF, T)                                              \
	CLONES static void name##_sum(T *d, const T *a, const T *b, size_t n)          \
	{ for (size_t i = 0; i < n; i++) d[i] = FROMF(TOF(a[i]) + TOF(b[i])); }        \
	CLONES static void name##_prod(T *d, const T *a, const T *b, size_t n)         \
	{ for (size_t i = 0; i < n; i++) d[i] = FROMF(TOF(a[i]) * TOF(b[i])); }        \
	CLONES static void name##_min(T *d, const T *a, const T *b, size_t n)          \
	{ for (size_t i = 0; i < n; i++) { float x = TOF(a[i]), y = TOF(b[i]);         \
		d[i] = TAKE_B_MIN(x, y) ? b[i] : a[i]; } }                             \
	CLONES static void name##_max(T *d, const T *a, const T *b, size_t n)          \
	{ for (size_t i = 0; i < n; i++) { float x = TOF(a[i]), y = TOF(b[i]);         \
		d[i] = TAKE_B_MAX(x, y) ? b[i] : a[i]; } }

INT_KERNELS(k_i8, int8_t, uint8_t)
INT_KERNELS(k_u8, uint8_t, uint32_t)
INT_KERNELS(k_i32, int32_t, uint32_t)
INT_KERNELS(k_u32, uint32_t, uint32_t)
INT_KERNELS(k_i64, int64_t, uint64_t)
INT_KERNELS(k_u64, uint64_t, uint64_t)
FLT_KERNELS(k_f32, float)
FLT_KERNELS(k_f64, double)
#define H2F(x) ((float)(x))
#define F2H(x) ((_Float16)(x))
HALF_KERNELS(k_f16, H2F, F2H, _Float16)
HALF_KERNELS(k_bf16, bf2f, f2bf, uint16_t)

typedef void (*kern_fn)(void *, const void *, const void *, size_t);
#define ROW(name) { (kern_fn)name##_sum, (kern_fn)name##_prod, (kern_fn)name##_min, \
		    (kern_fn)name##_max }
static const kern_fn kernels[NPCCL_NUM_DTYPES][4] = {
	ROW(k_i8), ROW(k_u8), ROW(k_i32), ROW(k_u32), ROW(k_i64),
	ROW(k_u64), ROW(k_f16), ROW(k_bf16), ROW(k_f32), ROW(k_f64),
};

static kern_fn pick(npccl_dtype_t dt, npccl_redop_t op)
{
	int o = op == NPCCL_AVG ? NPCCL_SUM : (int)op;
	return kernels[dt][o];
}

void reduce_into(npccl_dtype_t dt, npccl_redop_t op, void *dst, const void *a, const void *b,
		 size_t n)
{
	if (n)
		pick(dt, op)(dst, a, b, n);
}

void reduce_inplace(npccl_dtype_t dt, npccl_redop_t op, void *dst, const void *src, size_t n)
{
	if (n)
		pick(dt, op)(dst, dst, src, n);
}

/* divided in 64 bits: the number of ranks need not fit T (int8 from 128
 * ranks on, uint8 from 256, where (T)divisor would be negative or 0) */
#define SCALE_INT(T, W)                                                                \
	{ T *p = dst; for (size_t i = 0; i < n; i++) p[i] = (T)((W)p[i] / (W)divisor); } \
	break;

void reduce_scale_avg(npccl_dtype_t dt, void *dst, size_t n, int divisor)
{
	if (divisor <= 1 || n == 0)
		return;
	switch (dt) {
	case NPCCL_INT8: SCALE_INT(int8_t, int64_t)
	case NPCCL_UINT8: SCALE_INT(uint8_t, uint64_t)
	case NPCCL_INT32: SCALE_INT(int32_t, int64_t)
	case NPCCL_UINT32: SCALE_INT(uint32_t, uint64_t)
	case NPCCL_INT64: SCALE_INT(int64_t, int64_t)
	case NPCCL_UINT64: SCALE_INT(uint64_t, uint64_t)
	case NPCCL_FLOAT32: { float *p = dst; for (size_t i = 0; i < n; i++) p[i] /= (float)divisor; break; }
	case NPCCL_FLOAT64: { double *p = dst; for (size_t i = 0; i < n; i++) p[i] /= (double)divisor; break; }
	case NPCCL_FLOAT16: {
		_Float16 *p = dst;
		for (size_t i = 0; i < n; i++)
			p[i] = (_Float16)((float)p[i] / (float)divisor);
		break;
	}
	case NPCCL_BFLOAT16: {
		uint16_t *p = dst;
		for (size_t i = 0; i < n; i++)
			p[i] = f2bf(bf2f(p[i]) / (float)divisor);
		break;
	}
	default: break;
	}
}

/* Two sources, one or two destinations, SUM or PROD of the 4- and 8-byte
 * types: one fused AVX2 pass (loads, operation and, where asked, streaming
 * stores interleaved keep more misses in flight than the blocked path below,
 * about 20% more bandwidth on messages larger than the caches). Returns
 * false when it does not apply (type, operation, CPU, or a streaming
 * destination that cannot be 32-byte aligned together with the others). */
#if defined(__x86_64__)
#include <immintrin.h>

#define FUSED(name, T, U, OP)                                                         \
	__attribute__((target("avx2"))) static void name(T *d1, T *d2, const T *a,     \
							 const T *b, size_t n, int nt1,  \
							 int nt2)                        \
	{                                                                              \
		typedef U v __attribute__((vector_size(32), aligned(1)));              \
		const size_t L = 32 / sizeof(T);                                       \
		size_t i = 0;                                                          \
		for (; i + 2 * L <= n; i += 2 * L) {                                   \
			v x = OP(*(const v *)(a + i), *(const v *)(b + i));            \
			v y = OP(*(const v *)(a + i + L), *(const v *)(b + i + L));    \
			if (nt1) {                                                     \
				_mm256_stream_si256((__m256i *)(d1 + i), (__m256i)x);  \
				_mm256_stream_si256((__m256i *)(d1 + i + L), (__m256i)y); \
			} else {                                                       \
				*(v *)(d1 + i) = x;                                    \
				*(v *)(d1 + i + L) = y;                                \
			}                                                              \
			if (!d2)                                                       \
				continue;                                              \
			if (nt2) {                                                     \
				_mm256_stream_si256((__m256i *)(d2 + i), (__m256i)x);  \
				_mm256_stream_si256((__m256i *)(d2 + i + L), (__m256i)y); \
			} else {                                                       \
				*(v *)(d2 + i) = x;                                    \
				*(v *)(d2 + i + L) = y;                                \
			}                                                              \
		}                                                                      \
		for (; i < n; i++) {                                                   \
			T r = (T)OP((U)a[i], (U)b[i]);                                 \
			d1[i] = r;                                                     \
			if (d2)                                                        \
				d2[i] = r;                                             \
		}                                                                      \
	}
#define VADD(x, y) ((x) + (y))
#define VMUL(x, y) ((x) * (y))
FUSED(fz_f32_sum, float, float, VADD)
FUSED(fz_f32_prod, float, float, VMUL)
FUSED(fz_f64_sum, double, double, VADD)
FUSED(fz_f64_prod, double, double, VMUL)
FUSED(fz_u32_sum, uint32_t, uint32_t, VADD)
FUSED(fz_u32_prod, uint32_t, uint32_t, VMUL)
FUSED(fz_u64_sum, uint64_t, uint64_t, VADD)
FUSED(fz_u64_prod, uint64_t, uint64_t, VMUL)

typedef void (*fused_fn)(void *, void *, const void *, const void *, size_t, int, int);

static bool reduce_fused(npccl_dtype_t dt, npccl_redop_t op, void *const *dsts, int ndst,
			 uint64_t nt_mask, const void *const *srcs, size_t n)
{
	int o = op == NPCCL_AVG ? NPCCL_SUM : (int)op;
	if (ndst > 2 || (o != NPCCL_SUM && o != NPCCL_PROD) || !__builtin_cpu_supports("avx2"))
		return false;
	fused_fn f;
	switch (dt) {
	case NPCCL_FLOAT32: f = (fused_fn)(o ? fz_f32_prod : fz_f32_sum); break;
	case NPCCL_FLOAT64: f = (fused_fn)(o ? fz_f64_prod : fz_f64_sum); break;
	case NPCCL_INT32:
	case NPCCL_UINT32: f = (fused_fn)(o ? fz_u32_prod : fz_u32_sum); break;
	case NPCCL_INT64:
	case NPCCL_UINT64: f = (fused_fn)(o ? fz_u64_prod : fz_u64_sum); break;
	default: return false;
	}
	size_t es = npccl_dtype_size(dt);
	char *d1 = dsts[0], *d2 = ndst > 1 ? dsts[1] : NULL;
	const char *a = srcs[0], *b = srcs[1];
	int nt1 = (int)(nt_mask & 1), nt2 = d2 ? (int)(nt_mask >> 1 & 1) : 0;
	/* a scalar head brings the first streaming destination to 32 bytes */
	char *lead = nt1 ? d1 : nt2 ? d2 : NULL;
	size_t head = lead ? ((32 - ((uintptr_t)lead & 31)) & 31) : 0;
	if (head % es || (nt1 && nt2 && ((uintptr_t)d1 & 31) != ((uintptr_t)d2 & 31)))
		return false;
	head = MIN(head / es, n);
	if (head)
		f(d1, d2, a, b, head, 0, 0);
	if (n > head)
		f(d1 + head * es, d2 ? d2 + head * es : NULL, a + head * es, b + head * es,
		  n - head, nt1, nt2);
	return true;
}
#else
static bool reduce_fused(npccl_dtype_t dt, npccl_redop_t op, void *const *dsts, int ndst,
			 uint64_t nt_mask, const void *const *srcs, size_t n)
{
	return false;
}
#endif

/* Otherwise: reduce through an L1-resident block, then store the block to
 * every destination, with streaming stores where nt_mask says so. */
#define BLOCK_BYTES 4096

void reduce_multi(npccl_dtype_t dt, npccl_redop_t op, void *const *dsts, int ndst,
		  uint64_t nt_mask, const void *const *srcs, int nsrc, size_t n)
{
	if (nsrc == 2 && reduce_fused(dt, op, dsts, ndst, nt_mask, srcs, n))
		return;
	_Alignas(64) char tmp[BLOCK_BYTES];
	size_t es = npccl_dtype_size(dt), per = BLOCK_BYTES / es;
	kern_fn k = pick(dt, op);
	for (size_t o = 0; o < n; o += per) {
		size_t m = MIN(per, n - o), off = o * es, bytes = m * es;
		if (nsrc == 1) {
			memcpy(tmp, (const char *)srcs[0] + off, bytes);
		} else {
			k(tmp, (const char *)srcs[0] + off, (const char *)srcs[1] + off, m);
			for (int s = 2; s < nsrc; s++)
				k(tmp, tmp, (const char *)srcs[s] + off, m);
		}
		for (int d = 0; d < ndst; d++) {
			char *dst = (char *)dsts[d] + off;
			if (nt_mask >> (d < 64 ? d : 63) & 1)
				copy_stream(dst, tmp, bytes);
			else
				memcpy(dst, tmp, bytes);
		}
	}
}
