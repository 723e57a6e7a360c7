/* SPDX-License-Identifier: GPL-2.0-only */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * fail_nth.h - make the Nth fault-injection point reached by the calling
 * thread fail, to loop one call (a module entry point) through every
 * allocation or user copy it makes. Header-only, for selftests.
 *
 * Needs the debug kernel (CONFIG_FAULT_INJECTION) and, for sleeping
 * allocations to count, the capabilities armed by
 * "selftests/debug/fail-inject.sh --arm -- TEST" (NPUSHM_FAULT_INJECT is set
 * then). Documentation/fault-injection/fault-injection.rst, "fail-nth".
 *
 *	int fd = fail_nth_open();		// < 0: no fault injection here: SKIP
 *	for (unsigned int n = 1; n < 100000; n++) {
 *		fail_nth_arm(fd, n);
 *		r = ioctl(dev, NPUSHM_IOC_..., &arg);
 *		e = errno;			// before anything else
 *		if (!fail_nth_fired(fd))
 *			break;			// ran to the end: r must be success
 *		// fired: r < 0 with a clean error (ENOMEM, EFAULT, ...) and
 *		// nothing left behind -- or success, when the failed site had a
 *		// fallback. Clean up, check bytes in use, continue.
 *	}
 *
 * Every injection point counts: sleeping and atomic allocations, pages, and
 * copy_{from,to}_user (-EFAULT), in the module or anywhere else in the call.
 * Contract: fail_nth_arm() returns 0 or -errno; fail_nth_fired() disarms and
 * tells whether the armed failure happened since fail_nth_arm().
 */
#ifndef NPUSHM_FAIL_NTH_H
#define NPUSHM_FAIL_NTH_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Returns an fd for the calling thread's fail-nth file, or -errno. */
static inline int fail_nth_open(void)
{
	int fd = open("/proc/thread-self/fail-nth", O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* The nth injection point this thread reaches from now on fails (0 disarms). */
static inline int fail_nth_arm(int fd, unsigned int n)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%u", n);

	return pwrite(fd, buf, len, 0) == len ? 0 : -errno;
}

/*
 * True if the armed failure fired since fail_nth_arm(); disarms either way.
 * Reading fail-nth is itself a user copy, thus an injection point: a read
 * that fails with EFAULT means the count ran out on that copy, i.e. the call
 * under test did not reach the nth point.
 */
static inline bool fail_nth_fired(int fd)
{
	char buf[16] = "";
	ssize_t r = pread(fd, buf, sizeof(buf) - 1, 0);
	bool fired = r > 0 && strtoul(buf, NULL, 10) == 0;

	fail_nth_arm(fd, 0);
	return fired;
}

#endif /* NPUSHM_FAIL_NTH_H */
