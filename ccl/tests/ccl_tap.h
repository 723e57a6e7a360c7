/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * ccl_tap.h - the ccl test programs report through the kernel's kselftest.h
 * (the library under kselftest_harness.h, which the module's selftests and
 * the other C suites use): one ksft_test_result per result, "ok N - text",
 * and the plan once the number of results is known (the matrix and fault
 * programs decide their cases at run time), then kselftest's totals.
 */
#ifndef CCL_TAP_H
#define CCL_TAP_H

#include <stdarg.h>
#include <stdio.h>

#include "kselftest.h"

/* One result; @fmt describes it (printf style, no newline). */
static inline __attribute__((format(printf, 2, 3))) void ccl_tap(int ok, const char *fmt, ...)
{
	char text[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	ksft_test_result(ok, "- %s\n", text);
	fflush(stdout);
}

/* The plan ("1..N", N the results so far) and kselftest's totals line. */
static inline void ccl_tap_plan(void)
{
	ksft_set_plan(ksft_test_num());
	ksft_print_cnts();
	fflush(stdout);
}

#endif /* CCL_TAP_H */
