/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npy.h - read integer arrays from and write float32 arrays to NumPy .npy
 * files (format versions 1-3, C order), for the npushm-bert and npushm-llama
 * commands (and int64 arrays for the latter).
 */
#ifndef NPUSHM_APPS_NPY_H
#define NPUSHM_APPS_NPY_H

#include <stddef.h>
#include <stdint.h>

/*
 * Read a 1-D or 2-D array of integers or booleans (any width, either byte
 * order) from @path as int64. A 1-D array is one row. On success *rows,
 * *cols and *data (malloc'ed, the caller frees) are set and 0 returned; on
 * failure -1 with a message in @err.
 */
int npy_read_i64(const char *path, int64_t *rows, int64_t *cols, int64_t **data, char *err,
		 size_t errlen);

/* Write a float32 array of @ndim dims; 0 or -1 with a message in @err. */
int npy_write_f32(const char *path, int ndim, const int64_t *shape, const float *data, char *err,
		  size_t errlen);
/* The same for an int64 array (npushm-llama's generated ids). */
int npy_write_i64(const char *path, int ndim, const int64_t *shape, const int64_t *data,
		  char *err, size_t errlen);

#endif
