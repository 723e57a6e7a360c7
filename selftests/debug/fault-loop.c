// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * fault-loop.c - loops calls through every fault-injection point they reach
 * (fail_nth.h), for the debug lane; prints TAP. Run under
 * "selftests/debug/fail-inject.sh --arm" in the debug-kernel VM.
 *
 *   fault-loop syscalls        memfd_create+ftruncate+write and open+write+close:
 *                              each injected failure must give a clean errno and
 *                              leak no fd (checks the machinery, no module needed)
 *   fault-loop modinit KO [PARAMS]
 *                              finit_module(KO) through every injection point:
 *                              each failed load must leave the module absent,
 *                              each successful one must unload (delete_module)
 *   fault-loop count N         call memfd_create N times, print how many failed
 *                              (for fail-inject.sh --probability and its task filter)
 *
 * Also a worked example of fail_nth.h for the module selftests.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fail_nth.h"

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own fd */
}

/*
 * Each op arms the nth injection point, makes its calls, and reports in
 * *fired whether the failure happened; it returns 0 or -errno.
 */
static int op_memfd(int nfd, unsigned int n, bool *fired)
{
	static char page[4096];
	int fd, r = 0;

	fail_nth_arm(nfd, n);
	fd = memfd_create("fault-loop", MFD_CLOEXEC);
	if (fd < 0)
		r = -errno;
	else if (ftruncate(fd, 1 << 20) || write(fd, page, sizeof(page)) != sizeof(page))
		r = errno ? -errno : -EIO;
	*fired = fail_nth_fired(nfd);
	if (fd >= 0)
		close(fd);
	return r;
}

static int op_open(int nfd, unsigned int n, bool *fired)
{
	static char buf[8192];
	const char *path = "/tmp/fault-loop.file";
	int fd, r = 0;

	fail_nth_arm(nfd, n);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		r = -errno;
	else if (write(fd, buf, sizeof(buf)) != sizeof(buf))
		r = errno ? -errno : -EIO;
	*fired = fail_nth_fired(nfd);
	if (fd >= 0)
		close(fd);
	unlink(path);
	return r;
}

static const char *mod_path, *mod_params;
static char mod_name[64];

static bool module_loaded(void)
{
	char p[128];
	struct stat st;

	snprintf(p, sizeof(p), "/sys/module/%s", mod_name);
	return stat(p, &st) == 0;
}

/* A failed load must leave nothing loaded; a successful one must unload. */
static int op_modinit(int nfd, unsigned int n, bool *fired)
{
	int fd = open(mod_path, O_RDONLY | O_CLOEXEC), r = 0;

	if (fd < 0)
		return -errno;
	fail_nth_arm(nfd, n);
	if (syscall(SYS_finit_module, fd, mod_params, 0))
		r = -errno;
	*fired = fail_nth_fired(nfd);
	close(fd);
	if (r)
		return module_loaded() ? -EEXIST : r;
	if (syscall(SYS_delete_module, mod_name, O_NONBLOCK))
		return -EBUSY;
	return 0;
}

/*
 * Loops op through injection points 1, 2, ... until one run reaches none.
 * Any errno counts as a clean failure (ENOMEM, ENOSPC, EFAULT, ...); what
 * fails the loop is a failure with nothing injected, a leaked fd, or a
 * module left behind.
 */
static int nth_loop(int test, const char *name, int (*op)(int, unsigned int, bool *))
{
	int nfd = fail_nth_open(), fds0, fired = 0, absorbed = 0, nerr = 0, i;
	int errs[8] = { 0 }, counts[8] = { 0 };
	char summary[256] = "";
	unsigned int n;

	if (nfd < 0) {
		printf("ok %d %s # SKIP no /proc/thread-self/fail-nth (%s)\n", test, name, strerror(-nfd));
		return 0;
	}
	fds0 = count_fds();
	for (n = 1; n < 100000; n++) {
		bool hit = false;
		int r;

		errno = 0;
		r = op(nfd, n, &hit);
		if (r == -EEXIST || r == -EBUSY) {
			printf("not ok %d %s: after injected failure %u the module is %s\n", test, name, n,
			       r == -EEXIST ? "loaded although finit_module failed" : "loaded and cannot be removed");
			return 1;
		}
		if (!hit) {
			if (r) {
				printf("not ok %d %s: failed (%s) with no injected failure, n=%u\n",
				       test, name, strerror(-r), n);
				return 1;
			}
			break;
		}
		fired++;
		if (!r) {
			absorbed++;
		} else {
			for (i = 0; i < nerr && errs[i] != -r; i++)
				;
			if (i == nerr && nerr < 8)
				errs[nerr++] = -r;
			if (i < 8)
				counts[i]++;
		}
		if (count_fds() != fds0) {
			printf("not ok %d %s: fd leaked after injected failure %u\n", test, name, n);
			return 1;
		}
	}
	close(nfd);
	if (!fired) {
		printf("not ok %d %s: no injection point was reached (fault injection not armed?)\n",
		       test, name);
		return 1;
	}
	for (i = 0; i < nerr; i++)
		snprintf(summary + strlen(summary), sizeof(summary) - strlen(summary), "%s %s %d",
			 i ? "," : "", strerrorname_np(errs[i]) ? strerrorname_np(errs[i]) : "?", counts[i]);
	printf("ok %d %s: %d injection points; errors:%s; absorbed %d; clean\n",
	       test, name, fired, nerr ? summary : " none", absorbed);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "modinit")) {
		const char *b = strrchr(argv[2], '/') ? strrchr(argv[2], '/') + 1 : argv[2];
		size_t i;

		mod_path = argv[2];
		mod_params = argc > 3 ? argv[3] : "";
		snprintf(mod_name, sizeof(mod_name), "%.*s", (int)strcspn(b, "."), b);
		for (i = 0; mod_name[i]; i++)
			if (mod_name[i] == '-')
				mod_name[i] = '_';
		printf("TAP version 13\n1..1\n");
		fflush(stdout);
		return nth_loop(1, "finit_module+delete_module", op_modinit);
	}
	if (argc == 2 && !strcmp(argv[1], "syscalls")) {
		int bad = 0;

		printf("TAP version 13\n1..2\n");
		fflush(stdout);
		bad |= nth_loop(1, "memfd_create+ftruncate+write", op_memfd);
		fflush(stdout);
		bad |= nth_loop(2, "open+write+close", op_open);
		return bad;
	}
	if (argc == 3 && !strcmp(argv[1], "count")) {
		int n = atoi(argv[2]), failed = 0, enomem = 0, i;

		for (i = 0; i < n; i++) {
			int fd = memfd_create("fault-loop", MFD_CLOEXEC);

			if (fd >= 0)
				close(fd);
			else if (failed++, errno == ENOMEM)
				enomem++;
		}
		printf("memfd_create: %d calls, %d failed, %d with ENOMEM\n", n, failed, enomem);
		return 0;
	}
	fprintf(stderr, "usage: fault-loop syscalls | fault-loop modinit KO [PARAMS] | fault-loop count N\n");
	return 2;
}
