/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * safetensors.c - parse and validate a safetensors header with json-c.
 *
 * Rules (all enforced, each with its own message):
 *   - the file holds the 8-byte length; 2 <= N <= 100000000 and
 *     8 + N <= file size;
 *   - the header starts with '{', is strict UTF-8 JSON nested at most
 *     NPI_ST_MAX_DEPTH deep, has no escaped NUL and no duplicate key, and
 *     only spaces follow the object;
 *   - "__metadata__", if present, is an object of strings;
 *   - every other key is a tensor: a non-empty name whose value is an object
 *     with exactly "dtype" (a known name), "shape" (at most
 *     NPUSHM_TENSOR_MAX_DIMS integers in [0, 2^63)) and "data_offsets"
 *     (two integers b <= e);
 *   - the product of the shape times the dtype size fits 64 bits and equals
 *     e - b;
 *   - sorted by offset, the tensors cover the data section exactly: no byte
 *     outside it, no overlap, no hole, nothing after the last tensor.
 * Input is untrusted: every size is checked before it is used and all
 * arithmetic is overflow-checked. This file is the fuzz target
 * (libnpushm/fuzz/).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "dtype.h"
#include "internal.h"
#include "safetensors.h"

#define FORMAT_FAIL(...) npi_fail(NPUSHM_ERR_FORMAT, 0, __VA_ARGS__)

npushm_status_t npi_st_check_prefix(const uint8_t *first8, uint64_t file_size, uint64_t *header_len)
{
	uint64_t n = 0;

	if (file_size < 8)
		return FORMAT_FAIL("the file is %llu bytes long, too short for the 8-byte header length",
				   (unsigned long long)file_size);
	for (int i = 7; i >= 0; i--)
		n = (n << 8) | first8[i];
	if (n < 2)
		return FORMAT_FAIL("the header length is %llu bytes; a header is at least '{}' (2 bytes)",
				   (unsigned long long)n);
	if (n > NPI_ST_MAX_HEADER)
		return FORMAT_FAIL("the header length %llu exceeds the limit of %llu bytes",
				   (unsigned long long)n, NPI_ST_MAX_HEADER);
	if (n > file_size - 8)
		return FORMAT_FAIL("the header length %llu runs past the end of the file (%llu bytes); the file is truncated",
				   (unsigned long long)n, (unsigned long long)file_size);
	*header_len = n;
	return NPUSHM_OK;
}

/*
 * A lexical pass over the raw header before json-c sees it: find where the
 * top-level object ends (only spaces may follow), count the object members
 * (every ':' outside a string is one, to spot keys json-c would silently
 * merge), and refuse what json-c tolerates but JSON forbids: single-quoted
 * strings and escaped NULs (json-c would truncate a key at the NUL).
 */
static npushm_status_t scan_raw(const char *s, size_t n, size_t *end, size_t *members)
{
	bool in_str = false;
	size_t i, depth = 0, count = 0;

	for (i = 0; i < n; i++) {
		char c = s[i];

		if (in_str) {
			if (c == '\\') {
				if (i + 5 < n && s[i + 1] == 'u' && !memcmp(s + i + 2, "0000", 4))
					return FORMAT_FAIL("the header contains an escaped NUL character (\\u0000) at byte %zu; names and strings may not contain NUL",
							   i);
				i++;
			} else if (c == '"') {
				in_str = false;
			}
			continue;
		}
		switch (c) {
		case '"':
			in_str = true;
			break;
		case '\'':
			return FORMAT_FAIL("the header has a single quote at byte %zu; JSON strings take double quotes",
					   i);
		case ':':
			count++;
			break;
		case '{':
		case '[':
			depth++;
			break;
		case '}':
		case ']':
			if (depth == 0)
				return FORMAT_FAIL("the header has an unbalanced '%c' at byte %zu", c, i);
			if (--depth == 0) {
				*end = i + 1;
				*members = count;
				for (i = *end; i < n; i++)
					if (s[i] != ' ')
						return FORMAT_FAIL("the header has the byte 0x%02x at %zu after its JSON object; only spaces may pad it",
								   (unsigned char)s[i], i);
				return NPUSHM_OK;
			}
			break;
		}
	}
	return FORMAT_FAIL("the header JSON ends before its closing '}' (%zu bytes); the header is truncated", n);
}

static size_t tree_members(struct json_object *o)
{
	size_t n = 0;

	if (json_object_is_type(o, json_type_object)) {
		json_object_object_foreach(o, k, v) {
			(void)k;
			n += 1 + tree_members(v);
		}
	} else if (json_object_is_type(o, json_type_array)) {
		size_t len = json_object_array_length(o);

		for (size_t i = 0; i < len; i++)
			n += tree_members(json_object_array_get_idx(o, i));
	}
	return n;
}

/* A JSON integer in [0, INT64_MAX]; false otherwise. */
static bool get_count(struct json_object *v, uint64_t *out)
{
	int64_t x;

	if (!json_object_is_type(v, json_type_int))
		return false;
	x = json_object_get_int64(v);
	if (x < 0 || json_object_get_uint64(v) > (uint64_t)INT64_MAX)
		return false;
	*out = (uint64_t)x;
	return true;
}

/* The first ndim dimensions of t's shape, as "[a,b,c]". */
static void shape_str(const struct npi_st_tensor *t, uint32_t ndim, char *buf, size_t len)
{
	size_t o = (size_t)snprintf(buf, len, "[");

	for (uint32_t i = 0; i < ndim && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? "," : "", (long long)t->shape[i]);
	if (o < len)
		snprintf(buf + o, len - o, "]");
}

static npushm_status_t parse_tensor(const char *name, struct json_object *v,
				    struct npi_st_tensor *t)
{
	struct json_object *dtype = NULL, *shape = NULL, *offs = NULL;
	uint64_t nbytes, b, e;
	size_t n;

	if (!*name)
		return FORMAT_FAIL("a tensor has an empty name");
	if (!json_object_is_type(v, json_type_object))
		return FORMAT_FAIL("tensor '%s': the value is a JSON %s, not an object with dtype, shape and data_offsets",
				   name, json_type_to_name(json_object_get_type(v)));
	json_object_object_foreach(v, k, f) {
		if (!strcmp(k, "dtype"))
			dtype = f;
		else if (!strcmp(k, "shape"))
			shape = f;
		else if (!strcmp(k, "data_offsets"))
			offs = f;
		else
			return FORMAT_FAIL("tensor '%s': unknown key '%s' (expected dtype, shape, data_offsets)",
					   name, k);
	}
	if (!dtype)
		return FORMAT_FAIL("tensor '%s': the key 'dtype' is missing", name);
	if (!shape)
		return FORMAT_FAIL("tensor '%s': the key 'shape' is missing", name);
	if (!offs)
		return FORMAT_FAIL("tensor '%s': the key 'data_offsets' is missing", name);
	if (!json_object_is_type(dtype, json_type_string))
		return FORMAT_FAIL("tensor '%s': dtype is a JSON %s, not a string", name,
				   json_type_to_name(json_object_get_type(dtype)));
	t->dtype = npi_dtype_from_name(json_object_get_string(dtype));
	if (t->dtype == NPUSHM_DTYPE_INVALID)
		return FORMAT_FAIL("tensor '%s': unknown dtype '%s' (known: %s)", name,
				   json_object_get_string(dtype), npi_dtype_list());
	if (!json_object_is_type(shape, json_type_array))
		return FORMAT_FAIL("tensor '%s': shape is a JSON %s, not an array", name,
				   json_type_to_name(json_object_get_type(shape)));
	n = json_object_array_length(shape);
	if (n > NPUSHM_TENSOR_MAX_DIMS)
		return FORMAT_FAIL("tensor '%s': shape has %zu dimensions, more than the %d supported",
				   name, n, NPUSHM_TENSOR_MAX_DIMS);
	t->ndim = (uint32_t)n;
	nbytes = npushm_dtype_size(t->dtype);
	for (size_t i = 0; i < n; i++) {
		uint64_t d;

		if (!get_count(json_object_array_get_idx(shape, i), &d))
			return FORMAT_FAIL("tensor '%s': shape[%zu] is not an integer in [0, 2^63)", name, i);
		t->shape[i] = (int64_t)d;
		if (__builtin_mul_overflow(nbytes, d, &nbytes)) {
			char sb[256];

			/* Only the dimensions read so far: the rest are not parsed yet. */
			shape_str(t, (uint32_t)i + 1, sb, sizeof(sb));
			return FORMAT_FAIL("tensor '%s': shape %s%s of %s overflows 64 bits of bytes", name,
					   sb, i + 1 < n ? "..." : "", npushm_dtype_name(t->dtype));
		}
	}
	if (!json_object_is_type(offs, json_type_array) || json_object_array_length(offs) != 2)
		return FORMAT_FAIL("tensor '%s': data_offsets is not an array of two integers", name);
	if (!get_count(json_object_array_get_idx(offs, 0), &b) ||
	    !get_count(json_object_array_get_idx(offs, 1), &e))
		return FORMAT_FAIL("tensor '%s': data_offsets are not integers in [0, 2^63)", name);
	if (b > e)
		return FORMAT_FAIL("tensor '%s': data_offsets [%llu, %llu] end before they begin", name,
				   (unsigned long long)b, (unsigned long long)e);
	if (e - b != nbytes) {
		char sb[256];

		shape_str(t, t->ndim, sb, sizeof(sb));
		return FORMAT_FAIL("tensor '%s': shape %s of %s is %llu bytes but data_offsets [%llu, %llu] cover %llu",
				   name, sb, npushm_dtype_name(t->dtype), (unsigned long long)nbytes,
				   (unsigned long long)b, (unsigned long long)e,
				   (unsigned long long)(e - b));
	}
	t->nbytes = nbytes;
	t->begin = b;
	t->end = e;
	return NPUSHM_OK;
}

static npushm_status_t parse_metadata(struct json_object *v, char **out)
{
	const char *s;

	if (!json_object_is_type(v, json_type_object))
		return FORMAT_FAIL("__metadata__ is a JSON %s, not an object of strings",
				   json_type_to_name(json_object_get_type(v)));
	json_object_object_foreach(v, k, f) {
		if (!json_object_is_type(f, json_type_string))
			return FORMAT_FAIL("__metadata__['%s'] is a JSON %s; metadata values must be strings",
					   k, json_type_to_name(json_object_get_type(f)));
	}
	s = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	*out = strdup(s ? s : "{}");
	if (!*out)
		return npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot copy __metadata__");
	return NPUSHM_OK;
}

static int by_offset(const void *a, const void *b)
{
	const struct npi_st_tensor *x = a, *y = b;

	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Sorted by offset, the tensors must tile [0, data_len) exactly. */
static npushm_status_t check_coverage(struct npi_st_header *h)
{
	uint64_t cursor = 0;

	qsort(h->tensors, h->count, sizeof(*h->tensors), by_offset);
	for (size_t i = 0; i < h->count; i++) {
		const struct npi_st_tensor *t = &h->tensors[i];

		if (t->end > h->data_len)
			return FORMAT_FAIL("tensor '%s': data_offsets [%llu, %llu] run past the end of the data section (%llu bytes); the file is truncated or the offsets are wrong",
					   t->name, (unsigned long long)t->begin, (unsigned long long)t->end,
					   (unsigned long long)h->data_len);
		if (t->begin < cursor)
			return FORMAT_FAIL("tensor '%s': data_offsets [%llu, %llu] overlap tensor '%s' (which ends at %llu)",
					   t->name, (unsigned long long)t->begin, (unsigned long long)t->end,
					   h->tensors[i - 1].name, (unsigned long long)cursor);
		if (t->begin > cursor)
			return FORMAT_FAIL("the data bytes [%llu, %llu) belong to no tensor (a hole before tensor '%s')",
					   (unsigned long long)cursor, (unsigned long long)t->begin, t->name);
		cursor = t->end;
	}
	if (cursor != h->data_len)
		return FORMAT_FAIL("the data section has %llu bytes but the tensors cover only %llu; the bytes after the last tensor belong to none",
				   (unsigned long long)h->data_len, (unsigned long long)cursor);
	return NPUSHM_OK;
}

npushm_status_t npi_st_parse(const char *hdr, size_t hdr_len, uint64_t file_size,
			     struct npi_st_header **out)
{
	struct npi_st_header *h = NULL;
	struct json_tokener *tok = NULL;
	struct json_object *root = NULL;
	npushm_status_t st = NPUSHM_OK;
	size_t end = 0, raw_members = 0;

	*out = NULL;
	if (hdr_len < 2 || hdr[0] != '{')
		return FORMAT_FAIL("the header does not start with '{'; this is not a safetensors file");
	st = scan_raw(hdr, hdr_len, &end, &raw_members);
	if (st)
		return st;
	tok = json_tokener_new_ex(NPI_ST_MAX_DEPTH);
	if (!tok)
		return npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot allocate a JSON parser");
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	root = json_tokener_parse_ex(tok, hdr, (int)end);
	if (!root || json_tokener_get_parse_end(tok) != end) {
		enum json_tokener_error jerr = json_tokener_get_error(tok);

		if (jerr == json_tokener_error_depth)
			st = FORMAT_FAIL("the header JSON is nested more than %d levels deep", NPI_ST_MAX_DEPTH);
		else if (root || jerr == json_tokener_continue)
			st = FORMAT_FAIL("the header is not valid JSON: it ends at byte %zu", end);
		else
			st = FORMAT_FAIL("the header is not valid JSON: %s at byte %zu",
					 json_tokener_error_desc(jerr), json_tokener_get_parse_end(tok));
		goto out;
	}
	if (!json_object_is_type(root, json_type_object)) {
		st = FORMAT_FAIL("the header is a JSON %s, not an object", json_type_to_name(json_object_get_type(root)));
		goto out;
	}
	if (raw_members != tree_members(root)) {
		st = FORMAT_FAIL("the header repeats a key (%zu members written, %zu distinct); tensor names and keys must be unique",
				 raw_members, tree_members(root));
		goto out;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		st = npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot allocate the header");
		goto out;
	}
	h->header_len = hdr_len;
	h->data_start = 8 + (uint64_t)hdr_len;
	h->data_len = file_size - h->data_start;
	h->tensors = calloc((size_t)json_object_object_length(root) + 1, sizeof(*h->tensors));
	if (!h->tensors) {
		st = npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot allocate the tensor table");
		goto out;
	}
	json_object_object_foreach(root, key, val) {
		struct npi_st_tensor *t;

		if (!strcmp(key, "__metadata__")) {
			st = parse_metadata(val, &h->metadata_json);
			if (st)
				goto out;
			continue;
		}
		t = &h->tensors[h->count];
		t->name_len = strlen(key);
		t->name = strdup(key);
		if (!t->name) {
			st = npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot copy a tensor name");
			goto out;
		}
		h->count++;
		st = parse_tensor(key, val, t);
		if (st)
			goto out;
	}
	if (!h->metadata_json && !(h->metadata_json = strdup("{}"))) {
		st = npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot copy __metadata__");
		goto out;
	}
	st = check_coverage(h);
out:
	if (st) {
		npi_st_free(h);
		h = NULL;
	}
	json_object_put(root);
	json_tokener_free(tok);
	*out = h;
	return st;
}

npushm_status_t npi_st_parse_buffer(const uint8_t *file, size_t size, struct npi_st_header **out)
{
	uint64_t n;
	npushm_status_t st;

	*out = NULL;
	st = npi_st_check_prefix(file, size, &n);
	if (st)
		return st;
	return npi_st_parse((const char *)file + 8, (size_t)n, size, out);
}

void npi_st_free(struct npi_st_header *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->count; i++)
		free(h->tensors[i].name);
	free(h->tensors);
	free(h->metadata_json);
	free(h);
}
