// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm_provider_test.c - the provider registry: "provider=" at mount
 * (sysmem the default; an unknown name refused with EINVAL and the reason in
 * the mount's log; no change on remount), and a provider registered from
 * another module (npushm_test_provider.ko, next to NPUSHM_KO's test/
 * importer) backing regions: sized within its own capacity only, mapped,
 * sealed, exported, reported by INFO, /proc/self/mountinfo and netlink, its
 * module held while an instance uses it, and every page given back. And
 * the NUMA node providers: "node:N" places every page on node N (checked
 * with move_pages(2)), a full node is ENOMEM and never memory elsewhere, a
 * node with CPUs needs allow_cpus. The module suite's VM has a memory-only
 * node 1 (VM_NUMA_NODE1).
 */
#include <linux/mount.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>

#include "npushm_fixture.h"

#define KiB 1024UL
#define TEST_PARAM "/sys/module/npushm_test_provider/parameters/pages_out"

static int fsopen_(const char *fs, unsigned int flags)
{
	return syscall(SYS_fsopen, fs, flags);
}

static int fsconfig_(int fd, unsigned int cmd, const char *key, const char *val, int aux)
{
	return syscall(SYS_fsconfig, fd, cmd, key, val, aux);
}

/* The test provider's module, next to the importer module. */
static int provider_load(void)
{
	const char *ko = getenv("NPUSHM_KO") ? getenv("NPUSHM_KO") : "kmod/npushm.ko";
	char path[512], *slash;
	int fd, ret;

	snprintf(path, sizeof(path), "%s", ko);
	slash = strrchr(path, '/');
	snprintf(slash ? slash + 1 : path, sizeof(path) - (slash ? slash + 1 - path : 0),
		 "test/npushm_test_provider.ko");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, "", 0) ? -errno : 0;
	close(fd);
	return ret;
}

static int provider_unload(void)
{
	return syscall(SYS_delete_module, "npushm_test_provider", O_NONBLOCK) ? -errno : 0;
}

static long pages_out(void)
{
	char buf[32] = "";
	FILE *f = fopen(TEST_PARAM, "r");

	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return strtol(buf, NULL, 0);
}

/* Whether /proc/self/mountinfo shows @opt on the instance at @dir. */
static bool mount_shows(const char *dir, const char *opt)
{
	char line[1024];
	bool found = false;
	FILE *f = fopen("/proc/self/mountinfo", "r");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, dir) && strstr(line, opt))
			found = true;
	fclose(f);
	return found;
}

/* Providers from NPUSHM_CMD_PROVIDER_GET, names joined by ' '. */
struct providers {
	char names[256];
	uint64_t capacity_of_test, in_use_of_test;
	bool in_use_seen;
};

static int on_provider(struct nl_msg *msg, void *arg)
{
	struct providers *p = arg;
	struct nlattr *a[NPUSHM_A_MAX + 1];
	const char *name;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, a, NPUSHM_A_MAX, NULL) ||
	    !a[NPUSHM_A_PROVIDER_NAME])
		return NL_SKIP;
	name = nla_get_string(a[NPUSHM_A_PROVIDER_NAME]);
	strncat(p->names, name, sizeof(p->names) - strlen(p->names) - 2);
	strcat(p->names, " ");
	if (!strcmp(name, "test")) {
		p->capacity_of_test = nla_get_u64(a[NPUSHM_A_PROVIDER_CAPACITY]);
		if (a[NPUSHM_A_PROVIDER_IN_USE]) {
			p->in_use_seen = true;
			p->in_use_of_test = nla_get_u64(a[NPUSHM_A_PROVIDER_IN_USE]);
		}
	}
	return NL_OK;
}

/* Region @id's provider name from NPUSHM_CMD_REGION_GET, into @name. */
static int on_region_provider(struct nl_msg *msg, void *arg)
{
	struct nlattr *a[NPUSHM_A_MAX + 1];

	if (!genlmsg_parse(nlmsg_hdr(msg), 0, a, NPUSHM_A_MAX, NULL) &&
	    a[NPUSHM_A_PROVIDER_NAME])
		snprintf(arg, 32, "%s", nla_get_string(a[NPUSHM_A_PROVIDER_NAME]));
	return NL_OK;
}

static int nl_request(uint8_t cmd, int flags, uint64_t *id, nl_recvmsg_msg_cb_t fn, void *arg)
{
	struct nl_sock *sk = nl_socket_alloc();
	struct nl_msg *msg = nlmsg_alloc();
	int family, ret = -1;

	if (!sk || !msg || genl_connect(sk))
		goto out;
	family = genl_ctrl_resolve(sk, NPUSHM_GENL_NAME);
	if (family < 0)
		goto out;
	genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, flags, cmd, NPUSHM_GENL_VERSION);
	if (id)
		nla_put_u64(msg, NPUSHM_A_REGION_ID, *id);
	nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, fn, arg);
	if (nl_send_auto(sk, msg) >= 0)
		ret = nl_recvmsgs_default(sk);
out:
	nlmsg_free(msg);
	nl_socket_free(sk);
	return ret;
}

TEST_F(npushm, default_provider_is_sysmem)
{
	struct npushm_region_info info;
	struct providers p = { "" };
	char dir[64], name[32] = "";
	int fd = npu_create(self->root, "r", 64 * KiB, 0600);
	uint64_t id;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_info(fd, &info));
	EXPECT_STREQ("sysmem", info.provider);
	EXPECT_STREQ("", info.device);
	EXPECT_FALSE(mount_shows(self->dir, "provider="));
	id = info.id;
	ASSERT_EQ(0, nl_request(NPUSHM_CMD_REGION_GET, 0, &id, on_region_provider, name));
	EXPECT_STREQ("sysmem", name);
	ASSERT_EQ(0, nl_request(NPUSHM_CMD_PROVIDER_GET, NLM_F_DUMP, NULL, on_provider, &p));
	EXPECT_NE(NULL, strstr(p.names, "sysmem "));
	/* naming the default is accepted, and shows nothing */
	ASSERT_EQ(0, npu_mount(dir, "provider=sysmem"));
	EXPECT_FALSE(mount_shows(dir, "provider="));
	EXPECT_EQ(0, npu_umount(dir));
	close(fd);
	EXPECT_EQ(0, npu_unlink(self->root, "r"));
}

TEST_F(npushm, unknown_provider_is_refused_with_its_reason)
{
	char dir[64], log[256] = "", longname[80];
	int fs = fsopen_(NPUSHM_FS_TYPE, FSOPEN_CLOEXEC);
	ssize_t n;

	ASSERT_LE(0, fs);
	EXPECT_EQ(-1, fsconfig_(fs, FSCONFIG_SET_STRING, "provider", "nosuch", 0));
	EXPECT_EQ(EINVAL, errno);
	n = read(fs, log, sizeof(log) - 1);
	ASSERT_LT(0, n);
	log[n] = 0;
	EXPECT_NE(NULL, strstr(log, "provider=nosuch: not registered")) {
		TH_LOG("the mount's log said: %s", log);
	}
	close(fs);
	EXPECT_EQ(-EINVAL, npu_mount(dir, "provider=nosuch"));
	EXPECT_EQ(-EINVAL, npu_mount(dir, "provider="));
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	memcpy(longname, "provider=", 9);
	EXPECT_EQ(-EINVAL, npu_mount(dir, longname));
	/* an instance keeps its provider */
	EXPECT_EQ(-1, mount(NULL, self->dir, NULL, MS_REMOUNT, "provider=nosuch"));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, mount(NULL, self->dir, NULL, MS_REMOUNT, "provider=sysmem"));
}

TEST_F(npushm, registered_provider_backs_regions)
{
	struct npushm_region_info info;
	struct providers p = { "" };
	int a, b, buf, ret, root;
	char dir[64], *m, rname[32] = "";
	uint64_t id;

	ret = provider_load();
	ASSERT_EQ(0, ret) {
		TH_LOG("loading npushm_test_provider.ko: %s", strerror(-ret));
	}
	ASSERT_EQ(0, npu_mount(dir, "provider=test"));
	EXPECT_TRUE(mount_shows(dir, "provider=test"));
	EXPECT_EQ(-1, mount(NULL, dir, NULL, MS_REMOUNT, "provider=sysmem"));
	EXPECT_EQ(EINVAL, errno);
	root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_LE(0, root);
	a = npu_create(root, "a", 768 * KiB, 0600);
	ASSERT_LE(0, a);
	EXPECT_EQ(192, pages_out());
	ASSERT_EQ(0, npu_info(a, &info));
	EXPECT_STREQ("test", info.provider);
	/* the provider's own capacity (1 MiB), not the pool's, refuses this */
	b = npu_tmpfile(root, 0, 0600);
	ASSERT_LE(0, b);
	EXPECT_EQ(-ENOSPC, npu_size(b, 512 * KiB));
	EXPECT_EQ(0, npu_size(b, 256 * KiB));
	EXPECT_EQ(256, pages_out());
	ASSERT_EQ(0, nl_request(NPUSHM_CMD_PROVIDER_GET, NLM_F_DUMP, NULL, on_provider, &p));
	EXPECT_NE(NULL, strstr(p.names, "test "));
	EXPECT_EQ(1024 * KiB, p.capacity_of_test);
	EXPECT_TRUE(p.in_use_seen);
	EXPECT_EQ(1024 * KiB, p.in_use_of_test);
	id = info.id;
	ASSERT_EQ(0, nl_request(NPUSHM_CMD_REGION_GET, 0, &id, on_region_provider, rname));
	EXPECT_STREQ("test", rname);
	/* mapped, written, sealed, exported like any region */
	m = mmap(NULL, 768 * KiB, PROT_READ | PROT_WRITE, MAP_SHARED, a, 0);
	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(0, m[4096]);
	npu_fill(m, 768 * KiB, 7);
	EXPECT_EQ(0, munmap(m, 768 * KiB));
	EXPECT_EQ(0, npu_seal(a));
	buf = npu_export(a, 0);
	ASSERT_LE(0, buf);
	m = mmap(NULL, 768 * KiB, PROT_READ, MAP_SHARED, buf, 0);
	ASSERT_NE(MAP_FAILED, m);
	EXPECT_TRUE(npu_check(m, 768 * KiB, 7));
	EXPECT_EQ(0, munmap(m, 768 * KiB));
	close(buf);
	/* an instance using it holds its module (EWOULDBLOCK: in use) */
	ret = provider_unload();
	EXPECT_TRUE(ret == -EAGAIN || ret == -EBUSY) {
		TH_LOG("unloading the provider under a mounted instance: %d", ret);
	}
	close(a);
	close(b);
	close(root);
	EXPECT_EQ(0, npu_umount(dir));
	EXPECT_EQ(0, pages_out());
	ret = provider_unload();
	for (int i = 0; i < 100 && ret == -EAGAIN; i++, usleep(10000))
		ret = provider_unload();
	EXPECT_EQ(0, ret);
	/* unregistered with its module */
	EXPECT_EQ(-EINVAL, npu_mount(dir, "provider=test"));
}

/* A node with memory and no CPUs (as qemu -numa gives), or -1. */
static int memory_only_node(void)
{
	char path[96], buf[64];
	int nid;

	for (nid = 0; nid < 64; nid++) {
		FILE *f;
		size_t n;

		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", nid);
		f = fopen(path, "r");
		if (!f)
			continue;
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = 0;
		if (buf[0] == '\n' || !buf[0])
			return nid;
	}
	return -1;
}

/* MemFree of node @nid, bytes. */
static uint64_t node_free(int nid)
{
	char path[96], line[128];
	unsigned long long kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/meminfo", nid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Node %*d MemFree: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

/* Pages of @p..@p+@len not on node @nid (move_pages(2) in query mode), or -1. */
static long pages_off_node(void *p, size_t len, int nid)
{
	size_t n = len / 4096, i;
	void **pages = calloc(n, sizeof(*pages));
	int *status = calloc(n, sizeof(*status));
	long off = 0;

	if (!pages || !status)
		return -1;
	for (i = 0; i < n; i++)
		pages[i] = (char *)p + i * 4096;
	if (syscall(SYS_move_pages, 0, n, pages, NULL, status, 0))
		off = -1;
	for (i = 0; off >= 0 && i < n; i++)
		off += status[i] != nid;
	free(pages);
	free(status);
	return off;
}

/* Map region @fd of @len bytes, touch it, count its pages off node @nid. */
static long region_off_node(int fd, size_t len, int nid)
{
	char *m = mmap(NULL, len, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
	long off;

	if (m == MAP_FAILED)
		return -1;
	off = pages_off_node(m, len, nid);
	munmap(m, len);
	return off;
}

#define MiB (1024 * KiB)

TEST_F(npushm, node_provider_places_pages_on_its_node_only)
{
	int nid = memory_only_node(), root, fd, big, more, s;
	struct npushm_region_info info;
	char dir[64], opt[64];
	uint64_t fill;

	if (nid < 0)
		SKIP(return, "no memory-only NUMA node (qemu -numa, VM_NUMA_NODE1)");
	snprintf(opt, sizeof(opt), "provider=node:%d", nid);
	ASSERT_EQ(0, npu_mount(dir, opt));
	root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_LE(0, root);
	fd = npu_create(root, "r", 4 * MiB, 0600);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_info(fd, &info));
	EXPECT_STREQ(opt + strlen("provider="), info.provider);
	EXPECT_EQ(0, region_off_node(fd, 4 * MiB, nid));
	/* the same on sysmem lands on the CPUs' node 0 here: the check can tell */
	s = npu_create(self->root, "s", 4 * MiB, 0600);
	ASSERT_LE(0, s);
	EXPECT_EQ(0, region_off_node(s, 4 * MiB, 0));
	close(s);
	EXPECT_EQ(0, npu_unlink(self->root, "s"));
	/* Fill the node: what it holds lands there; beyond, ENOMEM, never elsewhere. */
	fill = node_free(nid);
	ASSERT_LT(32 * MiB, fill);
	fill = (fill - 24 * MiB) & ~(MiB - 1);
	big = npu_tmpfile(root, 0, 0600);
	ASSERT_LE(0, big);
	ASSERT_EQ(0, npu_size(big, fill)) {
		TH_LOG("%llu MiB of node %d's %llu MiB free", (unsigned long long)(fill >> 20),
		       nid, (unsigned long long)(node_free(nid) >> 20));
	}
	EXPECT_EQ(0, region_off_node(big, fill, nid));
	more = npu_tmpfile(root, 0, 0600);
	ASSERT_LE(0, more);
	EXPECT_EQ(-ENOMEM, npu_size(more, 48 * MiB));
	close(more);
	close(big);
	close(fd);
	close(root);
	EXPECT_EQ(0, npu_umount(dir));
}

TEST_F(npushm, node_with_cpus_needs_allow_cpus)
{
	char dir[64], log[256] = "";
	int fs, fd, root;
	ssize_t n;

	fs = fsopen_(NPUSHM_FS_TYPE, FSOPEN_CLOEXEC);
	ASSERT_LE(0, fs);
	ASSERT_EQ(0, fsconfig_(fs, FSCONFIG_SET_STRING, "provider", "node:0", 0));
	EXPECT_EQ(-1, fsconfig_(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0));
	EXPECT_EQ(EINVAL, errno);
	n = read(fs, log, sizeof(log) - 1);
	ASSERT_LT(0, n);
	log[n] = 0;
	EXPECT_NE(NULL, strstr(log, "node 0 has CPUs: add allow_cpus")) {
		TH_LOG("the mount's log said: %s", log);
	}
	close(fs);
	EXPECT_EQ(-EINVAL, npu_mount(dir, "provider=node:0"));
	EXPECT_EQ(-EINVAL, npu_mount(dir, "provider=node:63"));
	ASSERT_EQ(0, npu_mount(dir, "provider=node:0,allow_cpus"));
	EXPECT_TRUE(mount_shows(dir, "provider=node:0,allow_cpus"));
	root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_LE(0, root);
	fd = npu_create(root, "r", 2 * MiB, 0600);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, region_off_node(fd, 2 * MiB, 0));
	close(fd);
	close(root);
	EXPECT_EQ(0, npu_umount(dir));
}

TEST_HARNESS_MAIN
