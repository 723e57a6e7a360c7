/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * matmul.c - NumPy matmul: 1-D operands promoted and the added dims
 * removed, batch dims broadcast; f32 on gemm.c (oneDNN, else OpenBLAS) and f64
 * on OpenBLAS (one GEMM per batch, any operand with one unit stride passed
 * without a copy, transposed when needed), f16/bf16 through f32 GEMM rounded once on store, integer and bool
 * through a reference loop (integers wrap as NumPy's; bool is or-of-and).
 *
 * Contracts: operands BLAS cannot address (stride 0 from broadcasting,
 * negative or non-unit strides in both dims) are copied to contiguous
 * memory first; the copy is reported when above the materialisation
 * threshold and refused in NPT_EXPAND_VIEW mode. OpenBLAS uses the same
 * thread count as the library (npt_set_num_threads).
 */
#include "internal.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

extern void openblas_set_num_threads(int n) __attribute__((weak));

void npt_blas_set_threads(int n)
{
	if (openblas_set_num_threads)
		openblas_set_num_threads(n);
}

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

/* contiguous copy of t in dtype dt (for BLAS or f16/bf16) */
static npt_status_t contig_copy(npt_tensor_t *t, npt_dtype_t dt, int report, npt_tensor_t **out)
{
	npt_tensor_t *c;
	npt_status_t s;

	if (report && npt_cfg_expand_mode() == NPT_EXPAND_VIEW) {
		char a[NPT_SHAPE_STRLEN];

		return npt_fail(NPT_E_WOULD_COPY, "matmul: operand of shape %s has strides BLAS "
				"cannot use (broadcast, negative or non-unit in both dims) and "
				"expansion mode VIEW forbids the copy",
				npt_shape_str(a, sizeof(a), t->ndim, t->shape));
	}
	if ((s = npt_tensor_cast(t, dt, &c)))
		return s;
	if ((s = npt_eval_locked(c))) {
		npt_tensor_free(c);
		return s;
	}
	if (report)
		npt_note_materialize("matmul", t->ndim, t->shape, t->ndim, t->shape,
				     (size_t)npt_tensor_numel(t) * npt_dtype_size(dt),
				     "BLAS needs one unit stride per matrix");
	*out = c;
	return NPT_OK;
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

npt_status_t npt_run_matmul(npt_tensor_t *t, npt_tensor_t *dst)
{
	npt_tensor_t *a = t->node->in[0], *b = t->node->in[1];
	npt_tensor_t *ca = NULL, *cb = NULL;
	npt_dtype_t dt = t->dtype, gdt = dt;
	npt_status_t s = NPT_OK;
	char *tmp = NULL;
	size_t tmp_cap = 0;

	if (dt == NPT_F16 || dt == NPT_BF16)
		gdt = NPT_F32;
	int blas = gdt == NPT_F32 || gdt == NPT_F64;

	/* operands in the compute dtype */
	if (a->dtype != gdt) {
		if ((s = contig_copy(a, gdt, 0, &ca)))
			goto out;
		a = ca;
	}
	if (b->dtype != gdt) {
		if ((s = contig_copy(b, gdt, 0, &cb)))
			goto out;
		b = cb;
	}
	mat_t ma = mat_of(a, 0), mb = mat_of(b, 1);
	int ta, tb;
	int64_t lda, ldb;

	if (blas && !blas_layout(&ma, &ta, &lda)) {
		npt_tensor_t *c;

		if ((s = contig_copy(a, gdt, 1, &c)))
			goto out;
		npt_tensor_free(ca);
		a = ca = c;
		ma = mat_of(a, 0);
		blas_layout(&ma, &ta, &lda);
	}
	if (blas && !blas_layout(&mb, &tb, &ldb)) {
		npt_tensor_t *c;

		if ((s = contig_copy(b, gdt, 1, &c)))
			goto out;
		npt_tensor_free(cb);
		b = cb = c;
		mb = mat_of(b, 1);
		blas_layout(&mb, &tb, &ldb);
	}
	int64_t M = ma.rows, K = ma.cols, N = mb.cols;
	int nbat = t->ndim - (t->node->in[0]->ndim >= 2) - (t->node->in[1]->ndim >= 2);
	int64_t bst_a[NPT_MAX_DIMS], bst_b[NPT_MAX_DIMS], nb = npt_numel(nbat, t->shape);
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

		for (int d = 0; d < nbat; d++) {
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
			if (++idx[d] < t->shape[d])
				break;
			idx[d] = 0;
		}
	}
	if (dt != gdt)
		npt_conv(gdt, dt)(nb * M * N, npt_tensor_ptr(dst), 1, tmp, 1);
out:
	npt_scratch_free(tmp, tmp_cap);
	npt_tensor_free(ca);
	npt_tensor_free(cb);
	return s;
}
