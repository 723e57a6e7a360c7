/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * test_safetensors.c - the header parser on hand-made files: every rule of
 * safetensors.c broken once, each with its exact message; valid corner
 * cases (no tensors, scalars, empty tensors, metadata, padding, offsets out
 * of JSON order); and the committed fuzz corpus and crash regressions,
 * which must parse or be rejected, never crash.
 */
#include <dirent.h>
#include <stdlib.h>

#include "harness.h"
#include "../src/safetensors.h"

struct st_case {
	const char *header;	/* NULL: use raw */
	size_t data_len;
	const char *expect;	/* substring of the message, NULL: must parse */
};

static uint8_t *make_file(const char *header, size_t data_len, size_t *size)
{
	size_t hl = strlen(header);
	uint8_t *f = malloc(8 + hl + data_len + 1);
	uint64_t n = hl;

	REQUIRE(f);
	memcpy(f, &n, 8);
	memcpy(f + 8, header, hl);
	memset(f + 8 + hl, 0xab, data_len);
	*size = 8 + hl + data_len;
	return f;
}

static void run_cases(const struct st_case *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct npi_st_header *h = (void *)1;
		size_t size;
		uint8_t *f = make_file(c[i].header, c[i].data_len, &size);
		npushm_status_t st = npi_st_parse_buffer(f, size, &h);

		if (c[i].expect) {
			if (!th_check_status(__FILE__, __LINE__, c[i].header, st, NPUSHM_ERR_FORMAT, c[i].expect))
				continue;
			CHECK(h == NULL);
		} else {
			th_check_status(__FILE__, __LINE__, c[i].header, st, NPUSHM_OK, NULL);
			npi_st_free(h);
		}
		free(f);
	}
}

TEST(st_length_prefix_bounds)
{
	uint8_t f[16] = { 0 };
	struct npi_st_header *h;
	uint64_t n;

	CHECK_ST_MSG(npi_st_parse_buffer(f, 0, &h), NPUSHM_ERR_FORMAT, "0 bytes long, too short");
	CHECK_ST_MSG(npi_st_parse_buffer(f, 7, &h), NPUSHM_ERR_FORMAT, "7 bytes long, too short");
	CHECK_ST_MSG(npi_st_parse_buffer(f, 8, &h), NPUSHM_ERR_FORMAT, "header length is 0 bytes");
	f[0] = 1;
	CHECK_ST_MSG(npi_st_parse_buffer(f, 16, &h), NPUSHM_ERR_FORMAT, "header length is 1 bytes");
	n = 100000001;
	memcpy(f, &n, 8);
	CHECK_ST_MSG(npi_st_parse_buffer(f, 16, &h), NPUSHM_ERR_FORMAT, "exceeds the limit of 100000000");
	n = UINT64_MAX;
	memcpy(f, &n, 8);
	CHECK_ST_MSG(npi_st_parse_buffer(f, 16, &h), NPUSHM_ERR_FORMAT, "exceeds the limit");
	n = 9;
	memcpy(f, &n, 8);
	CHECK_ST_MSG(npi_st_parse_buffer(f, 16, &h), NPUSHM_ERR_FORMAT,
		     "header length 9 runs past the end of the file (16 bytes); the file is truncated");
	n = 8;
	memcpy(f, &n, 8);
	memcpy(f + 8, "{}      ", 8);
	CHECK_ST(npi_st_parse_buffer(f, 16, &h), NPUSHM_OK);	/* exactly fits */
	CHECK_EQ(h->count, 0);
	CHECK_EQ(h->data_len, 0);
	npi_st_free(h);
}

TEST(st_json_syntax_rules)
{
	static const struct st_case c[] = {
		{ "[]", 0, "does not start with '{'" },
		{ " {}", 0, "does not start with '{'" },
		{ "{ ", 0, "ends before its closing '}'" },
		{ "{\"a\":}", 0, "not valid JSON" },
		{ "{\"a\" 1}", 0, "not valid JSON" },
		{ "{}x", 0, "the byte 0x78 at 2 after its JSON object; only spaces may pad it" },
		{ "{}\n", 0, "the byte 0x0a at 2" },
		{ "{} \t", 0, "the byte 0x09 at 3" },
		{ "{}{}", 0, "the byte 0x7b at 2" },
		{ "{\"__metadata__\":{\"a\":\"\\u0000\"}}", 0, "escaped NUL" },
		{ "{\"x\\u0000y\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]}}", 1, "escaped NUL" },
		{ "{\"a\xff\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]}}", 1, "not valid JSON" },
		{ "{\"__metadata__\":{\"k\":\"v\"},\"__metadata__\":{}}", 0, "repeats a key" },
		{ "{\"a\":{\"dtype\":\"U8\",\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]}}", 1, "repeats a key" },
		{ "{\"a\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]},"
		  "\"a\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]}}", 1, "repeats a key" },
		{ "{\"__metadata__\":{\"a\":[[[[[[[[[[1]]]]]]]]]]}}", 0, "nested more than 8 levels" },
		{ "{\"a\":{\"dtype\":\"U8\",\"shape\":[1e0],\"data_offsets\":[0,1]}}", 1, "shape[0] is not an integer" },
		{ "{\"a\":{\"dtype\":\"U8\",\"shape\":[01],\"data_offsets\":[0,1]}}", 1, "not valid JSON" },
		{ "{\"a\":{'dtype':\"U8\"}}", 0, "single quote at byte 6; JSON strings take double quotes" },
		{ "{\"__metadata__\":{}, /* c */ \"x\":1}", 0, "not valid JSON" },
		{ "{\"__metadata__\":{},}", 0, "not valid JSON" },
		{ "{\"__metadata__\":{\"a\":\"b\",}}", 0, "not valid JSON" },
		{ "{__metadata__:{}}", 0, "not valid JSON" },
		/* json-c reads NaN as a double: refused where integers belong. */
		{ "{\"a\":{\"dtype\":\"U8\",\"shape\":[NaN],\"data_offsets\":[0,1]}}", 1, "shape[0] is not an integer" },
		{ "{\"a\":{\"dtype\":\"U8\",\"shape\":[0x1],\"data_offsets\":[0,1]}}", 1, "not valid JSON" },
		{ "{\"a\":{\"dtype\":\"U8\",\"shape\":[+1],\"data_offsets\":[0,1]}}", 1, "not valid JSON" },
		{ "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]]}", 1, "not valid JSON" },
		{ "{\"a\" : \"unterminated}", 0, "ends before its closing" },
		{ "{]", 0, "not valid JSON" },
	};

	run_cases(c, sizeof(c) / sizeof(c[0]));
}

TEST(st_metadata_rules)
{
	static const struct st_case c[] = {
		{ "{\"__metadata__\":[]}", 0, "__metadata__ is a JSON array, not an object of strings" },
		{ "{\"__metadata__\":\"x\"}", 0, "__metadata__ is a JSON string" },
		{ "{\"__metadata__\":{\"n\":1}}", 0, "__metadata__['n'] is a JSON int; metadata values must be strings" },
		{ "{\"__metadata__\":{\"n\":null}}", 0, "__metadata__['n'] is a JSON null" },
		{ "{\"__metadata__\":{\"n\":{\"x\":\"y\"}}}", 0, "__metadata__['n'] is a JSON object" },
		{ "{\"__metadata__\":{}}", 0, NULL },
		{ "{\"__metadata__\":{\"format\":\"pt\",\"\xc3\xa9\":\"\xe2\x82\xac\"}}", 0, NULL },
	};

	run_cases(c, sizeof(c) / sizeof(c[0]));
}

TEST(st_tensor_entry_rules)
{
	static const struct st_case c[] = {
		{ "{\"\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]}}", 1, "a tensor has an empty name" },
		{ "{\"a\":1}", 0, "tensor 'a': the value is a JSON int, not an object" },
		{ "{\"a\":[]}", 0, "tensor 'a': the value is a JSON array" },
		{ "{\"a\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1],\"foo\":1}}", 1, "tensor 'a': unknown key 'foo'" },
		{ "{\"a\":{\"shape\":[],\"data_offsets\":[0,1]}}", 1, "tensor 'a': the key 'dtype' is missing" },
		{ "{\"a\":{\"dtype\":\"U8\",\"data_offsets\":[0,1]}}", 1, "tensor 'a': the key 'shape' is missing" },
		{ "{\"a\":{\"dtype\":\"U8\",\"shape\":[]}}", 1, "tensor 'a': the key 'data_offsets' is missing" },
		{ "{\"a\":{\"dtype\":8,\"shape\":[],\"data_offsets\":[0,1]}}", 1, "tensor 'a': dtype is a JSON int, not a string" },
		{ "{\"a\":{\"dtype\":\"F12\",\"shape\":[],\"data_offsets\":[0,1]}}", 1, "tensor 'a': unknown dtype 'F12' (known: BOOL, U8" },
		{ "{\"a\":{\"dtype\":\"f32\",\"shape\":[],\"data_offsets\":[0,4]}}", 4, "unknown dtype 'f32'" },
		{ "{\"a\":{\"dtype\":\"U8\",\"shape\":\"1\",\"data_offsets\":[0,1]}}", 1, "tensor 'a': shape is a JSON string, not an array" },
		{ "{\"a\":{\"dtype\":\"U8\",\"shape\":[-1],\"data_offsets\":[0,1]}}", 1, "tensor 'a': shape[0] is not an integer in [0, 2^63)" },
		{ "{\"a\":{\"dtype\":\"U8\",\"shape\":[1,2.5],\"data_offsets\":[0,1]}}", 1, "tensor 'a': shape[1] is not an integer" },
		{ "{\"a\":{\"dtype\":\"U8\",\"shape\":[\"1\"],\"data_offsets\":[0,1]}}", 1, "shape[0] is not an integer" },
		{ "{\"a\":{\"dtype\":\"U8\",\"shape\":[18446744073709551616],\"data_offsets\":[0,1]}}", 1, "shape[0] is not an integer" },
		{ "{\"a\":{\"dtype\":\"U8\",\"shape\":[9223372036854775808],\"data_offsets\":[0,1]}}", 1, "shape[0] is not an integer" },
		{ "{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}", 1,
		  "tensor 'a': shape has 33 dimensions, more than the 32 supported" },
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,1]}}", 1,
		  "tensor 'a': shape [4294967296,4294967296] of F32 overflows 64 bits of bytes" },
		{ "{\"a\":{\"dtype\":\"F64\",\"shape\":[9223372036854775807],\"data_offsets\":[0,1]}}", 1, "overflows 64 bits" },
		/* the dimensions read before the overflow, not the unparsed ones as 0 */
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,4],\"data_offsets\":[0,1]}}", 1,
		  "tensor 'a': shape [4611686018427387904]... of F32 overflows 64 bits of bytes" },
		{ "{\"a\":{\"dtype\":\"U8\",\"shape\":[4294967296,4294967296,7],\"data_offsets\":[0,1]}}", 1,
		  "tensor 'a': shape [4294967296,4294967296]... of U8 overflows 64 bits of bytes" },
		{ "{\"a\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0]}}", 1, "tensor 'a': data_offsets is not an array of two integers" },
		{ "{\"a\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1,2]}}", 1, "data_offsets is not an array of two" },
		{ "{\"a\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":{}}}", 1, "data_offsets is not an array of two" },
		{ "{\"a\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[-1,0]}}", 1, "tensor 'a': data_offsets are not integers in [0, 2^63)" },
		{ "{\"a\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,18446744073709551615]}}", 1, "data_offsets are not integers" },
		{ "{\"a\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[1,0]}}", 1, "tensor 'a': data_offsets [1, 0] end before they begin" },
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
		  "tensor 'a': shape [2] of F32 is 8 bytes but data_offsets [0, 4] cover 4" },
		{ "{\"a\":{\"dtype\":\"BF16\",\"shape\":[3,0],\"data_offsets\":[0,2]}}", 2, "shape [3,0] of BF16 is 0 bytes but data_offsets [0, 2] cover 2" },
	};

	run_cases(c, sizeof(c) / sizeof(c[0]));
}

TEST(st_coverage_rules)
{
	static const struct st_case c[] = {
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4,
		  "tensor 'a': data_offsets [0, 8] run past the end of the data section (4 bytes); the file is truncated" },
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
		  "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12,
		  "tensor 'b': data_offsets [4, 12] overlap tensor 'a' (which ends at 8)" },
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
		  "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12,
		  "the data bytes [4, 8) belong to no tensor (a hole before tensor 'b')" },
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8,
		  "the data bytes [0, 4) belong to no tensor (a hole before tensor 'a')" },
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 8,
		  "the data section has 8 bytes but the tensors cover only 4" },
		{ "{}", 1, "the data section has 1 bytes but the tensors cover only 0" },
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
		  "\"z\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]}}", 8, "tensor 'a'" },
		{ "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
		  "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 2, "overlap" },
	};

	run_cases(c, sizeof(c) / sizeof(c[0]));
}

TEST(st_valid_corner_cases_parse)
{
	static const struct st_case c[] = {
		{ "{}", 0, NULL },
		{ "{}        ", 0, NULL },
		{ "{\"s\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[0,8]}}", 8, NULL },
		{ "{\"e\":{\"dtype\":\"F16\",\"shape\":[0,4],\"data_offsets\":[0,0]}}", 0, NULL },
		{ "{\"b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]},"
		  "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
		  "\"e\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[2,2]}}", 2, NULL },
		{ "{\"x\":{\"shape\":[1,1,1],\"data_offsets\":[0,2],\"dtype\":\"I16\"}}", 2, NULL },
		{ "{\"\xe2\x82\xac.w\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[0,3]}}", 3, NULL },
	};
	static const char *dtypes[] = { "BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16",
					"BF16", "I32", "U32", "F32", "F64", "I64", "U64" };
	static const int sizes[] = { 1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 8, 8, 8 };
	struct npi_st_header *h;
	char hdr[256];
	uint8_t *f;
	size_t size;

	run_cases(c, sizeof(c) / sizeof(c[0]));
	for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++) {
		snprintf(hdr, sizeof(hdr), "{\"t\":{\"dtype\":\"%s\",\"shape\":[3,1],\"data_offsets\":[0,%d]}}",
			 dtypes[i], 3 * sizes[i]);
		f = make_file(hdr, (size_t)(3 * sizes[i]), &size);
		if (th_check_status(__FILE__, __LINE__, hdr, npi_st_parse_buffer(f, size, &h), NPUSHM_OK, NULL)) {
			CHECK_EQ(h->count, 1);
			CHECK(strcmp(npushm_dtype_name(h->tensors[0].dtype), dtypes[i]) == 0);
			CHECK_EQ(npushm_dtype_size(h->tensors[0].dtype), sizes[i]);
			CHECK_EQ(h->tensors[0].nbytes, 3 * sizes[i]);
			npi_st_free(h);
		}
		free(f);
	}
	/* Sorted by offset, metadata kept. */
	f = make_file("{\"__metadata__\":{\"k\":\"v\"},\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]},"
		      "\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 4, &size);
	REQUIRE_OK(npi_st_parse_buffer(f, size, &h));
	CHECK_EQ(h->count, 2);
	CHECK(strcmp(h->tensors[0].name, "a") == 0 && strcmp(h->tensors[1].name, "b") == 0);
	CHECK(strcmp(h->metadata_json, "{\"k\":\"v\"}") == 0);
	CHECK_EQ(h->data_start, size - 4);
	npi_st_free(h);
	free(f);
}

static int parse_dir(const char *dir, int *files)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int bad = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		char path[1024];
		struct npi_st_header *h;
		npushm_status_t st;
		uint8_t *buf;
		long n;
		FILE *f;

		if (de->d_name[0] == '.' || strstr(de->d_name, ".md"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		f = fopen(path, "rb");
		if (!f)
			continue;
		fseek(f, 0, SEEK_END);
		n = ftell(f);
		rewind(f);
		buf = malloc((size_t)n + 1);
		REQUIRE(buf && fread(buf, 1, (size_t)n, f) == (size_t)n);
		fclose(f);
		st = npi_st_parse_buffer(buf, (size_t)n, &h);
		if (st != NPUSHM_OK && st != NPUSHM_ERR_FORMAT) {
			th_diag("%s: unexpected status %s (%s)", path, th_status_name(st), npushm_last_error());
			bad++;
		}
		if (st == NPUSHM_OK)
			npi_st_free(h);
		free(buf);
		(*files)++;
	}
	closedir(d);
	return bad;
}

TEST(st_fuzz_corpus_and_crash_regressions_never_crash)
{
	int files = 0;

	CHECK_EQ(parse_dir(LIBNPUSHM_SRCDIR "/fuzz/corpus", &files), 0);
	CHECK_EQ(parse_dir(LIBNPUSHM_SRCDIR "/fuzz/regressions", &files), 0);
	CHECK(files >= 10);
	th_diag("%d corpus and regression files parsed", files);
}

TEST_HARNESS_MAIN
