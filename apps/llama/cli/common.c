/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * common.c - what every part of npushm-llama reports with: the program's
 * name, its one-line messages on stderr (die; silent once the run is ending
 * on a signal) and the clock (now). Below
 * the run modes and the dispatcher; calls nothing of theirs.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>

#include "cli.h"

const char *prog = "npushm-llama";
static atomic_int stopping_here;
atomic_int *cli_stopping = &stopping_here;

void cli_stopping_share(void)
{
	void *p = mmap(NULL, sizeof(atomic_int), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p != MAP_FAILED)
		cli_stopping = p;
}

int die(const char *fmt, ...)
{
	va_list ap;

	if (atomic_load(cli_stopping))
		return 1;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
