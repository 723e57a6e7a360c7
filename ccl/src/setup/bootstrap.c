/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * bootstrap.c - rendezvous and TCP connection setup.
 *
 * A unique id holds the root's IPv4 address, port and a random 64-bit
 * communicator tag. The root is a thread (started by npccl_get_unique_id,
 * or by rank 0 under a launcher) that accepts one HELLO per rank, checks
 * tag, rank and size, and answers every rank with the table of all ranks'
 * peer_info, or with an error naming the ranks that never joined. Then each
 * pair of ranks on different hosts opens two TCP connections (data, control),
 * the lower rank connecting; each connection starts with a HELLO that the
 * acceptor checks (tag, ranks), so a process of another communicator is
 * rejected with a clear error instead of corrupting this one.
 */
#include "npccl_internal.h"
#include "transport/transport.h"
#include "algo/algo.h"
#include "setup/setup.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#define BOOT_MAGIC 0x4e504248u	/* "NPBH" */
#define BOOT_VERSION 1

struct boot_hello {
	uint32_t magic, version;
	uint64_t comm_magic;
	int32_t rank, nranks;
	struct peer_info info;
};

struct boot_reply {
	uint32_t magic;
	int32_t status;
	int32_t nranks;
	int32_t pad;
	char text[384];
};

struct conn_hello {
	uint32_t magic, kind;	/* kind 0 data, 1 control */
	uint64_t comm_magic;
	int32_t from, to;
};

struct conn_ack {
	uint32_t magic;
	int32_t status;
	char text[256];
};

/* ---- unique id --------------------------------------------------------- */

npccl_status_t npccl_unique_id_to_string(const npccl_unique_id_t *id, char *str)
{
	if (!id || !str)
		return NPCCL_ERR_INVALID_ARG;
	static const char hex[] = "0123456789abcdef";
	for (int i = 0; i < NPCCL_UNIQUE_ID_BYTES; i++) {
		unsigned char b = (unsigned char)id->internal[i];
		str[2 * i] = hex[b >> 4];
		str[2 * i + 1] = hex[b & 15];
	}
	str[2 * NPCCL_UNIQUE_ID_BYTES] = 0;
	return NPCCL_OK;
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

npccl_status_t npccl_unique_id_from_string(const char *str, npccl_unique_id_t *id)
{
	if (!str || !id)
		return NPCCL_ERR_INVALID_ARG;
	/* text read from a file or a command's output may end in a newline */
	size_t len = strlen(str);
	while (len && (str[len - 1] == '\n' || str[len - 1] == '\r' || str[len - 1] == ' ' ||
		       str[len - 1] == '\t'))
		len--;
	if (len != 2 * NPCCL_UNIQUE_ID_BYTES) {
		npccl_log(NPCCL_LOG_WARN, "npccl_unique_id_from_string: %zu characters; an id is %d "
			  "hex digits (npccl_unique_id_to_string)", len, 2 * NPCCL_UNIQUE_ID_BYTES);
		return NPCCL_ERR_INVALID_ARG;
	}
	for (int i = 0; i < NPCCL_UNIQUE_ID_BYTES; i++) {
		int hi = hexval(str[2 * i]), lo = hexval(str[2 * i + 1]);
		if (hi < 0 || lo < 0) {
			npccl_log(NPCCL_LOG_WARN, "npccl_unique_id_from_string: character %d is not "
				  "a hex digit", hi < 0 ? 2 * i : 2 * i + 1);
			return NPCCL_ERR_INVALID_ARG;
		}
		id->internal[i] = (char)(hi << 4 | lo);
	}
	const struct unique_id_wire *w = (const void *)id->internal;
	if (memcmp(w->tag, "NPCCLID1", 8)) {
		npccl_log(NPCCL_LOG_WARN, "npccl_unique_id_from_string: the text is hex but not an "
			  "id made by npccl_get_unique_id");
		return NPCCL_ERR_INVALID_ARG;
	}
	return NPCCL_OK;
}

/* ---- root --------------------------------------------------------------- */

struct root_ctx {
	int lfd;
	uint64_t magic;
	int timeout_ms;
};

/*
 * A failure verdict to every joined rank. The root runs in one rank's
 * process, which exits once it reads the verdict: the ranks of other
 * processes are told first.
 */
static void root_reply_all(int *fds, const struct peer_info *table, int n, int status,
			   const char *text)
{
	struct boot_reply r = { .magic = BOOT_MAGIC, .status = status };
	snprintf(r.text, sizeof(r.text), "%s", text);
	uint64_t dl = now_ns() + 2000000000ull;
	uint32_t self = (uint32_t)getpid();

	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < n; i++)
			if (fds[i] >= 0 && (table[i].pid == self) == pass)
				sock_write_full(fds[i], &r, sizeof(r), dl);
}

static void *root_main(void *arg)
{
	struct root_ctx ctx = *(struct root_ctx *)arg;
	free(arg);
	uint64_t deadline = now_ns() + (uint64_t)ctx.timeout_ms * 1000000ull;
	int nranks = -1, joined = 0, first_rank = -1;
	int *fds = NULL;
	struct peer_info *table = NULL;
	char mismatch[200] = "";

	while (nranks < 0 || joined < nranks) {
		int fd = sock_accept(ctx.lfd, deadline);
		if (fd == -ETIMEDOUT)
			break;
		if (fd < 0)
			continue;
		struct boot_hello h;
		uint64_t hdl = MIN(deadline, now_ns() + 5000000000ull);
		if (sock_read_full(fd, &h, sizeof(h), hdl) < 0 || h.magic != BOOT_MAGIC) {
			npccl_log(NPCCL_LOG_WARN, "bootstrap root: dropped a connection that did "
						  "not speak the npccl bootstrap protocol");
			close(fd);
			continue;
		}
		struct boot_reply rej = { .magic = BOOT_MAGIC, .status = NPCCL_ERR_PROTOCOL };
		if (h.version != BOOT_VERSION) {
			snprintf(rej.text, sizeof(rej.text),
				 "bootstrap root speaks protocol version %d, this rank %u: mixed "
				 "npccl builds",
				 BOOT_VERSION, h.version);
		} else if (h.comm_magic != ctx.magic) {
			snprintf(rej.text, sizeof(rej.text),
				 "the bootstrap root at this address serves another communicator "
				 "(tag %016llx, yours %016llx): stale unique id or port reused",
				 (unsigned long long)ctx.magic, (unsigned long long)h.comm_magic);
		} else if (mismatch[0]) {
			rej.status = NPCCL_ERR_INVALID_ARG;
			snprintf(rej.text, sizeof(rej.text), "%s", mismatch);
		} else if (h.nranks <= 0) {
			rej.status = NPCCL_ERR_INVALID_ARG;
			snprintf(rej.text, sizeof(rej.text), "rank %d says the communicator has %d ranks",
				 h.rank, h.nranks);
		} else if (nranks > 0 && h.nranks != nranks) {
			/* Fatal for everyone: tell the ranks that joined too, at once. */
			rej.status = NPCCL_ERR_INVALID_ARG;
			snprintf(mismatch, sizeof(mismatch),
				 "the ranks disagree on the number of ranks: rank %d was started with "
				 "%d, rank %d with %d (WORLD_SIZE, NPCCL_NRANKS or the launcher's size "
				 "must be the same for every rank)",
				 h.rank, h.nranks, first_rank, nranks);
			snprintf(rej.text, sizeof(rej.text), "%s", mismatch);
			/*
			 * The root's own process last: it exits once it reads the
			 * verdict, taking the root with it.
			 */
			bool self_last = h.info.pid == (uint32_t)getpid();

			if (!self_last)
				sock_write_full(fd, &rej, sizeof(rej), now_ns() + 1000000000ull);
			root_reply_all(fds, table, nranks, NPCCL_ERR_INVALID_ARG, mismatch);
			if (self_last)
				sock_write_full(fd, &rej, sizeof(rej), now_ns() + 1000000000ull);
			close(fd);
			npccl_log(NPCCL_LOG_WARN, "bootstrap root: rejected a rank: %s", rej.text);
			for (int i = 0; i < nranks; i++)
				if (fds[i] >= 0) {
					close(fds[i]);
					fds[i] = -1;
				}
			joined = 0;
			continue;
		} else if (h.rank < 0 || h.rank >= h.nranks) {
			rej.status = NPCCL_ERR_INVALID_ARG;
			snprintf(rej.text, sizeof(rej.text), "rank %d is outside 0..%d", h.rank,
				 h.nranks - 1);
		} else {
			if (nranks < 0) {
				nranks = h.nranks;
				first_rank = h.rank;
				fds = malloc(sizeof(int) * (size_t)nranks);
				table = calloc((size_t)nranks, sizeof(*table));
				if (!fds || !table) {
					close(fd);
					break;
				}
				for (int i = 0; i < nranks; i++)
					fds[i] = -1;
			}
			if (fds[h.rank] >= 0) {
				rej.status = NPCCL_ERR_INVALID_ARG;
				snprintf(rej.text, sizeof(rej.text),
					 "rank %d joined twice (pids %u and %u): each process needs "
					 "its own rank",
					 h.rank, table[h.rank].pid, h.info.pid);
			} else {
				fds[h.rank] = fd;
				table[h.rank] = h.info;
				joined++;
				continue;
			}
		}
		sock_write_full(fd, &rej, sizeof(rej), now_ns() + 1000000000ull);
		npccl_log(NPCCL_LOG_WARN, "bootstrap root: rejected a rank: %s", rej.text);
		close(fd);
	}

	if (nranks > 0 && joined == nranks) {
		struct boot_reply ok = { .magic = BOOT_MAGIC, .status = NPCCL_OK, .nranks = nranks };
		uint64_t dl = now_ns() + 10000000000ull;
		uint32_t self = (uint32_t)getpid();
		/* the root's own process last, as for a verdict: a rank there may
		 * fail its setup at once (NPCCL_TRANSPORT=rdma against a peer
		 * without a device) and exit, taking the root with it while the
		 * others' tables were still being written */
		for (int pass = 0; pass < 2; pass++)
			for (int i = 0; i < nranks; i++) {
				if ((table[i].pid == self) != pass)
					continue;
				sock_write_full(fds[i], &ok, sizeof(ok), dl);
				sock_write_full(fds[i], table, sizeof(*table) * (size_t)nranks, dl);
			}
	} else if (nranks > 0) {
		char text[384];
		int len = snprintf(text, sizeof(text), "%d of %d ranks did not join within %d ms:",
				   nranks - joined, nranks, ctx.timeout_ms);
		for (int i = 0, shown = 0; i < nranks && len < (int)sizeof(text) - 16; i++)
			if (fds[i] < 0 && shown++ < 24)
				len += snprintf(text + len, sizeof(text) - (size_t)len, " %d", i);
		root_reply_all(fds, table, nranks, NPCCL_ERR_BOOTSTRAP, text);
	}
	if (fds)
		for (int i = 0; i < nranks; i++)
			if (fds[i] >= 0)
				close(fds[i]);
	free(fds);
	free(table);
	close(ctx.lfd);
	return NULL;
}

npccl_status_t unique_id_create(uint32_t ipv4_be, uint16_t port_be, int lfd, uint64_t magic,
				npccl_unique_id_t *id, char *err, size_t errlen)
{
	memset(id, 0, sizeof(*id));
	struct unique_id_wire *w = (void *)id->internal;
	memcpy(w->tag, "NPCCLID1", 8);
	w->magic = magic;
	if (!magic && getrandom(&w->magic, sizeof(w->magic), 0) != sizeof(w->magic))
		w->magic = now_ns() ^ ((uint64_t)getpid() << 32);
	w->ipv4 = ipv4_be;
	if (lfd < 0) {
		lfd = sock_listen_tcp(htonl(INADDR_ANY), port_be, err, errlen);
		if (lfd < 0)
			return lfd == -EADDRINUSE ? NPCCL_ERR_BOOTSTRAP : NPCCL_ERR_SYSTEM;
	}
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	getsockname(lfd, (struct sockaddr *)&sa, &sl);
	w->port = sa.sin_port;

	struct root_ctx *ctx = malloc(sizeof(*ctx));
	if (!ctx) {
		close(lfd);
		return NPCCL_ERR_NOMEM;
	}
	ctx->lfd = lfd;
	ctx->magic = w->magic;
	ctx->timeout_ms = npccl_config()->bootstrap_timeout_ms;
	pthread_t th;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	int rc = pthread_create(&th, &attr, root_main, ctx);
	pthread_attr_destroy(&attr);
	if (rc) {
		snprintf(err, errlen, "cannot start the bootstrap root thread: %s", strerror(rc));
		close(lfd);
		free(ctx);
		return NPCCL_ERR_SYSTEM;
	}
	return NPCCL_OK;
}

npccl_status_t npccl_get_unique_id(npccl_unique_id_t *id)
{
	if (!id)
		return NPCCL_ERR_INVALID_ARG;
	npccl_config_reload();
	uint32_t ip = htonl(INADDR_LOOPBACK);
	const char *s = getenv("NPCCL_SOCKET_ADDR");
	struct in_addr a;
	if (s && inet_pton(AF_INET, s, &a) == 1)
		ip = a.s_addr;
	char err[256];
	npccl_status_t st = unique_id_create(ip, 0, -1, 0, id, err, sizeof(err));
	if (st != NPCCL_OK)
		npccl_log(NPCCL_LOG_ERROR, "npccl_get_unique_id: %s", err);
	return st;
}

/* ---- client side --------------------------------------------------------- */

static npccl_status_t exchange_with_root(struct npccl_comm *c, const struct unique_id_wire *w,
					 struct peer_info *me, char *err, size_t errlen)
{
	const struct npccl_config *cfg = npccl_config();
	uint64_t deadline = now_ns() + (uint64_t)cfg->bootstrap_timeout_ms * 1000000ull;
	char e2[256], ip[INET_ADDRSTRLEN];
	int fd = sock_connect_tcp(w->ipv4, w->port, deadline, e2, sizeof(e2));
	if (fd < 0) {
		snprintf(err, errlen, "rank %d: cannot reach the bootstrap root: %s%s", c->rank, e2,
			 fd == -ECONNREFUSED
			 ? "; the root must be running (rank 0 under a launcher, else the "
			   "process that called npccl_get_unique_id), and an id serves one "
			   "communicator only: make a new one for each" : "");
		return NPCCL_ERR_BOOTSTRAP;
	}
	/* Advertise the address this host uses to reach the root, unless told. */
	const char *s = getenv("NPCCL_SOCKET_ADDR");
	struct in_addr a;
	if (s && inet_pton(AF_INET, s, &a) == 1) {
		me->ipv4 = a.s_addr;
	} else {
		struct sockaddr_in sa;
		socklen_t sl = sizeof(sa);
		getsockname(fd, (struct sockaddr *)&sa, &sl);
		me->ipv4 = sa.sin_addr.s_addr;
	}
	struct boot_hello h = { .magic = BOOT_MAGIC, .version = BOOT_VERSION,
				.comm_magic = w->magic, .rank = c->rank, .nranks = c->nranks,
				.info = *me };
	struct boot_reply r;
	/* the root answers at its own deadline, naming missing ranks: give it
	 * time to do so before giving up ourselves */
	uint64_t reply_deadline = deadline + 2000000000ull;
	if (sock_write_full(fd, &h, sizeof(h), deadline) < 0 ||
	    sock_read_full(fd, &r, sizeof(r), reply_deadline) < 0) {
		snprintf(err, errlen,
			 "rank %d: the bootstrap root at %s:%u closed or did not answer within "
			 "%d ms (not every rank joined?)",
			 c->rank, ipv4_str(w->ipv4, ip), ntohs(w->port), cfg->bootstrap_timeout_ms);
		close(fd);
		return NPCCL_ERR_BOOTSTRAP;
	}
	if (r.magic != BOOT_MAGIC) {
		snprintf(err, errlen, "rank %d: %s:%u is not an npccl bootstrap root", c->rank,
			 ipv4_str(w->ipv4, ip), ntohs(w->port));
		close(fd);
		return NPCCL_ERR_PROTOCOL;
	}
	if (r.status != NPCCL_OK) {
		r.text[sizeof(r.text) - 1] = 0;
		snprintf(err, errlen, "rank %d: bootstrap failed: %s", c->rank, r.text);
		close(fd);
		return (npccl_status_t)r.status;
	}
	struct peer_info *table = calloc((size_t)c->nranks, sizeof(*table));
	if (!table) {
		close(fd);
		return NPCCL_ERR_NOMEM;
	}
	if (r.nranks != c->nranks ||
	    sock_read_full(fd, table, sizeof(*table) * (size_t)c->nranks, reply_deadline) < 0) {
		snprintf(err, errlen, "rank %d: truncated rank table from the bootstrap root",
			 c->rank);
		free(table);
		close(fd);
		return NPCCL_ERR_PROTOCOL;
	}
	close(fd);
	for (int i = 0; i < c->nranks; i++)
		c->peers[i].info = table[i];
	free(table);
	return NPCCL_OK;
}

/* ---- bootstrap through the caller's key-value store ---------------------- */

#define KV_MAGIC 0x4e504b56u	/* "NPKV" */

struct kv_tag {
	uint32_t magic, version;
	uint64_t comm_magic;
	int32_t nranks, pad;
};

struct kv_hello {
	uint32_t magic, version;
	uint64_t comm_magic;
	int32_t rank, nranks;
	struct peer_info info;
};

static int kv_ms_left(uint64_t deadline)
{
	uint64_t t = now_ns();
	return t >= deadline ? 1 : (int)MIN((deadline - t) / 1000000 + 1, (uint64_t)INT32_MAX);
}

/* The address this rank advertises: NPCCL_SOCKET_ADDR, else the one that
 * routes to the rendezvous host (NPCCL_ROOT_ADDR, MASTER_ADDR: a connected
 * UDP socket sends nothing), else loopback. */
static uint32_t kv_local_address(void)
{
	const char *s = getenv("NPCCL_SOCKET_ADDR");
	struct in_addr a;
	if (s && inet_pton(AF_INET, s, &a) == 1)
		return a.s_addr;
	char hp[300] = "";
	uint32_t ip;
	uint16_t port;
	if (getenv("NPCCL_ROOT_ADDR") && *getenv("NPCCL_ROOT_ADDR"))
		snprintf(hp, sizeof(hp), "%s", getenv("NPCCL_ROOT_ADDR"));
	else if (getenv("MASTER_ADDR") && *getenv("MASTER_ADDR"))
		snprintf(hp, sizeof(hp), "%s:1", getenv("MASTER_ADDR"));
	if (hp[0] && parse_host_port(hp, &ip, &port) == 0) {
		int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = port,
					  .sin_addr.s_addr = ip }, me;
		socklen_t sl = sizeof(me);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
		    getsockname(fd, (struct sockaddr *)&me, &sl) == 0 && me.sin_addr.s_addr) {
			close(fd);
			return me.sin_addr.s_addr;
		}
		if (fd >= 0)
			close(fd);
	}
	return htonl(INADDR_LOOPBACK);
}

/* The communicator tag: rank 0 makes it, everyone reads it (rank 0 too, so
 * every rank takes the same path through the store). */
static npccl_status_t kv_get_tag(struct npccl_comm *c, const struct boot_src *src,
				 uint64_t deadline, char *err, size_t errlen)
{
	const npccl_kv_store_t *kv = src->kv;
	char key[256];
	snprintf(key, sizeof(key), "%snpccl/tag", src->prefix);
	if (c->rank == 0) {
		struct kv_tag t = { .magic = KV_MAGIC, .version = BOOT_VERSION,
				    .nranks = c->nranks };
		if (getrandom(&t.comm_magic, sizeof(t.comm_magic), 0) != sizeof(t.comm_magic))
			t.comm_magic = now_ns() ^ ((uint64_t)getpid() << 32);
		t.comm_magic |= 1;
		if (kv->set(kv->user, key, &t, sizeof(t)) != 0) {
			snprintf(err, errlen, "rank 0: the key-value store refused to set '%s'", key);
			return NPCCL_ERR_BOOTSTRAP;
		}
	}
	struct kv_tag t;
	size_t len = 0;
	if (kv->get(kv->user, key, &t, sizeof(t), &len, kv_ms_left(deadline)) != 0) {
		snprintf(err, errlen, "rank %d: rank 0 did not publish the communicator in the "
			 "key-value store ('%s') within %d ms", c->rank, key, src->timeout_ms);
		return NPCCL_ERR_BOOTSTRAP;
	}
	if (len != sizeof(t) || t.magic != KV_MAGIC || t.version != BOOT_VERSION) {
		snprintf(err, errlen, "rank %d: '%s' in the key-value store is not an npccl "
			 "bootstrap record of this version (%zu bytes)", c->rank, key, len);
		return NPCCL_ERR_PROTOCOL;
	}
	if (t.nranks != c->nranks) {
		snprintf(err, errlen, "rank %d says the communicator has %d ranks but rank 0 "
			 "said %d", c->rank, c->nranks, t.nranks);
		return NPCCL_ERR_INVALID_ARG;
	}
	c->magic = t.comm_magic;
	return NPCCL_OK;
}

/* Publish this rank's peer_info, read everyone's; missing ranks are named. */
static npccl_status_t kv_exchange(struct npccl_comm *c, const struct boot_src *src,
				  struct peer_info *me, uint64_t deadline, char *err,
				  size_t errlen)
{
	const npccl_kv_store_t *kv = src->kv;
	char key[256];
	me->ipv4 = kv_local_address();
	struct kv_hello h = { .magic = KV_MAGIC, .version = BOOT_VERSION, .comm_magic = c->magic,
			      .rank = c->rank, .nranks = c->nranks, .info = *me };
	snprintf(key, sizeof(key), "%snpccl/rank/%d", src->prefix, c->rank);
	if (kv->set(kv->user, key, &h, sizeof(h)) != 0) {
		snprintf(err, errlen, "rank %d: the key-value store refused to set '%s'", c->rank,
			 key);
		return NPCCL_ERR_BOOTSTRAP;
	}
	c->peers[c->rank].info = *me;
	char missing[200] = "";
	int nmissing = 0;
	size_t used = 0;
	for (int r = 0; r < c->nranks; r++) {
		if (r == c->rank)
			continue;
		struct kv_hello o;
		size_t len = 0;
		snprintf(key, sizeof(key), "%snpccl/rank/%d", src->prefix, r);
		/* once one rank is missing, only look whether the others are there */
		int ms = nmissing ? 1 : kv_ms_left(deadline);
		if (kv->get(kv->user, key, &o, sizeof(o), &len, ms) != 0) {
			if (used < sizeof(missing) - 16)
				used += (size_t)snprintf(missing + used, sizeof(missing) - used, "%s%d",
							 nmissing ? ", " : "", r);
			nmissing++;
			continue;
		}
		if (len != sizeof(o) || o.magic != KV_MAGIC || o.version != BOOT_VERSION ||
		    o.comm_magic != c->magic || o.rank != r || o.nranks != c->nranks) {
			snprintf(err, errlen, "rank %d: '%s' in the key-value store belongs to another "
				 "communicator (stale key from an earlier one? use a fresh store "
				 "or prefix)", c->rank, key);
			return NPCCL_ERR_PROTOCOL;
		}
		c->peers[r].info = o.info;
	}
	if (nmissing) {
		snprintf(err, errlen, "rank %d: %d of %d ranks did not publish their address in the "
			 "key-value store within %d ms: %s", c->rank, nmissing, c->nranks,
			 src->timeout_ms, missing);
		return NPCCL_ERR_BOOTSTRAP;
	}
	return NPCCL_OK;
}

/* Hosts are numbered in order of their lowest rank. */
static npccl_status_t group_hosts(struct npccl_comm *c)
{
	int n = c->nranks;
	c->host_of = malloc(sizeof(int) * (size_t)n);
	c->local_ranks = malloc(sizeof(int) * (size_t)n);
	if (!c->host_of || !c->local_ranks)
		return NPCCL_ERR_NOMEM;
	c->nhosts = 0;
	for (int i = 0; i < n; i++) {
		c->host_of[i] = -1;
		for (int j = 0; j < i; j++)
			if (c->peers[j].info.host_id == c->peers[i].info.host_id) {
				c->host_of[i] = c->host_of[j];
				break;
			}
		if (c->host_of[i] < 0)
			c->host_of[i] = c->nhosts++;
	}
	c->host_index = c->host_of[c->rank];
	c->nlocal = 0;
	for (int i = 0; i < n; i++) {
		c->peers[i].rank = i;
		c->peers[i].local = c->host_of[i] == c->host_index;
		c->peers[i].local_index = -1;
		if (c->peers[i].local) {
			c->peers[i].local_index = c->nlocal;
			c->local_ranks[c->nlocal++] = i;
		}
	}
	c->local_index = c->peers[c->rank].local_index;
	/* uniform: same count per host and host h's k-th local rank is the
	 * k-th on every host in the same relative order */
	c->uniform = c->nhosts > 1 && n % c->nhosts == 0;
	if (c->uniform) {
		int per = n / c->nhosts;
		int *cnt = calloc((size_t)c->nhosts, sizeof(int));
		if (!cnt)
			return NPCCL_ERR_NOMEM;
		for (int i = 0; i < n; i++)
			cnt[c->host_of[i]]++;
		for (int h = 0; h < c->nhosts; h++)
			if (cnt[h] != per)
				c->uniform = false;
		free(cnt);
	}
	return NPCCL_OK;
}

static npccl_status_t connect_remote(struct npccl_comm *c, char *err, size_t errlen)
{
	const struct npccl_config *cfg = npccl_config();
	uint64_t deadline = now_ns() + (uint64_t)cfg->bootstrap_timeout_ms * 1000000ull;
	char e2[256];
	int expect = 0;
	/* 1. connect to every remote rank above us: data then control */
	for (int j = 0; j < c->nranks; j++) {
		struct peer *p = &c->peers[j];
		if (p->local)
			continue;
		if (j < c->rank) {
			expect += 2;
			continue;
		}
		for (int kind = 0; kind < 2; kind++) {
			int fd = sock_connect_tcp(p->info.ipv4, p->info.port, deadline, e2,
						  sizeof(e2));
			if (fd < 0) {
				snprintf(err, errlen, "rank %d: cannot connect to rank %d: %s",
					 c->rank, j, e2);
				return NPCCL_ERR_BOOTSTRAP;
			}
			struct conn_hello h = { .magic = BOOT_MAGIC, .kind = (uint32_t)kind,
						.comm_magic = c->magic, .from = c->rank, .to = j };
			sock_write_full(fd, &h, sizeof(h), deadline);
			if (kind == 0)
				p->data_fd = fd;
			else
				p->ctl_fd = fd;
		}
	}
	/* 2. accept the ranks below us */
	while (expect > 0) {
		int fd = sock_accept(c->listen_fd, deadline);
		if (fd < 0) {
			int missing = -1;
			for (int j = 0; j < c->rank; j++)
				if (!c->peers[j].local &&
				    (c->peers[j].data_fd < 0 || c->peers[j].ctl_fd < 0))
					missing = j;
			snprintf(err, errlen,
				 "rank %d: rank %d did not connect within %d ms during setup",
				 c->rank, missing, cfg->bootstrap_timeout_ms);
			return NPCCL_ERR_BOOTSTRAP;
		}
		struct conn_hello h;
		struct conn_ack ack = { .magic = BOOT_MAGIC, .status = NPCCL_OK };
		int rr = sock_read_full(fd, &h, sizeof(h), MIN(deadline, now_ns() + 5000000000ull));
		if (rr < 0 || h.magic != BOOT_MAGIC) {
			npccl_log(NPCCL_LOG_WARN, "rank %d: dropped a connection that is not "
						  "npccl's", c->rank);
			close(fd);
			continue;
		}
		if (h.comm_magic != c->magic || h.to != c->rank || h.from < 0 ||
		    h.from >= c->rank || c->peers[h.from].local || h.kind > 1 ||
		    (h.kind == 0 ? c->peers[h.from].data_fd : c->peers[h.from].ctl_fd) >= 0) {
			ack.status = NPCCL_ERR_PROTOCOL;
			snprintf(ack.text, sizeof(ack.text),
				 "rank %d of communicator %016llx refused the connection: it comes "
				 "from a process of another communicator (tag %016llx, rank %d)",
				 c->rank, (unsigned long long)c->magic,
				 (unsigned long long)h.comm_magic, h.from);
			npccl_log(NPCCL_LOG_WARN, "%s", ack.text);
			sock_write_full(fd, &ack, sizeof(ack), now_ns() + 1000000000ull);
			close(fd);
			continue;
		}
		sock_write_full(fd, &ack, sizeof(ack), deadline);
		if (h.kind == 0)
			c->peers[h.from].data_fd = fd;
		else
			c->peers[h.from].ctl_fd = fd;
		expect--;
	}
	/* 3. read the acknowledgements of our own connections */
	for (int j = c->rank + 1; j < c->nranks; j++) {
		struct peer *p = &c->peers[j];
		if (p->local)
			continue;
		for (int kind = 0; kind < 2; kind++) {
			struct conn_ack ack;
			int fd = kind ? p->ctl_fd : p->data_fd;
			if (sock_read_full(fd, &ack, sizeof(ack), deadline) < 0 ||
			    ack.magic != BOOT_MAGIC) {
				snprintf(err, errlen,
					 "rank %d: rank %d closed the connection during setup", c->rank,
					 j);
				return NPCCL_ERR_BOOTSTRAP;
			}
			if (ack.status != NPCCL_OK) {
				ack.text[sizeof(ack.text) - 1] = 0;
				snprintf(err, errlen, "rank %d: %s", c->rank, ack.text);
				return (npccl_status_t)ack.status;
			}
		}
	}
	/* queue pairs where both ends have an RDMA device (their data sockets
	 * carry the connection data, then close); TCP for the others */
	npccl_status_t st = rdma_connect(c, err, errlen);
	if (st != NPCCL_OK)
		return st;
	for (int j = 0; j < c->nranks; j++) {
		struct peer *p = &c->peers[j];
		if (p->local || j == c->rank) {
			continue;
		} else if (p->tp == &rdma_transport) {
			sock_set_nonblock(p->ctl_fd, true);
			continue;
		}
		sock_tune_data(p->data_fd);
		sock_set_nonblock(p->data_fd, true);
		sock_set_nonblock(p->ctl_fd, true);
		p->tp = &tcp_transport;
		p->bounce = malloc(npccl_config()->pipeline_chunk);
		if (!p->bounce)
			return NPCCL_ERR_NOMEM;
	}
	return NPCCL_OK;
}

npccl_status_t bootstrap_run(struct npccl_comm *c, const struct boot_src *src, char *err,
			     size_t errlen)
{
	const struct unique_id_wire *w = src->id ? (const void *)src->id->internal : NULL;
	npccl_status_t st;
	struct boot_src kvsrc;
	uint64_t kv_deadline = 0;
	if (src->kv) {
		kvsrc = *src;
		if (kvsrc.timeout_ms <= 0)
			kvsrc.timeout_ms = npccl_config()->bootstrap_timeout_ms;
		src = &kvsrc;
		kv_deadline = now_ns() + (uint64_t)src->timeout_ms * 1000000ull;
		if ((st = kv_get_tag(c, src, kv_deadline, err, errlen)) != NPCCL_OK)
			return st;
	} else if (memcmp(w->tag, "NPCCLID1", 8)) {
		snprintf(err, errlen, "the unique id is not one made by npccl_get_unique_id");
		return NPCCL_ERR_INVALID_ARG;
	} else {
		c->magic = w->magic;
	}
	struct host_identity hid;
	host_identity_get(&hid);
	struct peer_info me = { .rank = (uint32_t)c->rank, .pid = (uint32_t)getpid(),
				.host_id = hid.host_id, .pidns_id = hid.pidns_id };
	memcpy(me.hostname, hid.hostname, sizeof(me.hostname));
	if (npccl_config()->disable_shm)	/* every rank its own "host": TCP only */
		me.host_id ^= 0x9e3779b97f4a7c15ull * ((uint64_t)getpid() + 1);
	st = rdma_probe(c, &me.flags, err, errlen);
	if (st != NPCCL_OK)
		return st;

	c->listen_fd = sock_listen_tcp(htonl(INADDR_ANY), 0, err, errlen);
	if (c->listen_fd < 0)
		return NPCCL_ERR_SYSTEM;
	/* listening before the root answers anyone, so local peers can connect */
	st = shm_listen(c, err, errlen);
	if (st != NPCCL_OK)
		return st;
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	getsockname(c->listen_fd, (struct sockaddr *)&sa, &sl);
	me.port = sa.sin_port;

	st = src->kv ? kv_exchange(c, src, &me, kv_deadline, err, errlen)
		     : exchange_with_root(c, w, &me, err, errlen);
	if (st != NPCCL_OK)
		return st;
	st = group_hosts(c);
	if (st != NPCCL_OK)
		return st;
	st = rdma_check_table(c, err, errlen);
	if (st != NPCCL_OK)
		return st;
	/* (NPCCL_DISABLE_SHM makes local ranks "remote" on purpose: loopback is right then) */
	for (int i = 0; i < c->nranks && !npccl_config()->disable_shm; i++) {
		const struct peer_info *pi = &c->peers[i].info;
		if (!c->peers[i].local && (ntohl(pi->ipv4) >> 24) == 127) {
			snprintf(err, errlen, "rank %d (pid %u on %s) runs on another host but "
				 "advertises %s: set NPCCL_SOCKET_ADDR (or MASTER_ADDR, the "
				 "rendezvous host) on every rank", i, pi->pid, pi->hostname,
				 ipv4_str(pi->ipv4, (char[INET_ADDRSTRLEN]){ 0 }));
			return NPCCL_ERR_BOOTSTRAP;
		}
	}
	st = shm_setup(c, err, errlen);
	if (st != NPCCL_OK)
		return st;
	st = connect_remote(c, err, errlen);
	close(c->listen_fd);
	c->listen_fd = -1;
	return st;
}
