/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * status.c - libnpllama's status names and the per-thread error message.
 */
#include <stdarg.h>
#include <stdio.h>

#include "internal.h"

static _Thread_local char last_error[1024];

NPLLAMA_API const char *npllama_strerror(npllama_status_t st)
{
	switch (st) {
	case NPLLAMA_OK: return "success";
	case NPLLAMA_ERR_INVALID: return "invalid argument";
	case NPLLAMA_ERR_LAYOUT: return "the model is not a Llama layout";
	case NPLLAMA_ERR_INPUT: return "the token ids are refused";
	case NPLLAMA_ERR_CONTEXT: return "more tokens than the context holds";
	case NPLLAMA_ERR_NO_MEMORY: return "out of memory";
	case NPLLAMA_ERR_REGION: return "the KV cache region could not be made";
	case NPLLAMA_ERR_TENSOR: return "the tensor library refused an operation";
	case NPLLAMA_ERR_SPLIT: return "the model cannot be split over this many ranks";
	case NPLLAMA_ERR_COMM: return "a collective between the ranks failed";
	case NPLLAMA_ERR_UNTRUSTED: return "a prefix's name is held by an untrusted region";
	}
	return "unknown status";
}

NPLLAMA_API const char *npllama_last_error(void)
{
	return last_error;
}

npllama_status_t npl_fail(npllama_status_t st, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return st;
}

npllama_status_t npl_tensor_fail(npt_status_t s, const char *what)
{
	return npl_fail(s == NPT_E_NOMEM ? NPLLAMA_ERR_NO_MEMORY : NPLLAMA_ERR_TENSOR, "%s: %s",
			what, npt_last_error());
}
