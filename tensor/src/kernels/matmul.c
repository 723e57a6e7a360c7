/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * matmul.c - NumPy matmul: 1-D operands promoted and the added dims
 * removed, batch dims broadcast; f32 on gemm.c (oneDNN, else OpenBLAS) and f64
 * on OpenBLAS (one GEMM per batch, any operand with one unit stride passed
 * without a copy, transposed when needed), f16/bf16 through f32 GEMM rounded once on store, integer and bool
 * through a reference loop (integers wrap as NumPy's; bool is or-of-and).
 *
 * Contracts: the scheduler gives the operands in the compute dtype and
 * copies those BLAS cannot address (stride 0 from broadcasting, negative or
 * non-unit strides in both dims) to contiguous memory first, as
 * npt_matmul_operand() asks; such a copy is reported when above the
 * materialisation threshold and refused in NPT_EXPAND_VIEW mode. OpenBLAS
 * uses the same thread count as the library (npt_set_num_threads).
 */
#include "kernels.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	int64_t rows, cols, rs, cs; /* matrix view, element strides */
} mat_t;

/* can BLAS read this matrix in place? sets transpose flag and leading dim */
static int blas_layout(const mat_t *m, int *trans, int64_t *ld)
{
	if ((m->cs == 1 || m->cols == 1) && (m->rows == 1 || m->rs >= m->cols) &&
	    (m->rows == 1 || m->rs > 0)) {
		*trans = 0;
		*ld = m->rows == 1 ? (m->cols > 0 ? m->cols : 1) : m->rs;
		return 1;
	}
	if ((m->rs == 1 || m->rows == 1) && (m->cols == 1 || m->cs >= m->rows) &&
	    (m->cols == 1 || m->cs > 0)) {
		*trans = 1;
		*ld = m->cols == 1 ? (m->rows > 0 ? m->rows : 1) : m->cs;
		return 1;
	}
	return 0;
}

/* matrix view of the last one or two dims of operand t (a: is_b = 0) */
static mat_t mat_of(const npt_tensor_t *t, int is_b)
{
	mat_t m;

	if (t->ndim == 1) {
		if (is_b) {
			m.rows = t->shape[0]; m.cols = 1; m.rs = t->strides[0]; m.cs = 1;
		} else {
			m.rows = 1; m.cols = t->shape[0]; m.rs = t->shape[0]; m.cs = t->strides[0];
		}
	} else {
		m.rows = t->shape[t->ndim - 2];
		m.cols = t->shape[t->ndim - 1];
		m.rs = t->strides[t->ndim - 2];
		m.cs = t->strides[t->ndim - 1];
	}
	return m;
}

static void batch_offsets(const npt_tensor_t *t, int nbat, int64_t *bst)
{
	int tb = t->ndim > 2 ? t->ndim - 2 : 0, off = nbat - tb;

	for (int d = 0; d < nbat; d++) {
		int k = d - off;

		bst[d] = (k < 0 || t->shape[k] == 1) ? 0 : t->strides[k];
	}
}

static void ref_gemm(npt_dtype_t dt, int64_t M, int64_t N, int64_t K, const char *a,
		     const mat_t *ma, const char *b, const mat_t *mb, char *c, npt_dtype_t cdt)
{
	size_t isz = npt_dtype_size(dt);
	npt_conv_fn tob = npt_conv(dt, NPT_I64), store = npt_conv(NPT_I64, cdt);

	for (int64_t i = 0; i < M; i++) {
		for (int64_t j = 0; j < N; j++) {
			uint64_t acc = 0;

			for (int64_t k = 0; k < K; k++) {
				int64_t x, y;

				tob(1, &x, 1, a + (i * ma->rs + k * ma->cs) * (int64_t)isz, 1);
				tob(1, &y, 1, b + (k * mb->rs + j * mb->cs) * (int64_t)isz, 1);
				if (dt == NPT_BOOL)
					acc |= (uint64_t)(x && y);
				else
					acc += (uint64_t)x * (uint64_t)y;
			}
			int64_t v = (int64_t)acc;

			store(1, c + (i * N + j) * (int64_t)npt_dtype_size(cdt), 1, &v, 1);
		}
	}
}

/* the dtype the product is computed in: f16/bf16 in f32 */
static npt_dtype_t compute_dtype(npt_dtype_t out_dt)
{
	return out_dt == NPT_F16 || out_dt == NPT_BF16 ? NPT_F32 : out_dt;
}

npt_operand_t npt_matmul_operand(npt_dtype_t out_dt, int i, const npt_tensor_t *in,
				 npt_dtype_t *dt, const char **what)
{
	npt_dtype_t gdt = compute_dtype(out_dt);
	mat_t m = mat_of(in, i);
	int64_t ld;
	int trans;

	*dt = gdt;
	*what = i ? "the second operand" : "the first operand";
	if (in->dtype != gdt)
		return NPT_OPERAND_CAST;
	if ((gdt == NPT_F32 || gdt == NPT_F64) && !blas_layout(&m, &trans, &ld))
		return NPT_OPERAND_COPY;
	return NPT_OPERAND_AS_IS;
}

npt_status_t npt_run_matmul(const npt_kcall_t *k)
{
	npt_tensor_t *a = k->in[0], *b = k->in[1], *dst = k->out;
	npt_dtype_t dt = dst->dtype, gdt = compute_dtype(dt);
	npt_status_t s = NPT_OK;
	char *tmp = NULL;
	size_t tmp_cap = 0;
	int blas = gdt == NPT_F32 || gdt == NPT_F64;
	mat_t ma = mat_of(a, 0), mb = mat_of(b, 1);
	int ta = 0, tb = 0;
	int64_t lda = 0, ldb = 0;

	if (blas && (!blas_layout(&ma, &ta, &lda) || !blas_layout(&mb, &tb, &ldb)))
		return npt_fail(NPT_E_INVAL, "internal: matmul's operands cannot be addressed");
	int64_t M = ma.rows, K = ma.cols, N = mb.cols;
	int nbat = dst->ndim - (a->ndim >= 2) - (b->ndim >= 2);
	int64_t bst_a[NPT_MAX_DIMS], bst_b[NPT_MAX_DIMS], nb = npt_numel(nbat, dst->shape);
	size_t gsz = npt_dtype_size(gdt);
	char *cbase = npt_tensor_ptr(dst);

	batch_offsets(a, nbat, bst_a);
	batch_offsets(b, nbat, bst_b);
	if (dt != gdt) {
		tmp = npt_scratch_alloc((size_t)(nb * M * N > 0 ? nb * M * N : 1) * gsz, &tmp_cap);
		if (!tmp) {
			s = npt_fail(NPT_E_NOMEM, "matmul: out of memory");
			goto out;
		}
		cbase = tmp;
	}
	int64_t idx[NPT_MAX_DIMS] = { 0 };

	for (int64_t bi = 0; bi < nb && M && N; bi++) {
		const char *pa = npt_tensor_ptr(a), *pb = npt_tensor_ptr(b);
		char *pc = cbase + bi * M * N * (int64_t)(blas ? gsz : npt_dtype_size(dt));

		/* no element of an empty operand is read: its data may be NULL */
		for (int d = 0; d < nbat && K; d++) {
			pa += idx[d] * bst_a[d] * (int64_t)gsz;
			pb += idx[d] * bst_b[d] * (int64_t)gsz;
		}
		if (K == 0) {
			memset(pc, 0, M * N * (blas ? gsz : npt_dtype_size(dt)));
		} else if (gdt == NPT_F32) {
			npt_gemm_t g = {
				.M = M, .N = N, .K = K, .lda = lda, .ldb = ldb, .ldc = N,
				.ta = ta, .tb = tb, .act = NPT_ACT_NONE,
				.a = (const float *)pa, .b = (const float *)pb, .c = (float *)pc,
			};

			if ((s = npt_gemm_f32(&g)))
				goto out;
		} else if (gdt == NPT_F64) {
			cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
				    tb ? CblasTrans : CblasNoTrans, M, N, K, 1.0, (const double *)pa,
				    lda, (const double *)pb, ldb, 0.0, (double *)pc, N);
		} else {
			ref_gemm(gdt, M, N, K, pa, &ma, pb, &mb, pc, dt);
		}
		for (int d = nbat - 1; d >= 0; d--) {
			if (++idx[d] < dst->shape[d])
				break;
			idx[d] = 0;
		}
	}
	if (dt != gdt)
		npt_conv(gdt, dt)(nb * M * N, npt_tensor_ptr(dst), 1, tmp, 1);
out:
	npt_scratch_free(tmp, tmp_cap);
	return s;
}
