/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * status.c - libnpbert's status names and the per-thread error message.
 */
#include <stdarg.h>
#include <stdio.h>

#include "internal.h"

static _Thread_local char last_error[1024];

NPBERT_API const char *npbert_strerror(npbert_status_t st)
{
	switch (st) {
	case NPBERT_OK: return "success";
	case NPBERT_ERR_INVALID: return "invalid argument";
	case NPBERT_ERR_LAYOUT: return "the model is not a BERT layout";
	case NPBERT_ERR_INPUT: return "the batch is refused";
	case NPBERT_ERR_SPLIT: return "the model cannot be split over this many ranks";
	case NPBERT_ERR_NO_MEMORY: return "out of memory";
	case NPBERT_ERR_COMM: return "a collective failed";
	case NPBERT_ERR_TENSOR: return "the tensor library refused an operation";
	case NPBERT_ERR_UNSUPPORTED: return "not supported by this model";
	case NPBERT_ERR_WEIGHTS: return "a weight of the model is not a finite number";
	}
	return "unknown status";
}

NPBERT_API const char *npbert_last_error(void)
{
	return last_error;
}

npbert_status_t npb_fail(npbert_status_t st, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return st;
}

npbert_status_t npb_tensor_fail(npt_status_t s, const char *what)
{
	return npb_fail(s == NPT_E_NOMEM ? NPBERT_ERR_NO_MEMORY : NPBERT_ERR_TENSOR, "%s: %s",
			what, npt_last_error());
}
