/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/* dtype.h - element-type lookups shared by the parser and the manifest. */
#ifndef NPUSHM_DTYPE_H
#define NPUSHM_DTYPE_H

#include "npushm.h"

/* NPUSHM_DTYPE_INVALID if @name is no safetensors dtype. */
npushm_dtype_t npi_dtype_from_name(const char *name);
/* "BOOL, U8, ..." for error messages. */
const char *npi_dtype_list(void);

#endif
