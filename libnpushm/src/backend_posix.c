/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * backend_posix.c - regions in tmpfs, for machines without the npushm module.
 *
 * A region is an unnamed O_TMPFILE file in the tmpfs directory ($NPUSHM_SHM_DIR,
 * default /dev/shm), or a memfd where O_TMPFILE is unavailable (such a region
 * cannot be named). Publishing links the unnamed file into the directory as
 * "npushm.<name>" with linkat(2): atomic, and a process killed before it
 * leaves nothing behind, because an unnamed file dies with its last
 * descriptor and mapping. The directory handling is shared with the kmod
 * backend (backend_dir.c); what is posix's own is here.
 *
 * Where this is weaker than the module (docs/libnpushm.md lists them, tests
 * show each):
 *   - sealing a tmpfs file removes its write permission bits (memfds get a
 *     real F_SEAL_WRITE): the owner can chmod them back and root ignores them,
 *     and a writable mapping made before the seal keeps working;
 *   - names are files: always persistent, per mount namespace rather than
 *     per IPC namespace, and the permission bits belong to the region, so
 *     all its names share the mode of the last publish;
 *   - no dma-buf export, no handle/mapping counts, no quotas;
 *   - a region whose last name was removed cannot be named again.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "internal.h"

#define TMPFS_MAGIC_ 0x01021994

/* ----------------------------------------------------------------- device */

static npushm_status_t posix_dev_open(npushm_dev_t *dev)
{
	const char *dir = getenv("NPUSHM_SHM_DIR");
	struct statfs sfs;
	npushm_status_t st;

	bool from_env = dir && *dir;

	if (!from_env)
		dir = "/dev/shm";
	dev->prefix = "npushm.";
	st = npi_dir_open(dev, dir);
	if (st && from_env)
		return npi_fail(st, npushm_last_errno(),
				"posix backend: NPUSHM_SHM_DIR is '%s', which cannot be opened as a directory; create it on a tmpfs, point NPUSHM_SHM_DIR at an existing tmpfs directory, or unset it to use /dev/shm",
				dir);
	if (st)
		return npi_fail(st, npushm_last_errno(),
				"posix backend: cannot open the shared-memory directory %s; mount a tmpfs there (mount -t tmpfs tmpfs /dev/shm) or set NPUSHM_SHM_DIR to a directory on a tmpfs",
				dir);
	if (fstatfs(dev->fd, &sfs) == 0 && sfs.f_type != TMPFS_MAGIC_)
		npi_log(NPUSHM_LOG_WARN, "posix backend: %s is not a tmpfs; regions will live on disk", dir);
	dev->chunk_size = dev->page_size;
	return NPUSHM_OK;
}

static void posix_dev_close(npushm_dev_t *dev)
{
	if (dev->fd >= 0)
		close(dev->fd);
	dev->fd = -1;
}

struct count_ctx {
	ino_t *inos;
	size_t n, cap;
};

static npushm_status_t count_inode(void *arg, const char *name, const struct stat *st)
{
	struct count_ctx *c = arg;
	size_t i;

	for (i = 0; i < c->n; i++)
		if (c->inos[i] == st->st_ino)
			return NPUSHM_OK;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 32;
		ino_t *p = realloc(c->inos, cap * sizeof(*p));

		if (!p)
			return npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot count regions");
		c->inos = p;
		c->cap = cap;
	}
	c->inos[c->n++] = st->st_ino;
	return NPUSHM_OK;
}

static npushm_status_t posix_dev_query(npushm_dev_t *dev, npushm_dev_info_t *info)
{
	struct count_ctx c = { 0 };
	struct statvfs sv;
	npushm_status_t st;

	if (fstatvfs(dev->fd, &sv))
		return npi_fail(NPUSHM_ERR_SYSTEM, errno, "posix backend: cannot stat %s", dev->dir);
	info->abi_version = 0;
	info->features = NPUSHM_FEATURE_NAMES | NPUSHM_FEATURE_SEAL;
	info->capacity = (uint64_t)sv.f_blocks * sv.f_frsize;
	info->in_use = (uint64_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
	info->page_size = dev->page_size;
	info->chunk_size = dev->page_size;
	st = npi_dir_scan(dev, count_inode, &c);
	free(c.inos);
	if (st)
		return st;
	info->regions = c.n;
	return NPUSHM_OK;
}

/* ---------------------------------------------------------------- regions */

static npushm_status_t fill_from_fd(npushm_region_t *r)
{
	struct stat st;
	int fl;

	if (fstat(r->fd, &st))
		return npi_fail(NPUSHM_ERR_INVALID, errno, "cannot stat region descriptor %d", r->fd);
	if (!S_ISREG(st.st_mode))
		return npi_fail(NPUSHM_ERR_INVALID, 0,
				"descriptor %d is not an npushm posix region (not a regular file)", r->fd);
	fl = fcntl(r->fd, F_GETFL);
	r->writable = fl >= 0 && (fl & O_ACCMODE) == O_RDWR;
	r->size = (uint64_t)st.st_size;
	r->id = (uint64_t)st.st_ino;
	r->st_dev = st.st_dev;
	r->st_ino = st.st_ino;
	return NPUSHM_OK;
}

/*
 * Allocate all of a region file's memory now; *@done (if given) says whether
 * it was (a filesystem without fallocate leaves it to the first touch).
 */
static npushm_status_t allocate_now(npushm_dev_t *dev, int fd, uint64_t size, bool *done)
{
	int ret;

	if (done)
		*done = false;
	if (!npi_alloc_node_bind())
		return npi_fail(NPUSHM_ERR_UNSUPPORTED, errno,
				"the kernel refuses to bind memory to NUMA node %d", npi_alloc_node);
	ret = fallocate(fd, 0, 0, (off_t)size);
	if (ret)
		ret = errno;
	npi_alloc_node_unbind();
	errno = ret;
	if (ret) {
		if (errno == ENOSPC || errno == ENOMEM)
			return npi_fail(NPUSHM_ERR_NO_SPACE, errno,
					"posix backend: %s has no room for %llu bytes; free some or use a bigger tmpfs",
					dev->dir, (unsigned long long)size);
		if (errno == EOPNOTSUPP)
			return NPUSHM_OK;
		return npi_fail(npi_status_from_errno(errno), errno,
				"posix backend: cannot allocate %llu bytes in %s",
				(unsigned long long)size, dev->dir);
	}
	if (done)
		*done = true;
	return NPUSHM_OK;
}

static npushm_status_t posix_region_alloc(npushm_dev_t *dev, uint64_t size, uint32_t flags,
					  npushm_region_t *r)
{
	uint64_t rounded;
	npushm_status_t st;

	if (!npi_align_up(size, dev->page_size, &rounded))
		return npi_fail(NPUSHM_ERR_INVALID, 0, "region size %llu is too large",
				(unsigned long long)size);
	r->fd = openat(dev->fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (r->fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
		npi_log(NPUSHM_LOG_INFO, "posix backend: %s has no O_TMPFILE, using a memfd (unpublishable)",
			dev->dir);
		r->fd = memfd_create("npushm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		r->memfd = true;
	}
	if (r->fd < 0 && !r->memfd)
		return npi_dir_tmpfile(dev, &r->fd);
	if (r->fd < 0)
		return npi_fail(npi_status_from_errno(errno), errno,
				"posix backend: cannot create a memfd for a region");
	if (ftruncate(r->fd, (off_t)rounded))
		return npi_fail(errno == EFBIG || errno == EINVAL ? NPUSHM_ERR_INVALID : NPUSHM_ERR_NO_SPACE,
				errno, "posix backend: cannot size a region to %llu bytes",
				(unsigned long long)rounded);
	if (!(flags & NPUSHM_ALLOC_LAZY)) {
		st = allocate_now(dev, r->fd, rounded, NULL);
		if (st)
			return st;
	}
	st = fill_from_fd(r);
	if (st)
		return st;
	r->writable = true;
	return NPUSHM_OK;
}

static npushm_status_t posix_region_open(npushm_dev_t *dev, const char *name, uint32_t flags,
					 npushm_region_t *r)
{
	npushm_status_t st = npi_dir_region_open(dev, name, flags, &r->fd);

	return st ? st : fill_from_fd(r);
}

static npushm_status_t posix_region_import(npushm_dev_t *dev, npushm_region_t *r)
{
	struct stat dst;
	npushm_status_t st = fill_from_fd(r);

	if (st)
		return st;
	if (fstat(dev->fd, &dst) == 0 && dst.st_dev == r->st_dev)
		return NPUSHM_OK;
	if (fcntl(r->fd, F_GET_SEALS) >= 0) {
		r->memfd = true;
		return NPUSHM_OK;
	}
	return npi_fail(NPUSHM_ERR_INVALID, 0,
			"descriptor %d is not an npushm posix region (neither a file in %s nor a memfd)",
			r->fd, dev->dir);
}

static npushm_status_t posix_name_unlink(npushm_dev_t *dev, const char *name)
{
	return npi_dir_name_unlink(dev, name);
}

static npushm_status_t posix_region_sealed(npushm_region_t *r, bool *sealed)
{
	struct stat st;

	if (r->memfd) {
		int seals = fcntl(r->fd, F_GET_SEALS);

		if (seals < 0)
			return npi_fail(NPUSHM_ERR_SYSTEM, errno, "cannot read the seals of region %llu",
					(unsigned long long)r->id);
		*sealed = seals & F_SEAL_WRITE;
		return NPUSHM_OK;
	}
	if (fstat(r->fd, &st))
		return npi_fail(NPUSHM_ERR_SYSTEM, errno, "cannot stat region %llu", (unsigned long long)r->id);
	*sealed = !(st.st_mode & 0222);
	return NPUSHM_OK;
}

static npushm_status_t posix_region_publish(npushm_region_t *r, const char *name, uint32_t mode,
					    uint32_t flags)
{
	bool sealed = false;
	npushm_status_t s;

	if (r->memfd)
		return npi_fail(NPUSHM_ERR_UNSUPPORTED, 0,
				"region %llu is a memfd: the posix backend can only name regions created in %s",
				(unsigned long long)r->id, r->dev->dir);
	s = posix_region_sealed(r, &sealed);
	if (s)
		return s;
	if (!r->writable && !sealed)
		return npi_fail(NPUSHM_ERR_ACCESS, EACCES,
				"publishing region %llu as '%s' needs a read-write handle unless the region is sealed",
				(unsigned long long)r->id, name);
	/* The write bits are the seal here: a sealed region keeps none. */
	return npi_dir_publish(r, name, sealed ? (mode & ~0222u) : mode, flags);
}

static npushm_status_t posix_region_seal(npushm_region_t *r)
{
	struct stat st;

	if (r->memfd) {
		int seals = fcntl(r->fd, F_GET_SEALS);

		if (seals >= 0 && (seals & F_SEAL_WRITE))
			return NPUSHM_OK;
		if (fcntl(r->fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW)) {
			if (errno == EBUSY)
				return npi_fail(NPUSHM_ERR_BUSY, errno,
						"cannot seal region %llu while a writable mapping of it exists; unmap it first",
						(unsigned long long)r->id);
			return npi_fail(npi_status_from_errno(errno), errno, "cannot seal region %llu",
					(unsigned long long)r->id);
		}
		return NPUSHM_OK;
	}
	if (fstat(r->fd, &st))
		return npi_fail(NPUSHM_ERR_SYSTEM, errno, "cannot stat region %llu", (unsigned long long)r->id);
	if (!(st.st_mode & 0222))
		return NPUSHM_OK;
	if (fchmod(r->fd, st.st_mode & 0555))
		return npi_fail(NPUSHM_ERR_ACCESS, errno,
				"cannot seal region %llu: on the posix backend only its owner (uid %u) can",
				(unsigned long long)r->id, (unsigned)st.st_uid);
	return NPUSHM_OK;
}

static npushm_status_t posix_region_export_dmabuf(npushm_region_t *r, uint32_t flags, int *fdp)
{
	(void)flags;
	(void)fdp;
	return npi_fail(NPUSHM_ERR_UNSUPPORTED, EOPNOTSUPP,
			"region %llu: the posix backend cannot export dma-bufs; load the npushm module and use the kmod backend",
			(unsigned long long)r->id);
}

static npushm_status_t posix_region_info(npushm_region_t *r, npushm_region_info_t *info)
{
	bool sealed = false;
	struct stat st;
	npushm_status_t s;

	if (fstat(r->fd, &st))
		return npi_fail(NPUSHM_ERR_SYSTEM, errno, "cannot stat region %llu", (unsigned long long)r->id);
	s = posix_region_sealed(r, &sealed);
	if (s)
		return s;
	info->id = (uint64_t)st.st_ino;
	info->size = (uint64_t)st.st_size;
	info->owner_uid = st.st_uid;
	info->owner_gid = st.st_gid;
	info->names = r->memfd ? 0 : (uint32_t)st.st_nlink;
	info->flags = (sealed ? NPUSHM_REGION_SEALED : 0) | (r->writable ? NPUSHM_REGION_WRITABLE : 0);
	if (info->names)
		info->flags |= NPUSHM_REGION_NAMED | NPUSHM_REGION_PERSISTENT;
	info->mode = info->names ? (uint32_t)(st.st_mode & 0777) : 0;
	info->handles = NPUSHM_COUNT_UNKNOWN;
	info->mappings = NPUSHM_COUNT_UNKNOWN;
	info->dmabufs = NPUSHM_COUNT_UNKNOWN;
	info->mapped_bytes = UINT64_MAX;
	if (info->names)
		return npi_dir_first_name(r->dev, st.st_ino, info->name, sizeof(info->name));
	return NPUSHM_OK;
}

static npushm_status_t posix_region_write(npushm_region_t *r, const void *buf, size_t len, uint64_t off)
{
	int err = npi_pwrite_full(r->fd, buf, len, off);

	if (err == ENOSPC)
		return npi_fail(NPUSHM_ERR_NO_SPACE, err,
				"posix backend: %s has no room for region %llu (%llu bytes); free some or use a bigger tmpfs",
				r->dev->dir, (unsigned long long)r->id, (unsigned long long)r->size);
	if (err)
		return npi_fail(npi_status_from_errno(err), err,
				"cannot write %zu bytes into region %llu at offset %llu", len,
				(unsigned long long)r->id, (unsigned long long)off);
	return NPUSHM_OK;
}

/* Loads from this size on, on a tmpfs with small pages, get a word of advice. */
#define LOAD_ADVICE_SIZE (64ull << 20)

/*
 * Write through a mapping only where the tmpfs gives this file huge pages
 * (it then reports the huge page size as st_blksize): a write fault per
 * 2 MiB instead of per 4 KiB. Allocate the whole file first, so that a full
 * tmpfs is an error now and not a SIGBUS in the middle of the copy. A big
 * load on small pages logs a warning saying how to make it faster.
 */
static npushm_status_t posix_region_prepare_direct(npushm_region_t *r, bool *direct)
{
	struct stat st;

	*direct = false;
	if (fstat(r->fd, &st))
		return npi_fail(npi_status_from_errno(errno), errno, "cannot stat region %llu",
				(unsigned long long)r->id);
	if (st.st_blksize <= (blksize_t)r->dev->page_size) {
		if (r->size >= LOAD_ADVICE_SIZE)
			npi_log(NPUSHM_LOG_WARN,
				"%s gives regions %ld KiB pages, so this load copies through a buffer; a tmpfs with huge pages (mount option huge=within_size; see npushm-load(1)) loads several times faster and lets workers map 2 MiB entries",
				r->dev->dir, (long)(st.st_blksize >> 10));
		return NPUSHM_OK;
	}
	return allocate_now(r->dev, r->fd, r->size, direct);
}

/* ------------------------------------------------------------------ lists */

/* One line of /proc/PID/maps: a mapping of a file on our directory's filesystem. */
struct proc_mapping {
	const char *pid;
	unsigned long lo, hi, off, ino;
	const char *file;	/* the path column, "... (deleted)\n" included */
};

/*
 * Call @fn for every mapping of a file on the filesystem of @dev's directory
 * (dev major:minor and inode columns) in every process whose maps the caller
 * may read; the mappings of one process come together. -1 when /proc cannot
 * be read.
 */
static int each_mapping(npushm_dev_t *dev, void (*fn)(const struct proc_mapping *m, void *arg),
			void *arg)
{
	struct stat dst;
	struct dirent *de;
	char line[4096];
	DIR *proc;

	if (fstat(dev->fd, &dst) || !(proc = opendir("/proc")))
		return -1;
	while ((de = readdir(proc))) {
		char path[300];
		FILE *f;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/maps", de->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			struct proc_mapping m = { .pid = de->d_name };
			unsigned maj, mnr;
			int pos = 0;

			if (sscanf(line, "%lx-%lx %*s %lx %x:%x %lu %n", &m.lo, &m.hi, &m.off, &maj, &mnr,
				   &m.ino, &pos) != 6 || !pos)
				continue;
			if (maj != major(dst.st_dev) || mnr != minor(dst.st_dev) || !m.ino)
				continue;
			m.file = line + pos;
			fn(&m, arg);
		}
		fclose(f);
	}
	closedir(proc);
	return 0;
}

struct mapper_count {
	struct npushm_region_list *list;
	bool *seen;		/* per entry: the current process maps it */
	char pid[32];		/* the current process */
};

static void count_mapping(const struct proc_mapping *m, void *arg)
{
	struct mapper_count *c = arg;

	if (strcmp(c->pid, m->pid)) {
		snprintf(c->pid, sizeof(c->pid), "%s", m->pid);
		memset(c->seen, 0, c->list->count * sizeof(*c->seen));
	}
	for (size_t i = 0; i < c->list->count; i++) {
		npushm_region_entry_t *e = &c->list->entries[i];

		if (e->id != m->ino)
			continue;
		e->mappings++;
		e->mapped_bytes += m->hi - m->lo;
		if (!c->seen[i]) {
			c->seen[i] = true;
			e->mappers++;
		}
	}
}

/*
 * Count, for every listed region, the mappings and distinct processes that
 * map it, from /proc/PID/maps. Processes whose maps the caller may not read
 * are not counted.
 */
static void count_mappers(npushm_dev_t *dev, struct npushm_region_list *list)
{
	struct mapper_count c = { .list = list };

	c.seen = calloc(list->count ? list->count : 1, sizeof(*c.seen));
	if (!c.seen || each_mapping(dev, count_mapping, &c)) {
		for (size_t i = 0; i < list->count; i++) {
			list->entries[i].mappings = NPUSHM_COUNT_UNKNOWN;
			list->entries[i].mappers = NPUSHM_COUNT_UNKNOWN;
			list->entries[i].mapped_bytes = UINT64_MAX;
		}
	}
	free(c.seen);
}

/*
 * One mapping line of a file of our directory that has no name any more
 * ("DIR/npushm.NAME (deleted)" after a remove, "DIR/#INO (deleted)" for an
 * unnamed region): list its region, unnamed, once.
 */
static void add_unnamed(struct npushm_region_list *list, const char *pid, unsigned long lo,
			unsigned long hi, unsigned long off, unsigned long ino)
{
	npushm_region_entry_t *e = NULL;
	char path[320];
	struct stat fs;

	for (size_t i = 0; i < list->count; i++)
		if (list->entries[i].id == ino)
			e = &list->entries[i];
	if (e && e->name_count)
		return;
	if (!e) {
		e = npi_list_add(list);
		if (!e)
			return;
		e->id = ino;
		e->handles = NPUSHM_COUNT_UNKNOWN;
		e->dmabufs = NPUSHM_COUNT_UNKNOWN;
		e->pinned_bytes = UINT64_MAX;
		snprintf(path, sizeof(path), "/proc/%s", pid);
		if (!stat(path, &fs)) {
			e->owner_uid = fs.st_uid;
			e->owner_gid = fs.st_gid;
		}
	}
	/* The file itself when we may look (map_files: administrators), else what is mapped. */
	snprintf(path, sizeof(path), "/proc/%s/map_files/%lx-%lx", pid, lo, hi);
	if (!stat(path, &fs) && (unsigned long)fs.st_ino == ino) {
		e->size = (uint64_t)fs.st_size;
		e->owner_uid = fs.st_uid;
		e->owner_gid = fs.st_gid;
		if (!(fs.st_mode & 0222))
			e->flags |= NPUSHM_REGION_SEALED;
	} else if (off + (hi - lo) > e->size) {
		e->size = off + (hi - lo);
	}
}

struct unnamed_scan {
	npushm_dev_t *dev;
	struct npushm_region_list *list;
	size_t dlen, plen;
};

static void unnamed_mapping(const struct proc_mapping *m, void *arg)
{
	struct unnamed_scan *u = arg;
	const char *file = m->file;

	if (!strstr(file, " (deleted)\n") || strncmp(file, u->dev->dir, u->dlen) ||
	    file[u->dlen] != '/')
		return;
	file += u->dlen + 1;
	if (strncmp(file, u->dev->prefix, u->plen) && file[0] != '#')
		return;
	add_unnamed(u->list, m->pid, m->lo, m->hi, m->off, m->ino);
}

/*
 * Regions whose every name was removed while processes still map them (a
 * model removed under its workers) have no file name left: find them in
 * /proc/PID/maps as files of our directory marked " (deleted)".
 */
static void list_unnamed_mapped(npushm_dev_t *dev, struct npushm_region_list *list)
{
	struct unnamed_scan u = { .dev = dev, .list = list, .dlen = strlen(dev->dir),
				  .plen = strlen(dev->prefix) };

	while (u.dlen > 1 && dev->dir[u.dlen - 1] == '/')
		u.dlen--;
	each_mapping(dev, unnamed_mapping, &u);
}

static npushm_status_t posix_list_regions(npushm_dev_t *dev, struct npushm_region_list *list)
{
	npushm_status_t st = npi_dir_list_names(dev, list);

	if (st)
		return st;
	list_unnamed_mapped(dev, list);
	for (size_t i = 0; i < list->count; i++) {
		npushm_region_entry_t *e = &list->entries[i];

		/* No write bits: sealed (unnamed ones: add_unnamed() knew or not). */
		if (e->name_count && !(e->names[0].mode & 0222))
			e->flags |= NPUSHM_REGION_SEALED;
		e->mappings = e->mappers = 0;
		e->mapped_bytes = 0;
		snprintf(e->provider, sizeof(e->provider), "shm");
	}
	count_mappers(dev, list);
	return NPUSHM_OK;
}

const struct npi_backend_ops npi_posix_ops = {
	.name = "posix",
	.dev_open = posix_dev_open,
	.dev_close = posix_dev_close,
	.dev_query = posix_dev_query,
	.region_alloc = posix_region_alloc,
	.region_open = posix_region_open,
	.region_import = posix_region_import,
	.name_unlink = posix_name_unlink,
	.region_publish = posix_region_publish,
	.region_seal = posix_region_seal,
	.region_sealed = posix_region_sealed,
	.region_export_dmabuf = posix_region_export_dmabuf,
	.region_info = posix_region_info,
	.region_write = posix_region_write,
	.region_prepare_direct = posix_region_prepare_direct,
	.list_regions = posix_list_regions,
};
