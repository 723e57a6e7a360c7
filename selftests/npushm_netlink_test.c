// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm_netlink_test.c - the "npushm" generic netlink family through
 * libnl-genl-3: pool statistics, per-uid usage, region dumps limited to what
 * the caller may see, lookups by id, attribute policy checks, and no
 * multicast group. Attacks: a dump that outgrows its buffer (many uids,
 * many names), global figures for CAP_SYS_ADMIN in a user namespace of its
 * own, a dump continued by a more privileged task.
 */
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>

#include "npushm_fixture.h"

#define MiB (1024UL * 1024)
#define MAX_SEEN 512

struct region_seen {
	uint64_t id, size, mapped, pinned;
	uint32_t uid, mode, names, handles, mappings, dmabufs, mappers;
	bool sealed, anonymous;
};

struct nl_ctx {
	struct nl_sock *sk;
	int family;
	int err;			/* the kernel's errno of the last request */
	struct region_seen seen[MAX_SEEN];
	int nseen;
	/* stats */
	uint64_t capacity, in_use, peak, regions, failed, quota, orphan;
	uint32_t own_uid;
	uint64_t own_bytes;
	/* uid dump */
	int nuids;
	uint32_t uids[MAX_SEEN];
	uint64_t uid_bytes[MAX_SEEN];
	int messages;
};

static int on_error(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
	((struct nl_ctx *)arg)->err = -e->error;
	return NL_STOP;
}

static int on_ack(struct nl_msg *msg, void *arg)
{
	((struct nl_ctx *)arg)->err = 0;
	return NL_STOP;
}

static int on_region(struct nl_msg *msg, void *arg)
{
	struct nl_ctx *c = arg;
	struct nlattr *a[NPUSHM_A_MAX + 1];
	struct region_seen *r;

	c->messages++;
	if (genlmsg_parse(nlmsg_hdr(msg), 0, a, NPUSHM_A_MAX, NULL) || c->nseen >= MAX_SEEN)
		return NL_SKIP;
	r = &c->seen[c->nseen++];
	memset(r, 0, sizeof(*r));
	r->id = nla_get_u64(a[NPUSHM_A_REGION_ID]);
	r->size = nla_get_u64(a[NPUSHM_A_REGION_SIZE]);
	r->uid = nla_get_u32(a[NPUSHM_A_REGION_OWNER_UID]);
	r->mode = nla_get_u32(a[NPUSHM_A_REGION_MODE]);
	r->names = nla_get_u32(a[NPUSHM_A_REGION_NAMES]);
	r->handles = nla_get_u32(a[NPUSHM_A_REGION_HANDLES]);
	r->mappings = nla_get_u32(a[NPUSHM_A_REGION_MAPPINGS]);
	r->dmabufs = nla_get_u32(a[NPUSHM_A_REGION_DMABUFS]);
	r->mappers = nla_get_u32(a[NPUSHM_A_REGION_MAPPERS]);
	r->mapped = nla_get_u64(a[NPUSHM_A_REGION_MAPPED_BYTES]);
	r->pinned = nla_get_u64(a[NPUSHM_A_REGION_PINNED_BYTES]);
	r->sealed = !!a[NPUSHM_A_REGION_SEALED];
	r->anonymous = !!a[NPUSHM_A_REGION_ANONYMOUS];
	return NL_OK;
}

static int on_stats(struct nl_msg *msg, void *arg)
{
	struct nl_ctx *c = arg;
	struct nlattr *a[NPUSHM_A_MAX + 1], *u[NPUSHM_A_MAX + 1];

	if (genlmsg_parse(nlmsg_hdr(msg), 0, a, NPUSHM_A_MAX, NULL))
		return NL_SKIP;
	c->capacity = nla_get_u64(a[NPUSHM_A_STATS_CAPACITY]);
	c->in_use = nla_get_u64(a[NPUSHM_A_STATS_IN_USE]);
	c->peak = nla_get_u64(a[NPUSHM_A_STATS_PEAK]);
	c->regions = nla_get_u64(a[NPUSHM_A_STATS_REGIONS]);
	c->failed = nla_get_u64(a[NPUSHM_A_STATS_FAILED_ALLOCS]);
	c->quota = nla_get_u64(a[NPUSHM_A_STATS_UID_QUOTA]);
	c->orphan = nla_get_u64(a[NPUSHM_A_STATS_ORPHAN_PINNED]);
	if (a[NPUSHM_A_UID_USAGE] &&
	    !nla_parse_nested(u, NPUSHM_A_MAX, a[NPUSHM_A_UID_USAGE], NULL)) {
		c->own_uid = nla_get_u32(u[NPUSHM_A_UID]);
		c->own_bytes = nla_get_u64(u[NPUSHM_A_UID_BYTES]);
	}
	return NL_OK;
}

static int on_uid(struct nl_msg *msg, void *arg)
{
	struct nl_ctx *c = arg;
	struct nlattr *a[NPUSHM_A_MAX + 1];

	c->messages++;
	if (genlmsg_parse(nlmsg_hdr(msg), 0, a, NPUSHM_A_MAX, NULL) || c->nuids >= MAX_SEEN)
		return NL_SKIP;
	c->uids[c->nuids] = nla_get_u32(a[NPUSHM_A_UID]);
	c->uid_bytes[c->nuids++] = nla_get_u64(a[NPUSHM_A_UID_BYTES]);
	return NL_OK;
}

static int ctx_open(struct nl_ctx *c)
{
	memset(c, 0, sizeof(*c));
	c->sk = nl_socket_alloc();
	if (!c->sk || genl_connect(c->sk))
		return -1;
	c->family = genl_ctrl_resolve(c->sk, NPUSHM_GENL_NAME);
	return c->family < 0 ? -1 : 0;
}

static void ctx_close(struct nl_ctx *c)
{
	nl_socket_free(c->sk);
}

/*
 * Send one request (a dump when flags has NLM_F_DUMP) with an optional
 * attribute of attr_len bytes; returns the kernel's errno.
 */
static int ctx_request(struct nl_ctx *c, uint8_t cmd, int flags, int attr, const void *val,
		       int attr_len, nl_recvmsg_msg_cb_t handler)
{
	struct nl_msg *msg = nlmsg_alloc();
	struct nl_cb *cb = nl_cb_alloc(NL_CB_DEFAULT);

	c->nseen = 0;
	c->nuids = 0;
	c->messages = 0;
	c->err = -1;
	genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, c->family, 0, flags | NLM_F_ACK, cmd,
		    NPUSHM_GENL_VERSION);
	if (attr)
		nla_put(msg, attr, attr_len, val);
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, handler, c);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, on_ack, c);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, on_ack, c);
	nl_cb_err(cb, NL_CB_CUSTOM, on_error, c);
	if (nl_send_auto(c->sk, msg) >= 0)
		while (c->err == -1 && nl_recvmsgs(c->sk, cb) >= 0)
			;
	nlmsg_free(msg);
	nl_cb_put(cb);
	return c->err;
}

static int ctx_dump(struct nl_ctx *c)
{
	return ctx_request(c, NPUSHM_CMD_REGION_GET, NLM_F_DUMP, 0, NULL, 0, on_region);
}

static struct region_seen *find_seen(struct nl_ctx *c, uint64_t id)
{
	int i;

	for (i = 0; i < c->nseen; i++)
		if (c->seen[i].id == id)
			return &c->seen[i];
	return NULL;
}

TEST_F(npushm, stats_match_query)
{
	struct nl_ctx c;
	struct npushm_query q;
	int fd = npu_create(self->root, "stats", 5 * MiB, 0600);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ctx_open(&c));
	ASSERT_EQ(0, ctx_request(&c, NPUSHM_CMD_STATS_GET, 0, 0, NULL, 0, on_stats));
	ASSERT_EQ(0, npu_query(self->dev, &q));
	EXPECT_EQ(q.capacity, c.capacity);
	EXPECT_EQ(q.in_use, c.in_use);
	EXPECT_EQ(q.regions, c.regions);
	EXPECT_EQ(q.uid_quota, c.quota);
	EXPECT_EQ(q.orphan_pinned, c.orphan);
	EXPECT_LE(c.in_use, c.peak);
	EXPECT_EQ(0, c.own_uid);
	EXPECT_EQ(q.uid_in_use, c.own_bytes);
	ctx_close(&c);
	close(fd);
	EXPECT_EQ(0, npu_unlink(self->root, "stats"));
}

TEST_F(npushm, stats_count_failures_and_peak)
{
	unsigned long long quota = npu_param_get("uid_quota");
	struct nl_ctx c;
	uint64_t failed, peak;
	int fd;

	ASSERT_EQ(0, ctx_open(&c));
	ASSERT_EQ(0, ctx_request(&c, NPUSHM_CMD_STATS_GET, 0, 0, NULL, 0, on_stats));
	failed = c.failed;
	fd = npu_alloc(self->dev, 64 * MiB);
	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_EQ(0, npu_param_set("uid_quota", "1M"));
	EXPECT_EQ(-EDQUOT, npu_alloc(self->dev, 2 * MiB));
	ASSERT_EQ(0, npu_param_set_u64("uid_quota", quota));
	ASSERT_EQ(0, ctx_request(&c, NPUSHM_CMD_STATS_GET, 0, 0, NULL, 0, on_stats));
	peak = c.peak;
	EXPECT_EQ(failed + 1, c.failed);
	EXPECT_LE(self->q0.in_use + 64 * MiB, peak);
	ctx_close(&c);
}

struct as_user {
	const char *dir;
	uint64_t root_id;
};

static int stats_as_user(void *arg)
{
	struct as_user *u = arg;
	int root = open(u->dir, O_RDONLY | O_DIRECTORY), fd, i;
	struct nl_ctx c;

	fd = npu_create(root, "user.region", 2 * MiB, 0600);
	if (fd < 0 || ctx_open(&c))
		return 1;
	if (ctx_request(&c, NPUSHM_CMD_STATS_GET, 0, 0, NULL, 0, on_stats))
		return 2;
	if (c.own_uid != 1000 || c.own_bytes != 2 * MiB)
		return 3;
	/* The per-uid dump: its own uid only, not root's. */
	if (ctx_request(&c, NPUSHM_CMD_UID_GET, NLM_F_DUMP, 0, NULL, 0, on_uid))
		return 4;
	if (c.nuids != 1 || c.uids[0] != 1000 || c.uid_bytes[0] != 2 * MiB)
		return 5;
	/* The region dump: its own region, not root's. */
	if (ctx_dump(&c) || find_seen(&c, u->root_id) || c.nseen != 1)
		return 6;
	for (i = 0; i < c.nseen; i++)
		if (c.seen[i].uid != 1000)
			return 7;
	/* Looking up root's region by id is ENOENT, not EACCES. */
	if (ctx_request(&c, NPUSHM_CMD_REGION_GET, 0, NPUSHM_A_REGION_ID, &u->root_id,
			sizeof(u->root_id), on_region) != ENOENT)
		return 8;
	close(fd);
	return npu_unlink(root, "user.region") ? 9 : 0;
}

TEST_F(npushm, non_admins_see_their_own_regions_and_uid)
{
	int fd = npu_create(self->root, "root.region", MiB, 0644);
	struct as_user u = { .dir = self->dir };
	struct nl_ctx c;

	ASSERT_LE(0, fd);
	u.root_id = npu_region_id(fd);
	EXPECT_EQ(0, npu_run_as(1000, 1000, stats_as_user, &u));
	/* Root sees both uids. */
	ASSERT_EQ(0, ctx_open(&c));
	ASSERT_EQ(0, ctx_request(&c, NPUSHM_CMD_UID_GET, NLM_F_DUMP, 0, NULL, 0, on_uid));
	EXPECT_LE(1, c.nuids);
	EXPECT_EQ(0, c.uids[0]);
	ctx_close(&c);
	close(fd);
	EXPECT_EQ(0, npu_unlink(self->root, "root.region"));
}

TEST_F(npushm, dump_reports_regions)
{
	size_t size = 6 * MiB;
	int fd = npu_tmpfile(self->root, size, 0640), buf, anon;
	struct region_seen *r;
	struct nl_ctx c;
	char *p;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_link(fd, self->root, "nl.model"));
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	buf = npu_export(fd, 0);
	ASSERT_LE(0, buf);
	anon = npu_alloc(self->dev, 4096);
	ASSERT_LE(0, anon);
	ASSERT_EQ(0, ctx_open(&c));
	ASSERT_EQ(0, ctx_dump(&c));
	r = find_seen(&c, npu_region_id(fd));
	ASSERT_NE(NULL, r);
	EXPECT_EQ(size, r->size);
	EXPECT_EQ(0, r->uid);
	EXPECT_EQ(0640, r->mode);
	EXPECT_EQ(1, r->names);
	EXPECT_FALSE(r->sealed);
	EXPECT_FALSE(r->anonymous);
	EXPECT_EQ(1, r->handles);
	EXPECT_EQ(1, r->mappings);
	EXPECT_EQ(1, r->dmabufs);
	EXPECT_EQ(1, r->mappers);
	EXPECT_EQ(size, r->mapped);
	EXPECT_EQ(0, r->pinned);
	r = find_seen(&c, npu_region_id(anon));
	ASSERT_NE(NULL, r);
	EXPECT_TRUE(r->anonymous);
	EXPECT_EQ(0, r->names);
	munmap(p, size);
	ASSERT_EQ(0, npu_seal(fd));
	ASSERT_EQ(0, ctx_dump(&c));
	r = find_seen(&c, npu_region_id(fd));
	ASSERT_NE(NULL, r);
	EXPECT_TRUE(r->sealed);
	EXPECT_EQ(0, r->mapped);
	ASSERT_EQ(0, npu_unlink(self->root, "nl.model"));
	close(anon);
	close(buf);
	close(fd);
	ctx_close(&c);
}

TEST_F(npushm, dump_counts_mapping_processes)
{
	int fd = npu_tmpfile(self->root, MiB, 0600), sv[2], i;
	struct region_seen *r;
	struct nl_ctx c;
	pid_t pids[3];
	char *p;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	p = mmap(NULL, MiB, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	for (i = 0; i < 3; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (!pids[i]) {
			char b;

			/* Each child holds the inherited mapping until told. */
			if (read(sv[1], &b, 1) != 1)
				_exit(1);
			_exit(0);
		}
	}
	ASSERT_EQ(0, ctx_open(&c));
	ASSERT_EQ(0, ctx_dump(&c));
	r = find_seen(&c, npu_region_id(fd));
	ASSERT_NE(NULL, r);
	EXPECT_EQ(4, r->mappings);
	EXPECT_EQ(4, r->mappers);
	EXPECT_EQ(4 * MiB, r->mapped);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(1, write(sv[0], "x", 1));
	for (i = 0; i < 3; i++)
		waitpid(pids[i], NULL, 0);
	munmap(p, MiB);
	ctx_close(&c);
	close(sv[0]);
	close(sv[1]);
	close(fd);
}

TEST_F(npushm, get_by_id)
{
	int fd = npu_tmpfile(self->root, 8192, 0600);
	uint64_t id, missing = UINT64_MAX - 7;
	struct nl_ctx c;

	ASSERT_LE(0, fd);
	id = npu_region_id(fd);
	ASSERT_EQ(0, ctx_open(&c));
	ASSERT_EQ(0, ctx_request(&c, NPUSHM_CMD_REGION_GET, 0, NPUSHM_A_REGION_ID, &id,
				 sizeof(id), on_region));
	ASSERT_EQ(1, c.nseen);
	EXPECT_EQ(id, c.seen[0].id);
	EXPECT_EQ(8192, c.seen[0].size);
	EXPECT_EQ(ENOENT, ctx_request(&c, NPUSHM_CMD_REGION_GET, 0, NPUSHM_A_REGION_ID,
				      &missing, sizeof(missing), on_region));
	/* Without an id a plain request is invalid. */
	EXPECT_EQ(EINVAL, ctx_request(&c, NPUSHM_CMD_REGION_GET, 0, 0, NULL, 0, on_region));
	ctx_close(&c);
	close(fd);
}

TEST_F(npushm, policy_rejects_bad_attributes)
{
	uint32_t small = 1;
	uint64_t big = 1;
	struct nl_ctx c;

	ASSERT_EQ(0, ctx_open(&c));
	/* A u64 attribute given 4 bytes. */
	EXPECT_EQ(EINVAL, ctx_request(&c, NPUSHM_CMD_REGION_GET, 0, NPUSHM_A_REGION_ID, &small,
				      sizeof(small), on_region));
	/* An attribute the family does not know. */
	EXPECT_EQ(EINVAL, ctx_request(&c, NPUSHM_CMD_STATS_GET, 0, NPUSHM_A_MAX + 3, &big,
				      sizeof(big), on_stats));
	/* Commands that do not exist, or that are not dumps. */
	EXPECT_EQ(EOPNOTSUPP, ctx_request(&c, 77, 0, 0, NULL, 0, on_stats));
	EXPECT_EQ(EOPNOTSUPP, ctx_request(&c, NPUSHM_CMD_UID_GET, 0, 0, NULL, 0, on_uid));
	EXPECT_EQ(EOPNOTSUPP, ctx_request(&c, NPUSHM_CMD_STATS_GET, NLM_F_DUMP, 0, NULL, 0,
					  on_stats));
	ctx_close(&c);
}

/*
 * Attack: the events group told any subscriber in the network namespace
 * the names, uids and pids of every IPC namespace. There is no group any
 * more: events come from inotify/fanotify (npushm_names_test.c).
 */
TEST_F(npushm, no_multicast_group_leaks_events)
{
	struct nl_sock *sk = nl_socket_alloc();

	ASSERT_NE(NULL, sk);
	ASSERT_EQ(0, genl_connect(sk));
	EXPECT_GT(0, genl_ctrl_resolve_grp(sk, NPUSHM_GENL_NAME, "events"));
	nl_socket_free(sk);
}

struct holder {
	const char *dir;
	int sock;
};

static int hold_region_as(uid_t uid, struct holder *h)
{
	int root, fd;
	char name[32], b;

	/* Gone with the test, even when it times out. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || setgroups(0, NULL) ||
	    setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
		return 10;
	root = open(h->dir, O_RDONLY | O_DIRECTORY);

	snprintf(name, sizeof(name), "uid.%d", (int)getuid());
	fd = npu_create(root, name, 4096, 0600);
	if (fd < 0)
		return 1;
	if (write(h->sock, "h", 1) != 1)
		return 2;
	/* Hold it until the parent has dumped. */
	if (read(h->sock, &b, 1) != 1)
		return 3;
	close(fd);
	return npu_unlink(root, name) ? 4 : 0;
}

/*
 * Attack: the all-uid statistics were one message: about 115 uids holding
 * regions made them fail with EMSGSIZE for everyone. Now one message per
 * uid, however many.
 */
TEST_F_TIMEOUT(npushm, uid_dump_survives_many_uids, 300)
{
	const int n = 150;
	struct holder h = { .dir = self->dir };
	int sv[2], i, status, found = 0;
	pid_t *pids = calloc(n, sizeof(*pids));
	struct nl_ctx c;
	char b;

	ASSERT_NE(NULL, pids);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	h.sock = sv[1];
	for (i = 0; i < n; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (!pids[i])
			_exit(hold_region_as(20000 + i, &h));
		ASSERT_EQ(1, read(sv[0], &b, 1));
	}
	ASSERT_EQ(0, ctx_open(&c));
	ASSERT_EQ(0, ctx_request(&c, NPUSHM_CMD_UID_GET, NLM_F_DUMP, 0, NULL, 0, on_uid));
	for (i = 0; i < c.nuids; i++)
		found += c.uids[i] >= 20000 && c.uids[i] < 20000 + (uint32_t)n &&
			 c.uid_bytes[i] == 4096;
	EXPECT_EQ(n, found);
	EXPECT_EQ(c.nuids, c.messages);
	ctx_close(&c);
	for (i = 0; i < n; i++)
		ASSERT_EQ(1, write(sv[0], "g", 1));
	for (i = 0; i < n; i++) {
		ASSERT_EQ(pids[i], waitpid(pids[i], &status, 0));
		EXPECT_EQ(0, WEXITSTATUS(status));
	}
	free(pids);
	close(sv[0]);
	close(sv[1]);
}

/*
 * Attack: about 110 long names on one region made its dump fail with
 * EMSGSIZE for everyone. Names are the filesystem's now: a region message
 * has a fixed size, whatever its names.
 */
TEST_F(npushm, region_dump_survives_many_names)
{
	int fd = npu_tmpfile(self->root, 4096, 0600), i;
	struct region_seen *r;
	char name[256];
	struct nl_ctx c;

	ASSERT_LE(0, fd);
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "%0254d", i);
		ASSERT_EQ(0, npu_link(fd, self->root, name));
	}
	ASSERT_EQ(0, ctx_open(&c));
	ASSERT_EQ(0, ctx_dump(&c));
	r = find_seen(&c, npu_region_id(fd));
	ASSERT_NE(NULL, r);
	EXPECT_EQ(300, r->names);
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "%0254d", i);
		ASSERT_EQ(0, npu_unlink(self->root, name));
	}
	ctx_close(&c);
	close(fd);
}

/*
 * Attack: CAP_SYS_ADMIN in a user namespace of one's own (unshare -Ur) was
 * enough to see every uid and every region; the pool statistics showed any
 * caller what every other tenant held (a side channel on their loads).
 */
TEST_F(npushm, userns_root_is_not_admin)
{
	int fd = npu_create(self->root, "host.region", MiB, 0600), status;
	uint64_t id = npu_region_id(fd);
	pid_t pid;

	ASSERT_LE(0, fd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct nl_ctx c;
		char map[64];
		int f;

		if (setgroups(0, NULL) || setresgid(1000, 1000, 1000) ||
		    setresuid(1000, 1000, 1000) || prctl(PR_SET_DUMPABLE, 1))
			_exit(1);
		/* A user namespace of its own, owning a new IPC namespace. */
		if (unshare(CLONE_NEWUSER | CLONE_NEWIPC))
			_exit(2);
		f = open("/proc/self/uid_map", O_WRONLY);
		snprintf(map, sizeof(map), "0 1000 1");
		if (f < 0 || write(f, map, strlen(map)) < 0)
			_exit(3);
		close(f);
		/* Root with every capability, in its own user namespace. */
		if (ctx_open(&c) || ctx_dump(&c))
			_exit(4);
		if (find_seen(&c, id))
			_exit(5);
		if (ctx_request(&c, NPUSHM_CMD_UID_GET, NLM_F_DUMP, 0, NULL, 0, on_uid))
			_exit(6);
		if (c.nuids > 1)
			_exit(7);
		/* Its own usage (none) in place of the pool's figures. */
		if (ctx_request(&c, NPUSHM_CMD_STATS_GET, 0, 0, NULL, 0, on_stats))
			_exit(8);
		if (c.in_use || c.regions || c.peak || c.failed || c.orphan ||
		    !c.capacity || c.own_bytes)
			_exit(9);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	close(fd);
	EXPECT_EQ(0, npu_unlink(self->root, "host.region"));
}

/* Read a dump to its end from the raw socket @fd; regions into @c. */
static int raw_dump_read(int fd, struct nl_ctx *c)
{
	static char buf[65536];
	struct nlmsghdr *nlh;
	int len;

	for (;;) {
		len = recv(fd, buf, sizeof(buf), 0);
		if (len <= 0)
			return -1;
		for (nlh = (void *)buf; NLMSG_OK(nlh, len); nlh = NLMSG_NEXT(nlh, len)) {
			struct nlattr *a[NPUSHM_A_MAX + 1];

			if (nlh->nlmsg_type == NLMSG_DONE)
				return 0;
			if (nlh->nlmsg_type == NLMSG_ERROR)
				return -2;
			if (c->nseen >= MAX_SEEN ||
			    genlmsg_parse(nlh, 0, a, NPUSHM_A_MAX, NULL) ||
			    !a[NPUSHM_A_REGION_OWNER_UID])
				continue;
			c->seen[c->nseen].id = nla_get_u64(a[NPUSHM_A_REGION_ID]);
			c->seen[c->nseen++].uid = nla_get_u32(a[NPUSHM_A_REGION_OWNER_UID]);
		}
	}
}

struct cont {
	const char *dir;
	int sock;
};

/* As uid 1000: start a dump, read one batch, hand the socket to root. */
static int start_dump_as_user(void *arg)
{
	struct cont *k = arg;
	struct nl_msg *msg = nlmsg_alloc();
	static char buf[65536];
	struct nlmsghdr *nlh;
	struct nl_ctx c;
	int len;
	char b;

	if (ctx_open(&c))
		return 1;
	genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, c.family, 0, NLM_F_DUMP,
		    NPUSHM_CMD_REGION_GET, NPUSHM_GENL_VERSION);
	if (nl_send_auto(c.sk, msg) < 0)
		return 2;
	/* One recvmsg(): one batch of the dump (the next is made as we read). */
	len = recv(nl_socket_get_fd(c.sk), buf, sizeof(buf), 0);
	if (len <= 0)
		return 3;
	for (nlh = (void *)buf; NLMSG_OK(nlh, len); nlh = NLMSG_NEXT(nlh, len)) {
		if (nlh->nlmsg_type == NLMSG_DONE || nlh->nlmsg_type == NLMSG_ERROR)
			return 4;	/* all of it at once: the test proves nothing */
	}
	if (npu_send_fd(k->sock, nl_socket_get_fd(c.sk)))
		return 5;
	return read(k->sock, &b, 1) == 1 ? 0 : 6;
}

/*
 * Attack: a dump's later batches were filled with the credentials of
 * whichever task called recvmsg(). A dump started by a user and continued
 * by root must still show the user's view only.
 */
TEST_F_TIMEOUT(npushm, dump_keeps_the_credentials_it_started_with, 120)
{
	struct cont k = { .dir = self->dir };
	int fd, sv[2], i, status, nsock, n = 0;
	struct nl_ctx c;
	char name[32];
	pid_t pid;

	/* Many regions owned by uid 1000, many by root, interleaved. */
	for (i = 0; i < 800; i++) {
		snprintf(name, sizeof(name), "r.%d", i);
		fd = npu_create(self->root, name, 4096, 0600);
		ASSERT_LE(0, fd);
		if (i & 1)
			ASSERT_EQ(0, fchown(fd, 1000, 1000));
		close(fd);
	}
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	k.sock = sv[1];
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(npu_run_as(1000, 1000, start_dump_as_user, &k));
	nsock = npu_recv_fd(sv[0]);
	ASSERT_LE(0, nsock);
	/* Root continues the dump on the user's socket. */
	memset(&c, 0, sizeof(c));
	EXPECT_EQ(0, raw_dump_read(nsock, &c));
	EXPECT_LT(0, c.nseen);
	for (i = 0; i < c.nseen; i++)
		n += c.seen[i].uid != 1000;
	EXPECT_EQ(0, n) {
		TH_LOG("%d of %d regions in the continued dump are not uid 1000's", n, c.nseen);
	}
	close(nsock);
	ASSERT_EQ(1, write(sv[0], "d", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	for (i = 0; i < 800; i++) {
		snprintf(name, sizeof(name), "r.%d", i);
		EXPECT_EQ(0, npu_unlink(self->root, name));
	}
	close(sv[0]);
	close(sv[1]);
}

#define DUMP_STABLE 300
#define DUMP_CHURN 200
#define DUMP_STEP 40

static int ids_count(const uint64_t *ids, int n, uint64_t id)
{
	int i, k = 0;

	for (i = 0; i < n; i++)
		k += ids[i] == id;
	return k;
}

/*
 * A dump resumes between batches from where it stopped, holding no lock
 * meanwhile: regions made and freed between its batches (here, between
 * recvmsg() calls, where the next batch is filled) must neither hide a
 * region that lived throughout, nor show one twice, nor show an id that
 * never existed.
 */
TEST_F_TIMEOUT(npushm, dump_while_regions_come_and_go, 120)
{
	static uint64_t stable[DUMP_STABLE], churn[2 * DUMP_CHURN], seen[4 * DUMP_CHURN + DUMP_STABLE];
	int sfd[DUMP_STABLE], cfd[2 * DUMP_CHURN], i, len, nseen = 0, nchurn = 0, closed = 0;
	int batches = 0, sock;
	struct nl_msg *msg = nlmsg_alloc();
	static char buf[32768];
	bool done = false;
	struct nl_ctx c;

	/* Regions there before (c.seen): the only other ids a dump may show. */
	ASSERT_EQ(0, ctx_open(&c));
	ASSERT_EQ(0, ctx_dump(&c));
	for (i = 0; i < DUMP_STABLE; i++) {
		sfd[i] = npu_tmpfile(self->root, 0, 0600);
		ASSERT_LE(0, sfd[i]);
		stable[i] = npu_region_id(sfd[i]);
	}
	for (; nchurn < DUMP_CHURN; nchurn++) {
		cfd[nchurn] = npu_tmpfile(self->root, 0, 0600);
		ASSERT_LE(0, cfd[nchurn]);
		churn[nchurn] = npu_region_id(cfd[nchurn]);
	}
	sock = nl_socket_get_fd(c.sk);
	genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, c.family, 0, NLM_F_DUMP,
		    NPUSHM_CMD_REGION_GET, NPUSHM_GENL_VERSION);
	ASSERT_LE(0, nl_send_auto(c.sk, msg));
	while (!done) {
		struct nlmsghdr *nlh;

		len = recv(sock, buf, sizeof(buf), 0);
		ASSERT_LT(0, len);
		batches++;
		for (nlh = (void *)buf; NLMSG_OK(nlh, len); nlh = NLMSG_NEXT(nlh, len)) {
			struct nlattr *a[NPUSHM_A_MAX + 1];

			ASSERT_NE(NLMSG_ERROR, nlh->nlmsg_type);
			if (nlh->nlmsg_type == NLMSG_DONE) {
				done = true;
				break;
			}
			ASSERT_EQ(0, genlmsg_parse(nlh, 0, a, NPUSHM_A_MAX, NULL));
			ASSERT_GT(ARRAY_SIZE(seen), nseen);
			seen[nseen++] = nla_get_u64(a[NPUSHM_A_REGION_ID]);
		}
		/* Between batches: free old regions, make new ones. */
		for (i = 0; i < DUMP_STEP && closed < DUMP_CHURN; i++)
			close(cfd[closed++]);
		for (i = 0; i < DUMP_STEP && nchurn < 2 * DUMP_CHURN; i++, nchurn++) {
			cfd[nchurn] = npu_tmpfile(self->root, 0, 0600);
			ASSERT_LE(0, cfd[nchurn]);
			churn[nchurn] = npu_region_id(cfd[nchurn]);
		}
	}
	/* Else nothing came and went during the dump: the test proves nothing. */
	ASSERT_LE(3, batches);
	for (i = 0; i < DUMP_STABLE; i++)
		EXPECT_EQ(1, ids_count(seen, nseen, stable[i])) {
			TH_LOG("region %llu, alive throughout, seen %d times in %d batches",
			       (unsigned long long)stable[i],
			       ids_count(seen, nseen, stable[i]), batches);
		}
	for (i = 0; i < nseen; i++) {
		EXPECT_EQ(1, ids_count(seen, nseen, seen[i]));
		EXPECT_TRUE(ids_count(stable, DUMP_STABLE, seen[i]) ||
			    ids_count(churn, nchurn, seen[i]) || find_seen(&c, seen[i])) {
			TH_LOG("id %llu: no region that existed",
			       (unsigned long long)seen[i]);
		}
	}
	nlmsg_free(msg);
	ctx_close(&c);
	while (closed < nchurn)
		close(cfd[closed++]);
	for (i = 0; i < DUMP_STABLE; i++)
		close(sfd[i]);
}

TEST_HARNESS_MAIN
