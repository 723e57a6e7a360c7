/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * harness.c - runs the registered tests one forked child each and prints
 * TAP; implements the helpers of harness.h.
 *
 *   npushm-tests [-l] [SUBSTRING...]   run the tests whose names contain a
 *                                      SUBSTRING (all without), -l lists them
 * Exit status 1 if any test failed. Per test: a shared page collects failure
 * counts from the test and any process it forks; a scratch directory is
 * made before and removed after; the child is killed after 120 s.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include "harness.h"

#define MAX_TESTS 256
#define TEST_TIMEOUT 120

struct shared {
	atomic_int failures;
	char skip[512];
};

static struct {
	const char *name;
	th_fn fn;
} tests[MAX_TESTS];
static int ntests;
static struct shared *cur;
static char cur_tmpdir[256];
static char shm_base[256];

void th_register(const char *name, th_fn fn)
{
	if (ntests < MAX_TESTS) {
		tests[ntests].name = name;
		tests[ntests].fn = fn;
		ntests++;
	}
}

void th_diag(const char *fmt, ...)
{
	char buf[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	printf("# %s\n", buf);
	fflush(stdout);
}

void th_check_failed(const char *file, int line, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	th_diag("%s:%d: check failed: %s", strrchr(file, '/') ? strrchr(file, '/') + 1 : file, line, buf);
	if (cur)
		atomic_fetch_add(&cur->failures, 1);
}

void th_abort_test(void)
{
	fflush(stdout);
	_exit(1);
}

void th_skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (cur)
		vsnprintf(cur->skip, sizeof(cur->skip), fmt, ap);
	va_end(ap);
	fflush(stdout);
	_exit(0);
}

const char *th_status_name(npushm_status_t st)
{
	static const char *const names[] = {
		"OK", "INVALID", "NO_MEMORY", "NO_SPACE", "QUOTA", "NOT_FOUND", "EXISTS",
		"ACCESS", "SEALED", "BUSY", "NAME", "UNSUPPORTED", "NO_DEVICE", "IO", "FORMAT",
		"CORRUPT", "PROTOCOL", "SYSTEM",
	};

	return (unsigned)st < sizeof(names) / sizeof(names[0]) ? names[st] : "?";
}

bool th_check_status(const char *file, int line, const char *what, npushm_status_t got,
		     npushm_status_t want, const char *sub)
{
	const char *msg = npushm_last_error();

	if (got != want) {
		th_check_failed(file, line, "%s returned %s, expected %s (last error: %s)", what,
				th_status_name(got), th_status_name(want), msg);
		return false;
	}
	if (sub && !strstr(msg, sub)) {
		th_check_failed(file, line, "%s: message \"%s\" lacks \"%s\"", what, msg, sub);
		return false;
	}
	return true;
}

/* ---------------------------------------------------------------- helpers */

bool th_is_kmod(void)
{
	const char *b = getenv("NPUSHM_BACKEND");

	return b && !strcmp(b, "kmod");
}

bool th_is_root(void)
{
	return geteuid() == 0;
}

npushm_dev_t *th_dev(void)
{
	npushm_dev_t *dev = NULL;

	REQUIRE_OK(npushm_dev_open(NPUSHM_BACKEND_AUTO, &dev));
	REQUIRE(npushm_dev_backend(dev) == (th_is_kmod() ? NPUSHM_BACKEND_KMOD : NPUSHM_BACKEND_POSIX));
	return dev;
}

const char *th_name(const char *tag)
{
	static char names[16][128];
	static unsigned n;
	char *s = names[n % 16];

	snprintf(s, sizeof(names[0]), "t%d.%u.%s", (int)getpid(), n, tag);
	n++;
	return s;
}

uint64_t th_pool_used(npushm_dev_t *dev)
{
	npushm_dev_info_t di;
	struct statvfs sv;
	const char *dir = getenv("NPUSHM_SHM_DIR");

	if (th_is_kmod()) {
		REQUIRE_OK(npushm_dev_query(dev, &di));
		return di.in_use;
	}
	REQUIRE(dir && statvfs(dir, &sv) == 0);
	return (uint64_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
}

int th_shm_files(void)
{
	const char *dir = getenv(th_is_kmod() ? "NPUSHM_DIR" : "NPUSHM_SHM_DIR");
	struct dirent *de;
	int n = 0;
	DIR *d;

	if (!dir || !(d = opendir(dir)))
		return 0;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

int th_fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;	/* the directory's own descriptor */
}

const char *th_tmpdir(void)
{
	return cur_tmpdir;
}

int th_as_nobody(void (*fn)(void *), void *arg)
{
	int before = cur ? atomic_load(&cur->failures) : 0, status;
	pid_t pid = fork();

	if (pid == 0) {
		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534)) {
			th_check_failed(__FILE__, __LINE__, "cannot become uid 65534: %s", strerror(errno));
			_exit(1);
		}
		fn(arg);
		fflush(stdout);
		_exit(0);
	}
	REQUIRE(pid > 0);
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status)) {
		th_check_failed(__FILE__, __LINE__, "the uid-65534 child died (status 0x%x)", status);
		return 1;
	}
	return cur ? atomic_load(&cur->failures) - before : WEXITSTATUS(status);
}

bool th_mapping_rss(const void *addr, long *rss_kb, long *pss_kb)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512];
	bool in = false, found = false;
	uintptr_t a = (uintptr_t)addr;

	*rss_kb = *pss_kb = -1;
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		long v;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
			if (found)
				break;
			in = a >= lo && a < hi;
			found = in;
			continue;
		}
		if (!in)
			continue;
		if (sscanf(line, "Rss: %ld kB", &v) == 1)
			*rss_kb = v;
		else if (sscanf(line, "Pss: %ld kB", &v) == 1)
			*pss_kb = v;
	}
	fclose(f);
	return found;
}

uint64_t th_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static size_t dtype_bytes(const char *d)
{
	static const struct { const char *n; size_t s; } t[] = {
		{ "BOOL", 1 }, { "U8", 1 }, { "I8", 1 }, { "F8_E5M2", 1 }, { "F8_E4M3", 1 },
		{ "I16", 2 }, { "U16", 2 }, { "F16", 2 }, { "BF16", 2 }, { "I32", 4 }, { "U32", 4 },
		{ "F32", 4 }, { "F64", 8 }, { "I64", 8 }, { "U64", 8 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(d, t[i].n))
			return t[i].s;
	return 1;
}

uint64_t th_write_model(const char *path, struct th_tensor *t, int n, const char *metadata,
			uint64_t seed)
{
	size_t cap = 4096 + (size_t)n * 256 + (metadata ? strlen(metadata) : 0), len = 0;
	char *hdr = malloc(cap);
	uint64_t off = 0, hlen, s = seed | 1;
	FILE *f;

	REQUIRE(hdr);
	len += (size_t)snprintf(hdr + len, cap - len, "{");
	if (metadata)
		len += (size_t)snprintf(hdr + len, cap - len, "\"__metadata__\":%s", metadata);
	for (int i = 0; i < n; i++) {
		size_t nb = dtype_bytes(t[i].dtype);

		for (int d = 0; d < t[i].ndim; d++)
			nb *= (size_t)t[i].shape[d];
		t[i].nbytes = nb;
		len += (size_t)snprintf(hdr + len, cap - len, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[",
					(i || metadata) ? "," : "", t[i].name, t[i].dtype);
		for (int d = 0; d < t[i].ndim; d++)
			len += (size_t)snprintf(hdr + len, cap - len, "%s%lld", d ? "," : "",
						(long long)t[i].shape[d]);
		len += (size_t)snprintf(hdr + len, cap - len, "],\"data_offsets\":[%llu,%llu]}",
					(unsigned long long)off, (unsigned long long)(off + nb));
		off += nb;
		REQUIRE(len < cap);
	}
	len += (size_t)snprintf(hdr + len, cap - len, "}");
	hlen = (len + 7) & ~7ULL;
	f = fopen(path, "wb");
	REQUIRE(f);
	fwrite(&hlen, 8, 1, f);
	fwrite(hdr, 1, len, f);
	for (uint64_t i = len; i < hlen; i++)
		fputc(' ', f);
	off = 8 + hlen;
	for (int i = 0; i < n; i++) {
		t[i].data = malloc(t[i].nbytes + 1);
		REQUIRE(t[i].data);
		for (size_t b = 0; b < t[i].nbytes; b++)
			t[i].data[b] = (uint8_t)th_rand(&s);
		t[i].file_offset = off;
		fwrite(t[i].data, 1, t[i].nbytes, f);
		off += t[i].nbytes;
	}
	REQUIRE(fclose(f) == 0);
	free(hdr);
	return off;
}

void th_free_model(struct th_tensor *t, int n)
{
	for (int i = 0; i < n; i++) {
		free(t[i].data);
		t[i].data = NULL;
	}
}

void th_write_raw(const char *path, const char *header, size_t pad, size_t data_len, int fill)
{
	uint64_t hlen = strlen(header) + pad;
	FILE *f = fopen(path, "wb");

	REQUIRE(f);
	fwrite(&hlen, 8, 1, f);
	fwrite(header, 1, strlen(header), f);
	for (size_t i = 0; i < pad; i++)
		fputc(' ', f);
	for (size_t i = 0; i < data_len; i++)
		fputc(fill, f);
	REQUIRE(fclose(f) == 0);
}

const char *th_big_model(const char *file, uint64_t bytes, uint64_t seed)
{
	static char paths[8][512];
	static unsigned next;
	char *path = paths[next++ % 8];
	uint64_t rows = bytes / 4096 ? bytes / 4096 : 1, s = seed | 1, hlen;
	char hdr[256];
	uint64_t *buf;
	size_t len;
	FILE *f;

	snprintf(path, sizeof(paths[0]), "%s/%s", th_tmpdir(), file);
	len = (size_t)snprintf(hdr, sizeof(hdr),
			       "{\"w\":{\"dtype\":\"F32\",\"shape\":[%llu,1024],\"data_offsets\":[0,%llu]}}",
			       (unsigned long long)rows, (unsigned long long)(rows * 4096));
	hlen = (len + 7) & ~7ULL;
	f = fopen(path, "wb");
	REQUIRE(f);
	fwrite(&hlen, 8, 1, f);
	fwrite(hdr, 1, len, f);
	for (uint64_t i = len; i < hlen; i++)
		fputc(' ', f);
	buf = malloc(1 << 20);
	REQUIRE(buf);
	for (uint64_t done = 0; done < rows * 4096; done += 1 << 20) {
		size_t n = rows * 4096 - done < (1 << 20) ? (size_t)(rows * 4096 - done) : (1 << 20);

		for (size_t i = 0; i < n / 8; i++)
			buf[i] = th_rand(&s);
		fwrite(buf, 1, n, f);
	}
	free(buf);
	REQUIRE(fclose(f) == 0);
	return path;
}

/* ----------------------------------------------------------------- runner */

static int rm_entry(const char *p, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	return remove(p);
}

static void rm_tree(const char *dir)
{
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * Root: give the test an empty private directory of its own, in a mount
 * namespace of its own: a tmpfs as NPUSHM_SHM_DIR (posix), an npushm
 * instance as NPUSHM_DIR (kmod).
 */
static void private_shm(void)
{
	if (!th_is_root() || !shm_base[0])
		return;
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    (th_is_kmod() ? mount("npushm", shm_base, "npushm", 0, "mode=1777") :
	     mount("npushm-test", shm_base, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=2g"))) {
		th_diag("cannot set up a private instance (%s); sharing %s", strerror(errno), shm_base);
		return;
	}
}

static int run_one(int idx, int num)
{
	const char *tmp = getenv("TMPDIR");
	int status, rc = 0;
	pid_t pid;

	cur = mmap(NULL, sizeof(*cur), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (cur == MAP_FAILED) {
		printf("not ok %d - %s # cannot map the shared page\n", num, tests[idx].name);
		return 1;
	}
	snprintf(cur_tmpdir, sizeof(cur_tmpdir), "%s/npushm-test.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(cur_tmpdir)) {
		printf("not ok %d - %s # mkdtemp: %s\n", num, tests[idx].name, strerror(errno));
		return 1;
	}
	chmod(cur_tmpdir, 0755);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		setpgid(0, 0);
		private_shm();
		alarm(TEST_TIMEOUT);
		tests[idx].fn();
		fflush(stdout);
		_exit(atomic_load(&cur->failures) ? 1 : 0);
	}
	waitpid(pid, &status, 0);
	kill(-pid, SIGKILL);	/* leftovers of the test's process group */
	if (WIFSIGNALED(status)) {
		printf("not ok %d - %s # %s\n", num, tests[idx].name,
		       WTERMSIG(status) == SIGALRM ? "timed out" : strsignal(WTERMSIG(status)));
		rc = 1;
	} else if (WEXITSTATUS(status) || atomic_load(&cur->failures)) {
		printf("not ok %d - %s\n", num, tests[idx].name);
		rc = 1;
	} else if (cur->skip[0]) {
		printf("ok %d - %s # SKIP %s\n", num, tests[idx].name, cur->skip);
	} else {
		printf("ok %d - %s\n", num, tests[idx].name);
	}
	fflush(stdout);
	rm_tree(cur_tmpdir);
	munmap(cur, sizeof(*cur));
	cur = NULL;
	return rc;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int main(int argc, char **argv)
{
	bool list = argc > 1 && !strcmp(argv[1], "-l");
	int first = list ? 2 : 1, selected[MAX_TESTS], nsel = 0, failed = 0;

	(void)by_name;
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; i < ntests; i++) {
		bool take = argc <= first;

		for (int a = first; a < argc; a++)
			if (strstr(tests[i].name, argv[a]))
				take = true;
		if (take)
			selected[nsel++] = i;
	}
	if (list) {
		for (int i = 0; i < nsel; i++)
			puts(tests[selected[i]].name);
		return 0;
	}
	if (!th_is_kmod()) {
		snprintf(shm_base, sizeof(shm_base), "/dev/shm/npushm-tests.%d", (int)getpid());
		if (mkdir(shm_base, 01777) || chmod(shm_base, 01777)) {
			fprintf(stderr, "cannot create %s: %s\n", shm_base, strerror(errno));
			return 1;
		}
		setenv("NPUSHM_SHM_DIR", shm_base, 1);
	} else if (th_is_root()) {
		/* Each test mounts its own instance here (private_shm). */
		snprintf(shm_base, sizeof(shm_base), "/tmp/npushm-tests.%d", (int)getpid());
		if (mkdir(shm_base, 0755)) {
			fprintf(stderr, "cannot create %s: %s\n", shm_base, strerror(errno));
			return 1;
		}
		setenv("NPUSHM_DIR", shm_base, 1);
	}
	printf("1..%d\n", nsel);
	th_diag("backend %s, uid %d", th_is_kmod() ? "kmod" : "posix", (int)geteuid());
	for (int i = 0; i < nsel; i++)
		failed += run_one(selected[i], i + 1);
	if (shm_base[0]) {
		if (th_shm_files())
			th_diag("warning: files left in %s (removed)", shm_base);
		if (th_is_kmod())
			rmdir(shm_base);
		else
			rm_tree(shm_base);
	}
	return failed ? 1 : 0;
}
