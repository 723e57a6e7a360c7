/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * demo.c - the shared-weights demo (make demo): write a deterministic
 * BERT-base-shaped safetensors file, load it once into shared memory, start
 * N worker processes that attach it by name and read every tensor, then
 * print what each worker costs (RSS and PSS from /proc/PID/smaps_rollup),
 * the host memory actually used (system-wide Shmem + AnonPages deltas, plus
 * the module's pool on kmod) and what N private copies would have cost.
 *
 *   npushm-demo [--model PATH] [--name NAME] [--workers N] [--generate-only] [--keep]
 *
 * The backend comes from NPUSHM_BACKEND (posix when the module is absent).
 * The model file is kept for the next run; the published model is removed
 * at the end unless --keep.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "npushm.h"
#include "bert_model.h"
#include "memstat.h"

#define MAX_WORKERS 64

struct report {
	double checksum;
	double attach_ms;
	double read_ms;
	uint64_t bytes;
	int tensors;
	int status;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void progress(void *arg, npushm_load_stage_t stage, uint64_t done, uint64_t total)
{
	static double last;
	double t = now();

	(void)arg;
	if (stage != NPUSHM_LOAD_COPY || (done < total && t - last < 0.1))
		return;
	last = t;
	fprintf(stderr, "\r  loading: %3d%% (%llu of %llu MiB)", total ? (int)(100.0 * (double)done / (double)total) : 100,
		(unsigned long long)(done >> 20), (unsigned long long)(total >> 20));
	if (done == total)
		fprintf(stderr, "\r%60s\r", "");
}

/* Posix: the pages the region's tmpfs file really holds. */
static long region_resident_kb(npushm_dev_t *dev, const char *name)
{
	npushm_region_t *r;
	struct stat sb;
	long kb = 0;

	if (npushm_region_open(dev, name, 0, &r) != NPUSHM_OK)
		return 0;
	if (fstat(npushm_region_fd(r), &sb) == 0)
		kb = (long)(sb.st_blocks / 2);
	npushm_region_close(r);
	return kb;
}

/* A worker: attach, read every tensor, report, wait to be measured. */
static int worker(const char *name, int wfd, int rfd)
{
	struct report rep = { 0 };
	npushm_model_t *m;
	double t0, t1;
	char c;

	t0 = now();
	rep.status = npushm_model_attach(name, &m);
	t1 = now();
	rep.attach_ms = (t1 - t0) * 1e3;
	if (rep.status == NPUSHM_OK) {
		size_t n = npushm_model_tensor_count(m);

		for (size_t i = 0; i < n; i++) {
			npushm_tensor_t t;
			const float *p;
			double s = 0;

			npushm_model_tensor_at(m, i, &t);
			p = t.data;
			for (uint64_t k = 0; k < t.nbytes / 4; k++)
				s += p[k];
			rep.checksum += s;
			rep.bytes += t.nbytes;
			rep.tensors++;
		}
		rep.read_ms = (now() - t1) * 1e3;
	} else {
		fprintf(stderr, "worker %d: %s\n", (int)getpid(), npushm_last_error());
	}
	if (write(wfd, &rep, sizeof(rep)) != (ssize_t)sizeof(rep))
		return 1;
	if (read(rfd, &c, 1) < 0)	/* the parent measures, then closes the pipe */
		return 1;
	npushm_model_detach(m);
	return rep.status == NPUSHM_OK ? 0 : 1;
}

static void usage(void)
{
	fprintf(stderr, "usage: npushm-demo [--model PATH] [--name NAME] [--workers N] [--generate-only] [--keep]\n");
}

/* The library's warnings (e.g. a tmpfs with small pages), printed after the load line. */
static char load_note[1024];

static void keep_warning(void *arg, npushm_log_level_t level, const char *msg)
{
	(void)arg;
	(void)level;
	if (!load_note[0])
		snprintf(load_note, sizeof(load_note), "%s", msg);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "model", required_argument, NULL, 'm' }, { "name", required_argument, NULL, 'n' },
		{ "workers", required_argument, NULL, 'w' }, { "generate-only", no_argument, NULL, 'g' },
		{ "keep", no_argument, NULL, 'k' }, { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	const char *model = "build/demo/bert-base.safetensors", *name = "demo-bert-base";
	int workers = 4, gen_only = 0, keep = 0, c, rc = 0;
	struct memstat_sys s0, s1;
	struct memstat_proc mp[MAX_WORKERS];
	struct report rep[MAX_WORKERS];
	pid_t pids[MAX_WORKERS];
	int up[2], down[2];
	npushm_dev_info_t di0, di1;
	npushm_load_opts_t lo = { .mode = 0644, .progress = progress };
	npushm_load_result_t res;
	npushm_dev_t *dev;
	npushm_status_t st;
	struct stat sb;
	double t0, load_s;
	char a[32], b[32], cbuf[32];
	long rss_sum = 0, pss_sum = 0, anon_sum = 0, used_kb, one_kb, pool_kb = 0, region_kb, sys_kb;
	double load1 = 0;

	while ((c = getopt_long(argc, argv, "m:n:w:gkh", longopts, NULL)) != -1) {
		switch (c) {
		case 'm': model = optarg; break;
		case 'n': name = optarg; break;
		case 'w': workers = atoi(optarg); break;
		case 'g': gen_only = 1; break;
		case 'k': keep = 1; break;
		default: usage(); return c == 'h' ? 0 : 2;
		}
	}
	if (workers < 1 || workers > MAX_WORKERS) {
		fprintf(stderr, "npushm-demo: --workers must be 1..%d\n", MAX_WORKERS);
		return 2;
	}
	if (stat(model, &sb) || (uint64_t)sb.st_size != bert_model_size()) {
		uint64_t bytes;
		int err;

		printf("writing %s (BERT-base shape: %d layers, hidden %d, %d heads, FFN %d, vocab %d; seed %d)...\n",
		       model, BERT_LAYERS, BERT_HIDDEN, BERT_HEADS, BERT_FFN, BERT_VOCAB, BERT_SEED);
		fflush(stdout);
		err = bert_model_write(model, &bytes);
		if (err) {
			fprintf(stderr, "npushm-demo: cannot write %s: %s\n", model, strerror(err));
			return 1;
		}
	}
	if (gen_only)
		return 0;

	st = npushm_dev_open(NPUSHM_BACKEND_AUTO, &dev);
	if (st) {
		fprintf(stderr, "npushm-demo: %s\n", npushm_last_error());
		return 1;
	}
	/* A previous run stopped half-way may have left the demo's model. */
	npushm_model_remove(dev, name);
	memstat_sys(&s0);
	npushm_dev_query(dev, &di0);
	lo.progress = isatty(STDERR_FILENO) ? progress : NULL;
	if (!getenv("NPUSHM_LOG"))
		npushm_log_set(keep_warning, NULL, NPUSHM_LOG_WARN);
	t0 = now();
	st = npushm_model_load(dev, model, name, &lo, &res);
	load_s = now() - t0;
	if (st) {
		fprintf(stderr, "npushm-demo: %s\n", npushm_last_error());
		npushm_dev_close(dev);
		return 1;
	}
	printf("\nnpushm demo: one BERT-base-shaped model (%zu tensors, %s), %d workers, backend %s\n",
	       res.tensor_count, memstat_mib((long)(res.source_size >> 10), a, sizeof(a)), workers,
	       npushm_backend_name(npushm_dev_backend(dev)));
	printf("loaded once in %.2f s (%.2f GB/s) as '%s', content hash %s\n", load_s,
	       (double)res.source_size / load_s / 1e9, name, res.hash_hex);
	if (load_note[0])
		printf("note: %s\n", load_note);
	printf("\n");

	if (pipe(up) || pipe(down)) {
		perror("pipe");
		return 1;
	}
	for (int i = 0; i < workers; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			close(up[0]);
			close(down[1]);
			_exit(worker(name, up[1], down[0]));
		}
	}
	close(up[1]);
	close(down[0]);
	for (int i = 0; i < workers; i++) {
		if (read(up[0], &rep[i], sizeof(rep[i])) != (ssize_t)sizeof(rep[i])) {
			fprintf(stderr, "npushm-demo: a worker died before reporting\n");
			rc = 1;
			rep[i].status = -1;
		}
	}
	/* Every worker is attached and has read everything: measure now. */
	for (int i = 0; i < workers; i++)
		memstat_proc(pids[i], &mp[i]);
	memstat_sys(&s1);
	npushm_dev_query(dev, &di1);
	if (npushm_dev_backend(dev) == NPUSHM_BACKEND_KMOD) {
		pool_kb = (long)((di1.in_use - di0.in_use) >> 10);
		region_kb = pool_kb;
	} else {
		region_kb = region_resident_kb(dev, name);
	}

	printf("%-7s %8s %10s %10s %16s %11s %11s\n", "worker", "pid", "attach", "read all", "checksum", "RSS", "PSS");
	for (int i = 0; i < workers; i++) {
		printf("%-7d %8d %7.3f ms %7.0f ms %16.6f %11s %11s\n", i + 1, (int)pids[i], rep[i].attach_ms,
		       rep[i].read_ms, rep[i].checksum, memstat_mib(mp[i].rss_kb, a, sizeof(a)),
		       memstat_mib(mp[i].pss_kb, b, sizeof(b)));
		rss_sum += mp[i].rss_kb;
		pss_sum += mp[i].pss_kb;
		anon_sum += mp[i].pss_anon_kb;
		if (rep[i].status || rep[i].checksum != rep[0].checksum || rep[i].bytes != rep[0].bytes)
			rc = 1;
	}
	printf("%-7s %8s %10s %10s %16s %11s %11s\n\n", "total", "", "", "", "", memstat_mib(rss_sum, a, sizeof(a)),
	       memstat_mib(pss_sum, b, sizeof(b)));
	one_kb = (long)(res.source_size >> 10);
	used_kb = region_kb + anon_sum;
	sys_kb = (s1.shmem_kb - s0.shmem_kb) + (s1.anon_kb - s0.anon_kb) + pool_kb;
	{
		FILE *f = fopen("/proc/loadavg", "re");

		if (f) {
			if (fscanf(f, "%lf", &load1) != 1)
				load1 = 0;
			fclose(f);
		}
	}
	printf("host memory actually used:   %s = %.2f x one copy (the shared region %s + the workers' private memory %s)\n",
	       memstat_mib(used_kb, a, sizeof(a)), (double)used_kb / (double)one_kb,
	       memstat_mib(region_kb, b, sizeof(b)), memstat_mib(anon_sum, cbuf, sizeof(cbuf)));
	printf("  system-wide deltas:        %s = %.2f x one copy (%s%+ld kB, AnonPages %+ld kB; load average %.2f:\n"
	       "                             everything else running on the machine counts here too)\n",
	       memstat_mib(sys_kb, a, sizeof(a)), (double)sys_kb / (double)one_kb,
	       pool_kb ? "npushm pool " : "Shmem ", pool_kb ? pool_kb : s1.shmem_kb - s0.shmem_kb,
	       s1.anon_kb - s0.anon_kb, load1);
	printf("%d private copies would cost: %s   (saved %s, %.0f%%)\n", workers,
	       memstat_mib(one_kb * workers, a, sizeof(a)), memstat_mib(one_kb * workers - used_kb, b, sizeof(b)),
	       100.0 * (double)(one_kb * workers - used_kb) / (double)(one_kb * workers));
	printf("%s\n", rc ? "FAILED: a worker failed or the checksums differ" :
	       "all workers read the same bytes (checksums agree)");

	close(down[1]);	/* let the workers go */
	for (int i = 0; i < workers; i++) {
		int status;

		waitpid(pids[i], &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			rc = 1;
	}
	if (!keep && npushm_model_remove(dev, name))
		fprintf(stderr, "npushm-demo: %s\n", npushm_last_error());
	npushm_dev_close(dev);
	return rc;
}
