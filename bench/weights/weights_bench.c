/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * weights_bench.c - the shared-weights benchmark (bench/weights/run.sh runs it).
 *
 * 1. Memory: N = 1, 2, 4, 8, 16 workers each touch every page of a model of
 *    at least 512 MiB, in three ways run back to back:
 *      npushm   attach the published model (one shared copy)
 *      private  read the file into private memory (what each process does today)
 *      mmap     mmap the file read-only (shares the page cache)
 *    and we report the workers' total PSS (smaps_rollup) and the system-wide
 *    Shmem and AnonPages deltas from before the model was loaded, against
 *    the target 1.02 x model + 8 MiB per worker.
 * 2. Attach + map latency (npushm_model_attach + detach) vs model size:
 *    median and p99 of many repetitions, target <= 1 ms.
 * 3. Load throughput vs `cat FILE > /dev/null`, both on a warm page cache,
 *    target >= 80 %; on the posix backend for /dev/shm as mounted (4 KiB
 *    pages, the loader writes with pwrite) and, as root, for a tmpfs with
 *    huge pages mounted by the benchmark (the loader reads straight into a
 *    mapping); with floors for context: the fresh memory alone (a tmpfs
 *    file of the same size allocated by fallocate; on huge pages, faulted in
 *    on the loader's threads) and, on huge pages, the copy alone (the file
 *    read into a fresh mapping on the loader's threads, without the hash).
 *
 *   npushm-bench-weights [--dir DIR] [--size MiB] [--max-workers N] [--quick]
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "npushm.h"
#include "memstat.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void die(const char *what)
{
	fprintf(stderr, "npushm-bench-weights: %s: %s\n", what, npushm_last_error()[0] ? npushm_last_error() : strerror(errno));
	exit(1);
}

/* A model of @mib MiB: 64 F32 tensors of random bytes. */
static void write_model(const char *path, uint64_t mib)
{
	uint64_t total = mib << 20, per = total / 64, off = 0, s = 12345, hl;
	char *hdr = malloc(64 * 128 + 64);
	uint64_t *buf = malloc(1 << 20);
	size_t o = 0;
	FILE *f = fopen(path, "wb");

	if (!hdr || !buf || !f)
		die(path);
	per &= ~4095ULL;
	o += (size_t)sprintf(hdr + o, "{");
	for (int i = 0; i < 64; i++) {
		o += (size_t)sprintf(hdr + o, "%s\"w%02d\":{\"dtype\":\"F32\",\"shape\":[%llu,1024],\"data_offsets\":[%llu,%llu]}",
				     i ? "," : "", i, (unsigned long long)(per / 4096), (unsigned long long)off,
				     (unsigned long long)(off + per));
		off += per;
	}
	o += (size_t)sprintf(hdr + o, "}");
	while (o % 8)
		hdr[o++] = ' ';
	hl = o;
	fwrite(&hl, 8, 1, f);
	fwrite(hdr, 1, o, f);
	for (uint64_t done = 0; done < off; done += 1 << 20) {
		size_t n = off - done < (1 << 20) ? (size_t)(off - done) : (1 << 20);

		for (size_t i = 0; i < n / 8; i++) {
			s ^= s << 13;
			s ^= s >> 7;
			s ^= s << 17;
			buf[i] = s;
		}
		fwrite(buf, 1, n, f);
	}
	if (fclose(f))
		die(path);
	free(hdr);
	free(buf);
}

static void warm(const char *path)
{
	char *buf = malloc(1 << 20);
	int fd = open(path, O_RDONLY);

	while (fd >= 0 && read(fd, buf, 1 << 20) > 0)
		;
	close(fd);
	free(buf);
}

static uint64_t touch(const volatile unsigned char *p, uint64_t n)
{
	uint64_t s = 0;

	for (uint64_t i = 0; i < n; i += 4096)
		s += p[i];
	return s;
}

enum mode { MODE_NPUSHM, MODE_PRIVATE, MODE_MMAP };
static const char *const mode_name[] = { "npushm", "private", "mmap" };

/* Worker body: get the bytes its way, touch all, report, wait. */
static int worker(enum mode mode, const char *name, const char *path, uint64_t size, int up, int down)
{
	uint64_t sum = 0;
	char c = 'r';

	if (mode == MODE_NPUSHM) {
		npushm_model_t *m;

		if (npushm_model_attach(name, &m))
			return 1;
		for (size_t i = 0; i < npushm_model_tensor_count(m); i++) {
			npushm_tensor_t t;

			npushm_model_tensor_at(m, i, &t);
			sum += touch(t.data, t.nbytes);
		}
	} else if (mode == MODE_PRIVATE) {
		unsigned char *p = malloc(size);
		int fd = open(path, O_RDONLY);
		uint64_t got = 0;
		ssize_t n;

		if (!p || fd < 0)
			return 1;
		while (got < size && (n = read(fd, p + got, size - got > (8 << 20) ? (8 << 20) : size - got)) > 0)
			got += (uint64_t)n;
		close(fd);
		sum = touch(p, got);
	} else {
		int fd = open(path, O_RDONLY);
		unsigned char *p = fd >= 0 ? mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;

		if (p == MAP_FAILED)
			return 1;
		close(fd);
		sum = touch(p, size);
	}
	(void)sum;
	if (write(up, &c, 1) != 1 || read(down, &c, 1) < 0)
		return 1;
	return 0;
}

struct mem_result {
	long pss_kb, shmem_kb, anon_kb, cached_kb;
};

static void run_mode(enum mode mode, int n, const char *name, const char *path, uint64_t size,
		     npushm_dev_t *dev, struct mem_result *r)
{
	struct memstat_sys s0, s1;
	npushm_dev_info_t di0 = { 0 }, di1 = { 0 };
	pid_t pids[64];
	int up[2], down[2];
	char c;

	sync();
	memstat_sys(&s0);
	npushm_dev_query(dev, &di0);
	if (mode == MODE_NPUSHM) {
		npushm_load_opts_t lo = { .mode = 0644, .flags = NPUSHM_LOAD_NO_DEDUP };

		npushm_model_remove(dev, name);
		if (npushm_model_load(dev, path, name, &lo, NULL))
			die("load");
	}
	if (pipe(up) || pipe(down))
		die("pipe");
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			close(up[0]);
			close(down[1]);
			_exit(worker(mode, name, path, size, up[1], down[0]));
		}
	}
	close(up[1]);
	close(down[0]);
	for (int i = 0; i < n; i++)
		if (read(up[0], &c, 1) != 1)
			die("a worker failed");
	r->pss_kb = 0;
	for (int i = 0; i < n; i++) {
		struct memstat_proc p;

		if (memstat_proc(pids[i], &p))
			r->pss_kb += p.pss_kb;
	}
	memstat_sys(&s1);
	r->shmem_kb = s1.shmem_kb - s0.shmem_kb;
	r->anon_kb = s1.anon_kb - s0.anon_kb;
	r->cached_kb = s1.cached_kb - s0.cached_kb;
	/* On kmod the model lives in the module's pool: add the pool's growth to "shmem". */
	if (npushm_dev_backend(dev) == NPUSHM_BACKEND_KMOD) {
		npushm_dev_query(dev, &di1);
		r->shmem_kb += (long)((int64_t)(di1.in_use - di0.in_use) >> 10);
	}
	close(down[1]);
	for (int i = 0; i < n; i++)
		waitpid(pids[i], NULL, 0);
	close(up[0]);
	if (mode == MODE_NPUSHM)
		npushm_model_remove(dev, name);
}

static void bench_memory(const char *path, uint64_t size, int max_workers, npushm_dev_t *dev)
{
	static const int ns[] = { 1, 2, 4, 8, 16 };
	double model_mib = (double)size / 1048576.0;
	bool all_met = true;

	printf("\n## 1. Memory: N workers touch every page of a %.0f MiB model\n\n", model_mib);
	printf("Target for npushm: total <= 1.02 x model + 8 MiB x N, judged on the workers' total PSS and\n");
	printf("on the system-wide Shmem delta (plus the pool's growth on kmod), in MiB, from before the load.\n");
	printf("AnonPages and Cached deltas are shown too; on a shared machine they also move with\n");
	printf("everything else that runs (tmpfs pages count in both Shmem and Cached).\n\n");
	printf("| N | mode | total PSS | Shmem d | AnonPages d | Cached d | PSS / model | target (MiB) | met |\n");
	printf("|---:|---|---:|---:|---:|---:|---:|---:|---|\n");
	for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]) && ns[k] <= max_workers; k++) {
		for (int mode = MODE_NPUSHM; mode <= MODE_MMAP; mode++) {
			struct mem_result r;
			double target = 1.02 * model_mib + 8.0 * ns[k], total;
			const char *met = "";

			run_mode((enum mode)mode, ns[k], "bench-weights", path, size, dev, &r);
			total = (double)r.pss_kb / 1024.0;
			if (mode == MODE_NPUSHM) {
				bool ok = total <= target && (double)r.shmem_kb / 1024.0 <= target;

				met = ok ? "yes" : "NO";
				all_met &= ok;
			}
			printf("| %d | %s | %.1f | %.1f | %.1f | %.1f | %.2f | %.0f | %s |\n", ns[k],
			       mode_name[mode], total, (double)r.shmem_kb / 1024.0, (double)r.anon_kb / 1024.0,
			       (double)r.cached_kb / 1024.0, total / model_mib,
			       mode == MODE_NPUSHM ? target : NAN, met);
			fflush(stdout);
		}
	}
	printf("\nmemory target (npushm: PSS and Shmem delta, every N): %s\n",
	       all_met ? "MET" : "NOT MET");
}

static const char *attach_sizes = "1,16,128,512,1024";

static void bench_attach(const char *dir, npushm_dev_t *dev, bool quick)
{
	uint64_t mib[16];
	size_t nsizes = 0;
	bool all_met = true, all_p99 = true;

	for (const char *p = attach_sizes; *p && nsizes < 16; p += strcspn(p, ",") + (p[strcspn(p, ",")] ? 1 : 0))
		mib[nsizes++] = strtoull(p, NULL, 10);

	printf("\n## 2. Attach + map latency vs model size (npushm_model_attach + npushm_model_detach)\n\n");
	printf("| model | tensors | reps | median (us) | p99 (us) | max (us) | median <= 1 ms |\n");
	printf("|---:|---:|---:|---:|---:|---:|---|\n");
	for (size_t k = 0; k < nsizes; k++) {
		char path[4096];
		int reps = quick ? 200 : 1000;
		double *t = malloc(sizeof(double) * (size_t)reps);
		npushm_load_opts_t lo = { .mode = 0644 };
		bool ok;

		snprintf(path, sizeof(path), "%s/attach-%llu.safetensors", dir, (unsigned long long)mib[k]);
		write_model(path, mib[k]);
		npushm_model_remove(dev, "bench-attach");
		if (npushm_model_load(dev, path, "bench-attach", &lo, NULL))
			die("load");
		for (int i = 0; i < reps; i++) {
			npushm_model_t *m;
			double t0 = now();

			if (npushm_model_attach_dev(dev, "bench-attach", &m))
				die("attach");
			npushm_model_detach(m);
			t[i] = (now() - t0) * 1e6;
		}
		qsort(t, (size_t)reps, sizeof(double), cmp_double);
		ok = t[reps / 2] <= 1000.0;
		all_met &= ok;
		all_p99 &= t[reps * 99 / 100] <= 1000.0;
		printf("| %llu MiB | 64 | %d | %.1f | %.1f | %.1f | %s |\n", (unsigned long long)mib[k], reps,
		       t[reps / 2], t[reps * 99 / 100], t[reps - 1], ok ? "yes" : "NO");
		fflush(stdout);
		npushm_model_remove(dev, "bench-attach");
		unlink(path);
		free(t);
	}
	printf("\nattach target (median <= 1 ms at every size): %s; p99 <= 1 ms at every size: %s\n",
	       all_met ? "MET" : "NOT MET", all_p99 ? "yes" : "no (see the load: preemption on a shared machine)");
}

static double time_cat(const char *path)
{
	double t0 = now();
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		dup2(fd, 1);
		execl("/bin/cat", "cat", path, (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	return now() - t0;
}

/* Fresh tmpfs memory alone: fallocate @size bytes of an unnamed file in @dir. */
static double time_alloc_floor(const char *dir, uint64_t size)
{
	int fd = open(dir, O_TMPFILE | O_RDWR, 0600);
	double t0 = now(), t;

	if (fd < 0 || fallocate(fd, 0, 0, (off_t)size))
		return NAN;
	t = now() - t0;
	close(fd);
	return t;
}

/*
 * The floors of a load into the huge-page tmpfs @dir, on as many threads as
 * the loader uses (one per core, up to 4): each thread claims 8 MiB blocks
 * of a fresh @size-byte mapping and either faults them in (@src < 0: the
 * kernel zeroes each 2 MiB page) or read(2)s the file @src into them in
 * 256 KiB pieces, as the loader does, but without hashing.
 */
struct floor_job {
	uint8_t *map;
	int src;
	uint64_t size;
	atomic_uint_fast64_t next;
};

static void *floor_worker(void *arg)
{
	struct floor_job *j = arg;
	const uint64_t block = 8 << 20, piece = 256 << 10;
	uint64_t b;

	while ((b = atomic_fetch_add(&j->next, 1)) * block < j->size) {
		uint64_t end = (b + 1) * block < j->size ? (b + 1) * block : j->size;

		if (j->src < 0) {
			if (madvise(j->map + b * block, end - b * block, MADV_POPULATE_WRITE))
				die("MADV_POPULATE_WRITE");
			continue;
		}
		for (uint64_t pos = b * block; pos < end; pos += piece) {
			size_t n = (size_t)(end - pos < piece ? end - pos : piece);

			if (pread(j->src, j->map + pos, n, (off_t)pos) != (ssize_t)n)
				die("read the model file");
		}
	}
	return NULL;
}

static double time_floor(const char *dir, const char *path, uint64_t size, bool copy)
{
	struct floor_job j = { .size = size, .src = -1 };
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int n = cpus < 1 ? 1 : cpus > 4 ? 4 : (int)cpus;
	int fd = open(dir, O_TMPFILE | O_RDWR, 0600);
	pthread_t t[4];
	double t0 = now(), dt;

	if (copy && (j.src = open(path, O_RDONLY)) < 0)
		die("open the model file");
	if (fd < 0 || fallocate(fd, 0, 0, (off_t)size))
		die("allocate the floor file");
	j.map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (j.map == MAP_FAILED)
		die("map the floor file");
	for (int i = 1; i < n; i++)
		if (pthread_create(&t[i], NULL, floor_worker, &j))
			die("start a floor thread");
	floor_worker(&j);
	for (int i = 1; i < n; i++)
		pthread_join(t[i], NULL);
	munmap(j.map, size);
	close(fd);
	dt = now() - t0;
	if (j.src >= 0)
		close(j.src);
	return dt;
}

/*
 * A tmpfs with huge pages (huge=within_size), mounted on a new directory in
 * a mount namespace of this process only (root only): where the posix
 * backend loads through a mapping. NULL, with the reason in @why, if none.
 */
static char huge_dir[64];

static const char *mount_huge_tmpfs(uint64_t size, char *why, size_t why_len)
{
	char opts[64];

	if (geteuid()) {
		snprintf(why, why_len, "mounting a tmpfs needs root");
		return NULL;
	}
	snprintf(huge_dir, sizeof(huge_dir), "/tmp/npushm-bench-huge.XXXXXX");
	snprintf(opts, sizeof(opts), "huge=within_size,size=%lluk", (unsigned long long)(size * 3 / 1024 + 65536));
	if (!mkdtemp(huge_dir) || unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("npushm-bench", huge_dir, "tmpfs", MS_NOSUID | MS_NODEV, opts)) {
		snprintf(why, why_len, "cannot mount a tmpfs with %s on %s: %s", opts, huge_dir, strerror(errno));
		rmdir(huge_dir);
		return NULL;
	}
	return huge_dir;
}

static void unmount_huge_tmpfs(void)
{
	umount(huge_dir);
	rmdir(huge_dir);
}

struct load_config {
	const char *what;		/* table row */
	const char *shm_dir;		/* posix: its tmpfs directory; kmod: NULL */
	npushm_dev_t *dev;
	double cold, load[16], floor_s[16], zero_s[16], copy_s[16];
};

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return v[n / 2];
}

static double time_load(struct load_config *c, const char *path)
{
	npushm_load_opts_t lo = { .mode = 0644, .flags = NPUSHM_LOAD_NO_DEDUP };
	double t0, t;

	npushm_model_remove(c->dev, "bench-load");
	t0 = now();
	if (npushm_model_load(c->dev, path, "bench-load", &lo, NULL))
		die("load");
	t = now() - t0;
	npushm_model_remove(c->dev, "bench-load");
	return t;
}

/*
 * Per configuration: one load into cold memory (after a pause longer than
 * the guest's 2 s free-page-reporting delay, so the memory freed before it
 * has gone back to the hypervisor), then @reps back to back, each after a
 * `cat` (the memory the previous load freed is still resident).
 */
static void bench_load(const char *path, uint64_t size, npushm_dev_t *dev, int reps)
{
	struct load_config cfg[2] = { 0 };
	double cat[32], cat_s;
	const char *hdir = NULL;
	char why[256] = "";
	int ncfg = 1, ncat = 0;

	cfg[0].dev = dev;
	if (npushm_dev_backend(dev) == NPUSHM_BACKEND_KMOD) {
		cfg[0].what = "kmod backend";
	} else {
		cfg[0].shm_dir = getenv("NPUSHM_SHM_DIR") ? getenv("NPUSHM_SHM_DIR") : "/dev/shm";
		cfg[0].what = "posix, tmpfs with 4 KiB pages (/dev/shm as mounted)";
		hdir = mount_huge_tmpfs(size, why, sizeof(why));
	}
	if (hdir) {
		const char *old = getenv("NPUSHM_SHM_DIR");
		char *saved = old ? strdup(old) : NULL;

		setenv("NPUSHM_SHM_DIR", hdir, 1);
		if (npushm_dev_open(NPUSHM_BACKEND_POSIX, &cfg[1].dev))
			die("open the posix backend on the huge-page tmpfs");
		if (saved)
			setenv("NPUSHM_SHM_DIR", saved, 1);
		else
			unsetenv("NPUSHM_SHM_DIR");
		free(saved);
		cfg[1].shm_dir = hdir;
		cfg[1].what = "posix, tmpfs with huge pages (huge=within_size)";
		ncfg = 2;
	}

	warm(path);
	for (int k = 0; k < ncfg; k++) {
		sleep(3);
		cfg[k].cold = time_load(&cfg[k], path);
		for (int i = 0; i < reps; i++) {
			cat[ncat++] = time_cat(path);
			cfg[k].load[i] = time_load(&cfg[k], path);
		}
		/* Apart from the loads: it would hand them other memory than the last load freed. */
		for (int i = 0; i < reps; i++)
			cfg[k].floor_s[i] = time_alloc_floor(cfg[k].shm_dir ? cfg[k].shm_dir : "/dev/shm", size);
		for (int i = 0; k == 1 && i < reps; i++) {
			cfg[k].zero_s[i] = time_floor(hdir, path, size, false);
			cfg[k].copy_s[i] = time_floor(hdir, path, size, true);
		}
	}
	cat_s = median(cat, ncat);
	printf("\n## 3. Load throughput vs cat, warm page cache\n\n");
	printf("`cat`: median of %d runs, one before each load. Back to back: median of %d loads, each into\n"
	       "memory the previous one freed. Cold: one load after a 3 s pause, into memory the guest has\n"
	       "handed back to the hypervisor (free page reporting), as after an idle period.\n\n", ncat, reps);
	printf("| what | back to back (s) | GB/s | vs cat | cold (s) | vs cat |\n|---|---:|---:|---:|---:|---:|\n");
	printf("| `cat FILE > /dev/null` | %.3f | %.2f | 100%% | | |\n", cat_s, (double)size / cat_s / 1e9);
	for (int k = 0; k < ncfg; k++) {
		double l = median(cfg[k].load, reps);

		printf("| npushm load, %s | %.3f | %.2f | %.0f%% | %.3f | %.0f%% |\n", cfg[k].what, l,
		       (double)size / l / 1e9, 100 * cat_s / l, cfg[k].cold, 100 * cat_s / cfg[k].cold);
	}
	{
		double f = median(cfg[0].floor_s, reps);

		printf("| fresh memory alone: fallocate in %s | %.3f | %.2f | %.0f%% | | |\n",
		       cfg[0].shm_dir ? cfg[0].shm_dir : "/dev/shm", f, (double)size / f / 1e9, 100 * cat_s / f);
	}
	if (ncfg == 2) {
		double z = median(cfg[1].zero_s, reps), c = median(cfg[1].copy_s, reps);

		printf("| huge pages, fresh memory alone: faulted in on the loader's threads | %.3f | %.2f | %.0f%% | | |\n",
		       z, (double)size / z / 1e9, 100 * cat_s / z);
		printf("| huge pages, copy alone: read(2) into a fresh mapping on the loader's threads, no hash | %.3f | %.2f | %.0f%% | | |\n",
		       c, (double)size / c / 1e9, 100 * cat_s / c);
	}
	printf("\n");
	for (int k = 0; k < ncfg; k++) {
		double ratio = cat_s / median(cfg[k].load, reps);

		printf("load target (>= 80%% of cat), %s: back to back %s (%.0f%%), cold %.0f%%\n", cfg[k].what,
		       ratio >= 0.8 ? "MET" : "NOT MET", 100 * ratio, 100 * cat_s / cfg[k].cold);
	}
	if (why[0])
		printf("(no huge-page tmpfs row: %s)\n", why);
	if (hdir) {
		npushm_dev_close(cfg[1].dev);
		unmount_huge_tmpfs();
	}
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "dir", required_argument, NULL, 'd' }, { "size", required_argument, NULL, 's' },
		{ "max-workers", required_argument, NULL, 'w' }, { "quick", no_argument, NULL, 'q' },
		{ "only", required_argument, NULL, 'o' }, { "attach-sizes", required_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' }, { "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dir = "/tmp";
	uint64_t mib = 576;
	int max_workers = 16, c;
	bool quick = false;
	const char *only = NULL;
	char path[4096];
	npushm_dev_t *dev;
	struct stat sb;

	while ((c = getopt_long(argc, argv, "d:s:w:q", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 's': mib = strtoull(optarg, NULL, 10); break;
		case 'w': max_workers = atoi(optarg); break;
		case 'q': quick = true; break;
		case 'o': only = optarg; break;
		case 'a': attach_sizes = optarg; break;
		case 'V': printf("npushm-bench-weights (npushm) %s\n", NPUSHM_VERSION); return 0;
		case 'h':
		default:
			fprintf(c == 'h' ? stdout : stderr,
				"usage: npushm-bench-weights [--dir DIR] [--size MiB] [--max-workers N] [--quick]\n"
				"                            [--only load|attach|memory] [--attach-sizes 1,16,...]\n"
				"N workers sharing one model vs private copies and file mmap (bench/weights).\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (npushm_dev_open(NPUSHM_BACKEND_AUTO, &dev))
		die("open");
	snprintf(path, sizeof(path), "%s/bench-weights-%llu.safetensors", dir, (unsigned long long)mib);
	if (stat(path, &sb))
		write_model(path, mib);
	stat(path, &sb);
	warm(path);
	printf("# npushm shared-weights benchmark: backend %s, model %.0f MiB (%lld bytes, 64 F32 tensors)\n",
	       npushm_backend_name(npushm_dev_backend(dev)), (double)sb.st_size / 1048576.0, (long long)sb.st_size);
	if (!only || !strcmp(only, "load"))
		bench_load(path, (uint64_t)sb.st_size, dev, quick ? 3 : 5);
	if (!only || !strcmp(only, "attach"))
		bench_attach(dir, dev, quick);
	if (!only || !strcmp(only, "memory"))
		bench_memory(path, (uint64_t)sb.st_size, max_workers, dev);
	unlink(path);
	npushm_dev_close(dev);
	return 0;
}
