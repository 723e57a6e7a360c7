/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * internal.h - what libnpushm's source files share and users never see.
 *
 * The handles behind the opaque types, the backend interface every backend
 * implements (backend_posix.c, backend_kmod.c; what they share, a directory
 * of region files, is backend_dir.c), and the error helpers: every
 * failing path calls npi_fail() exactly once, which records the status, the
 * errno and a message in thread-local storage and returns the status.
 * Functions named npi_* are hidden (-fvisibility=hidden); the public ones
 * are in include/npushm.h.
 */
#ifndef NPUSHM_INTERNAL_H
#define NPUSHM_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/stat.h>

#include "npushm.h"

#define NPI_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* ---------------------------------------------------------------- errors */

/* Record a failure (@err: errno or 0) and return @st. */
npushm_status_t npi_fail(npushm_status_t st, int err, const char *fmt, ...) NPI_PRINTF(3, 4);
/* Map an errno to the closest status. */
npushm_status_t npi_status_from_errno(int err);
/* Prefix the current thread's error message with "prefix: ". */
void npi_error_prefix(const char *fmt, ...) NPI_PRINTF(1, 2);
/* Save / restore the thread's error across cleanup calls that may fail. */
struct npi_saved_error {
	npushm_status_t status;
	int err;
	char msg[1024];
};
void npi_error_save(struct npi_saved_error *s);
npushm_status_t npi_error_restore(const struct npi_saved_error *s);

/* ----------------------------------------------------------- placement */

/*
 * model_nodes.c: while >= 0, the backends size a new region (the system
 * call that allocates its memory, and nothing else) with the calling
 * thread's memory policy preferring this NUMA node; -1 otherwise. Per
 * thread.
 */
extern __thread int npi_alloc_node;
/* Run by the backends around that system call: false when the kernel refused the policy. */
bool npi_alloc_node_bind(void);
void npi_alloc_node_unbind(void);

/* ------------------------------------------------------------------- log */

void npi_log(npushm_log_level_t level, const char *fmt, ...) NPI_PRINTF(2, 3);

/* --------------------------------------------------------------- backend */

struct npushm_region;
struct npushm_region_list;

struct npi_backend_ops {
	const char *name;
	npushm_status_t (*dev_open)(npushm_dev_t *dev);
	void (*dev_close)(npushm_dev_t *dev);
	npushm_status_t (*dev_query)(npushm_dev_t *dev, npushm_dev_info_t *info);
	/* Fill r->fd, r->id, r->size, r->writable. */
	npushm_status_t (*region_alloc)(npushm_dev_t *dev, uint64_t size, uint32_t flags,
					npushm_region_t *r);
	npushm_status_t (*region_open)(npushm_dev_t *dev, const char *name, uint32_t flags,
				       npushm_region_t *r);
	/* @r->fd is already a private duplicate; check it and fill the rest. */
	npushm_status_t (*region_import)(npushm_dev_t *dev, npushm_region_t *r);
	npushm_status_t (*name_unlink)(npushm_dev_t *dev, const char *name);
	npushm_status_t (*region_publish)(npushm_region_t *r, const char *name, uint32_t mode,
					  uint32_t flags);
	npushm_status_t (*region_seal)(npushm_region_t *r);
	/* Is the region sealed? (Used before writable maps.) */
	npushm_status_t (*region_sealed)(npushm_region_t *r, bool *sealed);
	npushm_status_t (*region_export_dmabuf)(npushm_region_t *r, uint32_t flags, int *fdp);
	npushm_status_t (*region_info)(npushm_region_t *r, npushm_region_info_t *info);
	/*
	 * Loader helper: copy @len bytes to offset @off through the handle;
	 * NULL when the backend can only be written through a mapping.
	 */
	npushm_status_t (*region_write)(npushm_region_t *r, const void *buf, size_t len,
					uint64_t off);
	/*
	 * Loader helper, for backends with region_write: should the loader
	 * write through a mapping instead (*@direct)? Only when that is cheap,
	 * and then the region's memory is allocated here, so that writing
	 * through the mapping cannot fault for lack of room. NULL: never.
	 */
	npushm_status_t (*region_prepare_direct)(npushm_region_t *r, bool *direct);
	npushm_status_t (*list_regions)(npushm_dev_t *dev, struct npushm_region_list *list);
};

extern const struct npi_backend_ops npi_posix_ops;
extern const struct npi_backend_ops npi_kmod_ops;
/* Is an npushm instance mounted where the kmod backend looks ($NPUSHM_DIR)? */
bool npi_kmod_mounted(void);
/* /dev/npushm, open read-only, if the loaded module has @feature (an
 * NPUSHM_FEAT_* bit); @what names the objects in errors ("watches"). */
npushm_status_t npi_ctl_open(uint64_t feature, const char *what, int *ctlp);

struct npushm_dev {
	atomic_int refs;	/* the caller's, plus one per region handle */
	npushm_backend_t backend;
	const struct npi_backend_ops *ops;
	int fd;			/* the directory of region files (both backends) */
	char dir[256];		/* its path, for messages */
	dev_t dir_dev;		/* its st_dev */
	const char *prefix;	/* of region file names: posix "npushm.", kmod "" */
	int ctl;		/* kmod: /dev/npushm, -1 when it cannot be opened */
	uint64_t page_size;
	uint64_t chunk_size;	/* kmod: the pool's allocation unit */
};

struct npushm_region {
	npushm_dev_t *dev;	/* a reference: the device lives as long as its regions */
	int fd;
	uint64_t id;
	uint64_t size;
	bool writable;
	bool memfd;		/* posix: a memfd (unpublishable) rather than a tmpfs file */
	dev_t st_dev;		/* posix: identity of the tmpfs file */
	ino_t st_ino;
	pthread_mutex_t maps_lock;	/* guards maps: the mappings made through this handle */
	void **maps;		/* still mapped, so unmap refuses any other address */
	size_t nmaps, maps_cap;
};

/* An empty region handle holding a device reference; free_shell closes its fd. */
npushm_region_t *npi_region_new(npushm_dev_t *dev);
void npi_region_free_shell(npushm_region_t *r);
void npi_dev_ref(npushm_dev_t *dev);
void npi_dev_unref(npushm_dev_t *dev);

/* ----------------------------------------------------------- region lists */

struct npushm_region_list {
	npushm_region_entry_t *entries;
	size_t count, cap;
	/* Names are allocated per entry; freed with the list. */
};

/* Append an entry (names copied later with npi_list_add_name). */
npushm_region_entry_t *npi_list_add(struct npushm_region_list *list);
npushm_status_t npi_list_add_name(npushm_region_entry_t *e, const char *name, uint32_t mode,
				  uint32_t uid, uint32_t gid, bool persistent);

/* kmod_netlink.c: the module's view, by region id */
struct npi_kmod_region {
	uint64_t id, size, mapped_bytes, pinned_bytes;
	uint32_t owner_uid, owner_gid, mode, names, handles, mappings, dmabufs, mappers, dev;
	bool sealed, anonymous;
	char provider[NPUSHM_PROVIDER_MAX], device[NPUSHM_PROVIDER_MAX];	/* "" if not said */
};
struct npi_kmod_stats {
	uint64_t capacity, in_use, regions, uid_quota, uid_in_use, orphan_pinned;
};
/* Every region the caller may see (*@regions: malloc'd array, *@n entries). */
npushm_status_t npi_kmod_netlink_regions(struct npi_kmod_region **regions, size_t *n);
npushm_status_t npi_kmod_netlink_stats(struct npi_kmod_stats *stats);

/* backend_dir.c: a directory of region files, names as links */
npushm_status_t npi_dir_open(npushm_dev_t *dev, const char *dir);
npushm_status_t npi_dir_file_name(const npushm_dev_t *dev, const char *name, char *out, size_t outsz);
npushm_status_t npi_dir_scan(npushm_dev_t *dev,
			     npushm_status_t (*fn)(void *arg, const char *name, const struct stat *st),
			     void *arg);
/* A new unnamed file (O_TMPFILE, mode 0600) in the directory. */
npushm_status_t npi_dir_tmpfile(npushm_dev_t *dev, int *fdp);
npushm_status_t npi_dir_region_open(npushm_dev_t *dev, const char *name, uint32_t flags, int *fdp);
npushm_status_t npi_dir_name_unlink(npushm_dev_t *dev, const char *name);
/* The uid owning the file of @name, read without opening it (one we may not
 * read too); -1 when there is none (no such name, or one too long). */
int npi_dir_name_owner(const npushm_dev_t *dev, const char *name, uint32_t *uid);
/* Give the file of @r the mode @mode, then link it as @name. */
npushm_status_t npi_dir_publish(npushm_region_t *r, const char *name, uint32_t mode, uint32_t flags);
/* The region's preferred name in the directory (a model name before a hash alias). */
npushm_status_t npi_dir_first_name(npushm_dev_t *dev, ino_t ino, char *best, size_t size);
/* One entry per region file, with all its names; counts unknown. */
npushm_status_t npi_dir_list_names(npushm_dev_t *dev, struct npushm_region_list *list);

/* ------------------------------------------------------------------ names */

/* 0 if @name follows the rules, else a NAME failure recorded. */
npushm_status_t npi_name_check(const char *name);

/* ------------------------------------------------------------------ utils */

/* Read / write exactly @len bytes at @off, retrying EINTR and short I/O. */
int npi_pread_full(int fd, void *buf, size_t len, uint64_t off, size_t *got);
int npi_pwrite_full(int fd, const void *buf, size_t len, uint64_t off);
/* Hex of @n bytes into @out (2n+1 bytes). */
void npi_hex(const uint8_t *in, size_t n, char *out);
/* Round @v up to a multiple of the power of two @a; false on overflow. */
static inline bool npi_align_up(uint64_t v, uint64_t a, uint64_t *out)
{
	if (v > UINT64_MAX - (a - 1))
		return false;
	*out = (v + a - 1) & ~(a - 1);
	return true;
}

#endif /* NPUSHM_INTERNAL_H */
