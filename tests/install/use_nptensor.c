/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * use_nptensor.c - a program built only from the installed tree (`pkg-config
 * nptensor`): broadcasts a row over a matrix with npt_add, evaluates it and
 * checks every element; then a small npt_linear (the GEMM), checked, and
 * prints the GEMM backend it ran on (oneDNN in a dynamically linked program
 * when libdnnl2 is installed, OpenBLAS in a static one). Prints "ok" and
 * exits 0 on success.
 */
#include <nptensor.h>
#include <stdio.h>

int main(void)
{
	float a[6] = { 1, 2, 3, 4, 5, 6 }, b[3] = { 10, 20, 30 };
	int64_t as[2] = { 2, 3 }, bs[1] = { 3 };
	npt_tensor_t *x, *y, *z;
	float *out;

	if (npt_tensor_from_data(a, NPT_F32, 2, as, NULL, 0, NULL, NULL, &x) ||
	    npt_tensor_from_data(b, NPT_F32, 1, bs, NULL, NPT_BORROW_READONLY, NULL, NULL, &y) ||
	    npt_add(x, y, &z) || npt_tensor_eval(z) || npt_tensor_data(z, (void **)&out)) {
		fprintf(stderr, "use_nptensor: %s\n", npt_last_error());
		return 1;
	}
	for (int i = 0; i < 6; i++) {
		if (out[i] != a[i] + b[i % 3]) {
			fprintf(stderr, "use_nptensor: element %d is %g, not %g\n", i, out[i], a[i] + b[i % 3]);
			return 1;
		}
	}
	npt_tensor_free(z);
	npt_tensor_free(y);
	npt_tensor_free(x);
	/* [2, 3] @ [[1, 0, 1], [0, 1, 0]]^T + [10, 20] */
	float w[6] = { 1, 0, 1, 0, 1, 0 }, bias[2] = { 10, 20 }, want[4] = { 14, 22, 20, 25 };
	int64_t ws[2] = { 2, 3 }, bls[1] = { 2 };
	npt_tensor_t *tw, *tb;

	if (npt_tensor_from_data(a, NPT_F32, 2, as, NULL, NPT_BORROW_READONLY, NULL, NULL, &x) ||
	    npt_tensor_from_data(w, NPT_F32, 2, ws, NULL, NPT_BORROW_READONLY, NULL, NULL, &tw) ||
	    npt_tensor_from_data(bias, NPT_F32, 1, bls, NULL, NPT_BORROW_READONLY, NULL, NULL,
				 &tb) ||
	    npt_linear(x, tw, tb, NPT_ACT_NONE, &z) || npt_tensor_eval(z) ||
	    npt_tensor_data(z, (void **)&out)) {
		fprintf(stderr, "use_nptensor: linear: %s\n", npt_last_error());
		return 1;
	}
	for (int i = 0; i < 4; i++) {
		if (out[i] != want[i]) {
			fprintf(stderr, "use_nptensor: linear element %d is %g, not %g\n", i, out[i],
				want[i]);
			return 1;
		}
	}
	printf("gemm backend: %s\n", npt_gemm_backend());
	npt_tensor_free(z);
	npt_tensor_free(tb);
	npt_tensor_free(tw);
	npt_tensor_free(x);
	printf("ok\n");
	return 0;
}
