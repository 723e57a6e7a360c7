// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm_bench.c - costs of npushm regions against memfd and POSIX shm.
 *
 * Runs where /dev/npushm exists (the test VM: make bench-kmod). For each
 * size it measures, median of several rounds:
 *   create:  allocate + mmap + first touch of every page
 *            (npushm ALLOC vs memfd_create+ftruncate vs shm_open+ftruncate)
 *   attach:  open an existing region by name + mmap, no touch
 *            (npushm OPEN vs shm_open of an existing object)
 *   retouch: map an existing, populated region and read every page
 * and prints a table with the ratios npushm/memfd and npushm/shm.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/npushm.h>

#define ROUNDS 5

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static void die(const char *what)
{
	fprintf(stderr, "npushm_bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void touch(volatile char *p, size_t len, int write)
{
	size_t i;
	char sink = 0;

	for (i = 0; i < len; i += 4096) {
		if (write)
			p[i] = 1;
		else
			sink += p[i];
	}
	(void)sink;
}

static int dev;

/* Fewer rounds for the largest sizes: first touch under TCG is slow. */
static int rounds(size_t len)
{
	return len >= (256UL << 20) ? 3 : ROUNDS;
}

static int np_alloc(size_t len)
{
	struct npushm_alloc a = { .size = len };

	if (ioctl(dev, NPUSHM_IOC_ALLOC, &a))
		die("NPUSHM_IOC_ALLOC");
	return a.fd;
}

static int np_open(const char *name)
{
	struct npushm_open o = { .name = (uintptr_t)name };

	if (ioctl(dev, NPUSHM_IOC_OPEN, &o))
		die("NPUSHM_IOC_OPEN");
	return o.fd;
}

enum kind { NPUSHM, MEMFD, SHM };

static int create(enum kind k, size_t len)
{
	int fd;

	switch (k) {
	case NPUSHM:
		return np_alloc(len);
	case MEMFD:
		fd = memfd_create("bench", MFD_CLOEXEC);
		break;
	default:
		fd = shm_open("/npushm-bench", O_RDWR | O_CREAT | O_EXCL, 0600);
		break;
	}
	if (fd < 0 || ftruncate(fd, len))
		die("memfd/shm");
	return fd;
}

/* allocate + map + first touch, then free */
static double bench_create(enum kind k, size_t len)
{
	double t[ROUNDS];
	int r;

	for (r = 0; r < rounds(len); r++) {
		double t0 = now();
		int fd = create(k, len);
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

		if (p == MAP_FAILED)
			die("mmap");
		touch(p, len, 1);
		t[r] = now() - t0;
		munmap(p, len);
		close(fd);
		if (k == SHM)
			shm_unlink("/npushm-bench");
	}
	return median(t, rounds(len));
}

/* open an existing object by name + map (no touch) */
static double bench_attach(enum kind k, size_t len, int retouch)
{
	double t[ROUNDS];
	int owner, r;
	char *p;

	if (k == NPUSHM) {
		struct npushm_publish pub = { .name = (uintptr_t)"bench.attach", .mode = 0600 };

		owner = np_alloc(len);
		if (ioctl(owner, NPUSHM_IOC_PUBLISH, &pub))
			die("NPUSHM_IOC_PUBLISH");
	} else {
		owner = shm_open("/npushm-bench-attach", O_RDWR | O_CREAT | O_EXCL, 0600);
		if (owner < 0 || ftruncate(owner, len))
			die("shm_open");
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, owner, 0);
	touch(p, len, 1);
	munmap(p, len);
	for (r = 0; r < rounds(len); r++) {
		double t0 = now();
		int fd = k == NPUSHM ? np_open("bench.attach") :
			 shm_open("/npushm-bench-attach", O_RDONLY, 0);

		p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			die("mmap");
		if (retouch)
			touch(p, len, 0);
		t[r] = now() - t0;
		munmap(p, len);
		close(fd);
	}
	if (k != NPUSHM)
		shm_unlink("/npushm-bench-attach");
	close(owner);
	return median(t, rounds(len));
}

static void row(const char *what, size_t len, double np, double mfd, double shm)
{
	char size[32], m[32] = "-", rm[32] = "-";

	if (len >= 1 << 30)
		snprintf(size, sizeof(size), "%zu GiB", len >> 30);
	else if (len >= 1 << 20)
		snprintf(size, sizeof(size), "%zu MiB", len >> 20);
	else
		snprintf(size, sizeof(size), "%zu KiB", len >> 10);
	if (mfd > 0) {
		snprintf(m, sizeof(m), "%.1f", mfd * 1e6);
		snprintf(rm, sizeof(rm), "%.2f", np / mfd);
	}
	printf("| %-28s | %7s | %10.1f | %10s | %10.1f | %6s | %6.2f |\n", what, size,
	       np * 1e6, m, shm * 1e6, rm, np / shm);
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 4096, 1 << 20, 64 << 20, 1UL << 30 };
	double a4k = 0, a1g = 0;
	unsigned int i;

	dev = open(NPUSHM_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (dev < 0)
		die(NPUSHM_DEVICE_PATH " (load npushm.ko)");
	printf("| operation                    |    size | npushm us  | memfd us   | shm us     | /memfd | /shm   |\n");
	printf("|------------------------------|--------:|-----------:|-----------:|-----------:|-------:|-------:|\n");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t len = sizes[i];

		row("alloc + map + first touch", len, bench_create(NPUSHM, len),
		    bench_create(MEMFD, len), bench_create(SHM, len));
	}
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t len = sizes[i];
		double np = bench_attach(NPUSHM, len, 0);

		row("open by name + map", len, np, 0, bench_attach(SHM, len, 0));
		if (len == 4096)
			a4k = np;
		if (len == 1UL << 30)
			a1g = np;
	}
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t len = sizes[i];

		row("open + map + read all pages", len, bench_attach(NPUSHM, len, 1), 0,
		    bench_attach(SHM, len, 1));
	}
	printf("\nopen by name + map: 1 GiB costs %.2fx of 4 KiB\n", a1g / a4k);
	(void)argc;
	(void)argv;
	return 0;
}
