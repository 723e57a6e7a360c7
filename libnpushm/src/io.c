/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * io.c - small I/O helpers: whole-buffer pread/pwrite that retry EINTR and
 * short transfers, and hex formatting. They return 0 or an errno and never
 * record an error themselves (callers know which file to name).
 */
#include <errno.h>
#include <unistd.h>

#include "internal.h"

int npi_pread_full(int fd, void *buf, size_t len, uint64_t off, size_t *got)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (got)
				*got = done;
			return errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	if (got)
		*got = done;
	return 0;
}

int npi_pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd, (const char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		if (n == 0)
			return EIO;
		done += (size_t)n;
	}
	return 0;
}

void npi_hex(const uint8_t *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}
