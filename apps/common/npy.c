/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npy.c - the little of NumPy's .npy format the command needs: integer and
 * boolean arrays in (descr '<i8', '>i4', '|u1', '|b1', ...; C order; 1-D or
 * 2-D), float32 arrays out (version 1.0, '<f4'). Every malformed header is
 * refused with a message naming the file and the problem.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"

static int fail(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -1;
}

/* the value text after 'key': in the header dict */
static const char *field(const char *h, const char *key)
{
	const char *p = strstr(h, key);

	if (!p)
		return NULL;
	p += strlen(key);
	while (*p == ' ' || *p == ':')
		p++;
	return p;
}

int npy_read_i64(const char *path, int64_t *rows, int64_t *cols, int64_t **data, char *err,
		 size_t errlen)
{
	unsigned char pre[12];
	char *h = NULL, order, kind;
	const char *d, *f, *s;
	int64_t shape[2] = { 1, 1 }, n;
	int nd = 0, width, rc = -1;
	uint32_t hl;
	unsigned char *raw = NULL;
	FILE *fp = fopen(path, "rb");

	*data = NULL;
	if (!fp)
		return fail(err, errlen, "cannot open %s: %s", path, strerror(errno));
	if (fread(pre, 1, 10, fp) != 10 || memcmp(pre, "\x93NUMPY", 6)) {
		/* a directory opens but does not read: say so, not "no magic" */
		if (ferror(fp))
			fail(err, errlen, "cannot read %s: %s", path, strerror(errno));
		else
			fail(err, errlen, "%s is not a .npy file (no \\x93NUMPY magic)", path);
		goto out;
	}
	if (pre[6] == 1) {
		hl = pre[8] | (uint32_t)pre[9] << 8;
	} else if (pre[6] == 2 || pre[6] == 3) {
		if (fread(pre + 10, 1, 2, fp) != 2) {
			fail(err, errlen, "%s: truncated .npy header", path);
			goto out;
		}
		hl = pre[8] | (uint32_t)pre[9] << 8 | (uint32_t)pre[10] << 16 | (uint32_t)pre[11] << 24;
	} else {
		fail(err, errlen, "%s: .npy format version %d is not supported", path, pre[6]);
		goto out;
	}
	if (hl > (1u << 20) || !(h = calloc(1, hl + 1)) || fread(h, 1, hl, fp) != hl) {
		fail(err, errlen, "%s: bad or truncated .npy header", path);
		goto out;
	}
	d = field(h, "'descr'");
	f = field(h, "'fortran_order'");
	s = field(h, "'shape'");
	if (!d || !f || !s || d[0] != '\'' || !d[1] || !d[2] || !d[3] || *s != '(') {
		fail(err, errlen, "%s: .npy header without descr, fortran_order or shape", path);
		goto out;
	}
	order = d[1];
	kind = d[2];
	width = atoi(d + 3);
	if (strncmp(f, "False", 5)) {
		fail(err, errlen, "%s: Fortran-ordered arrays are not supported; save with "
		     "numpy.ascontiguousarray", path);
		goto out;
	}
	if ((kind != 'i' && kind != 'u' && kind != 'b') ||
	    (width != 1 && width != 2 && width != 4 && width != 8) ||
	    (order != '<' && order != '>' && order != '|' && order != '=')) {
		fail(err, errlen, "%s: dtype '%.*s' is not an integer or boolean type (token ids, "
		     "types and masks are integers)", path, (int)strcspn(d + 1, "'"), d + 1);
		goto out;
	}
	for (s++; *s && *s != ')';) {
		char *end;
		long long v;

		while (*s == ' ' || *s == ',')
			s++;
		if (*s == ')')
			break;
		errno = 0;
		v = strtoll(s, &end, 10);
		if (end == s || errno || v < 0 || nd == 2) {
			fail(err, errlen, "%s: the array must be 1-D or 2-D ([batch, seq_len])", path);
			goto out;
		}
		shape[nd++] = v;
		s = end;
	}
	if (nd == 0) {
		fail(err, errlen, "%s: a 0-d array is no batch; save a [batch, seq_len] array", path);
		goto out;
	}
	if (nd == 1) {
		shape[1] = shape[0];
		shape[0] = 1;
	}
	if (shape[0] > (1LL << 31) || shape[1] > (1LL << 31) ||
	    shape[0] * shape[1] > (1LL << 31)) {
		fail(err, errlen, "%s: %lld x %lld elements is too large", path,
		     (long long)shape[0], (long long)shape[1]);
		goto out;
	}
	n = shape[0] * shape[1];
	raw = malloc((size_t)(n ? n : 1) * (size_t)width);
	*data = malloc((size_t)(n ? n : 1) * sizeof(int64_t));
	if (!raw || !*data) {
		fail(err, errlen, "%s: out of memory", path);
		goto out;
	}
	if (fread(raw, (size_t)width, (size_t)n, fp) != (size_t)n) {
		fail(err, errlen, "%s: the file holds fewer than the %lld elements its header "
		     "announces", path, (long long)n);
		goto out;
	}
	for (int64_t i = 0; i < n; i++) {
		unsigned char b[8];
		uint64_t u = 0;

		memcpy(b, raw + i * width, (size_t)width);
		for (int k = 0; k < width; k++)
			u |= (uint64_t)b[order == '>' ? width - 1 - k : k] << (8 * k);
		if (kind == 'i' && width < 8 && (u >> (8 * width - 1)) & 1)
			u |= ~0ULL << (8 * width);	/* sign-extend */
		if (kind == 'u' && width == 8 && u > INT64_MAX) {
			fail(err, errlen, "%s: element %lld is %llu, beyond int64", path,
			     (long long)i, (unsigned long long)u);
			goto out;
		}
		(*data)[i] = (int64_t)u;
	}
	*rows = shape[0];
	*cols = shape[1];
	rc = 0;
out:
	if (rc) {
		free(*data);
		*data = NULL;
	}
	free(raw);
	free(h);
	fclose(fp);
	return rc;
}

/* write @ndim dims of @data, elements of @size bytes described by @descr ('<f4') */
static int write_array(const char *path, const char *descr, size_t size, int ndim,
		       const int64_t *shape, const void *data, char *err, size_t errlen)
{
	char h[256], dims[160] = "";
	size_t o = 0, hl;
	int64_t n = 1;
	FILE *fp;

	for (int i = 0; i < ndim; i++) {
		o += (size_t)snprintf(dims + o, sizeof(dims) - o, "%lld,%s", (long long)shape[i],
				      i + 1 < ndim ? " " : "");
		n *= shape[i];
	}
	if (ndim > 1)
		dims[o - 1] = '\0'; /* (2, 3) rather than (2, 3,) */
	hl = (size_t)snprintf(h, sizeof(h), "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
			      descr, dims);
	while ((10 + hl + 1) % 64)
		h[hl++] = ' ';
	h[hl++] = '\n';
	fp = fopen(path, "wb");
	if (!fp)
		return fail(err, errlen, "cannot write %s: %s", path, strerror(errno));
	unsigned char pre[10] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hl & 0xff),
				  (unsigned char)(hl >> 8) };

	if (fwrite(pre, 1, 10, fp) != 10 || fwrite(h, 1, hl, fp) != hl ||
	    fwrite(data, size, (size_t)n, fp) != (size_t)n) {
		fclose(fp);
		return fail(err, errlen, "cannot write %s: %s", path, strerror(errno));
	}
	if (fclose(fp))
		return fail(err, errlen, "cannot write %s: %s", path, strerror(errno));
	return 0;
}

int npy_write_f32(const char *path, int ndim, const int64_t *shape, const float *data, char *err,
		  size_t errlen)
{
	return write_array(path, "<f4", sizeof(float), ndim, shape, data, err, errlen);
}

int npy_write_i64(const char *path, int ndim, const int64_t *shape, const int64_t *data,
		  char *err, size_t errlen)
{
	return write_array(path, "<i8", sizeof(int64_t), ndim, shape, data, err, errlen);
}
