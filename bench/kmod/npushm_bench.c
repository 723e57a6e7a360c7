// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm_bench.c - npushm-bench-kmod: costs of npushm regions against memfd
 * and POSIX shm.
 *
 *   npushm-bench-kmod [DIR]     DIR: a mounted npushm instance (default /run/npushm)
 *   npushm-bench-kmod --providers DIR NAME [DIR NAME...]
 *                               the same create and attach costs on instances
 *                               of other providers (NAME: its label), as
 *                               ratios to the first (sysmem)
 *   npushm-bench-kmod --help | --version
 *
 * Runs where npushm.ko is loaded and an instance is mounted (the test VM:
 * make bench-kmod). POSIX shm is /dev/shm (tmpfs). Every operation is timed
 * for the three, interleaved, median of several rounds, and the whole set is
 * repeated RUNS times; the table gives the range of the medians over the runs
 * and the ratios npushm/memfd and npushm/shm of the median of medians.
 *   create:   make + size + map + first touch of every page
 *             (O_TMPFILE + ftruncate in the instance; memfd_create + ftruncate;
 *             shm_open + ftruncate)
 *   attach:   open an existing region by name + map, no touch (memfd: its only
 *             name, /proc/PID/fd/N; shm: shm_open)
 *   reread:   attach + read every page
 *   publish:  make, size, fill, seal, name (npushm: O_TMPFILE, ftruncate, touch,
 *             NPUSHM_IOC_SEAL, linkat; memfd: memfd_create, ftruncate, touch,
 *             F_ADD_SEALS, no name; shm: O_TMPFILE in /dev/shm, ftruncate, touch,
 *             fchmod 0444, linkat)
 * Then checks the targets: attach O(1) in size (1 GiB within 2x of 4 KiB) and
 * within 2x of memfd.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <linux/npushm.h>

#define ROUNDS	7
#define RUNS	3

enum kind { NPUSHM, MEMFD, SHM, KINDS };

static const char *np_dir = NPUSHM_MOUNT_PATH;
static int np_root, shm_root;

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
	fprintf(stderr, "npushm-bench-kmod: %s: %s\n", what, strerror(errno));
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

/* Fewer rounds for the largest sizes: first touch under TCG is slow. */
static int rounds(size_t len)
{
	return len >= (256UL << 20) ? 3 : ROUNDS;
}

/* A new unnamed, sized region of @k. */
static int create(enum kind k, size_t len)
{
	int fd;

	switch (k) {
	case NPUSHM:
		fd = openat(np_root, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		break;
	case MEMFD:
		fd = memfd_create("bench", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		break;
	default:
		fd = openat(shm_root, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		break;
	}
	if (fd < 0 || ftruncate(fd, len))
		die("create");
	return fd;
}

static char *map(int fd, size_t len, int prot)
{
	char *p = mmap(NULL, len, prot, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		die("mmap");
	return p;
}

static void link_fd(int fd, int dir, const char *name)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, proc, dir, name, AT_SYMLINK_FOLLOW))
		die("linkat");
}

/* make + size + map + first touch, then free */
static double bench_create(enum kind k, size_t len)
{
	double t[ROUNDS];
	int r;

	for (r = 0; r < rounds(len); r++) {
		double t0 = now();
		int fd = create(k, len);
		char *p = map(fd, len, PROT_READ | PROT_WRITE);

		touch(p, len, 1);
		t[r] = now() - t0;
		munmap(p, len);
		close(fd);
	}
	return median(t, rounds(len));
}

/* make, size, fill, seal, name; then unname and free */
static double bench_publish(enum kind k, size_t len)
{
	struct npushm_seal seal = { .seals = NPUSHM_SEAL_WRITE };
	double t[ROUNDS];
	int r;

	for (r = 0; r < rounds(len); r++) {
		double t0 = now();
		int fd = create(k, len);
		char *p = map(fd, len, PROT_READ | PROT_WRITE);

		touch(p, len, 1);
		munmap(p, len);
		if (k == NPUSHM) {
			if (ioctl(fd, NPUSHM_IOC_SEAL, &seal))
				die("NPUSHM_IOC_SEAL");
			link_fd(fd, np_root, "bench.published");
		} else if (k == MEMFD) {
			if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW))
				die("F_ADD_SEALS");
		} else {
			if (fchmod(fd, 0444))
				die("fchmod");
			link_fd(fd, shm_root, "npushm-bench.published");
		}
		t[r] = now() - t0;
		close(fd);
		if (k == NPUSHM)
			unlinkat(np_root, "bench.published", 0);
		if (k == SHM)
			unlinkat(shm_root, "npushm-bench.published", 0);
	}
	return median(t, rounds(len));
}

/* open an existing region by name + map; read every page if @reread */
static double bench_attach(enum kind k, size_t len, int reread)
{
	char path[64];
	double t[ROUNDS];
	int owner, r;
	char *p;

	owner = create(k, len);
	p = map(owner, len, PROT_READ | PROT_WRITE);
	touch(p, len, 1);
	munmap(p, len);
	if (k == NPUSHM)
		link_fd(owner, np_root, "bench.attach");
	else if (k == SHM)
		link_fd(owner, shm_root, "npushm-bench.attach");
	else
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)getpid(), owner);
	for (r = 0; r < rounds(len); r++) {
		double t0 = now();
		int fd = k == NPUSHM ? openat(np_root, "bench.attach", O_RDONLY | O_CLOEXEC) :
			 k == SHM ? shm_open("/npushm-bench.attach", O_RDONLY, 0) :
			 open(path, O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			die("open by name");
		p = map(fd, len, PROT_READ);
		if (reread)
			touch(p, len, 0);
		t[r] = now() - t0;
		munmap(p, len);
		close(fd);
	}
	if (k == NPUSHM)
		unlinkat(np_root, "bench.attach", 0);
	if (k == SHM)
		unlinkat(shm_root, "npushm-bench.attach", 0);
	close(owner);
	return median(t, rounds(len));
}

struct result {
	double v[KINDS][RUNS];
};

static double mid(const double *v)
{
	double c[RUNS];

	memcpy(c, v, sizeof(c));
	return median(c, RUNS);
}

static void range(char *buf, size_t n, const double *v)
{
	double lo = v[0], hi = v[0];
	int i;

	for (i = 1; i < RUNS; i++) {
		lo = v[i] < lo ? v[i] : lo;
		hi = v[i] > hi ? v[i] : hi;
	}
	if (hi >= 1e-3)
		snprintf(buf, n, "%.0f-%.0f", lo * 1e6, hi * 1e6);
	else
		snprintf(buf, n, "%.1f-%.1f", lo * 1e6, hi * 1e6);
}

static void row(const char *what, size_t len, const struct result *res)
{
	char size[32], r[KINDS][48];
	int k;

	if (len >= 1 << 30)
		snprintf(size, sizeof(size), "%zu GiB", len >> 30);
	else if (len >= 1 << 20)
		snprintf(size, sizeof(size), "%zu MiB", len >> 20);
	else
		snprintf(size, sizeof(size), "%zu KiB", len >> 10);
	for (k = 0; k < KINDS; k++)
		range(r[k], sizeof(r[k]), res->v[k]);
	printf("| %-26s | %6s | %19s | %19s | %19s | %6.2f | %6.2f |\n", what, size, r[NPUSHM],
	       r[MEMFD], r[SHM], mid(res->v[NPUSHM]) / mid(res->v[MEMFD]),
	       mid(res->v[NPUSHM]) / mid(res->v[SHM]));
}

/* Median over RUNS of @fn's medians on the instance at @dir. */
static double on_instance(const char *dir, double (*fn)(enum kind, size_t), size_t len)
{
	double v[RUNS];
	int run;

	np_root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (np_root < 0)
		die(dir);
	for (run = 0; run < RUNS; run++)
		v[run] = fn(NPUSHM, len);
	close(np_root);
	return median(v, RUNS);
}

static double attach_only(enum kind k, size_t len)
{
	return bench_attach(k, len, 0);
}

/* --providers DIR LABEL...: make + map + touch and open + map per provider. */
static int providers(int n, char **args)
{
	static const size_t sizes[] = { 4096, 2 << 20, 32 << 20 };
	double base[2][3], v;
	int i, j, op;

	printf("Medians over %d runs of the median of %d rounds, in microseconds; ratio to %s.\n\n",
	       RUNS, ROUNDS, args[1]);
	printf("| operation                  |   size | provider | us       | ratio |\n");
	printf("|----------------------------|-------:|----------|---------:|------:|\n");
	for (op = 0; op < 2; op++) {
		for (i = 0; i < 3; i++) {
			for (j = 0; j + 1 < n; j += 2) {
				v = on_instance(args[j], op ? attach_only : bench_create, sizes[i]);
				if (!j)
					base[op][i] = v;
				printf("| %-26s | %3zu %s | %-8s | %8.1f | %5.2f |\n",
				       op ? "open by name + map" : "make + map + first touch",
				       sizes[i] >= 1 << 20 ? sizes[i] >> 20 : sizes[i] >> 10,
				       sizes[i] >= 1 << 20 ? "MiB" : "KiB", args[j + 1], v * 1e6,
				       v / base[op][i]);
			}
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 4096, 1 << 20, 64 << 20, 1UL << 30 };
	static struct result create_r[4], attach_r[4], reread_r[4], publish_r[4];
	enum { N = sizeof(sizes) / sizeof(sizes[0]) };
	double a4k, a1g, amfd;
	struct statfs sfs;
	int run, i, k;

	if (argc > 1 && !strcmp(argv[1], "--help")) {
		printf("usage: npushm-bench-kmod [DIR]\n"
		       "       npushm-bench-kmod --providers DIR NAME [DIR NAME...]\n"
		       "Times creating, attaching, rereading and publishing npushm regions of\n"
		       "4 KiB to 1 GiB against memfd and POSIX shm (/dev/shm), %d runs, and prints\n"
		       "a Markdown table. DIR is a mounted npushm instance (default /run/npushm);\n"
		       "make bench-kmod runs it in the test VM with the module loaded.\n"
		       "--providers: make + map + touch and open + map on each instance DIR (of\n"
		       "any provider, labelled NAME), as ratios to the first; make\n"
		       "bench-kmod-providers runs it on sysmem, node:1 and a PCI BAR in the VM.\n"
		       "Exit status: 0 table printed, 1 DIR is not an npushm instance or a call failed.\n",
		       RUNS);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--version")) {
		printf("npushm-bench-kmod (npushm) %s\n", NPUSHM_VERSION);
		return 0;
	}
	if (argc > 3 && !strcmp(argv[1], "--providers"))
		return providers(argc - 2, argv + 2);
	if (argc > 1)
		np_dir = argv[1];
	np_root = open(np_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (np_root < 0 || fstatfs(np_root, &sfs) || sfs.f_type != NPUSHM_FS_MAGIC) {
		fprintf(stderr, "npushm-bench-kmod: %s is not a mounted npushm instance (mount -t npushm npushm %s)\n",
			np_dir, np_dir);
		return 1;
	}
	shm_root = open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (shm_root < 0)
		die("/dev/shm");
	for (run = 0; run < RUNS; run++) {
		for (i = 0; i < N; i++) {
			for (k = 0; k < KINDS; k++) {
				create_r[i].v[k][run] = bench_create(k, sizes[i]);
				attach_r[i].v[k][run] = bench_attach(k, sizes[i], 0);
				publish_r[i].v[k][run] = bench_publish(k, sizes[i]);
				if (sizes[i] == 1UL << 30)
					reread_r[i].v[k][run] = bench_attach(k, sizes[i], 1);
			}
		}
		fprintf(stderr, "# run %d of %d done\n", run + 1, RUNS);
	}
	printf("Ranges over %d runs of the median of %d rounds (3 at 1 GiB), in microseconds;\n"
	       "ratios of the median of medians.\n\n", RUNS, ROUNDS);
	printf("| operation                  |   size | npushm us           | memfd us            | shm us              | /memfd | /shm   |\n");
	printf("|----------------------------|-------:|--------------------:|--------------------:|--------------------:|-------:|-------:|\n");
	for (i = 0; i < N; i++)
		row("make + map + first touch", sizes[i], &create_r[i]);
	for (i = 0; i < N; i++)
		row("open by name + map", sizes[i], &attach_r[i]);
	row("open + map + read all", sizes[N - 1], &reread_r[N - 1]);
	for (i = 0; i < N; i++)
		row("publish (fill, seal, name)", sizes[i], &publish_r[i]);
	a4k = mid(attach_r[0].v[NPUSHM]);
	a1g = mid(attach_r[N - 1].v[NPUSHM]);
	amfd = mid(attach_r[N - 1].v[MEMFD]);
	printf("\n| target | result | verdict |\n|---|---|---|\n");
	printf("| open by name + map O(1) in size: 1 GiB within 2x of 4 KiB | %.2fx | %s |\n",
	       a1g / a4k, a1g / a4k <= 2 ? "met" : "NOT met");
	printf("| open by name + map within 2x of memfd (1 GiB) | %.2fx | %s |\n", a1g / amfd,
	       a1g / amfd <= 2 ? "met" : "NOT met");
	printf("| open by name + map within 2x of memfd (4 KiB) | %.2fx | %s |\n",
	       a4k / mid(attach_r[0].v[MEMFD]), a4k / mid(attach_r[0].v[MEMFD]) <= 2 ? "met" : "NOT met");
	return 0;
}
