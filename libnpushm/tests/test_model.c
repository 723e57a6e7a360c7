/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * test_model.c - the weight store: load, attach, tensor lookup, DLPack,
 * dedup and removal, checked differentially against the bytes the test
 * wrote itself and against an independent XXH3-128 of the file; bad files
 * rejected with the file named and nothing published or leaked; attach
 * touching no tensor data; damaged manifests refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dlpack/dlpack.h>
#include <xxhash.h>

#include "harness.h"
#include "../src/manifest.h"

static const char *dtypes[] = { "BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16",
				"BF16", "I32", "U32", "F32", "F64", "I64", "U64" };

static char *path_in_tmp(const char *file)
{
	static char p[4][512];
	static int n;
	char *s = p[n++ % 4];

	snprintf(s, sizeof(p[0]), "%s/%s", th_tmpdir(), file);
	return s;
}

/* The content hash, computed here independently: XXH3-128 of the 8 MiB blocks' XXH3-128s. */
static void file_hash(const char *path, uint8_t out[16])
{
	const size_t block = 8 << 20;
	int fd = open(path, O_RDONLY);
	XXH128_canonical_t *d;
	struct stat st;
	size_t size, n;
	uint8_t *p;

	REQUIRE(fd >= 0 && fstat(fd, &st) == 0);
	size = (size_t)st.st_size;
	n = (size + block - 1) / block;
	p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	REQUIRE(p != MAP_FAILED);
	d = calloc(n, sizeof(*d));
	REQUIRE(d);
	for (size_t i = 0; i < n; i++)
		XXH128_canonicalFromHash(&d[i], XXH3_128bits(p + i * block,
							     size - i * block < block ? size - i * block : block));
	XXH128_canonicalFromHash((XXH128_canonical_t *)out, XXH3_128bits(d, n * sizeof(*d)));
	free(d);
	munmap(p, size);
	close(fd);
}

/* Random model: names, dtypes, ranks 0..4 with extents 0..5 (and some big). */
static int random_model(struct th_tensor *t, int max, uint64_t *s, char names[][32])
{
	int n = 1 + (int)(th_rand(s) % (uint64_t)max);

	for (int i = 0; i < n; i++) {
		snprintf(names[i], 32, "layer.%llu.w%d", (unsigned long long)(th_rand(s) % 1000), i);
		t[i].name = names[i];
		t[i].dtype = dtypes[th_rand(s) % 15];
		t[i].ndim = (int)(th_rand(s) % 5);
		for (int d = 0; d < t[i].ndim; d++) {
			uint64_t r = th_rand(s) % 10;

			t[i].shape[d] = r == 0 ? 0 : r == 1 ? 1 : r < 8 ? (int64_t)(r - 1) : 97;
		}
	}
	return n;
}

static void check_model_matches(npushm_model_t *m, struct th_tensor *t, int n, const char *path)
{
	npushm_model_info_t mi;
	uint8_t want_hash[16], api_hash[16];
	char api_hex[33];
	struct stat st;

	npushm_model_info(m, &mi);
	REQUIRE(stat(path, &st) == 0);
	CHECK_EQ(mi.tensor_count, n);
	CHECK_EQ(mi.source_size, st.st_size);
	file_hash(path, want_hash);
	CHECK(memcmp(mi.hash, want_hash, 16) == 0);
	/* The public function computes the same, without loading. */
	CHECK_ST(npushm_file_hash(path, api_hash, api_hex), NPUSHM_OK);
	CHECK(memcmp(api_hash, want_hash, 16) == 0);
	CHECK(strcmp(api_hex, mi.hash_hex) == 0);
	CHECK_EQ(npushm_model_tensor_count(m), n);
	for (int i = 0; i < n; i++) {
		npushm_tensor_t x, y;
		int64_t stride = 1;

		if (!th_check_status(__FILE__, __LINE__, t[i].name, npushm_model_tensor_find(m, t[i].name, &x),
				     NPUSHM_OK, NULL))
			continue;
		CHECK(strcmp(x.name, t[i].name) == 0);
		CHECK_EQ(x.name_len, strlen(t[i].name));
		CHECK(strcmp(npushm_dtype_name(x.dtype), t[i].dtype) == 0);
		CHECK_EQ(x.ndim, t[i].ndim);
		CHECK_EQ(x.nbytes, t[i].nbytes);
		CHECK_EQ((uintptr_t)x.data % NPUSHM_TENSOR_ALIGN, 0);
		CHECK_EQ(x.offset % NPUSHM_TENSOR_ALIGN, 0);
		for (int d = t[i].ndim - 1; d >= 0; d--) {
			CHECK_EQ(x.shape[d], t[i].shape[d]);
			CHECK_EQ(x.strides[d], stride);
			stride *= t[i].shape[d];
		}
		CHECK(memcmp(x.data, t[i].data, t[i].nbytes) == 0);
		/* tensor_at walks the same table in name order. */
		REQUIRE_OK(npushm_model_tensor_at(m, (size_t)i, &y));
	}
	for (size_t i = 1; i < (size_t)n; i++) {
		npushm_tensor_t a, b;

		npushm_model_tensor_at(m, i - 1, &a);
		npushm_model_tensor_at(m, i, &b);
		CHECK(strcmp(a.name, b.name) < 0);
	}
}

TEST(model_load_attach_matches_the_file_for_random_models)
{
	npushm_dev_t *dev = th_dev();
	uint64_t used0 = th_pool_used(dev), s = 0x9e3779b97f4a7c15ULL;

	for (int round = 0; round < 12; round++) {
		struct th_tensor t[24] = { 0 };
		char names[24][32];
		const char *name = th_name("rnd"), *path = path_in_tmp("rnd.safetensors");
		int n = random_model(t, 24, &s, names);
		npushm_load_result_t res;
		npushm_model_t *m;

		th_write_model(path, t, n, round % 2 ? "{\"round\":\"odd\"}" : NULL, s);
		REQUIRE_OK(npushm_model_load(dev, path, name, NULL, &res));
		CHECK_EQ(res.tensor_count, n);
		CHECK(!res.deduplicated);
		REQUIRE_OK(npushm_model_attach_dev(dev, name, &m));
		check_model_matches(m, t, n, path);
		{
			npushm_model_info_t mi;

			npushm_model_info(m, &mi);
			CHECK(strcmp(mi.metadata_json, round % 2 ? "{\"round\":\"odd\"}" : "{}") == 0);
			CHECK(memcmp(mi.hash, res.hash, 16) == 0);
			CHECK_EQ(mi.region_id, res.region_id);
		}
		npushm_model_detach(m);
		CHECK_ST(npushm_model_remove(dev, name), NPUSHM_OK);
		th_free_model(t, n);
	}
	CHECK_EQ(th_pool_used(dev), used0);
	CHECK_EQ(th_shm_files(), 0);
	npushm_dev_close(dev);
}

TEST(model_empty_and_tiny_models)
{
	npushm_dev_t *dev = th_dev();
	const char *path = path_in_tmp("empty.safetensors"), *name = th_name("empty");
	struct th_tensor one = { .name = "x", .dtype = "U8", .ndim = 1, .shape = { 1 } };
	npushm_model_t *m;
	npushm_tensor_t t;

	th_write_raw(path, "{}", 6, 0, 0);
	REQUIRE_OK(npushm_model_load(dev, path, name, NULL, NULL));
	REQUIRE_OK(npushm_model_attach_dev(dev, name, &m));
	CHECK_EQ(npushm_model_tensor_count(m), 0);
	CHECK_ST(npushm_model_tensor_at(m, 0, &t), NPUSHM_ERR_INVALID);
	CHECK_ST_MSG(npushm_model_tensor_find(m, "x", &t), NPUSHM_ERR_NOT_FOUND, "has no tensor named 'x'");
	npushm_model_detach(m);
	CHECK_ST(npushm_model_remove(dev, name), NPUSHM_OK);

	th_write_model(path, &one, 1, NULL, 3);
	REQUIRE_OK(npushm_model_load(dev, path, name, NULL, NULL));
	REQUIRE_OK(npushm_model_attach_dev(dev, name, &m));
	check_model_matches(m, &one, 1, path);
	npushm_model_detach(m);
	CHECK_ST(npushm_model_remove(dev, name), NPUSHM_OK);
	th_free_model(&one, 1);
	npushm_dev_close(dev);
}

/* Tensors straddling the loader's 1 MiB and 8 MiB copy chunks, with empty ones between. */
static int chunky_model(struct th_tensor *t)
{
	static const struct { const char *name, *dtype; int64_t n; } spec[] = {
		{ "a.f32", "F32", (10 << 20) / 4 + 1 },	/* 10 MiB + 4 */
		{ "b.empty", "U8", 0 },
		{ "c.u8", "U8", (7 << 20) + 1 },
		{ "d.bf16", "BF16", 15 },
		{ "e.empty", "F64", 0 },
		{ "f.f64", "F64", (8 << 20) / 8 + 1 },	/* 8 MiB + 8 */
		{ "g.i8", "I8", 3 },
	};
	int n = (int)(sizeof(spec) / sizeof(spec[0]));

	for (int i = 0; i < n; i++) {
		t[i].name = spec[i].name;
		t[i].dtype = spec[i].dtype;
		t[i].ndim = 1;
		t[i].shape[0] = spec[i].n;
	}
	return n;
}

struct progress_log {
	uint64_t last, total, calls;
	bool backwards;
};

static void log_progress(void *arg, npushm_load_stage_t stage, uint64_t done, uint64_t total)
{
	struct progress_log *p = arg;

	if (stage != NPUSHM_LOAD_COPY)
		return;
	if (done < p->last)
		p->backwards = true;
	p->last = done;
	p->total = total;
	p->calls++;
}

/* Load the chunky model, check every byte, the hash and the progress reports. */
static void load_chunky_and_check(npushm_dev_t *dev, const char *tag)
{
	struct th_tensor t[8] = { 0 };
	const char *path = path_in_tmp("chunky.safetensors"), *name = th_name(tag);
	struct progress_log pl = { 0 };
	npushm_load_opts_t lo = { .progress = log_progress, .progress_arg = &pl };
	uint64_t used0 = th_pool_used(dev);
	int n = chunky_model(t);
	uint64_t data_len = 0;
	npushm_model_t *m;

	th_write_model(path, t, n, NULL, 77);
	for (int i = 0; i < n; i++)
		data_len += t[i].nbytes;
	REQUIRE_OK(npushm_model_load(dev, path, name, &lo, NULL));
	CHECK(!pl.backwards);
	CHECK_EQ(pl.total, data_len);
	CHECK_EQ(pl.last, data_len);
	CHECK(pl.calls >= 3);
	REQUIRE_OK(npushm_model_attach_dev(dev, name, &m));
	check_model_matches(m, t, n, path);
	npushm_model_detach(m);
	CHECK_ST(npushm_model_remove(dev, name), NPUSHM_OK);
	CHECK_EQ(th_pool_used(dev), used0);
	th_free_model(t, n);
}

TEST(model_load_across_copy_chunks_matches_the_file)
{
	npushm_dev_t *dev = th_dev();

	load_chunky_and_check(dev, "chunky");
	CHECK_EQ(th_shm_files(), 0);
	npushm_dev_close(dev);
}

/*
 * A header longer than a hash block (9 MiB of metadata): the first block is
 * all header, the second starts in it; on the mapping path those header
 * bytes are hashed from memory, not read into the region.
 */
static void load_bighdr_and_check(npushm_dev_t *dev, const char *tag)
{
	static const char key[] = "{\"big\":\"";
	struct th_tensor t[8] = { 0 };
	const char *path = path_in_tmp("bighdr.safetensors"), *name = th_name(tag);
	size_t vlen = (9 << 20) + 3, mlen = sizeof(key) - 1 + vlen + 2;
	char *meta = malloc(mlen + 1);
	int n = chunky_model(t);
	npushm_model_info_t mi;
	npushm_model_t *m;

	REQUIRE(meta);
	memcpy(meta, key, sizeof(key) - 1);
	memset(meta + sizeof(key) - 1, 'x', vlen);
	memcpy(meta + sizeof(key) - 1 + vlen, "\"}", 3);
	th_write_model(path, t, n, meta, 78);
	REQUIRE_OK(npushm_model_load(dev, path, name, NULL, NULL));
	REQUIRE_OK(npushm_model_attach_dev(dev, name, &m));
	check_model_matches(m, t, n, path);
	npushm_model_info(m, &mi);
	CHECK_EQ(strlen(mi.metadata_json), mlen);
	npushm_model_detach(m);
	CHECK_ST(npushm_model_remove(dev, name), NPUSHM_OK);
	CHECK_EQ(th_shm_files(), 0);
	free(meta);
	th_free_model(t, n);
}

TEST(file_hash_errors_name_the_file)
{
	const char *missing = path_in_tmp("no-such-file");
	uint8_t h[16];
	char msg[600];

	CHECK_ST(npushm_file_hash(NULL, h, NULL), NPUSHM_ERR_INVALID);
	CHECK_ST(npushm_file_hash(missing, NULL, NULL), NPUSHM_ERR_INVALID);
	snprintf(msg, sizeof(msg), "cannot open '%s'", missing);
	CHECK_ST_MSG(npushm_file_hash(missing, h, NULL), NPUSHM_ERR_NOT_FOUND, msg);
	snprintf(msg, sizeof(msg), "'%s' is not a regular file", th_tmpdir());
	CHECK_ST_MSG(npushm_file_hash(th_tmpdir(), h, NULL), NPUSHM_ERR_IO, msg);
}

TEST(model_load_with_a_header_over_a_hash_block)
{
	npushm_dev_t *dev = th_dev();

	load_bighdr_and_check(dev, "bighdr");
	npushm_dev_close(dev);
}

struct touch_ctx {
	const char *path;
	int done;
};

/* A progress callback that cuts the file to a quarter once the copy has started. */
static void cut_file(void *arg, npushm_load_stage_t stage, uint64_t done, uint64_t total)
{
	struct touch_ctx *c = arg;

	if (stage == NPUSHM_LOAD_COPY && done > 0 && !c->done) {
		c->done = 1;
		CHECK(truncate(c->path, (off_t)(total / 4)) == 0);
	}
}

/* Shared with the huge-page test below: a file cut short mid-copy is an error, nothing is left. */
static void check_truncated_load_is_refused(npushm_dev_t *dev)
{
	const char *path = th_big_model("cut.safetensors", 24 << 20, 43), *name = th_name("cut");
	struct touch_ctx ctx = { path, 0 };
	npushm_load_opts_t lo = { .progress = cut_file, .progress_arg = &ctx };
	uint64_t used0 = th_pool_used(dev);

	CHECK_ST(npushm_model_load(dev, path, name, &lo, NULL), NPUSHM_ERR_IO);
	/*
	 * Through a mapping the copy runs on several threads and only this one
	 * reports progress: the others may have read every block before the cut,
	 * which the final check of the file then finds instead.
	 */
	CHECK(strstr(npushm_last_error(), "truncated while loading") ||
	      strstr(npushm_last_error(), "changed while it was being loaded"));
	CHECK(strstr(npushm_last_error(), path) != NULL);
	CHECK(ctx.done);
	CHECK_ST(npushm_model_attach_dev(dev, name, &(npushm_model_t *){ NULL }), NPUSHM_ERR_NOT_FOUND);
	CHECK_EQ(th_pool_used(dev), used0);
	CHECK_EQ(th_shm_files(), 0);
}

TEST(model_file_truncated_while_loading_is_refused)
{
	npushm_dev_t *dev = th_dev();

	check_truncated_load_is_refused(dev);
	npushm_dev_close(dev);
}

/* A field of /proc/self/smaps_rollup, in KiB (-1 if absent). */
static long smaps_kib(const char *field)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	char line[256];
	long v = -1;

	REQUIRE(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, strlen(field)))
			v = strtol(line + strlen(field), NULL, 10);
	fclose(f);
	return v;
}

/*
 * On a tmpfs with huge pages the posix loader reads straight into a mapping
 * of the region (model_copy_direct.c), after allocating all of it: the same
 * bytes and hash as the file, and a full tmpfs is a clean "no room" error
 * before any copying (not a SIGBUS). The kmod backend always loads that way
 * and runs the chunk and truncation tests.
 */
TEST(model_load_on_a_huge_page_tmpfs_goes_through_the_mapping)
{
	const char *dir = getenv("NPUSHM_SHM_DIR"), *path, *name = th_name("hugefull");
	npushm_dev_t *dev;
	npushm_model_t *m;
	npushm_tensor_t x;
	uint64_t used0;
	char file[600];
	struct stat st;

	if (th_is_kmod())
		th_skip("posix only: the kmod backend always loads through a mapping, which the chunk and truncation tests cover");
	if (!th_is_root() || !dir)
		th_skip("remounting the private tmpfs with huge pages needs root");
	if (mount(NULL, dir, NULL, MS_REMOUNT, "huge=always,size=64m"))
		th_skip("this kernel's tmpfs has no huge pages (%s)", strerror(errno));
	dev = th_dev();
	load_chunky_and_check(dev, "hugechunky");
	load_bighdr_and_check(dev, "hugebighdr");
	check_truncated_load_is_refused(dev);

	/* The published file really is on huge pages (what selects the mapping path). */
	path = th_big_model("huge.safetensors", 4 << 20, 5);
	REQUIRE_OK(npushm_model_load(dev, path, name, NULL, NULL));
	snprintf(file, sizeof(file), "%s/npushm.%s", dir, name);
	REQUIRE(stat(file, &st) == 0);
	CHECK(st.st_blksize > 4096);
	/* ... and a worker reading it maps it with 2 MiB page-table entries. */
	REQUIRE_OK(npushm_model_attach_dev(dev, name, &m));
	REQUIRE_OK(npushm_model_tensor_at(m, 0, &x));
	for (size_t off = 0; off < x.nbytes; off += 4096)
		(void)((const volatile uint8_t *)x.data)[off];
	CHECK(smaps_kib("ShmemPmdMapped:") >= 2048);
	npushm_model_detach(m);
	CHECK_ST(npushm_model_remove(dev, name), NPUSHM_OK);

	/* No room: refused up front, with the directory and the file named. */
	used0 = th_pool_used(dev);
	path = th_big_model("toobig.safetensors", 96 << 20, 6);
	CHECK_ST_MSG(npushm_model_load(dev, path, name, NULL, NULL), NPUSHM_ERR_NO_SPACE, "has no room for");
	CHECK(strstr(npushm_last_error(), dir) != NULL);
	CHECK(strstr(npushm_last_error(), path) != NULL);
	CHECK_ST(npushm_model_attach_dev(dev, name, &(npushm_model_t *){ NULL }), NPUSHM_ERR_NOT_FOUND);
	CHECK_EQ(th_pool_used(dev), used0);
	CHECK_EQ(th_shm_files(), 0);
	npushm_dev_close(dev);
}

TEST(model_lookup_errors_name_model_and_tensor)
{
	npushm_dev_t *dev = th_dev();
	const char *name = th_name("look");
	npushm_model_t *m = (void *)1;
	npushm_tensor_t t;
	char expect[256];

	snprintf(expect, sizeof(expect),
		 "model '%s' not found: no region published under that name; run `npushm load FILE --name %s` first",
		 name, name);
	CHECK_ST_MSG(npushm_model_attach_dev(dev, name, &m), NPUSHM_ERR_NOT_FOUND, expect);
	CHECK(m == NULL);
	CHECK_ST(npushm_model_attach_dev(dev, "", &m), NPUSHM_ERR_NAME);
	CHECK_ST(npushm_model_attach_dev(dev, NULL, &m), NPUSHM_ERR_NAME);
	REQUIRE_OK(npushm_model_load(dev, th_big_model("l.safetensors", 8192, 1), name, NULL, NULL));
	REQUIRE_OK(npushm_model_attach(name, &m));	/* the device-less form */
	CHECK_ST(npushm_model_tensor_find(m, "w", &t), NPUSHM_OK);
	CHECK_ST(npushm_model_tensor_find(m, "W", &t), NPUSHM_ERR_NOT_FOUND);
	CHECK_ST(npushm_model_tensor_find(m, "", &t), NPUSHM_ERR_NOT_FOUND);
	CHECK_ST(npushm_model_tensor_find(m, NULL, &t), NPUSHM_ERR_INVALID);
	CHECK_ST(npushm_model_tensor_at(m, 1, &t), NPUSHM_ERR_INVALID);
	npushm_model_detach(m);
	CHECK_ST(npushm_model_remove(dev, name), NPUSHM_OK);
	CHECK_ST_MSG(npushm_model_remove(dev, name), NPUSHM_ERR_NOT_FOUND, "cannot remove");
	npushm_dev_close(dev);
}

static void expect_rejected(npushm_dev_t *dev, const char *path, npushm_status_t want, const char *sub)
{
	const char *name = th_name("bad");
	uint64_t used0 = th_pool_used(dev);
	int fds0 = th_fd_count(), files0 = th_shm_files();
	npushm_region_t *r = NULL;

	th_check_status(__FILE__, __LINE__, path, npushm_model_load(dev, path, name, NULL, NULL), want, sub);
	CHECK(strstr(npushm_last_error(), path) != NULL);	/* the file is named */
	CHECK_ST(npushm_region_open(dev, name, 0, &r), NPUSHM_ERR_NOT_FOUND);
	CHECK_EQ(th_pool_used(dev), used0);
	CHECK_EQ(th_fd_count(), fds0);
	CHECK_EQ(th_shm_files(), files0);
}

TEST(model_bad_files_are_rejected_with_the_file_named)
{
	npushm_dev_t *dev = th_dev();
	const char *p = path_in_tmp("bad.safetensors");
	struct th_tensor t = { .name = "w", .dtype = "F32", .ndim = 2, .shape = { 64, 64 } };
	uint64_t size;

	expect_rejected(dev, path_in_tmp("missing.safetensors"), NPUSHM_ERR_NOT_FOUND, "cannot open");
	expect_rejected(dev, th_tmpdir(), NPUSHM_ERR_IO, "not a regular file");
	th_write_raw(p, "", 0, 0, 0);
	truncate(p, 3);
	expect_rejected(dev, p, NPUSHM_ERR_FORMAT, "is not a valid safetensors file: the file is 3 bytes long");
	th_write_raw(p, "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 0, 16, 1);
	truncate(p, 8 + 10);
	expect_rejected(dev, p, NPUSHM_ERR_FORMAT, "runs past the end of the file");
	/* Truncated data: valid header, short data section. */
	size = th_write_model(p, &t, 1, NULL, 9);
	truncate(p, (off_t)(size - 100));
	expect_rejected(dev, p, NPUSHM_ERR_FORMAT, "run past the end of the data section");
	th_write_raw(p, "{\"w\":{\"dtype\":\"Q4\",\"shape\":[4],\"data_offsets\":[0,4]}}", 0, 4, 1);
	expect_rejected(dev, p, NPUSHM_ERR_FORMAT, "unknown dtype 'Q4'");
	th_write_raw(p, "{\"w\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}garbage", 0, 4, 1);
	expect_rejected(dev, p, NPUSHM_ERR_FORMAT, "only spaces may pad it");
	/* Random bytes. */
	{
		FILE *f = fopen(p, "wb");
		uint64_t s = 77;

		REQUIRE(f);
		for (int i = 0; i < 4096; i++)
			fputc((int)(th_rand(&s) & 0xff), f);
		fclose(f);
	}
	expect_rejected(dev, p, NPUSHM_ERR_FORMAT, "not a valid safetensors file");
	th_free_model(&t, 1);
	npushm_dev_close(dev);
}

static void unreadable_as_nobody(void *arg)
{
	npushm_dev_t *dev = th_dev();

	CHECK_ST_MSG(npushm_model_load(dev, arg, th_name("noread"), NULL, NULL), NPUSHM_ERR_ACCESS,
		     (const char *)arg);
	npushm_dev_close(dev);
}

TEST(model_unreadable_file_is_access_denied)
{
	const char *p;

	if (!th_is_root())
		th_skip("needs root to switch to uid 65534");
	p = th_big_model("secret.safetensors", 4096, 2);
	REQUIRE(chmod(p, 0600) == 0);
	CHECK_EQ(th_as_nobody(unreadable_as_nobody, (void *)p), 0);
}

static void count_copies(void *arg, npushm_load_stage_t stage, uint64_t done, uint64_t total)
{
	(void)done;
	(void)total;
	if (stage == NPUSHM_LOAD_COPY)
		(*(int *)arg)++;
}

TEST(model_load_argument_checks)
{
	npushm_dev_t *dev = th_dev();
	const char *p = th_big_model("args.safetensors", 4096, 3);
	npushm_load_opts_t bad_mode = { .mode = 0700 }, bad_flags = { .flags = 0x80 };

	CHECK_ST_MSG(npushm_model_load(dev, p, "xxh3:abc", NULL, NULL), NPUSHM_ERR_NAME, "reserved");
	CHECK_ST(npushm_model_load(dev, p, "has space", NULL, NULL), NPUSHM_ERR_NAME);
	CHECK_ST(npushm_model_load(dev, p, NULL, NULL, NULL), NPUSHM_ERR_NAME);
	CHECK_ST(npushm_model_load(dev, NULL, "x", NULL, NULL), NPUSHM_ERR_INVALID);
	CHECK_ST(npushm_model_load(NULL, p, "x", NULL, NULL), NPUSHM_ERR_INVALID);
	CHECK_ST_MSG(npushm_model_load(dev, p, "x", &bad_mode, NULL), NPUSHM_ERR_INVALID, "0666");
	CHECK_ST(npushm_model_load(dev, p, "x", &bad_flags, NULL), NPUSHM_ERR_INVALID);
	/*
	 * A name within NPUSHM_NAME_MAX whose file name the backend cannot hold
	 * (90 '/', each written %2F), or whose per-node copies' names it cannot:
	 * NAME before anything is copied, not "already published" or a failure
	 * after the copy.
	 */
	{
		int copies = 0;
		npushm_load_opts_t watch = { .progress = count_copies, .progress_arg = &copies };
		npushm_load_opts_t per_node = { .flags = NPUSHM_LOAD_PER_NODE, .progress = count_copies,
						.progress_arg = &copies };
		npushm_dev_info_t di;
		char slashes[91], longest[NPUSHM_NAME_MAX + 1];

		memset(slashes, '/', 90);
		slashes[90] = '\0';
		CHECK_ST_MSG(npushm_model_load(dev, p, slashes, &watch, NULL), NPUSHM_ERR_NAME, "too long");
		watch.flags = NPUSHM_LOAD_REPLACE;
		CHECK_ST_MSG(npushm_model_load(dev, p, slashes, &watch, NULL), NPUSHM_ERR_NAME, "too long");
		REQUIRE_OK(npushm_dev_query(dev, &di));
		memset(longest, 'n', di.max_name_len - 3);
		longest[di.max_name_len - 3] = '\0';
		CHECK_ST_MSG(npushm_model_load(dev, p, longest, &per_node, NULL), NPUSHM_ERR_NAME, "@node");
		CHECK_EQ(copies, 0);
	}
	CHECK_EQ(th_shm_files(), 0);
	npushm_dev_close(dev);
}

TEST(model_name_taken_is_reported_and_nothing_changes)
{
	npushm_dev_t *dev = th_dev();
	const char *name = th_name("taken");
	const char *a = th_big_model("a.safetensors", 65536, 11);
	const char *b;
	npushm_load_result_t ra, rb;
	npushm_model_t *m;
	npushm_model_info_t mi;
	uint64_t used;
	char expect[256];

	REQUIRE_OK(npushm_model_load(dev, a, name, NULL, &ra));
	used = th_pool_used(dev);
	b = th_big_model("b.safetensors", 65536, 12);
	snprintf(expect, sizeof(expect),
		 "the name '%s' is already published with other content (another hash); run `npushm rm %s` first",
		 name, name);
	CHECK_ST_MSG(npushm_model_load(dev, b, name, NULL, &rb), NPUSHM_ERR_EXISTS, expect);
	CHECK_EQ(th_pool_used(dev), used);
	/* The same content under the same name: done already, nothing copied. */
	CHECK_ST(npushm_model_load(dev, a, name, NULL, &rb), NPUSHM_OK);
	CHECK(rb.already_loaded && rb.deduplicated && rb.region_id == ra.region_id);
	CHECK(memcmp(rb.hash, ra.hash, 16) == 0 && rb.tensor_count == ra.tensor_count);
	CHECK_EQ(th_pool_used(dev), used);
	REQUIRE_OK(npushm_model_attach_dev(dev, name, &m));
	npushm_model_info(m, &mi);
	CHECK(memcmp(mi.hash, ra.hash, 16) == 0);
	npushm_model_detach(m);
	CHECK_ST(npushm_model_remove(dev, name), NPUSHM_OK);
	npushm_dev_close(dev);
}

static void count_copy_stage(void *arg, npushm_load_stage_t stage, uint64_t done, uint64_t total)
{
	(void)done;
	(void)total;
	if (stage == NPUSHM_LOAD_COPY)
		(*(int *)arg)++;
}

TEST(model_name_is_checked_before_copying_and_replace_moves_it)
{
	npushm_dev_t *dev = th_dev();
	const char *name = th_name("first");
	const char *a = th_big_model("fa.safetensors", 1 << 20, 31);
	const char *b = th_big_model("fb.safetensors", 2 << 20, 32);
	int copies = 0;
	npushm_load_opts_t lo = { .progress = count_copy_stage, .progress_arg = &copies };
	npushm_load_opts_t rep = { .flags = NPUSHM_LOAD_REPLACE };
	npushm_load_result_t ra, rb, rc;
	npushm_model_t *old, *m;
	npushm_model_info_t mi;
	npushm_region_t *r;
	char alias[64];

	REQUIRE_OK(npushm_model_load(dev, a, name, &lo, &ra));
	CHECK(copies > 0 && !ra.already_loaded);
	copies = 0;
	CHECK_ST(npushm_model_load(dev, b, name, &lo, &rb), NPUSHM_ERR_EXISTS);
	CHECK_EQ(copies, 0);
	CHECK_ST(npushm_model_load(dev, a, name, &lo, &rb), NPUSHM_OK);
	CHECK(copies == 0 && rb.already_loaded);
	/* Same content, another mode: refused, not silently accepted. */
	lo.mode = 0600;
	CHECK_ST(npushm_model_load(dev, a, name, &lo, &rb), NPUSHM_ERR_EXISTS);
	CHECK_EQ(copies, 0);
	/* Replace: a worker attached before keeps the old model. */
	REQUIRE_OK(npushm_model_attach_dev(dev, name, &old));
	CHECK_ST(npushm_model_load(dev, b, name, &rep, &rb), NPUSHM_OK);
	CHECK(!rb.already_loaded && rb.region_id != ra.region_id);
	REQUIRE_OK(npushm_model_attach_dev(dev, name, &m));
	npushm_model_info(m, &mi);
	CHECK(memcmp(mi.hash, rb.hash, 16) == 0);
	npushm_model_detach(m);
	npushm_model_info(old, &mi);
	CHECK(memcmp(mi.hash, ra.hash, 16) == 0);
	npushm_model_detach(old);
	/* The old model's alias left with its last name. */
	snprintf(alias, sizeof(alias), "%s%s", NPUSHM_HASH_ALIAS_PREFIX, ra.hash_hex);
	CHECK_ST(npushm_region_open(dev, alias, 0, &r), NPUSHM_ERR_NOT_FOUND);
	/* Replacing with the same content again: already loaded. */
	CHECK_ST(npushm_model_load(dev, b, name, &rep, &rc), NPUSHM_OK);
	CHECK(rc.already_loaded && rc.region_id == rb.region_id);
	CHECK_ST(npushm_model_remove(dev, name), NPUSHM_OK);
	npushm_dev_close(dev);
}

TEST(region_publish_replace_moves_a_name_atomically)
{
	npushm_dev_t *dev = th_dev();
	const char *name = th_name("mv"), *name2 = th_name("mv2");
	npushm_region_t *r1, *r2, *r3, *o;
	npushm_region_info_t info;

	REQUIRE_OK(npushm_region_alloc(dev, 4096, 0, &r1));
	REQUIRE_OK(npushm_region_alloc(dev, 8192, 0, &r2));
	REQUIRE_OK(npushm_region_publish(r1, name, 0600, 0));
	CHECK_ST(npushm_region_publish(r2, name, 0600, 0), NPUSHM_ERR_EXISTS);
	CHECK_ST(npushm_region_publish(r2, name, 0600, NPUSHM_PUBLISH_REPLACE), NPUSHM_OK);
	REQUIRE_OK(npushm_region_open(dev, name, 0, &o));
	CHECK_EQ(npushm_region_id(o), npushm_region_id(r2));
	npushm_region_close(o);
	/* Onto itself: nothing changes, no stray link is left. */
	CHECK_ST(npushm_region_publish(r2, name, 0600, NPUSHM_PUBLISH_REPLACE), NPUSHM_OK);
	/* Every link counted (hidden ones too): one name; r1 lost its only one. */
	REQUIRE_OK(npushm_region_info(r2, &info));
	CHECK_EQ(info.names, 1);
	REQUIRE_OK(npushm_region_info(r1, &info));
	CHECK_EQ(info.names, 0);
	/* A name that does not exist yet: a plain publish. */
	REQUIRE_OK(npushm_region_alloc(dev, 4096, 0, &r3));
	CHECK_ST(npushm_region_publish(r3, name2, 0600, NPUSHM_PUBLISH_REPLACE), NPUSHM_OK);
	REQUIRE_OK(npushm_region_info(r3, &info));
	CHECK_EQ(info.names, 1);
	npushm_region_close(r3);
	CHECK_ST(npushm_name_unlink(dev, name), NPUSHM_OK);
	CHECK_ST(npushm_name_unlink(dev, name2), NPUSHM_OK);
	npushm_region_close(r1);
	npushm_region_close(r2);
	npushm_dev_close(dev);
}

/* A loader killed between its temporary link and the rename left the link
 * (keeping the region's memory, with no name): the next replace removes it,
 * and only it (not a live process's, not another pid namespace's). */
TEST(region_publish_replace_removes_links_of_killed_loaders)
{
	npushm_dev_t *dev = th_dev();
	const char *dir = getenv(th_is_kmod() ? "NPUSHM_DIR" : "NPUSHM_SHM_DIR");
	const char *name = th_name("sweep");
	char links[3][128], path[3][512], proc[64];
	npushm_region_t *stale, *r;
	npushm_region_info_t info;
	unsigned long long ns;
	struct stat sb;
	int status, i;
	pid_t pid;

	REQUIRE(dir && stat("/proc/self/ns/pid", &sb) == 0);
	ns = (unsigned long long)sb.st_ino;
	pid = fork();
	if (pid == 0)
		_exit(0);
	REQUIRE(pid > 0 && waitpid(pid, &status, 0) == pid);
	REQUIRE_OK(npushm_region_alloc(dev, 1 << 20, 0, &stale));
	snprintf(links[0], sizeof(links[0]), ".npushm-replace.%llu.%d.7", ns, (int)pid);
	snprintf(links[1], sizeof(links[1]), ".npushm-replace.%llu.%d.8", ns, (int)getpid());
	snprintf(links[2], sizeof(links[2]), ".npushm-replace.%llu.%d.9", ns + 1, (int)pid);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", npushm_region_fd(stale));
	for (i = 0; i < 3; i++) {
		snprintf(path[i], sizeof(path[i]), "%s/%s", dir, links[i]);
		REQUIRE(linkat(AT_FDCWD, proc, AT_FDCWD, path[i], AT_SYMLINK_FOLLOW) == 0);
	}
	REQUIRE_OK(npushm_region_info(stale, &info));
	CHECK_EQ(info.names, 3);
	REQUIRE_OK(npushm_region_alloc(dev, 4096, 0, &r));
	CHECK_ST(npushm_region_publish(r, name, 0600, NPUSHM_PUBLISH_REPLACE), NPUSHM_OK);
	CHECK(access(path[0], F_OK) != 0);	/* its loader is gone */
	CHECK(access(path[1], F_OK) == 0);	/* a live loader's */
	CHECK(access(path[2], F_OK) == 0);	/* another pid namespace's */
	REQUIRE_OK(npushm_region_info(stale, &info));
	CHECK_EQ(info.names, 2);
	unlink(path[1]);
	unlink(path[2]);
	CHECK_ST(npushm_name_unlink(dev, name), NPUSHM_OK);
	npushm_region_close(r);
	npushm_region_close(stale);
	npushm_dev_close(dev);
}

TEST(model_dedup_reuses_one_copy_and_rm_frees_it)
{
	npushm_dev_t *dev = th_dev();
	const char *a = th_name("dA"), *b = th_name("dB"), *c = th_name("dC"), *d = th_name("dD");
	const char *f1 = th_big_model("d1.safetensors", 4 << 20, 21);
	const char *f2 = th_big_model("d2.safetensors", 4 << 20, 22);	/* same size, other bytes */
	npushm_load_opts_t nodedup = { .flags = NPUSHM_LOAD_NO_DEDUP };
	npushm_load_result_t ra, rb, rc, rd;
	npushm_region_t *r;
	char alias[64];
	uint64_t used0 = th_pool_used(dev), one;
	npushm_model_t *m;

	REQUIRE_OK(npushm_model_load(dev, f1, a, NULL, &ra));
	one = th_pool_used(dev) - used0;
	CHECK(one >= (4 << 20));
	REQUIRE_OK(npushm_model_load(dev, f1, b, NULL, &rb));
	CHECK(rb.deduplicated);
	CHECK_EQ(rb.region_id, ra.region_id);
	CHECK(memcmp(ra.hash, rb.hash, 16) == 0);
	CHECK_EQ(th_pool_used(dev) - used0, one);	/* no second copy */
	REQUIRE_OK(npushm_model_load(dev, f2, c, NULL, &rc));
	CHECK(!rc.deduplicated);
	CHECK(rc.region_id != ra.region_id);
	REQUIRE_OK(npushm_model_load(dev, f1, d, &nodedup, &rd));
	CHECK(!rd.deduplicated);
	CHECK(rd.region_id != ra.region_id);
	CHECK_EQ(th_pool_used(dev) - used0, 3 * one);
	{
		/* Another mode: a copy of its own, and the first copy keeps its mode. */
		npushm_load_opts_t other_mode = { .mode = 0644 };
		const char *e = th_name("dE");
		npushm_load_result_t re;
		npushm_region_info_t info;

		REQUIRE_OK(npushm_model_load(dev, f1, e, &other_mode, &re));
		CHECK(!re.deduplicated);
		REQUIRE_OK(npushm_region_open(dev, a, 0, &r));
		REQUIRE_OK(npushm_region_info(r, &info));
		CHECK_EQ(info.mode & 0044, 0040);
		npushm_region_close(r);
		CHECK_ST(npushm_model_remove(dev, e), NPUSHM_OK);
	}
	/* The alias names the first copy. */
	snprintf(alias, sizeof(alias), "xxh3:%s", ra.hash_hex);
	REQUIRE_OK(npushm_region_open(dev, alias, 0, &r));
	CHECK_EQ(npushm_region_id(r), ra.region_id);
	npushm_region_close(r);
	/* Removing one name keeps the other working; removing both frees the copy. */
	CHECK_ST(npushm_model_remove(dev, a), NPUSHM_OK);
	REQUIRE_OK(npushm_model_attach_dev(dev, b, &m));
	npushm_model_detach(m);
	CHECK_ST(npushm_region_open(dev, alias, 0, &r), NPUSHM_OK);
	npushm_region_close(r);
	CHECK_ST(npushm_model_remove(dev, b), NPUSHM_OK);
	CHECK_ST(npushm_region_open(dev, alias, 0, &r), NPUSHM_ERR_NOT_FOUND);
	CHECK_EQ(th_pool_used(dev) - used0, 2 * one);
	CHECK_ST(npushm_model_remove(dev, c), NPUSHM_OK);
	CHECK_ST(npushm_model_remove(dev, d), NPUSHM_OK);
	CHECK_EQ(th_pool_used(dev), used0);
	CHECK_EQ(th_shm_files(), 0);
	npushm_dev_close(dev);
}

TEST(model_attach_touches_no_tensor_data)
{
	npushm_dev_t *dev = th_dev();
	const char *name = th_name("lazy");
	npushm_model_t *m;
	npushm_tensor_t t;
	npushm_dev_info_t di;
	long rss, pss, rss2, pss2, limit;
	uint64_t size = th_is_kmod() ? (16 << 20) : (64 << 20);

	/* The manifest's first fault may map one allocation chunk (kmod: 2 MiB), never more. */
	REQUIRE_OK(npushm_dev_query(dev, &di));
	limit = (long)(di.chunk_size >> 10) + 256;
	REQUIRE_OK(npushm_model_load(dev, th_big_model("lazy.safetensors", size, 31), name, NULL, NULL));
	REQUIRE_OK(npushm_model_attach_dev(dev, name, &m));
	REQUIRE(th_mapping_rss(npushm_model_base(m), &rss, &pss));
	th_diag("after attach: mapping of %llu MiB has Rss %ld kB (chunk %llu kB)",
		(unsigned long long)(size >> 20), rss, (unsigned long long)(di.chunk_size >> 10));
	CHECK(rss >= 0 && rss <= limit);	/* the manifest, not the data */
	CHECK((uint64_t)limit * 1024 * 4 <= size);	/* so the check means something */
	REQUIRE_OK(npushm_model_tensor_find(m, "w", &t));
	for (uint64_t i = 0; i < t.nbytes; i += 4096)
		(void)*(const volatile char *)((const char *)t.data + i);
	REQUIRE(th_mapping_rss(npushm_model_base(m), &rss2, &pss2));
	CHECK(rss2 >= (long)(size >> 10) - 64);	/* reading faults the data in */
	npushm_model_detach(m);
	CHECK_ST(npushm_model_remove(dev, name), NPUSHM_OK);
	npushm_dev_close(dev);
}

TEST(model_attach_refuses_unsealed_and_foreign_regions)
{
	npushm_dev_t *dev = th_dev();
	const char *plain = th_name("plain"), *junk = th_name("junk");
	npushm_model_t *m = NULL;
	npushm_region_t *r1, *r2;
	char *p;

	REQUIRE_OK(npushm_region_alloc(dev, 4096, 0, &r1));
	REQUIRE_OK(npushm_region_publish(r1, plain, 0644, NPUSHM_PUBLISH_PERSISTENT));
	CHECK_ST_MSG(npushm_model_attach_dev(dev, plain, &m), NPUSHM_ERR_CORRUPT, "not sealed");
	REQUIRE_OK(npushm_region_alloc(dev, 4096, 0, &r2));
	REQUIRE_OK(npushm_region_map(r2, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, (void **)&p));
	strcpy(p, "NPUSHMW? not a manifest");
	npushm_region_unmap(r2, p);
	REQUIRE_OK(npushm_region_seal(r2));
	REQUIRE_OK(npushm_region_publish(r2, junk, 0644, NPUSHM_PUBLISH_PERSISTENT));
	CHECK_ST_MSG(npushm_model_attach_dev(dev, junk, &m), NPUSHM_ERR_CORRUPT, "no npushm model");
	CHECK(m == NULL);
	CHECK_ST(npushm_name_unlink(dev, plain), NPUSHM_OK);
	CHECK_ST(npushm_name_unlink(dev, junk), NPUSHM_OK);
	npushm_region_close(r1);
	npushm_region_close(r2);
	npushm_dev_close(dev);
}

/* Copy a real manifest, damage one field, fix the checksum, check the message. */
TEST(model_manifest_validation_catches_each_inconsistency)
{
	npushm_dev_t *dev = th_dev();
	const char *name = th_name("mf");
	struct th_tensor t[3] = {
		{ .name = "a", .dtype = "F32", .ndim = 2, .shape = { 3, 5 } },
		{ .name = "b", .dtype = "I64", .ndim = 1, .shape = { 7 } },
		{ .name = "c", .dtype = "U8", .ndim = 0 },
	};
	const char *path = path_in_tmp("mf.safetensors");
	struct npi_manifest_view v;
	npushm_model_t *m;
	uint64_t size;
	uint8_t *copy;

	th_write_model(path, t, 3, NULL, 5);
	REQUIRE_OK(npushm_model_load(dev, path, name, NULL, NULL));
	REQUIRE_OK(npushm_model_attach_dev(dev, name, &m));
	{
		npushm_model_info_t mi;

		npushm_model_info(m, &mi);
		size = mi.region_size;
	}
	copy = malloc(size);
	REQUIRE(copy);
#define DAMAGE(stmt, want)                                                                   \
	do {                                                                                 \
		struct npi_manifest_hdr *h_ = (void *)copy;                                  \
		struct npi_manifest_tensor *t_;                                              \
		memcpy(copy, npushm_model_base(m), size);                                    \
		t_ = (void *)(copy + h_->tensors_offset);                                    \
		(void)t_;                                                                    \
		stmt;                                                                        \
		h_->manifest_hash = npi_manifest_hash_of(copy, h_->manifest_size <= size ?   \
							 h_->manifest_size : size);                  \
		CHECK_ST_MSG(npi_manifest_check(copy, size, &v), NPUSHM_ERR_CORRUPT, want);  \
	} while (0)
	memcpy(copy, npushm_model_base(m), size);
	CHECK_ST(npi_manifest_check(copy, size, &v), NPUSHM_OK);
	CHECK_ST_MSG(npi_manifest_check(copy, 64, &v), NPUSHM_ERR_CORRUPT, "no npushm model");
	copy[200] ^= 1;
	CHECK_ST_MSG(npi_manifest_check(copy, size, &v), NPUSHM_ERR_CORRUPT, "checksum");
	DAMAGE(h_->magic[0] = 'X', "no npushm model");
	DAMAGE(h_->version = 4, "version 4");
	DAMAGE(h_->version = 2, "layout table is empty");
	DAMAGE(h_->layouts_count = 1, "version 1 manifest lists packed layouts");
	DAMAGE(h_->hdr_size = 8, "header is 8 bytes");
	DAMAGE(h_->manifest_size = size + 1, "claims");
	DAMAGE(h_->data_end = size + 4096, "data area");
	DAMAGE(h_->tensor_count = 1000000, "outside the manifest");
	DAMAGE(h_->tensors_offset += 4, "misaligned");
	DAMAGE(h_->metadata_size = 1, "metadata");
	DAMAGE(t_[0].name_offset = 1ULL << 40, "outside the string table");
	/* names and metadata are UTF-8 (the loader writes nothing else; readers decode them) */
	DAMAGE(copy[h_->strings_offset + t_[2].name_offset] = (char)0xff, "tensor 2's name is not UTF-8");
	DAMAGE(copy[h_->strings_offset + t_[2].name_offset] = (char)0xc3, "tensor 2's name is not UTF-8");
	DAMAGE(copy[h_->metadata_offset] = (char)0x80, "metadata is not UTF-8");
	DAMAGE(t_[1].name_len = 0, "non-empty");
	DAMAGE((t_[0].name_offset = t_[1].name_offset, t_[0].name_len = t_[1].name_len), "not sorted");
	DAMAGE(t_[0].dtype = 99, "invalid dtype 99");
	DAMAGE(t_[0].ndim = 40, "dims table");
	DAMAGE(t_[0].nbytes += 1, "bytes recorded");
	DAMAGE(t_[0].offset += 1, "misaligned or outside");
	DAMAGE(t_[0].offset = size, "misaligned or outside");
	DAMAGE(((int64_t *)(copy + h_->dims_offset))[t_[0].dims_index + 2] = 2, "not C-contiguous");
	DAMAGE(((int64_t *)(copy + h_->dims_offset))[t_[0].dims_index] = -3, "dimension 0 is invalid");
#undef DAMAGE
	free(copy);
	npushm_model_detach(m);
	CHECK_ST(npushm_model_remove(dev, name), NPUSHM_OK);
	th_free_model(t, 3);
	npushm_dev_close(dev);
}

/* a packer for the tests: every F32 tensor gets a layout of its bytes reversed */
struct rev_packer {
	int calls;
	int fail;		/* pack() fails */
};

static uint64_t rev_size(void *arg, const npushm_tensor_t *t, char tag[NPUSHM_LAYOUT_TAG_MAX])
{
	(void)arg;
	if (t->dtype != NPUSHM_DTYPE_F32 || t->data)
		return 0;	/* t->data must be NULL before the copy */
	snprintf(tag, NPUSHM_LAYOUT_TAG_MAX, "test-reversed/v1/%s", t->name);
	return t->nbytes;
}

static int rev_pack(void *arg, const npushm_tensor_t *t, const char *tag, void *dst,
		    uint64_t nbytes, char *why, size_t why_size)
{
	struct rev_packer *p = arg;

	p->calls++;
	if (p->fail == 2) {
		memset(why, 'x', why_size);	/* a careless packer: no NUL */
		return -1;
	}
	if (p->fail) {
		snprintf(why, why_size, "the test packer refuses %s", tag);
		return -1;
	}
	for (uint64_t i = 0; i < nbytes; i++)
		((uint8_t *)dst)[i] = ((const uint8_t *)t->data)[nbytes - 1 - i];
	return 0;
}

/*
 * Packed layouts: stored after the tensors, listed in the manifest, hashed,
 * and the model's hash is the content hash of the file's hash and theirs; a
 * failing packer publishes nothing; a damaged layout table is CORRUPT.
 */
TEST(model_packed_layouts_stored_hashed_and_validated)
{
	npushm_dev_t *dev = th_dev();
	const char *name = th_name("pk"), *bad = th_name("pkbad");
	struct th_tensor t[3] = {
		{ .name = "w", .dtype = "F32", .ndim = 2, .shape = { 4, 6 } },
		{ .name = "ids", .dtype = "I64", .ndim = 1, .shape = { 3 } },
		{ .name = "b", .dtype = "F32", .ndim = 1, .shape = { 4 } },
	};
	const char *path = path_in_tmp("pk.safetensors");
	struct rev_packer rp = { 0 };
	const npushm_packer_t packer = { rev_size, rev_pack, &rp };
	npushm_load_opts_t lo = { .packer = &packer };
	npushm_load_result_t res;
	uint8_t file_hash[16], hashes[2][16], want[16];
	const char *names[2], *tags[2];
	struct npi_manifest_view v;
	npushm_model_info_t mi;
	npushm_layout_t l;
	npushm_model_t *m;
	uint8_t *copy;

	th_write_model(path, t, 3, NULL, 11);
	REQUIRE_OK(npushm_file_hash(path, file_hash, NULL));
	REQUIRE_OK(npushm_model_load(dev, path, name, &lo, &res));
	CHECK(rp.calls == 2);
	CHECK(memcmp(res.hash, file_hash, 16) != 0);
	REQUIRE_OK(npushm_model_attach_dev(dev, name, &m));
	npushm_model_info(m, &mi);
	CHECK(memcmp(mi.hash, res.hash, 16) == 0);
	REQUIRE(npushm_model_layout_count(m) == 2);
	/* sorted by region offset: file order, w then b */
	for (int i = 0; i < 2; i++) {
		struct th_tensor *src = i == 0 ? &t[0] : &t[2];
		XXH128_canonical_t c;

		REQUIRE_OK(npushm_model_layout_at(m, (size_t)i, &l));
		CHECK(!strcmp(l.tensor, src->name));
		CHECK(!strncmp(l.tag, "test-reversed/v1/", 17));
		CHECK(l.nbytes == src->nbytes && l.offset % 64 == 0 && l.offset >= mi.data_size);
		for (size_t k = 0; k < l.nbytes; k++)
			if (((const uint8_t *)l.data)[k] != src->data[l.nbytes - 1 - k])
				th_check_failed(__FILE__, __LINE__, "layout %d byte %zu", i, k);
		XXH128_canonicalFromHash(&c, XXH3_128bits(l.data, l.nbytes));
		CHECK(memcmp(l.hash, c.digest, 16) == 0);
		memcpy(hashes[i], c.digest, 16);
		names[i] = l.tensor;
		tags[i] = l.tag;
	}
	npi_manifest_content_hash(file_hash, false, 2, names, tags, (const uint8_t (*)[16])hashes, want);
	CHECK(memcmp(want, res.hash, 16) == 0);
	CHECK_ST(npushm_model_layout_find(m, "b", &l), NPUSHM_OK);
	CHECK(!strcmp(l.tensor, "b"));
	CHECK_ST_MSG(npushm_model_layout_find(m, "ids", &l), NPUSHM_ERR_NOT_FOUND, "no packed layout");
	CHECK_ST(npushm_model_layout_at(m, 2, &l), NPUSHM_ERR_INVALID);
	/* the manifest: version 2, the file's own hash kept */
	{
		const struct npi_manifest_hdr *h = npushm_model_base(m);

		CHECK(h->version == 2 && memcmp(h->source_hash, file_hash, 16) == 0);
	}
	/* a damaged layout table */
	copy = malloc(mi.region_size);
	REQUIRE(copy);
#define LDAMAGE(stmt, want)                                                                  \
	do {                                                                                 \
		struct npi_manifest_hdr *h_ = (void *)copy;                                  \
		struct npi_manifest_layout *l_;                                              \
		memcpy(copy, npushm_model_base(m), mi.region_size);                          \
		l_ = (void *)(copy + h_->layouts_offset);                                    \
		(void)l_;                                                                    \
		stmt;                                                                        \
		h_->manifest_hash = npi_manifest_hash_of(copy, h_->manifest_size);           \
		CHECK_ST_MSG(npi_manifest_check(copy, mi.region_size, &v), NPUSHM_ERR_CORRUPT,  \
			     want);                                                          \
	} while (0)
	LDAMAGE(l_[0].tensor_index = 3, "names no tensor");
	LDAMAGE(l_[0].flags = 1, "names no tensor");
	LDAMAGE(l_[1].tag_offset = 1ULL << 40, "no valid tag");
	LDAMAGE(l_[0].offset = h_->data_offset, "overlaps");
	LDAMAGE(l_[1].offset = l_[0].offset, "overlaps");
	LDAMAGE(l_[1].nbytes = 1ULL << 50, "outside the region");
	LDAMAGE(l_[0].offset += 8, "misaligned");
	LDAMAGE(h_->layouts_offset += 4, "misaligned");
	LDAMAGE(h_->layouts_count = 0, "empty");
	LDAMAGE(((char *)(l_ + 2))[l_[0].tag_len] = 'x', "not a NUL-terminated");
	LDAMAGE(((char *)(l_ + 2))[0] = (char)0xed, "tag is not UTF-8");
#undef LDAMAGE
	free(copy);
	/* with a packer the name is never "already loaded": taken */
	CHECK_ST_MSG(npushm_model_load(dev, path, name, &lo, NULL), NPUSHM_ERR_EXISTS,
		     "already published");
	npushm_model_detach(m);
	/* a packer that fails: nothing published, the reason in the message */
	rp.fail = 1;
	CHECK_ST_MSG(npushm_model_load(dev, path, bad, &lo, NULL), NPUSHM_ERR_INVALID,
		     "the test packer refuses test-reversed/v1/w");
	CHECK_ST(npushm_model_attach_dev(dev, bad, &m), NPUSHM_ERR_NOT_FOUND);
	/* a reason without a NUL is cut at the buffer's end, not read past it */
	rp.fail = 2;
	CHECK_ST_MSG(npushm_model_load(dev, path, bad, &lo, NULL), NPUSHM_ERR_INVALID, "failed: xxx");
	{
		const char *e = npushm_last_error(), *x = strstr(e, "failed: ") + 8;

		CHECK(strspn(x, "x") == strlen(x) && strlen(x) > 0 && strlen(x) < 256);
	}
	CHECK_ST(npushm_model_attach_dev(dev, bad, &m), NPUSHM_ERR_NOT_FOUND);
	CHECK_ST(npushm_model_remove(dev, name), NPUSHM_OK);
	th_free_model(t, 3);
	npushm_dev_close(dev);
}

/*
 * Packed-only (NPUSHM_LOAD_PACKED_ONLY): the tensors given a layout are not
 * stored plain (a smaller region, the packer still reads their bytes from
 * the file); manifest version 3, the content hash marks it; such tensors
 * are refused to callers that read plain tensors (and to DLPack) until the
 * caller says it reads them through their layouts; a damaged manifest that
 * breaks the pairing of tensors and layouts is CORRUPT.
 */
TEST(model_packed_only_stores_one_copy_hashed_and_validated)
{
	npushm_dev_t *dev = th_dev();
	const char *both = th_name("pkb"), *only = th_name("pko");
	struct th_tensor t[3] = {
		{ .name = "w", .dtype = "F32", .ndim = 2, .shape = { 40, 60 } },
		{ .name = "ids", .dtype = "I64", .ndim = 1, .shape = { 3 } },
		{ .name = "b", .dtype = "F32", .ndim = 1, .shape = { 40 } },
	};
	const char *path = path_in_tmp("pko.safetensors");
	struct rev_packer rp = { 0 };
	const npushm_packer_t packer = { rev_size, rev_pack, &rp };
	npushm_load_opts_t lo = { .packer = &packer };
	npushm_load_result_t rboth, ronly;
	uint8_t file_hash[16], hashes[2][16], want[16];
	const char *names[2], *tags[2];
	npushm_model_info_t iboth, ionly;
	struct npi_manifest_view v;
	DLManagedTensor *dl = NULL;
	npushm_model_t *mb, *m;
	npushm_tensor_t x;
	npushm_layout_t l;
	uint8_t *copy;

	th_write_model(path, t, 3, NULL, 21);
	REQUIRE_OK(npushm_file_hash(path, file_hash, NULL));
	REQUIRE_OK(npushm_model_load(dev, path, both, &lo, &rboth));
	lo.flags = NPUSHM_LOAD_PACKED_ONLY;
	REQUIRE_OK(npushm_model_load(dev, path, only, &lo, &ronly));
	CHECK(rp.calls == 4);
	CHECK(memcmp(ronly.hash, rboth.hash, 16) != 0 && memcmp(ronly.hash, file_hash, 16) != 0);
	REQUIRE_OK(npushm_model_attach_dev(dev, both, &mb));
	REQUIRE_OK(npushm_model_attach_dev(dev, only, &m));
	npushm_model_info(mb, &iboth);
	npushm_model_info(m, &ionly);
	/* one copy: the plain bytes of w and b are not in the region */
	CHECK(ionly.data_size + t[0].nbytes + t[2].nbytes <= iboth.data_size + 128);
	CHECK(ionly.region_size < iboth.region_size);
	CHECK(((const struct npi_manifest_hdr *)npushm_model_base(m))->version == 3);
	/* refused to a plain reader, named with its layout; ids stays plain */
	CHECK_ST_MSG(npushm_model_tensor_find(m, "w", &x), NPUSHM_ERR_UNSUPPORTED,
		     "stored only in its packed layout 'test-reversed/v1/w'");
	CHECK_ST(npushm_model_tensor_at(m, 0, &x), NPUSHM_ERR_UNSUPPORTED);	/* "b" */
	REQUIRE_OK(npushm_model_tensor_find(m, "ids", &x));
	CHECK(x.data && !memcmp(x.data, t[1].data, t[1].nbytes));
	CHECK_ST_MSG(npushm_model_tensor_dlpack(m, 0, &dl), NPUSHM_ERR_UNSUPPORTED,
		     "packed layout");
	CHECK(npushm_model_accept_packed_only(mb) == 0);
	CHECK(npushm_model_accept_packed_only(m) == 2);
	CHECK_ST_MSG(npushm_model_tensor_dlpack(m, 0, &dl), NPUSHM_ERR_UNSUPPORTED,
		     "no plain elements");
	REQUIRE_OK(npushm_model_tensor_find(m, "w", &x));
	CHECK(x.data == NULL && x.offset == 0 && x.nbytes == t[0].nbytes && x.shape[1] == 60);
	/* the layouts, packed from the file's bytes, hashed into the model's hash */
	for (int i = 0; i < 2; i++) {
		struct th_tensor *src = i == 0 ? &t[0] : &t[2];

		REQUIRE_OK(npushm_model_layout_find(m, src->name, &l));
		for (size_t k = 0; k < l.nbytes; k++)
			if (((const uint8_t *)l.data)[k] != src->data[l.nbytes - 1 - k])
				th_check_failed(__FILE__, __LINE__, "layout %d byte %zu", i, k);
		memcpy(hashes[i], l.hash, 16);
		names[i] = l.tensor;
		tags[i] = l.tag;
	}
	npi_manifest_content_hash(file_hash, true, 2, names, tags, (const uint8_t (*)[16])hashes,
				  want);
	CHECK(memcmp(want, ronly.hash, 16) == 0);
	npi_manifest_content_hash(file_hash, false, 2, names, tags,
				  (const uint8_t (*)[16])hashes, want);
	CHECK(memcmp(want, rboth.hash, 16) == 0);
	/* damaged pairings of tensors and layouts */
	copy = malloc(ionly.region_size);
	REQUIRE(copy);
#define ODAMAGE(stmt, want)                                                                  \
	do {                                                                                 \
		struct npi_manifest_hdr *h_ = (void *)copy;                                  \
		struct npi_manifest_layout *l_;                                              \
		struct npi_manifest_tensor *t_;                                              \
		memcpy(copy, npushm_model_base(m), ionly.region_size);                       \
		l_ = (void *)(copy + h_->layouts_offset);                                    \
		t_ = (void *)(copy + h_->tensors_offset);                                    \
		(void)l_;                                                                    \
		(void)t_;                                                                    \
		stmt;                                                                        \
		h_->manifest_hash = npi_manifest_hash_of(copy, h_->manifest_size);           \
		CHECK_ST_MSG(npi_manifest_check(copy, ionly.region_size, &v),                \
			     NPUSHM_ERR_CORRUPT, want);                                      \
	} while (0)
	ODAMAGE(l_[0].flags = 0, "neither data nor a layout");
	ODAMAGE(l_[1].flags = 3, "names no tensor");
	ODAMAGE(l_[0].tensor_index = 1, "which has data too");	/* "ids" */
	ODAMAGE(t_[1].offset = 0, "neither data nor a layout");		/* "ids" */
	ODAMAGE(h_->version = 2, "outside the data area");
	ODAMAGE(h_->version = 4, "reads versions 1 to 3");
#undef ODAMAGE
	free(copy);
	/* without a packer there is nothing to store the tensors in */
	lo.packer = NULL;
	CHECK_ST_MSG(npushm_model_load(dev, path, th_name("pkn"), &lo, NULL), NPUSHM_ERR_INVALID,
		     "needs a packer");
	npushm_model_detach(mb);
	npushm_model_detach(m);
	CHECK_ST(npushm_model_remove(dev, both), NPUSHM_OK);
	CHECK_ST(npushm_model_remove(dev, only), NPUSHM_OK);
	th_free_model(t, 3);
	npushm_dev_close(dev);
}

TEST(model_dlpack_views_share_memory_and_outlive_detach)
{
	npushm_dev_t *dev = th_dev();
	const char *name = th_name("dl");
	struct th_tensor t[3] = {
		{ .name = "bf", .dtype = "BF16", .ndim = 2, .shape = { 4, 8 } },
		{ .name = "f32", .dtype = "F32", .ndim = 3, .shape = { 2, 3, 4 } },
		{ .name = "mask", .dtype = "BOOL", .ndim = 1, .shape = { 5 } },
	};
	const char *path = path_in_tmp("dl.safetensors");
	DLManagedTensor *dl = NULL, *dl2 = NULL;
	npushm_model_t *m;
	npushm_tensor_t x;
	uint8_t copy[96];

	th_write_model(path, t, 3, NULL, 8);
	REQUIRE_OK(npushm_model_load(dev, path, name, NULL, NULL));
	REQUIRE_OK(npushm_model_attach_dev(dev, name, &m));
	/* Name order: bf, f32, mask. */
	REQUIRE_OK(npushm_model_tensor_dlpack(m, 1, &dl));
	REQUIRE_OK(npushm_model_tensor_at(m, 1, &x));
	CHECK(dl->dl_tensor.data == x.data);
	CHECK_EQ(dl->dl_tensor.device.device_type, kDLCPU);
	CHECK_EQ(dl->dl_tensor.ndim, 3);
	CHECK_EQ(dl->dl_tensor.dtype.code, kDLFloat);
	CHECK_EQ(dl->dl_tensor.dtype.bits, 32);
	CHECK_EQ(dl->dl_tensor.dtype.lanes, 1);
	CHECK_EQ(dl->dl_tensor.shape[0], 2);
	CHECK_EQ(dl->dl_tensor.shape[2], 4);
	CHECK_EQ(dl->dl_tensor.strides[0], 12);
	CHECK_EQ(dl->dl_tensor.strides[2], 1);
	CHECK_EQ(dl->dl_tensor.byte_offset, 0);
	REQUIRE_OK(npushm_model_tensor_dlpack(m, 0, &dl2));
	CHECK_EQ(dl2->dl_tensor.dtype.code, kDLBfloat);
	CHECK_ST_MSG(npushm_model_tensor_dlpack(m, 2, &(DLManagedTensor *){ NULL }), NPUSHM_ERR_UNSUPPORTED, "BOOL");
	CHECK_ST(npushm_model_tensor_dlpack(m, 3, &(DLManagedTensor *){ NULL }), NPUSHM_ERR_INVALID);
	memcpy(copy, x.data, 96);
	npushm_model_detach(m);	/* the DLPack tensors keep the mapping */
	CHECK(memcmp(dl->dl_tensor.data, copy, 96) == 0);
	CHECK(memcmp(dl->dl_tensor.data, t[1].data, 96) == 0);
	dl->deleter(dl);
	dl2->deleter(dl2);
	CHECK_ST(npushm_model_remove(dev, name), NPUSHM_OK);
	th_free_model(t, 3);
	npushm_dev_close(dev);
}

/* A progress callback that rewrites a byte of the file mid-copy. */
static void touch_file(void *arg, npushm_load_stage_t stage, uint64_t done, uint64_t total)
{
	struct touch_ctx *c = arg;

	if (stage == NPUSHM_LOAD_COPY && done > total / 2 && !c->done) {
		int fd = open(c->path, O_WRONLY);
		struct timespec ts[2] = { { 0, UTIME_NOW }, { 1, 0 } };

		c->done = 1;
		CHECK(pwrite(fd, "x", 1, 200) == 1);
		futimens(fd, ts);	/* a different mtime even within one clock tick */
		close(fd);
	}
}

TEST(model_file_changed_while_loading_is_refused)
{
	npushm_dev_t *dev = th_dev();
	const char *path = th_big_model("chg.safetensors", 8 << 20, 41), *name = th_name("chg");
	struct touch_ctx ctx = { path, 0 };
	npushm_load_opts_t lo = { 0 };
	uint64_t used0 = th_pool_used(dev);

	lo.progress = touch_file;
	lo.progress_arg = &ctx;
	CHECK_ST_MSG(npushm_model_load(dev, path, name, &lo, NULL), NPUSHM_ERR_IO, "changed while it was being loaded");
	CHECK_EQ(th_pool_used(dev), used0);
	CHECK_EQ(th_shm_files(), 0);
	npushm_dev_close(dev);
}

TEST(model_dedup_works_without_room_for_a_second_copy)
{
	npushm_dev_t *dev = th_dev();
	const char *a = th_name("fullA"), *b = th_name("fullB"), *c = th_name("fullC");
	const char *f1 = th_big_model("full1.safetensors", 8 << 20, 61);
	const char *f2 = th_big_model("full2.safetensors", 8 << 20, 62);
	npushm_load_result_t ra, rb;
	npushm_region_t *filler = NULL;
	npushm_dev_info_t di;
	uint64_t used0;

	REQUIRE_OK(npushm_model_load(dev, f1, a, NULL, &ra));
	used0 = th_pool_used(dev);
	/* Leave room for less than a second copy. */
	if (th_is_kmod()) {
		REQUIRE_OK(npushm_dev_query(dev, &di));
		if (!di.uid_quota)
			th_skip("the module was loaded without a uid_quota");
		REQUIRE_OK(npushm_region_alloc(dev, di.uid_quota - di.uid_in_use - (4 << 20), 0, &filler));
	} else {
		char opts[64];

		if (!th_is_root())
			th_skip("shrinking the private tmpfs needs root");
		snprintf(opts, sizeof(opts), "size=%lluk", (unsigned long long)((used0 >> 10) + 4096));
		REQUIRE(mount(NULL, getenv("NPUSHM_SHM_DIR"), NULL, MS_REMOUNT, opts) == 0);
	}
	CHECK_ST(npushm_model_load(dev, f1, b, NULL, &rb), NPUSHM_OK);
	CHECK(rb.deduplicated);
	CHECK_EQ(rb.region_id, ra.region_id);
	/* Different bytes: the original "no room" failure comes back, nothing is left. */
	CHECK(npushm_model_load(dev, f2, c, NULL, NULL) == (th_is_kmod() ? NPUSHM_ERR_QUOTA : NPUSHM_ERR_NO_SPACE));
	CHECK(strstr(npushm_last_error(), f2) != NULL);
	if (!th_is_kmod())
		CHECK(strstr(npushm_last_error(), "has no room") && strstr(npushm_last_error(), getenv("NPUSHM_SHM_DIR")));
	CHECK_ST(npushm_model_attach_dev(dev, c, &(npushm_model_t *){ NULL }), NPUSHM_ERR_NOT_FOUND);
	CHECK_EQ(th_pool_used(dev), used0 + (filler ? npushm_region_size(filler) : 0));
	npushm_region_close(filler);
	CHECK_ST(npushm_model_remove(dev, a), NPUSHM_OK);
	CHECK_ST(npushm_model_remove(dev, b), NPUSHM_OK);
	CHECK_EQ(th_shm_files(), 0);
	npushm_dev_close(dev);
}

TEST_HARNESS_MAIN
