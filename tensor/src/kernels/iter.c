/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * iter.c - iteration spaces: one shape shared by several strided operands
 * (the leaves of a fused program, an output, an accumulator).
 *
 * npt_space_simplify drops size-1 dimensions, optionally reorders dimensions
 * by decreasing stride of one operand (reductions: walk memory in order),
 * and coalesces adjacent dimensions that are contiguous for every operand,
 * so that e.g. a (32,128,768) + (768,) add becomes a (4096,768) loop and a
 * contiguous copy becomes one flat loop.
 *
 * Contracts: the result always has ndim >= 1; an empty space keeps a 0 dim.
 */
#include "kernels.h"

#include <stdlib.h>

static void swap_dims(npt_space_t *sp, int i, int j)
{
	int64_t t = sp->shape[i];

	sp->shape[i] = sp->shape[j];
	sp->shape[j] = t;
	for (int o = 0; o < sp->nop; o++) {
		t = sp->strides[o][i];
		sp->strides[o][i] = sp->strides[o][j];
		sp->strides[o][j] = t;
	}
}

void npt_space_simplify(npt_space_t *sp, int sort_key)
{
	int nd = 0;

	for (int d = 0; d < sp->ndim; d++) {
		if (sp->shape[d] == 0) {
			sp->ndim = 1;
			sp->shape[0] = 0;
			for (int o = 0; o < sp->nop; o++)
				sp->strides[o][0] = 0;
			return;
		}
	}
	for (int d = 0; d < sp->ndim; d++) {
		if (sp->shape[d] == 1)
			continue;
		sp->shape[nd] = sp->shape[d];
		for (int o = 0; o < sp->nop; o++)
			sp->strides[o][nd] = sp->strides[o][d];
		nd++;
	}
	sp->ndim = nd;
	if (sort_key >= 0) {
		/* stable insertion sort: largest |stride| outermost */
		for (int i = 1; i < nd; i++)
			for (int j = i; j > 0 && llabs(sp->strides[sort_key][j - 1]) <
						llabs(sp->strides[sort_key][j]); j--)
				swap_dims(sp, j - 1, j);
	}
	if (nd > 1) {
		int w = 0;

		for (int d = 1; d < nd; d++) {
			int ok = 1;

			for (int o = 0; o < sp->nop && ok; o++)
				ok = sp->strides[o][w] == sp->strides[o][d] * sp->shape[d];
			if (ok) {
				sp->shape[w] *= sp->shape[d];
				for (int o = 0; o < sp->nop; o++)
					sp->strides[o][w] = sp->strides[o][d];
			} else {
				w++;
				sp->shape[w] = sp->shape[d];
				for (int o = 0; o < sp->nop; o++)
					sp->strides[o][w] = sp->strides[o][d];
			}
		}
		nd = w + 1;
	}
	if (nd == 0) {
		nd = 1;
		sp->shape[0] = 1;
		for (int o = 0; o < sp->nop; o++)
			sp->strides[o][0] = 0;
	}
	sp->ndim = nd;
}
