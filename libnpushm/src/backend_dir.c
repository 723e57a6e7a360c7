/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * backend_dir.c - what both backends do the same way: a region is a file in
 * a directory, and a name is a link to it.
 *
 * The posix backend's directory is a tmpfs ($NPUSHM_SHM_DIR, default
 * /dev/shm), where region files are named "npushm.<name>"; the kmod
 * backend's is an instance of the npushm filesystem ($NPUSHM_DIR, default
 * /run/npushm), where every file is a region and is named "<name>". In both,
 * '/' and '%' in a name are written %2F and %25 (and, without a prefix, a
 * leading '.' as %2E), a new region is an unnamed O_TMPFILE file, publishing
 * is linkat(2) (atomic; EEXIST when taken), opening is openat(2), removing a
 * name is unlinkat(2), and listing is readdir(3). The kernel checks every
 * permission. Callers hold the device open for as long as they use these.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* The file name of @name: prefix + name with '/' and '%' escaped. */
npushm_status_t npi_dir_file_name(const npushm_dev_t *dev, const char *name, char *out, size_t outsz)
{
	size_t o, i;

	o = (size_t)snprintf(out, outsz, "%s", dev->prefix);
	for (i = 0; name[i]; i++) {
		const char *esc = name[i] == '/' ? "%2F" : name[i] == '%' ? "%25" :
				  (name[i] == '.' && i == 0 && !dev->prefix[0]) ? "%2E" : NULL;
		size_t n = esc ? 3 : 1;

		if (o + n >= outsz || o + n > 255)
			return npi_fail(NPUSHM_ERR_NAME, ENAMETOOLONG,
					"the name '%s' is too long for the %s backend: its file name would exceed 255 bytes",
					name, dev->ops->name);
		if (esc)
			memcpy(out + o, esc, 3);
		else
			out[o] = name[i];
		o += n;
	}
	out[o] = '\0';
	return NPUSHM_OK;
}

/* Inverse of npi_dir_file_name(); false if @fname is not one of ours. */
static bool name_from_file(const npushm_dev_t *dev, const char *fname, char *out, size_t outsz)
{
	size_t o = 0, plen = strlen(dev->prefix);
	const char *p;

	if (strncmp(fname, dev->prefix, plen))
		return false;
	/* Without a prefix a name's leading '.' is written %2E: a dot file is not a name. */
	if (!plen && fname[0] == '.')
		return false;
	for (p = fname + plen; *p; p++) {
		char c = *p;

		if (c == '%') {
			if (!strncmp(p, "%2F", 3))
				c = '/';
			else if (!strncmp(p, "%25", 3))
				c = '%';
			else if (!strncmp(p, "%2E", 3) && p == fname + plen && !plen)
				c = '.';
			else
				return false;
			p += 2;
		}
		if (o + 1 >= outsz)
			return false;
		out[o++] = c;
	}
	out[o] = '\0';
	return o > 0 && npi_name_check(out) == NPUSHM_OK;
}

npushm_status_t npi_dir_open(npushm_dev_t *dev, const char *dir)
{
	struct stat st;

	if (strlen(dir) >= sizeof(dev->dir))
		return npi_fail(NPUSHM_ERR_INVALID, 0, "%s backend: the directory path '%.64s...' is too long",
				dev->ops->name, dir);
	snprintf(dev->dir, sizeof(dev->dir), "%s", dir);
	dev->fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dev->fd < 0 || fstat(dev->fd, &st))
		return npi_fail(NPUSHM_ERR_NO_DEVICE, errno, "%s backend: cannot open the directory %s",
				dev->ops->name, dir);
	dev->dir_dev = st.st_dev;
	return NPUSHM_OK;
}

npushm_status_t npi_dir_scan(npushm_dev_t *dev,
			     npushm_status_t (*fn)(void *arg, const char *name, const struct stat *st),
			     void *arg)
{
	npushm_status_t st = NPUSHM_OK;
	struct dirent *de;
	DIR *d;
	int dfd = openat(dev->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0 || !(d = fdopendir(dfd))) {
		int err = errno;

		if (dfd >= 0)
			close(dfd);
		return npi_fail(NPUSHM_ERR_SYSTEM, err, "%s backend: cannot read %s", dev->ops->name,
				dev->dir);
	}
	while ((de = readdir(d))) {
		char name[NPUSHM_NAME_MAX + 1];
		struct stat sb;

		if (!name_from_file(dev, de->d_name, name, sizeof(name)))
			continue;
		if (fstatat(dev->fd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) || !S_ISREG(sb.st_mode))
			continue;
		st = fn(arg, name, &sb);
		if (st)
			break;
	}
	closedir(d);
	return st;
}

npushm_status_t npi_dir_tmpfile(npushm_dev_t *dev, int *fdp)
{
	*fdp = openat(dev->fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (*fdp >= 0)
		return NPUSHM_OK;
	if (errno == EACCES || errno == EPERM)
		return npi_fail(NPUSHM_ERR_ACCESS, errno,
				"%s backend: uid %u may not create regions in %s (its permissions)",
				dev->ops->name, (unsigned)geteuid(), dev->dir);
	return npi_fail(npi_status_from_errno(errno), errno,
			"%s backend: cannot create a region file in %s", dev->ops->name, dev->dir);
}

npushm_status_t npi_dir_region_open(npushm_dev_t *dev, const char *name, uint32_t flags, int *fdp)
{
	char fname[300];
	npushm_status_t st = npi_dir_file_name(dev, name, fname, sizeof(fname));
	/* O_NONBLOCK: a FIFO someone made under the name must not block the open */
	int oflags = ((flags & NPUSHM_OPEN_WRITE) ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW |
		     O_NONBLOCK;
	struct stat sb;
	int err;

	if (st)
		return st;
	*fdp = openat(dev->fd, fname, oflags);
	if (*fdp >= 0) {
		if (!fstat(*fdp, &sb) && S_ISREG(sb.st_mode) &&
		    !fcntl(*fdp, F_SETFL, oflags & ~(O_NONBLOCK | O_CLOEXEC)))
			return NPUSHM_OK;
		close(*fdp);
		*fdp = -1;
		return npi_fail(NPUSHM_ERR_INVALID, 0, "'%s/%s' is not a region file", dev->dir, fname);
	}
	err = errno;
	if (err == ENOENT)
		return npi_fail(NPUSHM_ERR_NOT_FOUND, err, "no region is published as '%s'", name);
	if (err == EACCES && !fstatat(dev->fd, fname, &sb, AT_SYMLINK_NOFOLLOW))
		return npi_fail(NPUSHM_ERR_ACCESS, err,
				"region '%s' (owner uid %u, mode %04o) may not be opened %s by uid %u",
				name, (unsigned)sb.st_uid, (unsigned)(sb.st_mode & 0777),
				(flags & NPUSHM_OPEN_WRITE) ? "read-write" : "read-only",
				(unsigned)geteuid());
	if (err == ELOOP)
		return npi_fail(NPUSHM_ERR_INVALID, err, "'%s/%s' is a symbolic link, not a region",
				dev->dir, fname);
	return npi_fail(npi_status_from_errno(err), err, "cannot open region '%s'", name);
}

int npi_dir_name_owner(const npushm_dev_t *dev, const char *name, uint32_t *uid)
{
	char fname[300];
	struct stat sb;

	if (npi_dir_file_name(dev, name, fname, sizeof(fname)) ||
	    fstatat(dev->fd, fname, &sb, AT_SYMLINK_NOFOLLOW))
		return -1;
	*uid = (uint32_t)sb.st_uid;
	return 0;
}

npushm_status_t npi_dir_name_unlink(npushm_dev_t *dev, const char *name)
{
	char fname[300];
	npushm_status_t st = npi_dir_file_name(dev, name, fname, sizeof(fname));
	struct stat sb;
	int err;

	if (st)
		return st;
	if (!unlinkat(dev->fd, fname, 0))
		return NPUSHM_OK;
	err = errno;
	if (err == ENOENT)
		return npi_fail(NPUSHM_ERR_NOT_FOUND, err, "no region is published as '%s'", name);
	if ((err == EPERM || err == EACCES) && !fstatat(dev->fd, fname, &sb, AT_SYMLINK_NOFOLLOW))
		return npi_fail(NPUSHM_ERR_ACCESS, err,
				"only the owner of '%s' (uid %u) or root may remove it", name,
				(unsigned)sb.st_uid);
	return npi_fail(npi_status_from_errno(err), err, "cannot remove the name '%s'", name);
}

#define REPLACE_PREFIX ".npushm-replace."

/* This process's pid namespace (the inode of /proc/self/ns/pid), 0 if unknown. */
static unsigned long long pid_ns_id(void)
{
	struct stat sb;

	return stat("/proc/self/ns/pid", &sb) ? 0 : (unsigned long long)sb.st_ino;
}

/*
 * A loader killed between its temporary link and the rename leaves the
 * link, which keeps the region (and its memory) alive with no name to see
 * or remove it by. Temporary links are named REPLACE_PREFIX<pidns>.<pid>.<n>:
 * those of a process of our pid namespace that no longer exists are
 * removed (links of other namespaces, and of pids in use again, are left:
 * never one a live loader still needs). Errors are ignored: another user's
 * link in a sticky directory stays.
 */
static void sweep_replace_links(npushm_dev_t *dev, unsigned long long ns)
{
	int dfd = openat(dev->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *de;
	DIR *d;

	if (dfd < 0 || !ns)
		goto out_close;
	d = fdopendir(dfd);
	if (!d)
		goto out_close;
	while ((de = readdir(d))) {
		unsigned long long their_ns;
		unsigned long n;
		int pid, used = 0;

		if (strncmp(de->d_name, REPLACE_PREFIX, sizeof(REPLACE_PREFIX) - 1) ||
		    sscanf(de->d_name + sizeof(REPLACE_PREFIX) - 1, "%llu.%d.%lu%n", &their_ns, &pid,
			   &n, &used) != 3 || de->d_name[sizeof(REPLACE_PREFIX) - 1 + used] ||
		    their_ns != ns || pid <= 0)
			continue;
		if (kill(pid, 0) && errno == ESRCH && !unlinkat(dev->fd, de->d_name, 0))
			npi_log(NPUSHM_LOG_INFO, "removed %s in %s: the link of a loader (pid %d) killed while replacing a name",
				de->d_name, dev->dir, pid);
	}
	closedir(d);
	return;

out_close:
	if (dfd >= 0)
		close(dfd);
}

/*
 * Replace the name @fname by a link to @r's file, atomically: link under a
 * hidden temporary name (not a name: a leading '.' without the prefix),
 * then rename(2) it over @fname. The kernel checks the permission to
 * replace (sticky directory: only the old file's owner or root).
 */
static int replace_link(npushm_region_t *r, const char *fname, const char *proc)
{
	npushm_dev_t *dev = r->dev;
	unsigned long long ns = pid_ns_id();
	static unsigned long seq;
	char tmp[96];
	int err = 0;

	sweep_replace_links(dev, ns);
	snprintf(tmp, sizeof(tmp), REPLACE_PREFIX "%llu.%d.%lu", ns, (int)getpid(),
		 __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	if (linkat(AT_FDCWD, proc, dev->fd, tmp, AT_SYMLINK_FOLLOW) &&
	    (errno != ENOENT || access("/proc/self/fd", F_OK) == 0 ||
	     linkat(r->fd, "", dev->fd, tmp, AT_EMPTY_PATH)))
		return errno;
	if (renameat(dev->fd, tmp, dev->fd, fname))
		err = errno;
	/* Gone after a rename, unless @fname already was a link to the same file. */
	unlinkat(dev->fd, tmp, 0);
	return err;
}

/* Link @r's file (of uid @owner) as @fname, the file name of @name; npi_dir_publish(). */
static npushm_status_t link_name(npushm_region_t *r, const char *name, const char *fname,
				 uint32_t flags, unsigned owner)
{
	npushm_dev_t *dev = r->dev;
	char proc[64];
	struct stat st;
	int err;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", r->fd);
	if (flags & NPUSHM_PUBLISH_REPLACE) {
		err = replace_link(r, fname, proc);
		if (!err)
			return NPUSHM_OK;
		if (err == EPERM || err == EACCES) {
			if (!fstatat(dev->fd, fname, &st, AT_SYMLINK_NOFOLLOW))
				return npi_fail(NPUSHM_ERR_ACCESS, err,
						"cannot replace '%s': only its owner (uid %u) or root may",
						name, (unsigned)st.st_uid);
		}
	} else {
		if (!linkat(AT_FDCWD, proc, dev->fd, fname, AT_SYMLINK_FOLLOW))
			return NPUSHM_OK;
		err = errno;
		if (err == ENOENT && access("/proc/self/fd", F_OK) != 0 &&
		    !linkat(r->fd, "", dev->fd, fname, AT_EMPTY_PATH))
			return NPUSHM_OK;
	}
	if (err == EEXIST)
		return npi_fail(NPUSHM_ERR_EXISTS, err,
				"the name '%s' is already published; choose another name or remove it first",
				name);
	if (err == ENOENT)
		return npi_fail(NPUSHM_ERR_UNSUPPORTED, err,
				"region %llu cannot be named again: its last name was removed",
				(unsigned long long)r->id);
	if (err == EPERM || err == EACCES)
		return npi_fail(NPUSHM_ERR_ACCESS, err,
				"cannot publish region %llu as '%s': only the region's owner (uid %u) may name it",
				(unsigned long long)r->id, name, owner);
	if (err == ENOSPC || err == EDQUOT)
		return npi_fail(NPUSHM_ERR_NO_SPACE, err,
				"cannot publish region %llu as '%s': %s has no room for another name",
				(unsigned long long)r->id, name, dev->dir);
	return npi_fail(npi_status_from_errno(err), err, "cannot publish region %llu as '%s'",
			(unsigned long long)r->id, name);
}

npushm_status_t npi_dir_publish(npushm_region_t *r, const char *name, uint32_t mode, uint32_t flags)
{
	npushm_dev_t *dev = r->dev;
	char fname[300];
	npushm_status_t s;
	struct stat st;

	s = npi_dir_file_name(dev, name, fname, sizeof(fname));
	if (s)
		return s;
	if (fstat(r->fd, &st))
		return npi_fail(NPUSHM_ERR_SYSTEM, errno, "cannot stat region %llu", (unsigned long long)r->id);
	if (st.st_dev != dev->dir_dev)
		return npi_fail(NPUSHM_ERR_UNSUPPORTED, EXDEV,
				"region %llu lives outside %s (an anonymous region or another instance) and cannot be named there",
				(unsigned long long)r->id, dev->dir);
	/*
	 * The kernel lets anyone who may read and write a file link it; but a
	 * name another user gave the owner's region would keep its memory
	 * alive under a name the owner did not choose, and in a sticky
	 * directory that user could not even remove it again.
	 */
	if (st.st_uid != geteuid() && geteuid() != 0)
		return npi_fail(NPUSHM_ERR_ACCESS, EPERM,
				"cannot publish region %llu as '%s': only the region's owner (uid %u) may name it",
				(unsigned long long)r->id, name, (unsigned)st.st_uid);
	if ((st.st_mode & 0777) == mode)
		return link_name(r, name, fname, flags, (unsigned)st.st_uid);
	if (fchmod(r->fd, mode))
		return npi_fail(NPUSHM_ERR_ACCESS, errno,
				"cannot give region %llu the mode %04o for '%s': the mode belongs to the region and only its owner (uid %u) may change it",
				(unsigned long long)r->id, mode, name, (unsigned)st.st_uid);
	s = link_name(r, name, fname, flags, (unsigned)st.st_uid);
	/* Not published: its other names keep the mode they had. */
	if (s)
		fchmod(r->fd, st.st_mode & 0777);
	return s;
}

struct first_name_ctx {
	ino_t ino;
	char *best;
	size_t size;
};

static npushm_status_t first_name(void *arg, const char *name, const struct stat *st)
{
	struct first_name_ctx *c = arg;
	size_t plen = strlen(NPUSHM_HASH_ALIAS_PREFIX);
	bool alias = !strncmp(name, NPUSHM_HASH_ALIAS_PREFIX, plen);
	bool best_alias = !strncmp(c->best, NPUSHM_HASH_ALIAS_PREFIX, plen);

	if (st->st_ino != c->ino)
		return NPUSHM_OK;
	/* Prefer a model name over the hash alias, then the smallest. */
	if (!c->best[0] || (best_alias && !alias) || (best_alias == alias && strcmp(name, c->best) < 0))
		snprintf(c->best, c->size, "%s", name);
	return NPUSHM_OK;
}

npushm_status_t npi_dir_first_name(npushm_dev_t *dev, ino_t ino, char *best, size_t size)
{
	struct first_name_ctx c = { .ino = ino, .best = best, .size = size };

	best[0] = '\0';
	return npi_dir_scan(dev, first_name, &c);
}

static npushm_status_t list_one(void *arg, const char *name, const struct stat *st)
{
	struct npushm_region_list *list = arg;
	npushm_region_entry_t *e = NULL;
	size_t i;

	for (i = 0; i < list->count; i++)
		if (list->entries[i].id == (uint64_t)st->st_ino)
			e = &list->entries[i];
	if (!e) {
		e = npi_list_add(list);
		if (!e)
			return NPUSHM_ERR_NO_MEMORY;
		e->id = (uint64_t)st->st_ino;
		e->size = (uint64_t)st->st_size;
		e->flags = NPUSHM_REGION_NAMED | NPUSHM_REGION_PERSISTENT;
		e->owner_uid = st->st_uid;
		e->owner_gid = st->st_gid;
		e->handles = NPUSHM_COUNT_UNKNOWN;
		e->dmabufs = NPUSHM_COUNT_UNKNOWN;
		e->mappings = NPUSHM_COUNT_UNKNOWN;
		e->mappers = NPUSHM_COUNT_UNKNOWN;
		e->mapped_bytes = UINT64_MAX;
		e->pinned_bytes = UINT64_MAX;
	}
	return npi_list_add_name(e, name, st->st_mode & 0777, st->st_uid, st->st_gid, true);
}

npushm_status_t npi_dir_list_names(npushm_dev_t *dev, struct npushm_region_list *list)
{
	return npi_dir_scan(dev, list_one, list);
}
