/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * prefix.c - a prompt prefix's KV cache shared between processes as a sealed
 * npushm region.
 *
 * Publish: the first L tokens of a sequence (L a multiple of
 * NPLLAMA_PREFIX_BLOCK) go into a new region: a header (magic, the model's
 * content hash, layers, KV heads, head_dim, L, publish time), the L token
 * ids, then per layer the keys and the values of those positions. The
 * region is sealed, then published as npllama-kv.<model hash, 16 hex>.<FNV-1a
 * 64 of the ids, 16 hex>, mode 0640; a name already taken by a trusted
 * region means the same prefix was published before (nothing to do), by
 * anyone else UNTRUSTED (the name stays theirs: said, never hidden).
 *
 * Trust: a prefix is trusted exactly as much as the model. Anyone who may
 * publish in the namespace can take any name and write any header, so only
 * the region's owner (npushm_region_info() on the opened handle: the kmod
 * module's record of its creator, the tmpfs file's st_uid on posix; never
 * the name, which can change between list and open) decides: trusted() is
 * the caller's effective uid or the owner of the model's region (who
 * published the weights this engine already runs). Root is not special: uid
 * 0 is trusted when one of those two is root. Attach skips anyone else's
 * region before reading it, as a hash collision is skipped, and counts it
 * for npllama_seq_untrusted_prefix(); eviction neither counts nor removes
 * it (an engine never evicts what it would not attach, so a foreign region
 * with an old publish time or a large size cannot push trusted prefixes
 * out).
 *
 * Attach: for L from the longest block multiple that leaves a token to feed
 * down to one block, open the name of ids[0..L); a region is used only if
 * it is trusted, sealed and its header has this model's full hash, the same
 * sizes and exactly these L ids (a hash collision, another model or another
 * user's region is skipped, never attached). Its
 * keys and values are copied into the sequence's own cache (one memcpy per
 * layer and kind, far less than recomputing them) and the sequence goes on
 * from position L: the results are those of a full prefill.
 *
 * Tensor parallelism: a region always holds every KV head, so engines split
 * any way (or not at all) share it. Publishing gathers the ranks' KV heads
 * to every rank (npl_split_gather) and rank 0 writes the region; attaching,
 * rank 0 finds the longest prefix and tells the others its length, each
 * rank copies its own KV heads' columns, and the ranks agree (the smallest
 * answer) that all of them did, else none attaches.
 *
 * Eviction: a model's published prefixes may hold at most
 * $NPLLAMA_PREFIX_MAX_BYTES (default 256 MiB) between them; a publish that
 * would pass it first removes that model's oldest trusted prefixes (by
 * publish time) until the new one fits. Removing a name never disturbs a worker that
 * attached the prefix (the region lives while mapped).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define MAGIC "NPLKV01"
#define PREFIX_NAME "npllama-kv."

struct hdr {
	char magic[8];
	uint8_t model[16];
	uint32_t layers, kv_heads, head_dim, ntokens;
	uint64_t publish_ns;
	uint64_t ids_off, kv_off;	/* from the start of the region */
};

static uint64_t fnv1a(const int64_t *ids, int n)
{
	const unsigned char *p = (const unsigned char *)ids;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < (size_t)n * sizeof(*ids); i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/* @buf: NPLLAMA_PREFIX_NAME_SIZE bytes at least; every name is that long, NUL included */
static void prefix_name(const struct npllama *e, const int64_t *ids, int n, char *buf,
			size_t len)
{
	snprintf(buf, len, PREFIX_NAME "%.16s.%016" PRIx64, e->hash_hex, fnv1a(ids, n));
}

_Static_assert(sizeof(PREFIX_NAME) + 16 + 1 + 16 == NPLLAMA_PREFIX_NAME_SIZE,
	       "NPLLAMA_PREFIX_NAME_SIZE is the length of every prefix name and its NUL");
_Static_assert(NPLLAMA_PREFIX_NAME_SIZE <= NPUSHM_NAME_MAX + 1, "a prefix name is a region name");

static uint64_t kv_row_bytes(const npllama_config_t *c)
{
	return (uint64_t)c->kv_heads * (uint64_t)c->head_dim * sizeof(float);
}

/*
 * Copy @rows rows of @cols floats: from @src (rows @sstride floats apart)
 * into @dst (rows @dstride floats apart); one memcpy when both are dense.
 */
static void copy_rows(float *dst, size_t dstride, const float *src, size_t sstride, size_t cols,
		      size_t rows)
{
	if (dstride == cols && sstride == cols) {
		memcpy(dst, src, sizeof(float) * cols * rows);
		return;
	}
	for (size_t r = 0; r < rows; r++)
		memcpy(dst + r * dstride, src + r * sstride, sizeof(float) * cols);
}

static uint64_t region_bytes(const npllama_config_t *c, int n, uint64_t *ids_off,
			     uint64_t *kv_off)
{
	*ids_off = 64;
	*kv_off = (*ids_off + (uint64_t)n * sizeof(int64_t) + 63) & ~63ull;
	return *kv_off + 2ull * (uint64_t)c->layers * (uint64_t)n * kv_row_bytes(c);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* a region of @owner is trusted as much as the model (the header comment says why) */
static bool trusted(const struct npllama *e, uint32_t owner)
{
	return owner == (uint32_t)geteuid() || owner == e->model_uid;
}

/* remember a region under a prefix's name the caller does not trust; the first is the longest */
static void note_untrusted(struct npllama_seq *s, const char *name, uint32_t owner)
{
	if (!s->untrusted++) {
		s->untrusted_uid = owner;
		snprintf(s->untrusted_name, sizeof(s->untrusted_name), "%.*s",
			 (int)sizeof(s->untrusted_name) - 1, name);
	}
}

/* the header of published region @name, if it is one of this model's trusted prefixes */
static bool read_hdr(const struct npllama *e, const char *name, struct hdr *h, uint64_t *size)
{
	npushm_region_info_t info;
	npushm_region_t *r;
	void *map;
	bool ok = false;

	if (npushm_region_open(e->dev, name, 0, &r))
		return false;
	*size = npushm_region_size(r);
	if (!npushm_region_info(r, &info) && trusted(e, info.owner_uid) && *size >= sizeof(*h) &&
	    !npushm_region_map(r, NPUSHM_PROT_READ, &map)) {
		memcpy(h, map, sizeof(*h));
		ok = !memcmp(h->magic, MAGIC, 8) && !memcmp(h->model, e->hash, 16);
		npushm_region_unmap(r, map);
	}
	npushm_region_close(r);
	return ok;
}

/*
 * Remove this model's oldest trusted prefixes until @incoming more bytes fit
 * the budget; regions of others neither count nor go (read_hdr skips them).
 */
static void evict(const struct npllama *e, uint64_t incoming)
{
	const char *env = getenv("NPLLAMA_PREFIX_MAX_BYTES");
	uint64_t budget = env ? strtoull(env, NULL, 0) : 256ull << 20, total = 0;
	char mine[64];
	npushm_region_list_t *list;
	struct { char name[NPUSHM_NAME_MAX + 1]; uint64_t t, size; } *v = NULL;
	size_t n = 0, names = 0;

	snprintf(mine, sizeof(mine), PREFIX_NAME "%.16s.", e->hash_hex);
	if (npushm_dev_list_regions(e->dev, &list))
		return;
	/* a slot per name: anyone who may publish can give a region of theirs many names */
	for (size_t i = 0; i < npushm_region_list_count(list); i++)
		names += npushm_region_list_at(list, i)->name_count;
	v = calloc(names + 1, sizeof(*v));
	for (size_t i = 0; v && i < npushm_region_list_count(list); i++) {
		const npushm_region_entry_t *re = npushm_region_list_at(list, i);
		struct hdr h;

		for (size_t k = 0; k < re->name_count; k++) {
			/* a cheap first look; read_hdr asks the region it opened */
			if (!trusted(e, re->owner_uid) ||
			    strncmp(re->names[k].name, mine, strlen(mine)) ||
			    !read_hdr(e, re->names[k].name, &h, &v[n].size))
				continue;
			snprintf(v[n].name, sizeof(v[n].name), "%s", re->names[k].name);
			v[n].t = h.publish_ns;
			total += v[n++].size;
		}
	}
	npushm_region_list_free(list);
	while (v && total + incoming > budget && n) {
		size_t old = 0;

		for (size_t i = 1; i < n; i++)
			if (v[i].t < v[old].t)
				old = i;
		npushm_name_unlink(e->dev, v[old].name);
		total -= v[old].size;
		v[old] = v[--n];
	}
	free(v);
}

/*
 * @nm is taken: fine when a trusted region holds it (this prefix, published
 * before), else UNTRUSTED naming its owner (or saying it cannot be read).
 */
static npllama_status_t name_taken(struct npllama_seq *s, const char *nm)
{
	npushm_region_info_t info;
	npushm_region_t *r;
	npushm_status_t ps;

	ps = npushm_region_open(s->e->dev, nm, 0, &r);
	if (ps == NPUSHM_ERR_NOT_FOUND)
		return npl_fail(NPLLAMA_ERR_REGION, "the prefix's name '%s' was taken, then freed "
				"while publishing; publish again", nm);
	if (ps) {
		note_untrusted(s, nm, UINT32_MAX);
		return npl_fail(NPLLAMA_ERR_UNTRUSTED, "cannot publish the prefix: its name '%s' "
				"holds a region this user may not read (%s); its owner or root can "
				"remove it with `npushm rm %s`", nm, npushm_last_error(), nm);
	}
	ps = npushm_region_info(r, &info);
	npushm_region_close(r);
	if (ps)
		return npl_fail(NPLLAMA_ERR_REGION, "cannot tell who published '%s': %s", nm,
				npushm_last_error());
	if (trusted(s->e, info.owner_uid))
		return NPLLAMA_OK;	/* the same prefix of the same model, published before */
	note_untrusted(s, nm, info.owner_uid);
	return npl_fail(NPLLAMA_ERR_UNTRUSTED, "cannot publish the prefix: its name '%s' is "
			"taken by a region of uid %u, whom this engine does not trust (only uid %u "
			"running it and uid %u who loaded the model); uid %u or root can remove it "
			"with `npushm rm %s`", nm, info.owner_uid, (unsigned)geteuid(),
			s->e->model_uid, info.owner_uid, nm);
}

/* write the region of the first @n tokens of @s, from @kv: [2 * layers][n][kv_heads * head_dim] */
static npllama_status_t publish(struct npllama_seq *s, int n, const float *kv, const char *nm)
{
	const struct npllama *e = s->e;
	const npllama_config_t *c = &e->cfg;
	uint64_t ids_off, kv_off, size;
	npushm_region_t *r;
	npushm_status_t ps;
	struct hdr *h;
	void *map;

	size = region_bytes(c, n, &ids_off, &kv_off);
	evict(e, size);
	if (npushm_region_alloc(e->dev, size, 0, &r))
		return npl_fail(NPLLAMA_ERR_REGION, "cannot allocate the prefix region of %d tokens "
				"(%llu bytes): %s", n, (unsigned long long)size,
				npushm_last_error());
	if (npushm_region_map(r, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, &map)) {
		npushm_region_close(r);
		return npl_fail(NPLLAMA_ERR_REGION, "cannot map the prefix region: %s",
				npushm_last_error());
	}
	h = map;
	memcpy(h->magic, MAGIC, 8);
	memcpy(h->model, e->hash, 16);
	h->layers = (uint32_t)c->layers;
	h->kv_heads = (uint32_t)c->kv_heads;
	h->head_dim = (uint32_t)c->head_dim;
	h->ntokens = (uint32_t)n;
	h->publish_ns = now_ns();
	h->ids_off = ids_off;
	h->kv_off = kv_off;
	memcpy((char *)map + ids_off, s->ids, (size_t)n * sizeof(int64_t));
	memcpy((char *)map + kv_off, kv, 2 * (size_t)c->layers * (size_t)n * kv_row_bytes(c));
	npushm_region_unmap(r, map);
	ps = npushm_region_seal(r);
	if (!ps)
		ps = npushm_region_publish(r, nm, 0640, 0);
	npushm_region_close(r);
	if (ps == NPUSHM_ERR_EXISTS)
		return name_taken(s, nm);
	if (ps)
		return npl_fail(NPLLAMA_ERR_REGION, "cannot publish the prefix as '%s': %s", nm,
				npushm_last_error());
	return NPLLAMA_OK;
}

/*
 * The first @n tokens' keys and values of every KV head, [2 * layers][n][kv
 * heads * head_dim], in a new buffer (@out, free()); gathered from every
 * rank with tensor parallelism.
 */
static npllama_status_t full_kv(struct npllama_seq *s, int n, float **out)
{
	struct npllama *e = s->e;
	const npl_split_t *p = &e->sp;
	size_t d = (size_t)e->cfg.head_dim, slabs = 2 * (size_t)e->cfg.layers;
	size_t mine_cols = (size_t)p->kv_heads * d, cols = (size_t)e->cfg.kv_heads * d;
	size_t mine_count = slabs * (size_t)n * mine_cols;
	float *mine, *all = NULL, *kv;
	npllama_status_t st = NPLLAMA_OK;

	*out = NULL;
	mine = malloc(sizeof(float) * mine_count);
	kv = malloc(sizeof(float) * slabs * (size_t)n * cols);
	if (e->comm)
		all = malloc(sizeof(float) * mine_count * (size_t)p->nranks);
	/* every rank takes part in the gather even when its own allocation failed */
	if (mine)
		for (size_t k = 0; k < slabs; k++)
			copy_rows(mine + k * (size_t)n * mine_cols, mine_cols,
				  s->kv + k * (size_t)s->capacity * mine_cols, mine_cols, mine_cols,
				  (size_t)n);
	if (e->comm) {
		int ok = mine && kv && all;

		if ((st = npl_split_min_int(e, &ok)))
			goto out;
		if (!ok) {
			st = npl_fail(NPLLAMA_ERR_NO_MEMORY, "out of memory for the keys and values "
				      "of a %d-token prefix (on rank %d or another)", n, p->rank);
			goto out;
		}
		if ((st = npl_split_gather(e, mine, mine_count, all)))
			goto out;
		for (int q = 0; q < p->nranks; q++)
			for (size_t k = 0; k < slabs; k++)
				copy_rows(kv + k * (size_t)n * cols + (size_t)q * mine_cols, cols,
					  all + ((size_t)q * slabs + k) * (size_t)n * mine_cols,
					  mine_cols, mine_cols, (size_t)n);
	} else if (!mine || !kv) {
		st = npl_fail(NPLLAMA_ERR_NO_MEMORY, "out of memory for the keys and values of a "
			      "%d-token prefix", n);
		goto out;
	} else {
		memcpy(kv, mine, sizeof(float) * mine_count);
	}
	*out = kv;
	kv = NULL;
out:
	free(all);
	free(mine);
	free(kv);
	return st;
}

NPLLAMA_API npllama_status_t npllama_seq_publish_prefix(npllama_seq_t *s, int *ntokens,
							char *name, size_t name_size)
{
	char nm[NPUSHM_NAME_MAX + 1];
	npllama_status_t st;
	float *kv;
	int n, ok;

	if ((st = npl_seq_usable(s, "npllama_seq_publish_prefix")))
		return st;
	if (!ntokens)
		return npl_fail(NPLLAMA_ERR_INVALID, "npllama_seq_publish_prefix: ntokens is NULL");
	*ntokens = 0;
	s->untrusted = 0;
	/* before anything is published: a name the caller cannot hold is never cut short */
	if (name && name_size < NPLLAMA_PREFIX_NAME_SIZE)
		return npl_fail(NPLLAMA_ERR_INVALID, "npllama_seq_publish_prefix: name_size is %zu "
				"bytes; a prefix's name needs NPLLAMA_PREFIX_NAME_SIZE (%d)",
				name_size, NPLLAMA_PREFIX_NAME_SIZE);
	if (name)
		name[0] = '\0';
	n = s->len / NPLLAMA_PREFIX_BLOCK * NPLLAMA_PREFIX_BLOCK;
	if (n == 0)
		return NPLLAMA_OK;
	prefix_name(s->e, s->ids, n, nm, sizeof(nm));
	if (name)
		memcpy(name, nm, NPLLAMA_PREFIX_NAME_SIZE);
	if ((st = full_kv(s, n, &kv)))
		return st;
	st = s->e->sp.rank == 0 ? publish(s, n, kv, nm) : NPLLAMA_OK;
	free(kv);
	/* the other ranks learn rank 0's status (its message stays its own) */
	ok = (int)st;
	if (s->e->comm && npl_split_bcast_int(s->e, &ok))
		return NPLLAMA_ERR_COMM;
	if (ok)
		return st ? st : npl_fail((npllama_status_t)ok, "rank 0 could not publish the "
					  "prefix as '%s' (its message says why)", nm);
	*ntokens = n;
	return NPLLAMA_OK;
}

/*
 * Copy region @name into @s if it is trusted and holds exactly ids[0..n) of
 * this model; a region of someone else is noted and never read.
 */
static bool try_attach(struct npllama_seq *s, const int64_t *ids, int n, const char *name)
{
	const npllama_config_t *c = &s->e->cfg;
	uint64_t ids_off, kv_off, size = region_bytes(c, n, &ids_off, &kv_off);
	uint64_t row = kv_row_bytes(c);
	npushm_region_info_t info;
	const struct hdr *h;
	npushm_region_t *r;
	bool ok;
	void *map;

	if (npushm_region_open(s->e->dev, name, 0, &r))
		return false;
	if (npushm_region_info(r, &info)) {
		npushm_region_close(r);
		return false;
	}
	if (!trusted(s->e, info.owner_uid)) {
		note_untrusted(s, name, info.owner_uid);
		npushm_region_close(r);
		return false;
	}
	if (!(info.flags & NPUSHM_REGION_SEALED) ||
	    npushm_region_size(r) < size || npushm_region_map(r, NPUSHM_PROT_READ, &map)) {
		npushm_region_close(r);
		return false;
	}
	h = map;
	ok = !memcmp(h->magic, MAGIC, 8) && !memcmp(h->model, s->e->hash, 16) &&
	     h->layers == (uint32_t)c->layers && h->kv_heads == (uint32_t)c->kv_heads &&
	     h->head_dim == (uint32_t)c->head_dim && h->ntokens == (uint32_t)n &&
	     h->ids_off == ids_off && h->kv_off == kv_off &&
	     !memcmp((const char *)map + ids_off, ids, (size_t)n * sizeof(int64_t));
	if (ok) {
		const npl_split_t *p = &s->e->sp;
		size_t cols = row / sizeof(float), mine = (size_t)p->kv_heads * c->head_dim;
		const float *src = (const float *)((const char *)map + kv_off) +
				   (size_t)p->kv0 * c->head_dim;

		for (size_t k = 0; k < 2 * (size_t)c->layers; k++)
			copy_rows(s->kv + k * (size_t)s->capacity * mine, mine,
				  src + k * (size_t)n * cols, cols, mine, (size_t)n);
		memcpy(s->ids, ids, (size_t)n * sizeof(int64_t));
		s->len = n;
	}
	npushm_region_unmap(r, map);
	npushm_region_close(r);
	return ok;
}

NPLLAMA_API npllama_status_t npllama_seq_attach_prefix(npllama_seq_t *s, const int64_t *ids,
						       int n, int *attached)
{
	char name[NPUSHM_NAME_MAX + 1];
	npllama_status_t st;
	int top, found = 0, ok;

	if ((st = npl_seq_usable(s, "npllama_seq_attach_prefix")))
		return st;
	if (!ids || !attached)
		return npl_fail(NPLLAMA_ERR_INVALID, "npllama_seq_attach_prefix: %s is NULL",
				!ids ? "ids" : "attached");
	*attached = 0;
	s->untrusted = 0;
	if (n < 0)
		return npl_fail(NPLLAMA_ERR_INVALID, "npllama_seq_attach_prefix: n is %d; pass how "
				"many ids the prompt has (0 or more)", n);
	if (s->len)
		return npl_fail(NPLLAMA_ERR_INVALID, "npllama_seq_attach_prefix: the sequence "
				"already holds %d tokens; attach a prefix to a new sequence", s->len);
	/* the longest prefix that may attach; the ids past it are the next feed's to read */
	top = n - 1 < s->capacity ? n - 1 : s->capacity;
	top = top > 0 ? top / NPLLAMA_PREFIX_BLOCK * NPLLAMA_PREFIX_BLOCK : 0;
	for (int i = 0; i < top; i++)
		if (ids[i] < 0 || ids[i] >= s->e->cfg.vocab)
			return npl_fail(NPLLAMA_ERR_INPUT, "token %d of %d is id %lld, outside the "
					"vocabulary 0..%d", i, n, (long long)ids[i],
					s->e->cfg.vocab - 1);
	if (s->e->sp.rank == 0) {
		for (int l = top; l > 0; l -= NPLLAMA_PREFIX_BLOCK) {
			prefix_name(s->e, ids, l, name, sizeof(name));
			if (try_attach(s, ids, l, name)) {
				found = l;
				break;
			}
		}
	}
	if (!s->e->comm) {
		*attached = found;
		return NPLLAMA_OK;
	}
	/* rank 0 says which length; every rank attaches it, or none does */
	if ((st = npl_split_bcast_int(s->e, &found)))
		return st;
	ok = 1;
	if (found && s->e->sp.rank != 0) {
		prefix_name(s->e, ids, found, name, sizeof(name));
		ok = try_attach(s, ids, found, name);
	}
	if ((st = npl_split_min_int(s->e, &ok)))
		return st;
	if (!ok)
		s->len = found = 0;	/* removed meanwhile: every rank prefills it all */
	*attached = found;
	return NPLLAMA_OK;
}

NPLLAMA_API int npllama_seq_untrusted_prefix(const npllama_seq_t *s, char *name, size_t name_size,
					     uint32_t *owner_uid)
{
	if (!s || !s->untrusted)
		return 0;
	if (name && name_size >= NPLLAMA_PREFIX_NAME_SIZE)
		memcpy(name, s->untrusted_name, NPLLAMA_PREFIX_NAME_SIZE);
	if (owner_uid)
		*owner_uid = s->untrusted_uid;
	return s->untrusted;
}
