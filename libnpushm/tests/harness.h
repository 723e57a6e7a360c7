/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * harness.h - the libnpushm test harness: TAP output, one forked process
 * per test, and helpers shared by the test files.
 *
 * A test is a function declared with TEST(name); it passes when it returns
 * with no failed CHECK. Each runs in its own child (a crash, an abort, a
 * SIGKILL or a timeout fails only that test). As root each test also gets a
 * private mount namespace with an empty directory of its own (a tmpfs on
 * posix, an npushm instance on kmod), so nothing can leak into /dev/shm or
 * /run/npushm. NPUSHM_BACKEND selects the backend under test.
 */
#ifndef NPUSHM_TEST_HARNESS_H
#define NPUSHM_TEST_HARNESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "npushm.h"

typedef void (*th_fn)(void);
void th_register(const char *name, th_fn fn);

#define TEST(fn)                                                              \
	static void fn(void);                                                 \
	__attribute__((constructor)) static void th_reg_##fn(void)            \
	{                                                                     \
		th_register(#fn, fn);                                         \
	}                                                                     \
	static void fn(void)

void th_check_failed(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void th_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void th_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *th_status_name(npushm_status_t st);

#define CHECK(cond)                                                           \
	do {                                                                  \
		if (!(cond))                                                  \
			th_check_failed(__FILE__, __LINE__, "%s", #cond);     \
	} while (0)

#define CHECK_EQ(a, b)                                                        \
	do {                                                                  \
		long long a_ = (long long)(a), b_ = (long long)(b);           \
		if (a_ != b_)                                                 \
			th_check_failed(__FILE__, __LINE__, "%s == %s (%lld != %lld)", \
					#a, #b, a_, b_);                      \
	} while (0)

/* @expr must return status @want (and, if @sub, a message containing it). */
#define CHECK_ST(expr, want)                                                  \
	th_check_status(__FILE__, __LINE__, #expr, (expr), (want), NULL)
#define CHECK_ST_MSG(expr, want, sub)                                         \
	th_check_status(__FILE__, __LINE__, #expr, (expr), (want), (sub))
bool th_check_status(const char *file, int line, const char *what, npushm_status_t got,
		     npushm_status_t want, const char *sub);

/* Stop the test now if @cond is false. */
#define REQUIRE(cond)                                                         \
	do {                                                                  \
		if (!(cond)) {                                                \
			th_check_failed(__FILE__, __LINE__, "required: %s", #cond); \
			th_abort_test();                                      \
		}                                                             \
	} while (0)
#define REQUIRE_OK(expr)                                                      \
	do {                                                                  \
		if (!th_check_status(__FILE__, __LINE__, #expr, (expr), NPUSHM_OK, NULL)) \
			th_abort_test();                                      \
	} while (0)
void th_abort_test(void) __attribute__((noreturn));

/* ------------------------------------------------------------- helpers */

bool th_is_kmod(void);
bool th_is_root(void);
/* A device for the backend under test (aborts the test on failure). */
npushm_dev_t *th_dev(void);
/* A fresh name unique to this process: "t<pid>.<n>.<tag>". */
const char *th_name(const char *tag);
/* Bytes the backend holds: kmod pool in_use, posix used bytes of the tmpfs. */
uint64_t th_pool_used(npushm_dev_t *dev);
/* Number of files in the backend's directory (NPUSHM_SHM_DIR, NPUSHM_DIR). */
int th_shm_files(void);
/* Open file descriptors of this process. */
int th_fd_count(void);
/* A scratch directory for this test (removed by the harness). */
const char *th_tmpdir(void);
/* Run @fn in a child as uid/gid 65534 (nobody); returns its failure count. */
int th_as_nobody(void (*fn)(void *), void *arg);
/* Rss and Pss of the mapping containing @addr from /proc/self/smaps, in kB. */
bool th_mapping_rss(const void *addr, long *rss_kb, long *pss_kb);

/* ------------------------------------------------- safetensors writing */

struct th_tensor {
	const char *name;
	const char *dtype;		/* as written in the header */
	int ndim;
	int64_t shape[8];
	size_t nbytes;			/* filled by th_write_model */
	uint64_t file_offset;		/* absolute, filled by th_write_model */
	uint8_t *data;			/* filled by th_write_model (random) */
};

/*
 * Write a valid safetensors file with @n tensors (random contents from
 * @seed) and optional @metadata (a JSON object text or NULL). Tensor order
 * in the file is the array order. Returns the file size.
 */
uint64_t th_write_model(const char *path, struct th_tensor *t, int n, const char *metadata,
			uint64_t seed);
void th_free_model(struct th_tensor *t, int n);
/* A file: 8-byte length of @header (+@pad spaces), the header, @data_len bytes of @fill. */
void th_write_raw(const char *path, const char *header, size_t pad, size_t data_len, int fill);
/* A one-tensor F32 file of about @bytes bytes; returns the path in th_tmpdir(). */
const char *th_big_model(const char *file, uint64_t bytes, uint64_t seed);
uint64_t th_rand(uint64_t *state);

#endif
