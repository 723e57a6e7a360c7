/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * transport_shm.c - the intra-host transport.
 *
 * Every rank owns one shared region (shm_region.c) holding its control block
 * (doorbell flag, published operation, fast-path counters), one FIFO per
 * local sender (nslots slots of a 64-byte header + slot payload; head is
 * written by the sender, tail by this rank, both with release/acquire
 * ordering) and the fast-path staging/result slots used by algo_shm.c.
 * Regions, doorbell eventfds and pidfds are exchanged once over an abstract
 * Unix socket per local pair, which then stays open as the control channel
 * (its EOF and the pidfd tell when a peer dies). A sender copies pieces into
 * the receiver's FIFO; the receiver copies (or reduces) them out, checking
 * the header of the first piece exactly as the TCP transport does.
 *
 * Messages larger than a FIFO go by rendezvous where every local rank can
 * read every other's memory (c->cma_ok: npushm spaces or cross-memory
 * attach): the sender opens its buffer in its space and puts one slot with
 * the header and the buffer's address; the receiver copies (or reduces) the
 * message straight out of the sender's buffer (peer_copy.c), then consumes
 * the slot, which completes the send. One copy instead of two, and no
 * change to when a send can complete: a message that does not fit the FIFO
 * never completed before its receive was posted.
 */
#include "npccl_internal.h"
#include "transport/transport.h"
#include "npushm_space.h"

#include <errno.h>
#include <signal.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define SHM_HELLO_MAGIC 0x4e505348u	/* "NPSH" */
#define SHM_HELLO_FAILED 0x4e504658u	/* "NPFX": the sender's own setup failed */

/* The 64 bytes before a FIFO slot's payload: the message's header, then,
 * for a message sent by rendezvous (rndv == RNDV_MAGIC, no payload), the
 * sender's buffer address. */
struct slot_hdr {
	struct wire_hdr hdr;
	uint64_t rndv_addr;
	uint32_t rndv;
	uint32_t reserved;
};
_Static_assert(sizeof(struct slot_hdr) == 64, "FIFO slot header layout");
#define RNDV_MAGIC 0x564e4452u	/* "RDNV" */
/* bytes a receiver copies by rendezvous per progress call (other peers'
 * queues move in between) */
#define RNDV_PIECE ((size_t)4 << 20)

struct shm_hello {
	uint32_t magic;
	int32_t from, to;
	union {
		int32_t has_pidfd;	/* SHM_HELLO_MAGIC */
		int32_t cause;		/* SHM_HELLO_FAILED: the local rank the failure started with */
	};
	uint64_t comm_magic;
	uint32_t has_space;	/* SHM_HELLO_MAGIC: an npushm space descriptor follows the pidfd */
	uint32_t reserved;
};

void shm_layout_compute(struct shm_layout *l, int nlocal)
{
	const struct npccl_config *cfg = npccl_config();
	l->slot_bytes = cfg->shm_slot_bytes;
	l->nslots = cfg->shm_slots;
	l->slot_stride = 64 + l->slot_bytes;
	l->fifo_bytes = ALIGN_UP(offsetof(struct shm_fifo, slots) +
					 (size_t)l->nslots * l->slot_stride, 4096);
	l->fifo_off = ALIGN_UP(sizeof(struct shm_ctl), 4096);
	l->fp_chunk = cfg->fp_chunk_bytes;
	l->fp_slots = 4;	/* at most 4: shm_ctl.step_hash has 4 entries */
	l->fp_stage_off = l->fifo_off + (size_t)nlocal * l->fifo_bytes;
	l->fp_result_off = l->fp_stage_off + (size_t)l->fp_slots * l->fp_chunk;
	l->total = l->fp_result_off + (size_t)l->fp_slots * l->fp_chunk;
}

static socklen_t unix_addr(struct sockaddr_un *sa, uint64_t magic, int rank)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	int n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "npccl-%016llx-%d",
			 (unsigned long long)magic, rank);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

npccl_status_t shm_listen(struct npccl_comm *c, char *err, size_t errlen)
{
	c->unix_listen_fd = -1;
	if (npccl_config()->disable_shm)
		return NPCCL_OK;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket(AF_UNIX): %s", strerror(errno));
		return NPCCL_ERR_SYSTEM;
	}
	struct sockaddr_un sa;
	socklen_t sl = unix_addr(&sa, c->magic, c->rank);
	if (bind(fd, (struct sockaddr *)&sa, sl) < 0 || listen(fd, 256) < 0) {
		int e = errno;
		snprintf(err, errlen,
			 "cannot listen on the abstract Unix socket @npccl-%016llx-%d: %s%s",
			 (unsigned long long)c->magic, c->rank, strerror(e),
			 e == EADDRINUSE ? " (rank joined twice with the same unique id?)" : "");
		close(fd);
		return e == EADDRINUSE ? NPCCL_ERR_BOOTSTRAP : NPCCL_ERR_SYSTEM;
	}
	c->unix_listen_fd = fd;
	return NPCCL_OK;
}

/* Has local rank @j's process exited? (Only known where its pid is comparable.) */
static bool local_peer_exited(struct npccl_comm *c, int j)
{
	char st = peer_proc_state(c, j);

	return st == 'Z' || st == 'X';
}

/*
 * "1, 3": the local ranks other than us and @skip whose processes have
 * exited, into @buf (empty if none), the lowest into *@first; with
 * @unconnected, only those we still wait for.
 */
static int exited_locals(struct npccl_comm *c, int skip, bool unconnected, char *buf, size_t len,
			 int *first)
{
	size_t used = 0;
	int n = 0;

	buf[0] = 0;
	if (first)
		*first = -1;
	for (int k = 0; k < c->nlocal; k++) {
		int j = c->local_ranks[k];
		if (j == c->rank || j == skip || (unconnected && (k > c->local_index || c->peers[j].ctl_fd >= 0)) ||
		    !local_peer_exited(c, j))
			continue;
		used += (size_t)snprintf(buf + MIN(used, len - 1), len - MIN(used, len - 1), "%s%d",
					 n ? ", " : "", j);
		if (first && *first < 0)
			*first = j;
		n++;
	}
	return n;
}

/*
 * Every local rank listens before it says hello to the bootstrap root, so
 * once the table is out a refused connection means the rank closed its
 * socket: -ESRCH if its process exited, -ECONNREFUSED if its own setup
 * failed.
 */
static int connect_unix(struct npccl_comm *c, int rank, uint64_t deadline)
{
	struct sockaddr_un sa;
	socklen_t sl = unix_addr(&sa, c->magic, rank);
	for (;;) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (connect(fd, (struct sockaddr *)&sa, sl) == 0)
			return fd;
		int e = errno;
		close(fd);
		if (e == ECONNREFUSED || e == ENOENT)
			return local_peer_exited(c, rank) ? -ESRCH : -ECONNREFUSED;
		if (now_ns() >= deadline || (e != EAGAIN && e != EINTR))
			return -e;
		usleep(1000);
	}
}

/*
 * Accept the next connection from a local rank below us, in 20 ms slices:
 * between them, ranks below us that have not connected yet and whose
 * processes exited end the wait (-ESRCH; @gone lists them, for the
 * message), as does the deadline.
 */
static int accept_local(struct npccl_comm *c, uint64_t deadline, char *gone, size_t gonelen,
			int *first)
{
	for (;;) {
		uint64_t slice = MIN(deadline, now_ns() + 20000000ull);
		int fd = sock_accept(c->unix_listen_fd, slice);
		if (fd != -ETIMEDOUT || now_ns() >= deadline)
			return fd;
		if (exited_locals(c, -1, true, gone, gonelen, first))
			return -ESRCH;
	}
}

/* The message names the peer, and any local rank whose process has exited (the likely cause). */
static npccl_status_t exchange_fail(struct npccl_comm *c, int peer, const char *what,
				    char *err, size_t errlen)
{
	char gone[128];

	if (exited_locals(c, peer, false, gone, sizeof(gone), NULL))
		snprintf(err, errlen,
			 "rank %d: shared-memory setup with local rank %d failed: %s (the process of local rank(s) %s exited)",
			 c->rank, peer, what, gone);
	else
		snprintf(err, errlen, "rank %d: shared-memory setup with local rank %d failed: %s",
			 c->rank, peer, what);
	return NPCCL_ERR_BOOTSTRAP;
}

static int attach_peer(struct npccl_comm *c, struct peer *p, const struct shm_hello *h, int *fds,
		       int nfds, int sock, uint64_t deadline, char *e2, size_t e2len)
{
	if (nfds < 1) {
		snprintf(e2, e2len, "no doorbell descriptor received");
		return -1;
	}
	int next = 1;
	p->doorbell_fd = fds[0];
	p->pidfd = (h->has_pidfd && nfds > next) ? fds[next++] : -1;
	p->space_fd = (h->has_space && nfds > next) ? fds[next++] : -1;
	int ms = (int)((deadline - MIN(deadline, now_ns())) / 1000000) + 1;
	if (shm_region_recv(sock, ms, &p->region, e2, e2len) < 0)
		return -1;
	if (shm_region_size(p->region) != c->layout.total) {
		snprintf(e2, e2len, "region size %zu differs from ours (%zu): mixed configuration",
			 shm_region_size(p->region), c->layout.total);
		return -1;
	}
	p->ctl_fd = sock;
	return 0;
}

/* A failure notice (SHM_HELLO_FAILED) of this communicator, addressed to us, from a local rank. */
static bool is_failure_notice(struct npccl_comm *c, const struct shm_hello *h)
{
	return h->magic == SHM_HELLO_FAILED && h->comm_magic == c->magic && h->to == c->rank &&
	       h->from >= 0 && h->from < c->nranks && h->from != c->rank && c->peers[h->from].local;
}

/* Our error for a failure notice; returns the rank the failure started with. */
static int failure_notice_fail(struct npccl_comm *c, const struct shm_hello *h, char *err,
			       size_t errlen)
{
	int cause = h->cause;

	if (cause < 0 || cause >= c->nranks || !c->peers[cause].local)
		cause = h->from;
	if (cause == h->from)
		exchange_fail(c, h->from, "its own setup failed (its error says why)", err, errlen);
	else
		snprintf(err, errlen,
			 "rank %d: shared-memory setup failed: local rank %d failed (reported by local rank %d)",
			 c->rank, cause, h->from);
	return cause;
}

/*
 * If @h (received with the @nf descriptors @fds) is a failure notice from
 * local rank @from, close the descriptors, set our error and return the rank
 * the failure started with; otherwise -1 and nothing is touched.
 */
static int take_failure_notice(struct npccl_comm *c, const struct shm_hello *h, int from,
			       int *fds, int nf, char *err, size_t errlen)
{
	if (nf < 0 || h->from != from || !is_failure_notice(c, h))
		return -1;
	for (int i = 0; i < nf; i++)
		close(fds[i]);
	return failure_notice_fail(c, h, err, errlen);
}

static void send_failure_notice(struct npccl_comm *c, int fd, int to, int cause)
{
	struct shm_hello h = { .magic = SHM_HELLO_FAILED, .from = c->rank, .to = to,
			       .cause = cause, .comm_magic = c->magic };

	send_fds(fd, &h, sizeof(h), NULL, 0);
}

/*
 * Our setup failed, starting with local rank @cause: tell the local ranks
 * that would otherwise wait for us until the deadline. Best effort, without
 * waiting:
 * - those above us we have not connected to (they wait in accept_local()):
 *   a connection carrying a failure notice;
 * - those below us whose connections wait in our backlog, or arrive within
 *   50 ms (they wait for our answer): the notice as the answer.
 * Those below us that connect after we close our socket are refused, which
 * connect_unix() reports at once.
 */
static void setup_failed(struct npccl_comm *c, int cause)
{
	for (int k = c->local_index + 1; k < c->nlocal; k++) {
		int j = c->local_ranks[k];
		if (c->peers[j].ctl_fd >= 0)
			continue;
		struct sockaddr_un sa;
		socklen_t sl = unix_addr(&sa, c->magic, j);
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			break;
		if (connect(fd, (struct sockaddr *)&sa, sl) == 0)
			send_failure_notice(c, fd, j, cause);
		close(fd);
	}
	/* linger 50 ms: ranks below us that are about to connect get the notice too */
	uint64_t until = now_ns() + 50000000ull;
	for (;;) {
		struct pollfd pf = { .fd = c->unix_listen_fd, .events = POLLIN };
		int ms = (int)((until - MIN(until, now_ns())) / 1000000);
		if (c->unix_listen_fd < 0 || poll(&pf, 1, ms) <= 0)
			break;
		int fd = accept4(c->unix_listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			break;
		struct shm_hello h;
		int fds[3] = { -1, -1, -1 };
		int nf = recv_fds(fd, &h, sizeof(h), fds, 3, now_ns() + 100000000ull);
		for (int i = 0; i < nf; i++)
			close(fds[i]);
		if (nf >= 0 && h.magic == SHM_HELLO_MAGIC && h.comm_magic == c->magic &&
		    h.to == c->rank)
			send_failure_notice(c, fd, h.from, cause);
		close(fd);
	}
}

/*
 * My npushm space, if the module offers one: local peers then read and
 * write my buffers with one copy and no ptrace access (algo_cma.c grants
 * each call's buffers). Without it, process_vm_readv is tried instead.
 */
static void space_open_for_peers(struct npccl_comm *c)
{
	npushm_space_t *sp;

	c->space = NULL;
	if (npccl_config()->disable_cma || npccl_config()->disable_space)
		return;
	if (npushm_space_open(&sp) == NPUSHM_OK)
		c->space = sp;
	else
		npccl_log(NPCCL_LOG_DEBUG, "rank %d: no npushm space (%s): single copy needs "
			  "cross-memory attach", c->rank, npushm_last_error());
}

npccl_status_t shm_setup(struct npccl_comm *c, char *err, size_t errlen)
{
	c->doorbell_fd = -1;
	if (c->nlocal <= 1) {
		if (c->unix_listen_fd >= 0)
			close(c->unix_listen_fd);
		c->unix_listen_fd = -1;
		return NPCCL_OK;
	}
	const struct npccl_config *cfg = npccl_config();
	uint64_t deadline = now_ns() + (uint64_t)cfg->bootstrap_timeout_ms * 1000000ull;
	char e2[256], name[48];
	int cause = c->rank;	/* on failure: the local rank it started with, for the others */
	if (c->fault_kind == FAULT_SETUP_KILL && c->fault_rank == c->rank)
		raise(SIGKILL);	/* tests: a rank dying between the bootstrap and this setup */
	if (c->fault_kind == FAULT_SETUP_FAIL && c->fault_rank == c->rank) {
		snprintf(err, errlen, "rank %d: shared-memory setup failed: injected (NPCCL_FAULT_INJECT)",
			 c->rank);
		setup_failed(c, cause);
		return NPCCL_ERR_BOOTSTRAP;
	}
	shm_layout_compute(&c->layout, c->nlocal);
	snprintf(name, sizeof(name), "npccl-%016llx-%d", (unsigned long long)c->magic, c->rank);
	if (shm_region_create(c->layout.total, name, &c->region, e2, sizeof(e2)) < 0) {
		snprintf(err, errlen, "rank %d: %s", c->rank, e2);
		setup_failed(c, cause);
		return NPCCL_ERR_SYSTEM;
	}
	c->doorbell_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	int self_pidfd = pidfd_open(getpid(), 0);
	if (c->doorbell_fd < 0) {
		snprintf(err, errlen, "eventfd: %s", strerror(errno));
		setup_failed(c, cause);
		return NPCCL_ERR_SYSTEM;
	}
	/* peers read and write my buffers through my space (algo_cma.c) */
	space_open_for_peers(c);
	int myfds[3] = { c->doorbell_fd, self_pidfd, -1 }, nmy = 1;
	if (self_pidfd >= 0)
		myfds[nmy++] = self_pidfd;
	uint32_t has_space = c->space != NULL;
	if (has_space)
		myfds[nmy++] = npushm_space_fd(c->space);
	npccl_status_t st = NPCCL_OK;

	/* A: connect to the local ranks above us */
	for (int k = c->local_index + 1; k < c->nlocal && st == NPCCL_OK; k++) {
		int j = c->local_ranks[k];
		int fd = connect_unix(c, j, deadline);
		if (fd < 0) {
			cause = j;
			st = exchange_fail(c, j, fd == -ESRCH ? "its process exited"
					   : fd == -ECONNREFUSED ? "it stopped listening: its own setup failed"
					   : "cannot connect to it", err, errlen);
			break;
		}
		struct shm_hello h = { SHM_HELLO_MAGIC, c->rank, j, { self_pidfd >= 0 }, c->magic,
				       has_space, 0 };
		if (send_fds(fd, &h, sizeof(h), myfds, nmy) < 0 || shm_region_send(c->region, fd) < 0) {
			/* it may have answered our hello with a failure notice before closing */
			struct shm_hello n;
			int nfds[3] = { -1, -1, -1 };
			int nn = recv_fds(fd, &n, sizeof(n), nfds, 3, now_ns() + 100000000ull);
			close(fd);
			cause = take_failure_notice(c, &n, j, nfds, nn, err, errlen);
			st = NPCCL_ERR_BOOTSTRAP;
			if (cause < 0) {
				for (int i = 0; i < nn; i++)
					close(nfds[i]);
				cause = j;
				exchange_fail(c, j, "it closed the connection", err, errlen);
			}
			break;
		}
		c->peers[j].ctl_fd = fd;
	}
	/* B: accept the local ranks below us, answer each */
	for (int pending = c->local_index; pending > 0 && st == NPCCL_OK;) {
		char gone[128] = "";
		int first_gone = -1;
		int fd = accept_local(c, deadline, gone, sizeof(gone), &first_gone);
		if (fd == -ESRCH) {
			snprintf(err, errlen,
				 "rank %d: shared-memory setup failed: the process of local rank(s) %s exited before connecting",
				 c->rank, gone);
			cause = first_gone;
			st = NPCCL_ERR_BOOTSTRAP;
			break;
		}
		if (fd < 0) {
			snprintf(err, errlen,
				 "rank %d: a local rank did not connect within %d ms during setup",
				 c->rank, cfg->bootstrap_timeout_ms);
			st = NPCCL_ERR_BOOTSTRAP;
			break;
		}
		struct shm_hello h;
		int fds[3] = { -1, -1, -1 };
		int nf = recv_fds(fd, &h, sizeof(h), fds, 3, MIN(deadline, now_ns() + 5000000000ull));
		int notice_cause = nf >= 0 ? take_failure_notice(c, &h, h.from, fds, nf, err, errlen) : -1;
		if (notice_cause >= 0) {
			close(fd);
			cause = notice_cause;
			st = NPCCL_ERR_BOOTSTRAP;
			break;
		}
		bool ok = nf >= 0 && h.magic == SHM_HELLO_MAGIC && h.comm_magic == c->magic &&
			  h.to == c->rank && h.from >= 0 && h.from < c->nranks &&
			  c->peers[h.from].local && h.from < c->rank && c->peers[h.from].ctl_fd < 0;
		if (!ok) {
			npccl_log(NPCCL_LOG_WARN, "rank %d: refused a local connection from a "
						  "process of another communicator", c->rank);
			for (int i = 0; i < MAX(nf, 0); i++)
				close(fds[i]);
			close(fd);
			continue;
		}
		struct peer *p = &c->peers[h.from];
		if (attach_peer(c, p, &h, fds, nf, fd, deadline, e2, sizeof(e2)) < 0) {
			close(fd);
			cause = h.from;
			st = exchange_fail(c, h.from, e2, err, errlen);
			break;
		}
		struct shm_hello r = { SHM_HELLO_MAGIC, c->rank, h.from, { self_pidfd >= 0 }, c->magic,
				       has_space, 0 };
		if (send_fds(fd, &r, sizeof(r), myfds, nmy) < 0 || shm_region_send(c->region, fd) < 0) {
			cause = h.from;
			st = exchange_fail(c, h.from, "it closed the connection", err, errlen);
		}
		pending--;
	}
	/* C: the answers of the ranks above us (or their failure notices) */
	for (int k = c->local_index + 1; k < c->nlocal && st == NPCCL_OK; k++) {
		int j = c->local_ranks[k];
		struct peer *p = &c->peers[j];
		struct shm_hello h;
		int fds[3] = { -1, -1, -1 };
		int nf = recv_fds(p->ctl_fd, &h, sizeof(h), fds, 3, deadline);
		int notice_cause = take_failure_notice(c, &h, j, fds, nf, err, errlen);
		if (notice_cause >= 0) {
			cause = notice_cause;
			st = NPCCL_ERR_BOOTSTRAP;
			break;
		}
		if (nf < 0 || h.magic != SHM_HELLO_MAGIC || h.from != j || h.comm_magic != c->magic) {
			cause = j;
			st = exchange_fail(c, j, "no valid answer", err, errlen);
			break;
		}
		if (attach_peer(c, p, &h, fds, nf, p->ctl_fd, deadline, e2, sizeof(e2)) < 0) {
			cause = j;
			st = exchange_fail(c, j, e2, err, errlen);
		}
	}
	if (st != NPCCL_OK)
		setup_failed(c, cause);
	if (self_pidfd >= 0)
		close(self_pidfd);
	close(c->unix_listen_fd);
	c->unix_listen_fd = -1;
	if (st != NPCCL_OK)
		return st;

	c->ctl = calloc((size_t)c->nlocal, sizeof(*c->ctl));
	c->fp_stage = calloc((size_t)c->nlocal, sizeof(char *));
	c->fp_result = calloc((size_t)c->nlocal, sizeof(char *));
	c->fp_srcs = calloc((size_t)MAX(c->nlocal, 2), sizeof(char *));
	c->fp_dsts = calloc((size_t)MAX(c->nlocal, 2), sizeof(char *));
	if (!c->ctl || !c->fp_stage || !c->fp_result || !c->fp_srcs || !c->fp_dsts)
		return NPCCL_ERR_NOMEM;
	for (int k = 0; k < c->nlocal; k++) {
		int j = c->local_ranks[k];
		char *base = j == c->rank ? shm_region_addr(c->region)
					  : shm_region_addr(c->peers[j].region);
		c->ctl[k] = (struct shm_ctl *)base;
		c->fp_stage[k] = base + c->layout.fp_stage_off;
		c->fp_result[k] = base + c->layout.fp_result_off;
		if (j == c->rank)
			continue;
		struct peer *p = &c->peers[j];
		p->tp = &shm_transport;
		p->tx_fifo = (struct shm_fifo *)(base + c->layout.fifo_off +
						 (size_t)c->local_index * c->layout.fifo_bytes);
		p->rx_fifo = (struct shm_fifo *)((char *)shm_region_addr(c->region) +
						 c->layout.fifo_off + (size_t)k * c->layout.fifo_bytes);
		sock_set_nonblock(p->ctl_fd, true);
	}
	cpu_set_t set;
	int ncpu = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
	long onln = sysconf(_SC_NPROCESSORS_ONLN);
	c->oversubscribed = c->nlocal > MAX(ncpu, (int)MIN(onln, 1024)) || c->nlocal > ncpu * 2;
	if (getenv("NPCCL_OVERSUBSCRIBED"))
		c->oversubscribed = atoi(getenv("NPCCL_OVERSUBSCRIBED")) != 0;
	return NPCCL_OK;
}

void shm_teardown(struct npccl_comm *c)
{
	/* sends never received: their buffers go back to the caller, closed */
	p2p_abandon(c);
	for (int i = 0; i < c->nranks; i++) {
		struct peer *p = &c->peers[i];
		shm_region_close(p->region);
		p->region = NULL;
	}
	shm_region_close(c->region);
	c->region = NULL;
	if (c->doorbell_fd >= 0)
		close(c->doorbell_fd);
	c->doorbell_fd = -1;
	npushm_space_close(c->space);
	c->space = NULL;
	free(c->ctl);
	free(c->fp_stage);
	free(c->fp_result);
	free(c->fp_srcs);
	free(c->fp_dsts);
	c->ctl = NULL;
	c->fp_stage = c->fp_result = c->fp_srcs = c->fp_dsts = NULL;
}

/* ---- FIFO progress -------------------------------------------------------- */

static struct slot_hdr *slot_at(const struct shm_layout *l, struct shm_fifo *f, uint64_t i)
{
	return (struct slot_hdr *)(f->slots + (i % (uint64_t)l->nslots) * l->slot_stride);
}

/* A send whose receiver copies it out of the sender's buffer (rendezvous). */
static bool by_rendezvous(const struct npccl_comm *c, const struct req *r)
{
	const struct shm_layout *l = &c->layout;
	return c->cma_ok && r->len > (size_t)l->nslots * l->slot_bytes;
}

static void rndv_close(struct npccl_comm *c, struct req *r)
{
	if (r->grant)
		npushm_space_revoke(c->space, r->grant);
	r->grant = 0;
}

/* Sender: one slot pointing at the buffer; done when the receiver consumed it. */
static int shm_send_rndv(struct npccl_comm *c, struct peer *p, struct req *r)
{
	struct shm_fifo *f = p->tx_fifo;
	uint64_t tail = atomic_load_explicit(&f->tail, memory_order_acquire);
	if (!r->hdr_done) {
		uint64_t head = atomic_load_explicit(&f->head, memory_order_relaxed);
		if (head - tail >= (uint64_t)c->layout.nslots)
			goto wait;
		if (c->space && npushm_space_grant(c->space, r->sbuf, r->len, NPUSHM_SPACE_READ,
						   &r->grant) != NPUSHM_OK)
			return comm_fail(c, NPCCL_ERR_SYSTEM, -1, "cannot open a message to rank %d: "
					 "%s", p->rank, npushm_last_error()), -1;
		struct slot_hdr *sh = slot_at(&c->layout, f, head);
		sh->hdr = r->hdr;
		sh->rndv_addr = (uint64_t)(uintptr_t)r->sbuf;
		sh->rndv = RNDV_MAGIC;
		r->rndv = true;
		r->rndv_slot = head;
		r->hdr_done = 1;
		atomic_store_explicit(&f->head, head + 1, memory_order_release);
		doorbell_ring(c, p->rank);
		return 0;
	}
	if (tail > r->rndv_slot) {
		rndv_close(c, r);
		r->done = r->len;
		return 1;
	}
wait:
	if (p->gone && atomic_load_explicit(&f->tail, memory_order_acquire) == tail)
		return comm_peer_lost(c, p->rank, "its connection closed"), -1;
	return 0;
}

/* Receiver: the next piece of a rendezvous message at the sender's @addr;
 * 1 when the whole message is in. */
static int shm_recv_rndv(struct npccl_comm *c, struct peer *p, struct req *r, uint64_t addr)
{
	size_t n = MIN(RNDV_PIECE, r->len - r->done);
	if (r->kind == REQ_RECV) {
		if (peer_copy(c, p->rank, r->rbuf + r->done, addr + r->done, n, false))
			return -1;
	} else {
		size_t piece = npccl_config()->pipeline_chunk;	/* a multiple of 64 */
		if (!p->bounce && !(p->bounce = malloc(piece)))
			return comm_fail(c, NPCCL_ERR_NOMEM, -1, "no memory for %zu bytes", piece), -1;
		n = MIN(n, piece);
		if (peer_copy(c, p->rank, p->bounce, addr + r->done, n, false))
			return -1;
		reduce_into((npccl_dtype_t)r->dtype, (npccl_redop_t)r->redop, r->rbuf + r->done,
			    r->rsrc + r->done, p->bounce, n / npccl_dtype_size((npccl_dtype_t)r->dtype));
	}
	r->done += n;
	return r->done == r->len;
}

static void shm_abandon_send(struct npccl_comm *c, struct peer *p, struct req *r)
{
	(void)p;
	rndv_close(c, r);
}

static int shm_progress_send(struct npccl_comm *c, struct peer *p, struct req *r)
{
	const struct shm_layout *l = &c->layout;
	struct shm_fifo *f = p->tx_fifo;
	if (r->rndv || (!r->hdr_done && by_rendezvous(c, r)))
		return shm_send_rndv(c, p, r);
	uint64_t head = atomic_load_explicit(&f->head, memory_order_relaxed);
	uint64_t tail = atomic_load_explicit(&f->tail, memory_order_acquire);
	bool moved = false;
	int done = 0;
	for (;;) {
		if (head - tail >= (uint64_t)l->nslots) {
			tail = atomic_load_explicit(&f->tail, memory_order_acquire);
			if (head - tail >= (uint64_t)l->nslots)
				break;
		}
		struct slot_hdr *sh = slot_at(l, f, head);
		size_t n = MIN(l->slot_bytes, r->len - r->done);
		sh->hdr = r->hdr;
		sh->rndv = 0;
		if (n)
			memcpy((char *)sh + 64, r->sbuf + r->done, n);
		r->done += n;
		r->hdr_done = 1;
		atomic_fetch_add_explicit(&c->copied.shm_bytes, n, memory_order_relaxed);
		head++;
		atomic_store_explicit(&f->head, head, memory_order_release);
		moved = true;
		if (r->done == r->len) {
			done = 1;
			break;
		}
	}
	if (moved)
		doorbell_ring(c, p->rank);
	if (!done && p->gone) {
		/* it may have written more just before leaving: look once more */
		if (atomic_load_explicit(&f->tail, memory_order_acquire) != tail)
			return 0;
		return comm_peer_lost(c, p->rank, "its connection closed"), -1;
	}
	return done;
}

static int shm_check_header(struct npccl_comm *c, struct peer *p, struct req *r,
			    const struct wire_hdr *h)
{
	char who[128];
	if (!wire_hdr_valid(h)) {
		peer_describe(c, p->rank, who, sizeof(who));
		comm_fail(c, NPCCL_ERR_PROTOCOL, p->rank,
			  "corrupt message header in shared memory from %s", who);
		return -1;
	}
	return wire_hdr_expect(c, p->rank, h, &r->hdr);
}

static int shm_progress_recv(struct npccl_comm *c, struct peer *p, struct req *r)
{
	const struct shm_layout *l = &c->layout;
	struct shm_fifo *f = p->rx_fifo;
	uint64_t tail = atomic_load_explicit(&f->tail, memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&f->head, memory_order_acquire);
	size_t esize = npccl_dtype_size((npccl_dtype_t)r->dtype);
	bool moved = false;
	int done = 0;
	while (tail < head) {
		const struct slot_hdr *sh = slot_at(l, f, tail);
		const char *slot = (const char *)sh;
		if (!r->hdr_done) {
			if (shm_check_header(c, p, r, &sh->hdr) < 0)
				return -1;
			r->hdr_done = 1;
		}
		if (sh->rndv == RNDV_MAGIC) {
			int rc = shm_recv_rndv(c, p, r, sh->rndv_addr);
			if (rc <= 0)
				return rc;
			atomic_store_explicit(&f->tail, tail + 1, memory_order_release);
			doorbell_ring(c, p->rank);
			return 1;
		}
		size_t n = MIN(l->slot_bytes, r->len - r->done);
		if (n) {
			if (r->kind == REQ_RECV)
				memcpy(r->rbuf + r->done, slot + 64, n);
			else
				reduce_into((npccl_dtype_t)r->dtype, (npccl_redop_t)r->redop,
					    r->rbuf + r->done, r->rsrc + r->done, slot + 64,
					    n / esize);
		}
		r->done += n;
		tail++;
		atomic_store_explicit(&f->tail, tail, memory_order_release);
		moved = true;
		if (r->done == r->len) {
			done = 1;
			break;
		}
	}
	if (moved)
		doorbell_ring(c, p->rank);
	if (!done && p->gone) {
		if (atomic_load_explicit(&f->head, memory_order_acquire) != head)
			return 0;
		return comm_peer_lost(c, p->rank, "its connection closed"), -1;
	}
	return done;
}

const struct transport_ops shm_transport = {
	.name = "shm",
	.progress_send = shm_progress_send,
	.progress_recv = shm_progress_recv,
	.abandon_send = shm_abandon_send,
	.poll_fd = NULL,
};
