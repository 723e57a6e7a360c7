/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * space.c - npushm_space_*: the module's spaces (NPUSHM_IOC_SPACE) behind
 * an opaque handle, and the peers' copies through a space descriptor.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/npushm.h>

#include "internal.h"
#include "npushm_space.h"

struct npushm_space {
	int fd;
};

_Static_assert(NPUSHM_SPACE_READ == NPUSHM_GRANT_READ &&
	       NPUSHM_SPACE_WRITE == NPUSHM_GRANT_WRITE, "grant flags are the module's");

NPUSHM_API npushm_status_t npushm_space_open(npushm_space_t **spp)
{
	struct npushm_space_open so = { 0 };
	npushm_space_t *sp;
	npushm_status_t st;
	int ctl, err;

	if (!spp)
		return npi_fail(NPUSHM_ERR_INVALID, EINVAL, "npushm_space_open: no result pointer");
	*spp = NULL;
	sp = calloc(1, sizeof(*sp));
	if (!sp)
		return npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "out of memory");
	st = npi_ctl_open(NPUSHM_FEAT_SPACE, "spaces", &ctl);
	if (st)
		goto out_free;
	if (ioctl(ctl, NPUSHM_IOC_SPACE, &so)) {
		err = errno;
		close(ctl);
		st = npi_fail(npi_status_from_errno(err), err, "the module refused a space");
		goto out_free;
	}
	close(ctl);
	sp->fd = so.fd;
	*spp = sp;
	return NPUSHM_OK;

out_free:
	free(sp);
	return st;
}

NPUSHM_API void npushm_space_close(npushm_space_t *sp)
{
	if (!sp)
		return;
	close(sp->fd);
	free(sp);
}

NPUSHM_API int npushm_space_fd(const npushm_space_t *sp)
{
	return sp ? sp->fd : -1;
}

NPUSHM_API npushm_status_t npushm_space_grant(npushm_space_t *sp, const void *addr, size_t len,
					      unsigned int flags, uint64_t *idp)
{
	struct npushm_space_grant_req g = {
		.start = (uintptr_t)addr, .len = len, .flags = flags,
	};
	int err;

	if (!sp || !idp)
		return npi_fail(NPUSHM_ERR_INVALID, EINVAL,
				"npushm_space_grant: no space or no id pointer");
	if (!len || !flags || (flags & ~(NPUSHM_SPACE_READ | NPUSHM_SPACE_WRITE)))
		return npi_fail(NPUSHM_ERR_INVALID, EINVAL,
				"a grant needs bytes (got %zu) and READ and/or WRITE (got %#x)",
				len, flags);
	if (ioctl(sp->fd, NPUSHM_IOC_SPACE_GRANT, &g)) {
		err = errno;
		switch (err) {
		case ENOSPC:
			return npi_fail(NPUSHM_ERR_NO_SPACE, err,
					"the space holds %d grants already: revoke some first",
					NPUSHM_SPACE_MAX_GRANTS);
		case EPERM:
			return npi_fail(NPUSHM_ERR_ACCESS, err,
					"this space belongs to another process (opened before fork()?): open one in this process");
		case EINVAL:
			return npi_fail(NPUSHM_ERR_INVALID, err,
					"cannot grant %p + %zu bytes: not within user space", addr, len);
		default:
			return npi_fail(npi_status_from_errno(err), err, "cannot grant %p + %zu bytes",
					addr, len);
		}
	}
	*idp = g.id;
	return NPUSHM_OK;
}

NPUSHM_API npushm_status_t npushm_space_revoke(npushm_space_t *sp, uint64_t id)
{
	struct npushm_space_revoke r = { .id = id };
	int err;

	if (!sp)
		return npi_fail(NPUSHM_ERR_INVALID, EINVAL, "npushm_space_revoke: no space");
	while (ioctl(sp->fd, NPUSHM_IOC_SPACE_REVOKE, &r)) {
		err = errno;
		if (err == EINTR)
			continue;
		if (err == ENOENT)
			return npi_fail(NPUSHM_ERR_NOT_FOUND, err, "the space has no grant %llu",
					(unsigned long long)id);
		if (err == EPERM)
			return npi_fail(NPUSHM_ERR_ACCESS, err,
					"this space belongs to another process: only its owner revokes");
		return npi_fail(npi_status_from_errno(err), err, "cannot revoke grant %llu",
				(unsigned long long)id);
	}
	return NPUSHM_OK;
}

static npushm_status_t space_copy(int fd, uint64_t addr, char *buf, size_t len, bool write,
				  size_t *np)
{
	size_t done = 0;
	npushm_status_t st = NPUSHM_OK;

	while (done < len) {
		ssize_t n = write ? pwrite(fd, buf + done, len - done, (off_t)(addr + done))
				  : pread(fd, buf + done, len - done, (off_t)(addr + done));
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		int err = n < 0 ? errno : EFAULT;
		if (err == EINTR)
			continue;
		const char *what = write ? "write" : "read";
		if (err == EACCES)
			st = npi_fail(NPUSHM_ERR_ACCESS, err,
				      "cannot %s %zu bytes at %#llx: the owner granted no such range",
				      what, len - done, (unsigned long long)(addr + done));
		else if (err == ESRCH)
			st = npi_fail(NPUSHM_ERR_NOT_FOUND, err,
				      "the space's owner exited or ran another program");
		else if (err == EFAULT)
			st = npi_fail(NPUSHM_ERR_INVALID, err,
				      "cannot %s at %#llx: the owner does not map it%s",
				      what, (unsigned long long)(addr + done),
				      write ? " writable" : "");
		else
			st = npi_fail(npi_status_from_errno(err), err, "cannot %s through the space",
				      what);
		break;
	}
	if (np)
		*np = done;
	return st;
}

NPUSHM_API npushm_status_t npushm_space_read(int fd, uint64_t addr, void *dst, size_t len,
					     size_t *np)
{
	return space_copy(fd, addr, dst, len, false, np);
}

NPUSHM_API npushm_status_t npushm_space_write(int fd, uint64_t addr, const void *src, size_t len,
					      size_t *np)
{
	return space_copy(fd, addr, (char *)src, len, true, np);
}
