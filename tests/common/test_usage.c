// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The npushm authors
/*
 * test_usage.c - linked into every test program: given "--help" as its only
 * argument the program prints its usage on stdout, given "--version" its
 * name and version, and exits 0 before any test runs (the kselftest harness
 * would otherwise run the whole suite, whatever the arguments).
 *
 * A program with arguments of its own defines npushm_test_usage (the text
 * after "usage: NAME"); the others get a line saying that the program takes
 * none and prints TAP. glibc calls constructors with main's arguments.
 * Built with -DNPUSHM_VERSION='"x.y.z"'.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char npushm_test_usage[] __attribute__((weak));

/* priority 101: before the constructors of the tests themselves (libnpushm's print) */
__attribute__((constructor(101))) static void npushm_test_usage_check(int argc, char **argv)
{
	const char *name = program_invocation_short_name;

	if (argc != 2 || !argv)
		return;
	if (!strcmp(argv[1], "--version")) {
		printf("%s (npushm) %s\n", name, NPUSHM_VERSION);
		exit(0);
	}
	if (strcmp(argv[1], "--help"))
		return;
	if (npushm_test_usage)
		printf("usage: %s %s", name, npushm_test_usage);
	else
		printf("usage: %s\n"
		       "A test program of npushm: runs its tests and prints TAP (no arguments).\n"
		       "make check runs it in its suite (README, \"Tests\").\n", name);
	exit(0);
}
