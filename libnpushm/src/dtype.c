/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * dtype.c - the safetensors element types: names and sizes. The table is
 * the single source for the parser (name -> type), the manifest check and
 * the CLI.
 */
#include <string.h>

#include "internal.h"
#include "dtype.h"

static const struct {
	const char *name;
	size_t size;
} dtypes[NPUSHM_DTYPE_COUNT_] = {
	[NPUSHM_DTYPE_INVALID] = { "?", 0 },
	[NPUSHM_DTYPE_BOOL] = { "BOOL", 1 },
	[NPUSHM_DTYPE_U8] = { "U8", 1 },
	[NPUSHM_DTYPE_I8] = { "I8", 1 },
	[NPUSHM_DTYPE_F8_E5M2] = { "F8_E5M2", 1 },
	[NPUSHM_DTYPE_F8_E4M3] = { "F8_E4M3", 1 },
	[NPUSHM_DTYPE_I16] = { "I16", 2 },
	[NPUSHM_DTYPE_U16] = { "U16", 2 },
	[NPUSHM_DTYPE_F16] = { "F16", 2 },
	[NPUSHM_DTYPE_BF16] = { "BF16", 2 },
	[NPUSHM_DTYPE_I32] = { "I32", 4 },
	[NPUSHM_DTYPE_U32] = { "U32", 4 },
	[NPUSHM_DTYPE_F32] = { "F32", 4 },
	[NPUSHM_DTYPE_F64] = { "F64", 8 },
	[NPUSHM_DTYPE_I64] = { "I64", 8 },
	[NPUSHM_DTYPE_U64] = { "U64", 8 },
};

NPUSHM_API const char *npushm_dtype_name(npushm_dtype_t dtype)
{
	return (unsigned)dtype < NPUSHM_DTYPE_COUNT_ ? dtypes[dtype].name : "?";
}

NPUSHM_API size_t npushm_dtype_size(npushm_dtype_t dtype)
{
	return (unsigned)dtype < NPUSHM_DTYPE_COUNT_ ? dtypes[dtype].size : 0;
}

npushm_dtype_t npi_dtype_from_name(const char *name)
{
	for (int i = 1; i < NPUSHM_DTYPE_COUNT_; i++)
		if (!strcmp(name, dtypes[i].name))
			return (npushm_dtype_t)i;
	return NPUSHM_DTYPE_INVALID;
}

const char *npi_dtype_list(void)
{
	return "BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64";
}
