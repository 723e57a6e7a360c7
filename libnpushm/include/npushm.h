/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm.h - libnpushm: shared device-memory regions and shared model weights.
 *
 * Tutorial
 * --------
 * A *region* is a block of shared memory with a file-descriptor handle. Make
 * one, map it, share it:
 *
 *	npushm_dev_t *dev;
 *	npushm_region_t *r;
 *	void *p;
 *	if (npushm_dev_open(NPUSHM_BACKEND_AUTO, &dev) != NPUSHM_OK)
 *		fprintf(stderr, "%s\n", npushm_last_error());
 *	npushm_region_alloc(dev, 1 << 20, 0, &r);          // zeroed, 1 MiB
 *	npushm_region_map(r, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, &p);
 *	npushm_region_send(r, unix_socket);                 // or publish a name:
 *	npushm_region_publish(r, "kv-cache-0", 0600, NPUSHM_PUBLISH_PERSISTENT);
 *	...
 *	npushm_region_unmap(r, p);
 *	npushm_region_close(r);
 *	npushm_dev_close(dev);
 *
 * The peer gets it with npushm_region_recv(dev, sock, &r) or
 * npushm_region_open(dev, "kv-cache-0", 0, &r).
 *
 * A *model* is a safetensors file loaded once into a sealed region and
 * published under a name; any number of processes attach it read-only:
 *
 *	npushm_model_load(dev, "bert.safetensors", "bert", NULL, NULL);
 *	npushm_model_t *m;
 *	npushm_tensor_t t;
 *	npushm_model_attach("bert", &m);                     // O(1) in model size
 *	npushm_model_tensor_find(m, "pooler.dense.weight", &t);
 *	const float *w = t.data;                             // t.shape, t.strides
 *	npushm_model_detach(m);
 *
 * Backends. Both keep regions as files in a directory, a name being a link.
 * NPUSHM_BACKEND_KMOD uses an instance of the npushm kernel module's
 * filesystem ($NPUSHM_DIR, default /run/npushm; include/uapi/linux/npushm.h).
 * NPUSHM_BACKEND_POSIX keeps regions in tmpfs (/dev/shm, or $NPUSHM_SHM_DIR)
 * and works without the module, with weaker guarantees (see
 * docs/libnpushm.md, "POSIX backend"): its seal can be undone by the
 * region's owner or root and ignores pins, and it has no dma-buf export, no
 * handle or pin counts and no quotas. NPUSHM_BACKEND_AUTO picks the backend
 * named by the environment variable NPUSHM_BACKEND ("kmod" or "posix") when
 * set, else kmod when an npushm filesystem is mounted at $NPUSHM_DIR, else
 * posix.
 *
 * Errors. Every function that can fail returns npushm_status_t. On failure,
 * npushm_last_error() returns a sentence for a human (what was wrong and what
 * to do) and npushm_last_errno() the underlying errno, both per thread and
 * valid until the thread's next failing libnpushm call. npushm_strerror()
 * names a status.
 *
 * Diagnostics. The library never prints unless asked: install a callback with
 * npushm_log_set(), or set NPUSHM_LOG=error|warn|info|debug to have messages
 * written to stderr (another value is said there once, and logs nothing).
 *
 * Ownership. Handles (npushm_dev_t, npushm_region_t, npushm_model_t, lists)
 * are owned by the caller and freed with their close/free/detach function,
 * which all accept NULL. A region handle keeps its device open, so the
 * device may be closed before its regions. Strings and arrays passed in are
 * only read during the call. Pointers handed out (tensor names, shapes,
 * data, list entries) point into memory owned by the handle they came from
 * and stay valid until that handle is freed; tensor data is read-only
 * (writing it faults). The npushm_model_t behind npushm_model_attach() does
 * not need the device afterwards.
 *
 * Thread safety. The library has no global mutable state except the log
 * settings (set them before starting threads) and per-thread error messages.
 * A device, region or model handle may be used by several threads at once;
 * closing it while another thread uses it is the caller's bug. Lists are
 * immutable. npushm_model_t and DLPack tensors are reference counted: the
 * mapping lives until the model is detached and every DLPack tensor made from
 * it is deleted, in any order, from any thread.
 */
#ifndef NPUSHM_H
#define NPUSHM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(NPUSHM_BUILDING_LIBRARY)
#define NPUSHM_API __attribute__((visibility("default")))
#else
#define NPUSHM_API
#endif

#define NPUSHM_VERSION_MAJOR 1
#define NPUSHM_VERSION_MINOR 8	/* the newest version node: NPUSHM_1.8 */

/* ------------------------------------------------------------------ status */

typedef enum npushm_status {
	NPUSHM_OK = 0,
	NPUSHM_ERR_INVALID,	/* bad argument, flag or size (EINVAL) */
	NPUSHM_ERR_NO_MEMORY,	/* the process ran out of memory */
	NPUSHM_ERR_NO_SPACE,	/* the pool (kmod) or the tmpfs (posix) is full */
	NPUSHM_ERR_QUOTA,	/* the caller's uid is over its quota (kmod) */
	NPUSHM_ERR_NOT_FOUND,	/* no such name, model or tensor */
	NPUSHM_ERR_EXISTS,	/* the name is already published */
	NPUSHM_ERR_ACCESS,	/* permission denied */
	NPUSHM_ERR_SEALED,	/* the region is sealed against this */
	NPUSHM_ERR_BUSY,	/* e.g. sealing while a writable mapping exists */
	NPUSHM_ERR_NAME,	/* the name is empty, too long or has bad bytes */
	NPUSHM_ERR_UNSUPPORTED,	/* this backend cannot do that */
	NPUSHM_ERR_NO_DEVICE,	/* the chosen backend is not available */
	NPUSHM_ERR_IO,		/* reading or writing a file failed */
	NPUSHM_ERR_FORMAT,	/* the safetensors file is malformed */
	NPUSHM_ERR_CORRUPT,	/* a region's manifest is missing or invalid */
	NPUSHM_ERR_PROTOCOL,	/* unexpected message on a socket, peer gone */
	NPUSHM_ERR_SYSTEM,	/* another system error: see npushm_last_errno() */
} npushm_status_t;

/* A short constant description of @status ("no such name or tensor"). */
NPUSHM_API const char *npushm_strerror(npushm_status_t status);
/* The calling thread's last error message, "" if none. Never NULL. */
NPUSHM_API const char *npushm_last_error(void);
/* The errno behind the calling thread's last error, 0 if none. */
NPUSHM_API int npushm_last_errno(void);

/* --------------------------------------------------------------------- log */

typedef enum npushm_log_level {
	NPUSHM_LOG_NONE = 0,
	NPUSHM_LOG_ERROR,
	NPUSHM_LOG_WARN,
	NPUSHM_LOG_INFO,
	NPUSHM_LOG_DEBUG,
} npushm_log_level_t;

typedef void (*npushm_log_fn)(void *arg, npushm_log_level_t level, const char *msg);

/*
 * Send messages up to @level to @fn (NULL: back to the default, which writes
 * to stderr only at the level named by $NPUSHM_LOG, none when unset).
 * Not thread-safe: call before starting threads.
 */
NPUSHM_API void npushm_log_set(npushm_log_fn fn, void *arg, npushm_log_level_t level);

/* ------------------------------------------------------------------ device */

typedef enum npushm_backend {
	NPUSHM_BACKEND_AUTO = 0,
	NPUSHM_BACKEND_KMOD,
	NPUSHM_BACKEND_POSIX,
} npushm_backend_t;

/* Feature bits of npushm_dev_info_t.features. */
#define NPUSHM_FEATURE_NAMES	(1ULL << 0)	/* publish / open / unlink by name */
#define NPUSHM_FEATURE_SEAL	(1ULL << 1)	/* npushm_region_seal() */
#define NPUSHM_FEATURE_DMABUF	(1ULL << 2)	/* npushm_region_export_dmabuf() */
#define NPUSHM_FEATURE_GUP	(1ULL << 3)	/* mappings can be RDMA-registered */
#define NPUSHM_FEATURE_NETLINK	(1ULL << 4)	/* region listing with process counts */
#define NPUSHM_FEATURE_PINS	(1ULL << 5)	/* pinned bytes reported; seals refuse pins (1.1) */
#define NPUSHM_FEATURE_WATCH	(1ULL << 6)	/* npushm_watch_open() works (npushm_watch.h, 1.2) */
#define NPUSHM_FEATURE_SEAL_ENFORCED (1ULL << 32) /* nobody can undo a seal */
/* Set by no backend since 1.1 (names are files on both, per mount namespace and persistent): */
#define NPUSHM_FEATURE_NAMESPACED (1ULL << 33)	/* names were per IPC namespace */
#define NPUSHM_FEATURE_NAME_LIFETIME (1ULL << 34) /* non-persistent names died with the region */

typedef struct npushm_dev npushm_dev_t;

typedef struct npushm_dev_info {
	npushm_backend_t backend;
	uint32_t abi_version;	/* module ABI (kmod), 0 (posix) */
	uint64_t features;	/* NPUSHM_FEATURE_* */
	uint64_t capacity;	/* bytes: the pool (kmod), the tmpfs size (posix) */
	uint64_t in_use;	/* bytes allocated from it */
	uint64_t page_size;	/* sizes are rounded up to this */
	uint64_t chunk_size;	/* contiguous allocation unit (kmod), page size (posix) */
	uint64_t uid_quota;	/* per-uid byte limit, 0: none */
	uint64_t uid_in_use;	/* bytes held by the caller's uid (kmod), 0 (posix) */
	uint64_t regions;	/* live regions (kmod); named regions (posix) */
	uint32_t max_name_len;	/* the longest name this backend takes: NPUSHM_NAME_MAX
				   (kmod), 248 (posix); each '/' or '%' counts 3 */
	uint32_t reserved[7];
} npushm_dev_info_t;

/*
 * Open a backend. AUTO: see the tutorial. NPUSHM_ERR_NO_DEVICE when the
 * chosen backend is unusable (module not loaded, ABI mismatch, no tmpfs).
 * @devp [out]: the handle, freed with npushm_dev_close().
 */
NPUSHM_API npushm_status_t npushm_dev_open(npushm_backend_t backend, npushm_dev_t **devp);
NPUSHM_API void npushm_dev_close(npushm_dev_t *dev);
NPUSHM_API npushm_backend_t npushm_dev_backend(const npushm_dev_t *dev);
/* "kmod", "posix" or "auto". */
NPUSHM_API const char *npushm_backend_name(npushm_backend_t backend);
/* @info [out]: filled on success. */
NPUSHM_API npushm_status_t npushm_dev_query(npushm_dev_t *dev, npushm_dev_info_t *info);

/* ------------------------------------------------------------------ region */

typedef struct npushm_region npushm_region_t;

/* npushm_region_alloc() flags */
#define NPUSHM_ALLOC_LAZY	(1U << 0)	/* posix: do not preallocate the pages */

/* npushm_region_open() flags */
#define NPUSHM_OPEN_WRITE	(1U << 0)	/* read-write handle; else read-only */

/* npushm_region_publish() flags */
#define NPUSHM_PUBLISH_PERSISTENT	(1U << 0)	/* the name keeps the region alive (since
							 * 1.1 every name does: accepted, implied) */
#define NPUSHM_PUBLISH_REPLACE		(1U << 1)	/* since 1.2: if @name is taken, move it to
							 * this region atomically (rename(2)) */

/* npushm_region_map() protections */
#define NPUSHM_PROT_READ	(1U << 0)
#define NPUSHM_PROT_WRITE	(1U << 1)

/* npushm_region_export_dmabuf() flags */
#define NPUSHM_EXPORT_WRITE	(1U << 0)	/* else a read-only dma-buf */

/* npushm_region_info_t.flags */
#define NPUSHM_REGION_SEALED	(1U << 0)
#define NPUSHM_REGION_PERSISTENT (1U << 1)
#define NPUSHM_REGION_NAMED	(1U << 2)
#define NPUSHM_REGION_WRITABLE	(1U << 3)	/* this handle is read-write */

/* A count the backend cannot tell (posix: handles, mappings, dma-bufs). */
#define NPUSHM_COUNT_UNKNOWN	UINT32_MAX

/* Bytes of npushm_region_entry_t's provider and device names, NUL included. */
#define NPUSHM_PROVIDER_MAX	32

/* Names: 1..NPUSHM_NAME_MAX bytes of printable ASCII other than space; a
 * backend may take fewer (npushm_dev_info_t.max_name_len, else NAME). */
#define NPUSHM_NAME_MAX		255

typedef struct {
	uint64_t id;		/* kmod: region id; posix: tmpfs inode number */
	uint64_t size;		/* bytes */
	uint32_t flags;		/* NPUSHM_REGION_* */
	uint32_t owner_uid;
	uint32_t owner_gid;
	uint32_t mode;		/* permission bits of the first name, 0 if unnamed */
	uint32_t handles;	/* open handles, or NPUSHM_COUNT_UNKNOWN */
	uint32_t mappings;	/* mappings, or NPUSHM_COUNT_UNKNOWN */
	uint32_t dmabufs;	/* dma-buf exports, or NPUSHM_COUNT_UNKNOWN */
	uint32_t names;		/* names referring to the region */
	uint64_t mapped_bytes;	/* bytes covered by mappings, or UINT64_MAX */
	char name[NPUSHM_NAME_MAX + 1];	/* the first name, "" if unnamed */
} npushm_region_info_t;

/*
 * Allocate a zeroed region of at least @size bytes (> 0; rounded up to the
 * page size). @flags: NPUSHM_ALLOC_*. @rp [out]: read-write handle.
 */
NPUSHM_API npushm_status_t npushm_region_alloc(npushm_dev_t *dev, uint64_t size, uint32_t flags,
					       npushm_region_t **rp);
/*
 * Open the region published as @name. @flags: NPUSHM_OPEN_WRITE for a
 * read-write handle. NOT_FOUND, ACCESS (mode/owner forbid it), NAME.
 */
NPUSHM_API npushm_status_t npushm_region_open(npushm_dev_t *dev, const char *name, uint32_t flags,
					      npushm_region_t **rp);
/*
 * Make a handle from a region file descriptor obtained elsewhere. @fd is
 * duplicated (the caller keeps its own). INVALID if @fd is no region of
 * this backend.
 */
NPUSHM_API npushm_status_t npushm_region_import_fd(npushm_dev_t *dev, int fd, npushm_region_t **rp);
/* Close the handle. Existing mappings stay valid until unmapped. NULL ok. */
NPUSHM_API void npushm_region_close(npushm_region_t *r);

NPUSHM_API uint64_t npushm_region_size(const npushm_region_t *r);
NPUSHM_API uint64_t npushm_region_id(const npushm_region_t *r);
/* The handle's file descriptor, owned by @r (do not close it). */
NPUSHM_API int npushm_region_fd(const npushm_region_t *r);
NPUSHM_API bool npushm_region_writable(const npushm_region_t *r);

/*
 * Map the whole region shared. @prot: NPUSHM_PROT_*. WRITE needs a
 * read-write handle (ACCESS) and an unsealed region (SEALED).
 * @addrp [out]: the mapping; unmap with npushm_region_unmap().
 */
NPUSHM_API npushm_status_t npushm_region_map(npushm_region_t *r, uint32_t prot, void **addrp);
/* Unmap @addr, a mapping npushm_region_map() made through @r; INVALID, with
 * nothing unmapped, for any other address (one unmapped already, say). A
 * mapping left when @r is closed is unmapped with munmap(2). */
NPUSHM_API npushm_status_t npushm_region_unmap(npushm_region_t *r, void *addr);

/*
 * Publish the region as @name with permission bits @mode (subset of 0666).
 * Needs a read-write handle unless the region is sealed. EXISTS if taken,
 * unless NPUSHM_PUBLISH_REPLACE: then the name moves to this region in one
 * step (no moment without it; ACCESS if the caller may not replace it;
 * the move goes through a hidden link, and a replace removes the hidden
 * links that processes of its pid namespace killed mid-move left behind).
 * The name is a link to the region's file: it keeps the region alive until
 * npushm_name_unlink(), the mode is the region's (the last publish sets
 * it; one that fails leaves it), and only the region's owner may add a
 * name (ACCESS otherwise).
 * A region whose last name was removed cannot be named again (UNSUPPORTED).
 */
NPUSHM_API npushm_status_t npushm_region_publish(npushm_region_t *r, const char *name,
						 uint32_t mode, uint32_t flags);
/*
 * Remove @name: its owner, or the directory's rules (the default instance and
 * /dev/shm are sticky: owner or root). The region lives on while used.
 */
NPUSHM_API npushm_status_t npushm_name_unlink(npushm_dev_t *dev, const char *name);
/*
 * Seal the region against writing, forever: no writable mapping can be made
 * afterwards. Needs a read-write handle. kmod: BUSY while a writable mapping,
 * a writable export or a pin (an RDMA MR, O_DIRECT in flight) exists; no
 * writer of any kind afterwards. Sealing twice is fine.
 */
NPUSHM_API npushm_status_t npushm_region_seal(npushm_region_t *r);
/*
 * Export the region as a dma-buf (kmod only). @flags: NPUSHM_EXPORT_*.
 * @fdp [out]: the dma-buf fd, owned by the caller (close it).
 */
NPUSHM_API npushm_status_t npushm_region_export_dmabuf(npushm_region_t *r, uint32_t flags, int *fdp);
/* @info [out]. */
NPUSHM_API npushm_status_t npushm_region_info(npushm_region_t *r, npushm_region_info_t *info);

/*
 * Pass a region to the process at the other end of the connected Unix
 * socket @sock (SOCK_STREAM or SOCK_SEQPACKET) with SCM_RIGHTS; one small
 * message carries the handle, its size and the backend. The receiver calls
 * npushm_region_recv() on its end; its handle has the same access mode.
 * Blocking; EINTR is retried. PROTOCOL when the peer closed or sent
 * something else.
 */
NPUSHM_API npushm_status_t npushm_region_send(npushm_region_t *r, int sock);
NPUSHM_API npushm_status_t npushm_region_recv(npushm_dev_t *dev, int sock, npushm_region_t **rp);

/* Check @name against the naming rules; NAME with a message if bad. */
NPUSHM_API npushm_status_t npushm_name_check(const char *name);

/* ------------------------------------------------------------ region lists */

typedef struct npushm_name_entry {
	const char *name;
	uint32_t mode;
	uint32_t uid;
	uint32_t gid;
	bool persistent;
} npushm_name_entry_t;

typedef struct npushm_region_entry {
	uint64_t id;
	uint64_t size;
	uint32_t flags;		/* NPUSHM_REGION_* (WRITABLE never set) */
	uint32_t owner_uid;
	uint32_t owner_gid;
	uint32_t handles;	/* or NPUSHM_COUNT_UNKNOWN */
	uint32_t mappings;	/* or NPUSHM_COUNT_UNKNOWN */
	uint32_t dmabufs;	/* or NPUSHM_COUNT_UNKNOWN */
	uint32_t mappers;	/* distinct processes mapping it, or NPUSHM_COUNT_UNKNOWN */
	uint64_t mapped_bytes;	/* or UINT64_MAX */
	size_t name_count;
	const npushm_name_entry_t *names;
	/* Added in 1.1: bytes pinned by GUP (RDMA MRs, ...), or UINT64_MAX (posix). */
	uint64_t pinned_bytes;
	/*
	 * Added in 1.4: where its memory comes from: kmod, the provider of the
	 * module instance it lives in ("sysmem" unless the instance was mounted
	 * with -o provider=...), "" from a module that does not say; posix,
	 * "shm" (POSIX shared memory). And that provider's device (a PCI address,
	 * a NUMA node), "" for none. NUL-terminated.
	 */
	char provider[NPUSHM_PROVIDER_MAX];
	char device[NPUSHM_PROVIDER_MAX];
} npushm_region_entry_t;

typedef struct npushm_region_list npushm_region_list_t;

/*
 * The regions the caller can see: the named regions of the backend's
 * directory, with counts from the module on kmod (generic netlink for the
 * caller's own regions, every region for CAP_SYS_ADMIN; the info ioctl for
 * the others it may read), plus its own unnamed kmod regions; on posix from
 * /proc/PID/maps of the processes the caller may read, which also show the
 * regions of the directory whose names were all removed while they are
 * still mapped (listed without names, name_count 0, as kmod's unnamed
 * ones are). @listp [out].
 */
NPUSHM_API npushm_status_t npushm_dev_list_regions(npushm_dev_t *dev, npushm_region_list_t **listp);
NPUSHM_API size_t npushm_region_list_count(const npushm_region_list_t *list);
NPUSHM_API const npushm_region_entry_t *npushm_region_list_at(const npushm_region_list_t *list, size_t i);
NPUSHM_API void npushm_region_list_free(npushm_region_list_t *list);

/* ------------------------------------------------------------------ models */

typedef enum npushm_dtype {
	NPUSHM_DTYPE_INVALID = 0,
	NPUSHM_DTYPE_BOOL,
	NPUSHM_DTYPE_U8,
	NPUSHM_DTYPE_I8,
	NPUSHM_DTYPE_F8_E5M2,
	NPUSHM_DTYPE_F8_E4M3,
	NPUSHM_DTYPE_I16,
	NPUSHM_DTYPE_U16,
	NPUSHM_DTYPE_F16,
	NPUSHM_DTYPE_BF16,
	NPUSHM_DTYPE_I32,
	NPUSHM_DTYPE_U32,
	NPUSHM_DTYPE_F32,
	NPUSHM_DTYPE_F64,
	NPUSHM_DTYPE_I64,
	NPUSHM_DTYPE_U64,
	NPUSHM_DTYPE_COUNT_,
} npushm_dtype_t;

/* The safetensors spelling ("F32"), "?" if invalid. */
NPUSHM_API const char *npushm_dtype_name(npushm_dtype_t dtype);
/* Bytes per element, 0 if invalid. */
NPUSHM_API size_t npushm_dtype_size(npushm_dtype_t dtype);

/* Tensor data in a model is aligned to this many bytes. */
#define NPUSHM_TENSOR_ALIGN	64
/* At most this many dimensions per tensor. */
#define NPUSHM_TENSOR_MAX_DIMS	32
/* Names starting with this are the store's content-hash aliases. */
#define NPUSHM_HASH_ALIAS_PREFIX "xxh3:"

typedef struct npushm_tensor {
	const char *name;	/* NUL-terminated */
	size_t name_len;
	npushm_dtype_t dtype;
	uint32_t ndim;		/* 0 for a scalar */
	const int64_t *shape;	/* ndim entries */
	const int64_t *strides;	/* ndim entries, in elements, C order */
	const void *data;	/* NPUSHM_TENSOR_ALIGN-aligned, read-only */
	uint64_t nbytes;
	uint64_t offset;	/* of data in the region */
	size_t index;		/* position in the name-sorted table (npushm_model_tensor_at) */
} npushm_tensor_t;

typedef struct npushm_model npushm_model_t;

typedef struct npushm_model_info {
	uint8_t hash[16];	/* content hash of the source file (and of the packed layouts
				 * if any), big-endian (docs/weights.md) */
	char hash_hex[33];
	uint64_t source_size;	/* bytes of the source file */
	uint64_t region_size;
	uint64_t region_id;
	uint64_t data_size;	/* bytes of tensor data */
	size_t tensor_count;
	const char *metadata_json; /* safetensors __metadata__ as JSON, "{}" if none */
} npushm_model_info_t;

typedef enum npushm_load_stage {
	NPUSHM_LOAD_PARSE = 1,	/* header read and validated */
	NPUSHM_LOAD_COPY,	/* done/total: bytes of the file streamed */
	NPUSHM_LOAD_SEAL,	/* manifest written, sealing */
	NPUSHM_LOAD_PUBLISH,	/* sealed, publishing the name */
	NPUSHM_LOAD_DONE,
} npushm_load_stage_t;

/* Called from the loading thread; must not call back into the same load. */
typedef void (*npushm_progress_fn)(void *arg, npushm_load_stage_t stage, uint64_t done,
				   uint64_t total);

/* npushm_load_opts_t.flags */
#define NPUSHM_LOAD_NO_DEDUP	(1U << 0)	/* always make a new copy */
#define NPUSHM_LOAD_PACKED_ONLY	(1U << 3)	/* since 1.7, with a packer: a tensor given a
						 * layout is stored only in that layout (no
						 * plain copy; see npushm_model_load) */
#define NPUSHM_LOAD_REPLACE	(1U << 1)	/* since 1.2: a name holding other content is
						 * moved to the new model atomically */
#define NPUSHM_LOAD_PER_NODE	(1U << 2)	/* since 1.5: one sealed copy per NUMA node
						 * with CPUs (see npushm_model_load) */

/* Bytes of a packed layout's tag, NUL included. */
#define NPUSHM_LAYOUT_TAG_MAX	256

/*
 * Since 1.3: packed layouts, extra copies of tensors in the layout a GEMM
 * library wants (libnptensor's npt_pack_*), made once by the loader and
 * stored in the model next to the plain tensors. For each tensor, @size
 * says how many bytes its layout takes (0: none) and writes its tag
 * (NUL-terminated, < NPUSHM_LAYOUT_TAG_MAX bytes; the tensor's data is not
 * readable yet, t->data is NULL); after the copy, @pack writes the layout
 * into @dst (64-byte aligned, @nbytes) from @t (data readable), returning
 * 0, or -1 with a reason in @why. Called from the loading thread.
 */
typedef struct npushm_packer {
	uint64_t (*size)(void *arg, const npushm_tensor_t *t, char tag[NPUSHM_LAYOUT_TAG_MAX]);
	int (*pack)(void *arg, const npushm_tensor_t *t, const char *tag, void *dst,
		    uint64_t nbytes, char *why, size_t why_size);
	void *arg;
} npushm_packer_t;

typedef struct npushm_load_opts {
	uint32_t mode;		/* permission bits of the name, 0: 0640 */
	uint32_t flags;		/* NPUSHM_LOAD_* */
	npushm_progress_fn progress;	/* may be NULL */
	void *progress_arg;
	/* since 1.3, may be NULL: packed layouts to store (the model's hash then
	 * covers them; see npushm_model_load) */
	const npushm_packer_t *packer;
	uint32_t reserved[6];	/* zero */
} npushm_load_opts_t;

typedef struct npushm_load_result {
	uint8_t hash[16];
	char hash_hex[33];
	uint64_t region_id;
	uint64_t region_size;
	uint64_t source_size;
	size_t tensor_count;
	bool deduplicated;	/* an identical published copy of the caller's was reused */
	bool already_loaded;	/* since 1.2: @name already held this content; nothing done */
} npushm_load_result_t;

/*
 * Load the safetensors file @path and publish it as @name (persistent).
 * Validates the header fully (FORMAT, with the file and the problem in the
 * message), streams the tensors into one region at 64-byte alignment with
 * the manifest, hashes the file (XXH3-128 over its 8 MiB blocks' XXH3-128s),
 * seals and publishes. Atomic: the name appears only once the model is
 * complete and sealed; a process killed at any point leaves no name and no
 * memory behind. Unless NPUSHM_LOAD_NO_DEDUP, a file whose hash is already
 * published under the alias "xxh3:<hex>" reuses that region if the caller's
 * effective uid owns it (another user's copy is never reused: its manifest
 * could claim any hash). @opts may be NULL.
 * The name is checked first, before anything is copied: when it already
 * holds a sealed model of the caller's with the same size, hash and mode the
 * load succeeds at once (result->already_loaded; idempotent); when it holds
 * anything else (another user's model too) EXISTS, unless NPUSHM_LOAD_REPLACE, which loads the file and then moves
 * the name to it atomically (workers attached to the old model keep it).
 * With @opts->packer, the layouts it asks for are packed after the copy and
 * stored after the tensors, and the model's hash (result, info, the alias)
 * is the content hash of the tensors and the layouts (docs/weights.md): a
 * packed model is never taken for the plain one, and the "already loaded"
 * shortcut does not apply (a taken name is EXISTS unless replacing).
 * With NPUSHM_LOAD_PER_NODE (since 1.5), one sealed copy is placed on each
 * NUMA node that has CPUs and memory, each in that node's memory (allocated
 * with the loading thread's memory bound to the node, every page checked
 * with move_pages(2)): @name and "@name@nodeN" name the first node's copy,
 * "@name@nodeM" each other node's; all hold the same bytes and content
 * hash; @result describes the first. Nothing is published unless every
 * copy is made (a full node: NO_SPACE or NO_MEMORY naming the node). Such a
 * load never reuses a published copy (no dedup); "already loaded" needs
 * every node's copy. npushm_model_attach() then maps the copy of the
 * calling thread's node (npushm_model_node()), npushm_model_remove()
 * removes all of them. A copy is a region of the model's owner: another
 * user's region published as "@name@nodeN" is never mapped, counted or
 * removed as one.
 * With NPUSHM_LOAD_PACKED_ONLY (since 1.7) the tensors that get a layout are
 * stored only in it: the model takes about the memory of one copy, its hash
 * differs from the model with both copies, and a library before 1.7 refuses
 * to attach it (manifest version 3). Such tensors are read through their
 * layout; see npushm_model_accept_packed_only().
 * @result [out] may be NULL.
 */
NPUSHM_API npushm_status_t npushm_model_load(npushm_dev_t *dev, const char *path, const char *name,
					     const npushm_load_opts_t *opts,
					     npushm_load_result_t *result);
/*
 * The content hash of the file @path, as npushm_model_load() computes it
 * for a model (and publishes it as "xxh3:<hex>"): XXH3-128 of the
 * XXH3-128 digests of the file's 8 MiB blocks, the last one short; any
 * regular file. Reads the whole file. @hash [out]: 16 bytes, big-endian;
 * @hex [out, may be NULL]: 32 hex digits and a NUL. NOT_FOUND, ACCESS or
 * IO name the file.
 */
NPUSHM_API npushm_status_t npushm_file_hash(const char *path, uint8_t hash[16], char hex[33]);
/*
 * Remove the model name @name, and since 1.5 its per-node copies' names;
 * when no other model name refers to its region, its hash alias too (the memory goes when the last user detaches).
 */
NPUSHM_API npushm_status_t npushm_model_remove(npushm_dev_t *dev, const char *name);

/*
 * Attach the model published as @name: open it read-only, map it without
 * touching the tensor data, validate the manifest. NOT_FOUND names the
 * model and says how to load it; CORRUPT if the region is no sealed model.
 * npushm_model_attach() uses a device opened with NPUSHM_BACKEND_AUTO.
 * @modelp [out]: release with npushm_model_detach().
 */
NPUSHM_API npushm_status_t npushm_model_attach(const char *name, npushm_model_t **modelp);
NPUSHM_API npushm_status_t npushm_model_attach_dev(npushm_dev_t *dev, const char *name,
						   npushm_model_t **modelp);
NPUSHM_API void npushm_model_detach(npushm_model_t *model);

/* @info [out]; its strings live as long as @model. */
NPUSHM_API void npushm_model_info(const npushm_model_t *model, npushm_model_info_t *info);
NPUSHM_API size_t npushm_model_tensor_count(const npushm_model_t *model);
/* Tensors are ordered by name (bytewise). @t [out]. INVALID if @index is out of range.
 * A tensor stored only in its packed layout (NPUSHM_LOAD_PACKED_ONLY) is
 * UNSUPPORTED, the message naming it and its layout, unless the caller said
 * it reads such tensors (npushm_model_accept_packed_only): then @t describes
 * it with data NULL and offset 0. */
NPUSHM_API npushm_status_t npushm_model_tensor_at(const npushm_model_t *model, size_t index,
						  npushm_tensor_t *t);
/* @t [out]. NOT_FOUND (message names the tensor and the model). */
NPUSHM_API npushm_status_t npushm_model_tensor_find(const npushm_model_t *model, const char *name,
						    npushm_tensor_t *t);

/* Since 1.3: a packed layout stored with a model (npushm_packer_t). */
typedef struct npushm_layout {
	const char *tensor;	/* the plain tensor's name */
	size_t tensor_index;	/* its position in the name-sorted table */
	const char *tag;	/* what made it: library, version, ISA, shape, blocking */
	const void *data;	/* NPUSHM_TENSOR_ALIGN-aligned, read-only */
	uint64_t nbytes;
	uint64_t offset;	/* of data in the region */
	uint8_t hash[16];	/* XXH3-128 of the bytes, big-endian */
} npushm_layout_t;

/* Number of packed layouts @model carries (0 for a plain model). */
NPUSHM_API size_t npushm_model_layout_count(const npushm_model_t *model);
/* @l [out]; INVALID if @index is out of range. Strings live as long as @model. */
NPUSHM_API npushm_status_t npushm_model_layout_at(const npushm_model_t *model, size_t index,
						  npushm_layout_t *l);
/* The first layout of tensor @name; NOT_FOUND when it has none. @l [out]. */
NPUSHM_API npushm_status_t npushm_model_layout_find(const npushm_model_t *model, const char *name,
						    npushm_layout_t *l);
/*
 * Since 1.7: the caller reads tensors stored only in their packed layout
 * (NPUSHM_LOAD_PACKED_ONLY) through npushm_model_layout_find(): from now
 * on npushm_model_tensor_at()/_find() describe them with data NULL instead
 * of refusing them. Returns how many tensors of @model are stored so (0
 * for a model with plain copies of everything). Call it before sharing
 * @model between threads.
 */
NPUSHM_API size_t npushm_model_accept_packed_only(npushm_model_t *model);
/*
 * Since 1.5: the NUMA node whose copy of the model @model maps (a model
 * loaded with NPUSHM_LOAD_PER_NODE, attached from a thread running there),
 * or -1: the model's own region (no per-node copies, or none for that node).
 */
NPUSHM_API int npushm_model_node(const npushm_model_t *model);
/*
 * Since 1.8: the uid owning the region @model maps, i.e. who published these
 * weights (the loader, or whoever loaded the copy a load of theirs reused;
 * with per-node copies, that node's copy). Read from the region itself when
 * the model was attached, never from a name: kmod, the module's owner of the
 * region; posix, the owner of its tmpfs file (st_uid). Libraries that share
 * derived data between processes (libnpllama's prompt prefixes) trust it as
 * much as the weights. UINT32_MAX for NULL.
 */
NPUSHM_API uint32_t npushm_model_owner_uid(const npushm_model_t *model);
/* The read-only mapping of the whole region (manifest included). */
NPUSHM_API const void *npushm_model_base(const npushm_model_t *model);

struct DLManagedTensor;
/*
 * A DLPack (v0.6 ABI, <dlpack/dlpack.h>) view of tensor @index on the CPU,
 * sharing the mapping: it holds a reference on @model until its deleter runs.
 * UNSUPPORTED for dtypes DLPack 0.6 cannot express (BOOL, F8_*).
 * @outp [out]: call (*outp)->deleter(*outp) when done (or hand it to a
 * framework, which will).
 */
NPUSHM_API npushm_status_t npushm_model_tensor_dlpack(npushm_model_t *model, size_t index,
						      struct DLManagedTensor **outp);

#ifdef __cplusplus
}
#endif
#endif /* NPUSHM_H */
