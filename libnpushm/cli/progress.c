/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * progress.c - the load progress bar: one line on stderr redrawn with '\r'
 * at most every 100 ms, only when enabled (stderr is a terminal and the
 * output is not JSON); finished with a newline.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cli.h"

struct cli_progress {
	const char *label;
	bool enabled;
	bool drawn;
	double start, last;
};

static double progress_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct cli_progress *cli_progress_new(const char *label, bool enabled)
{
	struct cli_progress *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->label = label;
	p->enabled = enabled;
	p->start = progress_now();
	return p;
}

void cli_progress_cb(void *arg, npushm_load_stage_t stage, uint64_t done, uint64_t total)
{
	struct cli_progress *p = arg;
	const int width = 30;
	char a[32], b[32], c[32];
	double t, frac, rate;
	int fill;

	if (!p || !p->enabled)
		return;
	t = progress_now();
	if (stage == NPUSHM_LOAD_COPY && done < total && t - p->last < 0.1)
		return;
	p->last = t;
	frac = stage == NPUSHM_LOAD_COPY ? (total ? (double)done / (double)total : 1.0) : 1.0;
	fill = (int)(frac * width + 0.5);
	rate = t > p->start ? (double)done / (t - p->start) : 0;
	switch (stage) {
	case NPUSHM_LOAD_COPY:
		fprintf(stderr, "\r%s [%.*s%.*s] %3d%% %s / %s  %s/s   ", p->label, fill,
			"##############################", width - fill, "..............................",
			(int)(frac * 100), cli_size(done, a, sizeof(a)), cli_size(total, b, sizeof(b)),
			cli_size((unsigned long long)rate, c, sizeof(c)));
		break;
	case NPUSHM_LOAD_SEAL:
		fprintf(stderr, "\r%s sealing...%40s", p->label, "");
		break;
	case NPUSHM_LOAD_PUBLISH:
		fprintf(stderr, "\r%s publishing...%40s", p->label, "");
		break;
	default:
		return;
	}
	p->drawn = true;
	fflush(stderr);
}

void cli_progress_free(struct cli_progress *p)
{
	if (!p)
		return;
	if (p->drawn)
		fprintf(stderr, "\r%80s\r", "");
	free(p);
}
