/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * use_nptensor.c - a program built only from the installed tree (`pkg-config
 * nptensor`): broadcasts a row over a matrix with npt_add, evaluates it and
 * checks every element. Prints "ok" and exits 0 on success.
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
	printf("ok\n");
	return 0;
}
