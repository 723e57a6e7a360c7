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
 * node with CPUs needs allow_cpus; sysmem follows the task's memory policy
 * (MPOL_BIND strictly). The module suite's VM has a memory-only
 * node 1 (VM_NUMA_NODE1). And the PCI BAR providers ("bar:ADDR", the BAR
 * NPUSHM_TEST_BAR=ADDR@BAR names, an ivshmem-plain device in the VM, bound
 * at load by the module's bars= parameter): every page of a region inside
 * the BAR (/proc/self/pagemap), ZONE_DEVICE pages (move_pages(2) finds no
 * node), capacity and quota, seal and dma-buf; unbinding and removing the
 * device with regions mapped, pinned and exported revokes them (SIGBUS,
 * EIO, ENODEV, INFO and netlink say so) and the memory comes back, and the
 * device binds again, only once the last of them is gone; the same when
 * qemu unplugs the device (device_del through its monitor). The BAR tests
 * wait for hotplug and teardown: 300 s each, for the debug kernel.
 */
#include <dirent.h>
#include <linux/mount.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>

#include "npushm_fixture.h"
#include "npushm_pin.h"
#include "npushm_test_uapi.h"

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

/*
 * Providers from NPUSHM_CMD_PROVIDER_GET, names joined by ' '; the figures
 * of the one named @of ("test" when NULL).
 */
struct providers {
	char names[256];
	uint64_t capacity_of_test, in_use_of_test, chunk_of_test;
	bool in_use_seen;
	const char *of;
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
	if (!strcmp(name, p->of ? p->of : "test")) {
		p->capacity_of_test = nla_get_u64(a[NPUSHM_A_PROVIDER_CAPACITY]);
		p->chunk_of_test = nla_get_u64(a[NPUSHM_A_PROVIDER_CHUNK_SIZE]);
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

/* Whether NPUSHM_CMD_REGION_GET says the region is revoked: *arg 1 or 0. */
static int on_region_revoked(struct nl_msg *msg, void *arg)
{
	struct nlattr *a[NPUSHM_A_MAX + 1];

	if (!genlmsg_parse(nlmsg_hdr(msg), 0, a, NPUSHM_A_MAX, NULL))
		*(int *)arg = !!a[NPUSHM_A_REGION_REVOKED];
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

static int sysfs_write(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

#define UID_QUOTA "/sys/module/npushm/parameters/uid_quota"

/* The uid_quota parameter, as read: 0 or -errno. */
static int uid_quota_get(char *buf, size_t size)
{
	FILE *f = fopen(UID_QUOTA, "r");
	int ret = 0;

	if (!f)
		return -errno;
	if (!fgets(buf, (int)size, f))
		ret = -EIO;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return ret;
}

static int uid_quota_set(const char *val)
{
	return sysfs_write(UID_QUOTA, val);
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
	char dir[64], opt[64], quota[32];
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
	/*
	 * Fill the node: what it holds lands there; beyond, ENOMEM, never
	 * elsewhere. The node, not the owner's quota, is to run out.
	 */
	ASSERT_EQ(0, uid_quota_get(quota, sizeof(quota)));
	ASSERT_EQ(0, uid_quota_set("0"));
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
	EXPECT_EQ(0, uid_quota_set(quota));
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

/*
 * sysmem places pages where the task's memory policy says (as tmpfs does):
 * bound to the memory-only node, every page is there; beyond what the node
 * has, ENOMEM, never a page elsewhere. Loaders place per-node copies so.
 */
TEST_F(npushm, sysmem_follows_the_memory_policy)
{
	int nid = memory_only_node(), fd, more;
	unsigned long mask;
	char quota[32];
	uint64_t rest;

	if (nid < 0)
		SKIP(return, "no memory-only NUMA node (qemu -numa, VM_NUMA_NODE1)");
	mask = 1UL << nid;
	ASSERT_EQ(0, syscall(SYS_set_mempolicy, 2 /* MPOL_BIND */, &mask, 64));
	fd = npu_create(self->root, "r", 8 * MiB, 0600);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, region_off_node(fd, 8 * MiB, nid));
	close(fd);
	EXPECT_EQ(0, npu_unlink(self->root, "r"));
	/* past the node's memory; the owner's quota lifted: the node runs out */
	ASSERT_EQ(0, uid_quota_get(quota, sizeof(quota)));
	ASSERT_EQ(0, uid_quota_set("0"));
	rest = (node_free(nid) + 8 * MiB) & ~(MiB - 1);
	more = npu_tmpfile(self->root, 0, 0600);
	ASSERT_LE(0, more);
	EXPECT_EQ(-ENOMEM, npu_size(more, rest)) {
		TH_LOG("%llu MiB bound to node %d, which has %llu MiB free",
		       (unsigned long long)(rest >> 20), nid,
		       (unsigned long long)(node_free(nid) >> 20));
	}
	close(more);
	EXPECT_EQ(0, uid_quota_set(quota));
	ASSERT_EQ(0, syscall(SYS_set_mempolicy, 0 /* MPOL_DEFAULT */, NULL, 0));
}

/* The BAR under test (NPUSHM_TEST_BAR=ADDR@BAR), its provider and range. */
struct bar {
	char addr[32];
	int index;
	char provider[48];
	char opt[64];
	uint64_t start, size;
};

#define PCI_DEVICES "/sys/bus/pci/devices"
#define BAR_DRIVER "/sys/bus/pci/drivers/npushm_bar"

/* 0, or -ENOENT when there is no BAR to test (SKIP). */
static int bar_under_test(struct bar *b)
{
	const char *env = getenv("NPUSHM_TEST_BAR");
	unsigned long long start, end, flags;
	char path[128];
	FILE *f;
	int i;

	if (!env || sscanf(env, "%31[^@]@%d", b->addr, &b->index) != 2)
		return -ENOENT;
	snprintf(b->provider, sizeof(b->provider), "bar:%s", b->addr);
	snprintf(b->opt, sizeof(b->opt), "provider=%s", b->provider);
	snprintf(path, sizeof(path), PCI_DEVICES "/%s/resource", b->addr);
	f = fopen(path, "r");
	if (!f)
		return -ENOENT;
	for (i = 0; i <= b->index; i++)
		if (fscanf(f, "%llx %llx %llx", &start, &end, &flags) != 3)
			break;
	fclose(f);
	if (i <= b->index)
		return -ENOENT;
	b->start = start;
	b->size = end - start + 1;
	return 0;
}

/* Bind it as an operator would after the load: override, then bind. */
static int bar_bind(const struct bar *b)
{
	char path[128];
	int ret;

	snprintf(path, sizeof(path), PCI_DEVICES "/%s/driver_override", b->addr);
	ret = sysfs_write(path, "npushm_bar");
	return ret ? ret : sysfs_write(BAR_DRIVER "/bind", b->addr);
}

static bool bar_bound(const struct bar *b)
{
	char path[128];

	snprintf(path, sizeof(path), BAR_DRIVER "/%s", b->addr);
	return !access(path, F_OK);
}

/* Bind again, waiting for the teardown of an earlier binding: 0 or -errno. */
static int bar_rebind(const struct bar *b)
{
	int i, ret = -EBUSY;

	for (i = 0; i < 100 && ret == -EBUSY; i++) {
		ret = bar_bind(b);
		if (ret == -EBUSY)
			usleep(200000);
	}
	return ret;
}

/* Pages of [p, p + len) whose frame is outside [start, start + size), or -1. */
static long pages_outside(const void *p, size_t len, uint64_t start, uint64_t size)
{
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	long out = 0;
	size_t i;

	if (fd < 0)
		return -1;
	for (i = 0; i < len / 4096 && out >= 0; i++) {
		uint64_t e, phys;

		if (pread(fd, &e, 8, ((uintptr_t)p / 4096 + i) * 8) != 8 ||
		    !(e & (1ULL << 63)))
			out = -1;
		phys = (e & ((1ULL << 55) - 1)) * 4096;
		out += out >= 0 && (phys < start || phys >= start + size);
	}
	close(fd);
	return out;
}

/* Pages of [p, p + len) for which move_pages(2) finds a node, or -1. */
static long pages_with_node(void *p, size_t len)
{
	size_t n = len / 4096, i;
	void **pages = calloc(n, sizeof(*pages));
	int *status = calloc(n, sizeof(*status));
	long with = 0;

	if (!pages || !status)
		return -1;
	for (i = 0; i < n; i++)
		pages[i] = (char *)p + i * 4096;
	if (syscall(SYS_move_pages, 0, n, pages, NULL, status, 0))
		with = -1;
	for (i = 0; with >= 0 && i < n; i++)
		with += status[i] != -ENOENT;
	free(pages);
	free(status);
	return with;
}

/* How a child touching @p ends: the signal that killed it, or 0. */
static int touch_in_child(volatile char *p)
{
	int status;
	pid_t pid = fork();

	if (!pid) {
		p[0]++;
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}


static uint64_t sum_bytes(const unsigned char *p, size_t len)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < len; i++)
		sum += p[i];
	return sum;
}

TEST_F_TIMEOUT(npushm, bar_provider_backs_regions, 300)
{
	struct npushm_test_import imp = { 0 };
	struct npushm_region_info info;
	struct providers p = { "" };
	int root, fd, big, q, buf, dev;
	char dir[64], quota[32] = "", *sys;
	unsigned char *m;
	struct bar b;

	if (bar_under_test(&b))
		SKIP(return, "no PCI BAR to test (NPUSHM_TEST_BAR=ADDR@BAR; the VM's ivshmem)");
	ASSERT_TRUE(bar_bound(&b)) {
		TH_LOG("%s is not bound to npushm_bar (bars=%s@%d at load)", b.addr, b.addr, b.index);
	}
	ASSERT_EQ(0, npu_mount(dir, b.opt));
	EXPECT_TRUE(mount_shows(dir, b.opt));
	root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_LE(0, root);
	fd = npu_create(root, "r", 8 * MiB, 0600);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, npu_info(fd, &info));
	EXPECT_STREQ(b.provider, info.provider);
	EXPECT_STREQ(b.addr, info.device);
	m = mmap(NULL, 8 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(0, sum_bytes(m, 8 * MiB));
	npu_fill(m, 8 * MiB, 11);
	/* every page is the BAR's own, a ZONE_DEVICE page of no NUMA node */
	EXPECT_EQ(0, pages_outside(m, 8 * MiB, b.start, b.size));
	EXPECT_EQ(0, pages_with_node(m, 8 * MiB));
	/* the same check tells sysmem pages apart */
	q = npu_create(self->root, "s", 2 * MiB, 0600);
	ASSERT_LE(0, q);
	sys = mmap(NULL, 2 * MiB, PROT_READ, MAP_SHARED | MAP_POPULATE, q, 0);
	ASSERT_NE(MAP_FAILED, sys);
	EXPECT_EQ(512, pages_outside(sys, 2 * MiB, b.start, b.size));
	EXPECT_EQ(512, pages_with_node(sys, 2 * MiB));
	munmap(sys, 2 * MiB);
	close(q);
	EXPECT_EQ(0, npu_unlink(self->root, "s"));
	/* capacity: the BAR's size, 2 MiB chunks */
	p.of = b.provider;
	ASSERT_EQ(0, nl_request(NPUSHM_CMD_PROVIDER_GET, NLM_F_DUMP, NULL, on_provider, &p));
	EXPECT_EQ(b.size, p.capacity_of_test);
	EXPECT_EQ(2 * MiB, p.chunk_of_test);
	EXPECT_EQ(8 * MiB, p.in_use_of_test);
	big = npu_tmpfile(root, 0, 0600);
	ASSERT_LE(0, big);
	EXPECT_EQ(-ENOSPC, npu_size(big, b.size));
	/* the owner's quota applies on top, whatever the provider */
	ASSERT_EQ(0, uid_quota_get(quota, sizeof(quota)));
	ASSERT_EQ(0, uid_quota_set("12M"));
	EXPECT_EQ(-EDQUOT, npu_size(big, 8 * MiB));
	ASSERT_EQ(0, uid_quota_set(quota));
	EXPECT_EQ(0, npu_size(big, b.size - 8 * MiB));
	close(big);
	/* seal: refused while writable-mapped, then read-only for good */
	EXPECT_EQ(-EBUSY, npu_seal(fd));
	EXPECT_EQ(0, munmap(m, 8 * MiB));
	EXPECT_EQ(0, npu_seal(fd));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 8 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
	EXPECT_EQ(EPERM, errno);
	/* dma-buf: mapped by user space and by an importing device */
	buf = npu_export(fd, 0);
	ASSERT_LE(0, buf);
	m = mmap(NULL, 8 * MiB, PROT_READ, MAP_SHARED, buf, 0);
	ASSERT_NE(MAP_FAILED, m);
	EXPECT_TRUE(npu_check(m, 8 * MiB, 11));
	dev = open(NPUSHM_TEST_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, dev);
	imp.fd = buf;
	imp.op = NPUSHM_TEST_READ_SUM;
	imp.length = 8 * MiB;
	ASSERT_EQ(0, ioctl(dev, NPUSHM_TEST_IOC_IMPORT, &imp));
	EXPECT_EQ(sum_bytes(m, 8 * MiB), imp.value);
	EXPECT_EQ(8 * MiB, imp.sg_bytes);
	close(dev);
	EXPECT_EQ(0, munmap(m, 8 * MiB));
	close(buf);
	close(fd);
	close(root);
	EXPECT_EQ(0, npu_umount(dir));
}

/*
 * Run one QMP command in the qemu the test runs under (through the host's
 * selftests/vm/qmp-relay.py and the VM's result share): 0 when qemu
 * answered without an error, -ENOENT without a relay, -ETIMEDOUT.
 */
static int qmp(const char *cmd)
{
	const char *out = getenv("NPUSHM_VM_OUT");
	char req[256], tmp[256], rep[256], buf[512] = "";
	FILE *f;
	int i;

	if (!out)
		return -ENOENT;
	snprintf(req, sizeof(req), "%s/qmp-request", out);
	snprintf(tmp, sizeof(tmp), "%s/qmp-request.tmp", out);
	snprintf(rep, sizeof(rep), "%s/qmp-reply", out);
	snprintf(buf, sizeof(buf), "%s/qmp.sock", out);
	if (access(buf, F_OK))
		return -ENOENT;
	unlink(rep);
	f = fopen(tmp, "w");
	if (!f || fputs(cmd, f) < 0 || fclose(f) || rename(tmp, req))
		return -errno;
	for (i = 0; i < 300 && access(rep, F_OK); i++)
		usleep(100000);
	f = fopen(rep, "r");
	if (!f)
		return -ETIMEDOUT;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return strstr(buf, "\"return\"") ? 0 : -EIO;
}

/* Wait up to 60 s for the device to be there (@present) or gone. */
static bool pci_wait(const struct bar *b, bool present)
{
	char path[128];
	int i;

	snprintf(path, sizeof(path), PCI_DEVICES "/%s", b->addr);
	for (i = 0; i < 600 && !access(path, F_OK) != present; i++)
		usleep(100000);
	return !access(path, F_OK) == present;
}

/* Regions of every kind on the BAR, then the device goes (@how). */
static void bar_goes_with_live_regions(struct __test_metadata *_metadata,
				       struct bar *b, const char *how)
{
	struct npushm_test_attach at = { .dir = NPUSHM_TEST_DMA_BIDIRECTIONAL };
	int root, a, pinned, exported, buf, dev, late, revoked = -1;
	struct npushm_region_info info;
	char dir[64], path[128], c;
	struct pin pin;
	char *ma, *mp;
	uint64_t id;

	ASSERT_EQ(0, npu_mount(dir, b->opt));
	root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_LE(0, root);
	/* mapped and touched */
	a = npu_create(root, "a", 4 * MiB, 0600);
	ASSERT_LE(0, a);
	ma = mmap(NULL, 4 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, a, 0);
	ASSERT_NE(MAP_FAILED, ma);
	npu_fill(ma, 4 * MiB, 5);
	/* pinned, its mapping gone */
	pinned = npu_tmpfile(root, 2 * MiB, 0600);
	ASSERT_LE(0, pinned);
	mp = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, pinned, 0);
	ASSERT_NE(MAP_FAILED, mp);
	ASSERT_EQ(0, pin_pages(&pin, mp, 2 * MiB));
	munmap(mp, 2 * MiB);
	/* exported, and mapped for DMA by an importing device */
	exported = npu_tmpfile(root, 2 * MiB, 0600);
	ASSERT_LE(0, exported);
	buf = npu_export(exported, NPUSHM_EXPORT_RDWR);
	ASSERT_LE(0, buf);
	dev = open(NPUSHM_TEST_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, dev);
	at.fd = buf;
	ASSERT_EQ(0, ioctl(dev, NPUSHM_TEST_IOC_ATTACH, &at));
	late = npu_tmpfile(root, 0, 0600);
	ASSERT_LE(0, late);

	if (!strcmp(how, "unbind")) {
		ASSERT_EQ(0, sysfs_write(BAR_DRIVER "/unbind", b->addr));
	} else if (!strcmp(how, "remove")) {
		snprintf(path, sizeof(path), PCI_DEVICES "/%s/remove", b->addr);
		ASSERT_EQ(0, sysfs_write(path, "1"));
	} else {
		ASSERT_EQ(0, qmp("{\"execute\": \"device_del\", \"arguments\": {\"id\": \"ivshmem0\"}}"));
		ASSERT_TRUE(pci_wait(b, false));
	}
	EXPECT_FALSE(bar_bound(b));

	/* no CPU access any more, and it says why */
	EXPECT_EQ(SIGBUS, touch_in_child(ma));
	EXPECT_EQ(-1, pread(a, &c, 1, 0));
	EXPECT_EQ(EIO, errno);
	EXPECT_EQ(-1, pwrite(a, &c, 1, 0));
	EXPECT_EQ(EIO, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4 * MiB, PROT_READ, MAP_SHARED, a, 0));
	EXPECT_EQ(ENODEV, errno);
	EXPECT_EQ(-ENODEV, npu_export(a, 0));
	EXPECT_EQ(-ENODEV, npu_size(late, 2 * MiB));
	ASSERT_EQ(0, npu_info(a, &info));
	EXPECT_TRUE(info.flags & NPUSHM_INFO_REVOKED);
	EXPECT_STREQ(b->provider, info.provider);
	id = info.id;
	ASSERT_EQ(0, nl_request(NPUSHM_CMD_REGION_GET, 0, &id, on_region_revoked, &revoked));
	EXPECT_EQ(1, revoked);
	ASSERT_EQ(0, npu_info(pinned, &info));
	EXPECT_EQ(2 * MiB, info.pinned_bytes);
	/* gone for new instances; its memory cannot be bound again while in use */
	EXPECT_EQ(-EINVAL, npu_mount(path, b->opt));
	if (!strcmp(how, "unbind"))
		EXPECT_EQ(-EBUSY, bar_bind(b));

	/* the last users let go: the memory comes back, the device binds again */
	munmap(ma, 4 * MiB);
	close(dev);
	close(buf);
	unpin(&pin);
	close(a);
	close(pinned);
	close(exported);
	close(late);
	close(root);
	EXPECT_EQ(0, npu_umount(dir));
	if (!strcmp(how, "remove"))
		ASSERT_EQ(0, sysfs_write("/sys/bus/pci/rescan", "1"));
	if (!strcmp(how, "hotunplug")) {
		ASSERT_EQ(0, qmp("{\"execute\": \"device_add\", \"arguments\": {\"driver\": \"ivshmem-plain\", "
				 "\"memdev\": \"ivshmem0-spare\", \"bus\": \"ivshmem0-port\", \"id\": \"ivshmem1\"}}"));
		ASSERT_TRUE(pci_wait(b, true));
	}
	ASSERT_EQ(0, bar_rebind(b));
	ASSERT_EQ(0, npu_mount(dir, b->opt));
	root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_LE(0, root);
	a = npu_create(root, "a", 4 * MiB, 0600);
	ASSERT_LE(0, a);
	ma = mmap(NULL, 4 * MiB, PROT_READ, MAP_SHARED, a, 0);
	ASSERT_NE(MAP_FAILED, ma);
	/* zeroed again */
	EXPECT_EQ(0, sum_bytes((unsigned char *)ma, 4 * MiB));
	munmap(ma, 4 * MiB);
	close(a);
	close(root);
	EXPECT_EQ(0, npu_umount(dir));
}

TEST_F_TIMEOUT(npushm, bar_unbind_revokes_live_regions, 300)
{
	struct bar b;

	if (bar_under_test(&b))
		SKIP(return, "no PCI BAR to test (NPUSHM_TEST_BAR=ADDR@BAR; the VM's ivshmem)");
	ASSERT_TRUE(bar_bound(&b));
	bar_goes_with_live_regions(_metadata, &b, "unbind");
}

TEST_F_TIMEOUT(npushm, bar_device_removal_revokes_live_regions, 300)
{
	struct bar b;

	if (bar_under_test(&b))
		SKIP(return, "no PCI BAR to test (NPUSHM_TEST_BAR=ADDR@BAR; the VM's ivshmem)");
	ASSERT_TRUE(bar_bound(&b));
	bar_goes_with_live_regions(_metadata, &b, "remove");
}

/* Whether a hotplug driver (acpiphp, pciehp) serves the device's slot. */
static bool hotplug_slot(const struct bar *b)
{
	char path[300], addr[32] = "";
	struct dirent *e;
	bool found = false;
	DIR *d = opendir("/sys/bus/pci/slots");
	FILE *f;

	while (d && !found && (e = readdir(d))) {
		snprintf(path, sizeof(path), "/sys/bus/pci/slots/%s/address", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(addr, sizeof(addr), f))
			addr[0] = 0;
		fclose(f);
		snprintf(path, sizeof(path), "/sys/bus/pci/slots/%s/power", e->d_name);
		found = !strncmp(addr, b->addr, strcspn(addr, "\n")) && !access(path, F_OK);
	}
	if (d)
		closedir(d);
	return found;
}

/* qemu's device_del: the guest's hotplug driver removes the device. */
TEST_F_TIMEOUT(npushm, bar_device_hot_unplug_revokes_live_regions, 300)
{
	struct bar b;

	if (bar_under_test(&b))
		SKIP(return, "no PCI BAR to test (NPUSHM_TEST_BAR=ADDR@BAR; the VM's ivshmem)");
	if (qmp("{\"execute\": \"query-status\"}"))
		SKIP(return, "no access to qemu's monitor (run-vm.sh VM_IVSHMEM relays it)");
	if (!hotplug_slot(&b))
		SKIP(return, "no PCI hotplug driver serves %s's slot (HOTPLUG_PCI_ACPI or _PCIE)", b.addr);
	ASSERT_TRUE(bar_bound(&b));
	bar_goes_with_live_regions(_metadata, &b, "hotunplug");
}

TEST_F_TIMEOUT(npushm, bar_binds_only_what_bars_names, 300)
{
	char saved[256] = "", path[128];
	struct bar b;
	FILE *f;

	if (bar_under_test(&b))
		SKIP(return, "no PCI BAR to test (NPUSHM_TEST_BAR=ADDR@BAR; the VM's ivshmem)");
	f = fopen("/sys/module/npushm/parameters/bars", "r");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(saved, sizeof(saved), f));
	fclose(f);
	saved[strcspn(saved, "\n")] = 0;
	ASSERT_EQ(0, sysfs_write(BAR_DRIVER "/unbind", b.addr));
	/* not named: refused */
	ASSERT_EQ(0, sysfs_write("/sys/module/npushm/parameters/bars", "\n"));
	EXPECT_NE(0, bar_rebind(&b));
	EXPECT_FALSE(bar_bound(&b));
	/* BAR 0 of ivshmem is registers, not prefetchable memory: refused */
	snprintf(path, sizeof(path), "%s@0", b.addr);
	ASSERT_EQ(0, sysfs_write("/sys/module/npushm/parameters/bars", path));
	EXPECT_EQ(-EINVAL, bar_rebind(&b));
	EXPECT_FALSE(bar_bound(&b));
	ASSERT_EQ(0, sysfs_write("/sys/module/npushm/parameters/bars", saved[0] ? saved : "\n"));
	EXPECT_EQ(0, bar_rebind(&b));
	EXPECT_TRUE(bar_bound(&b));
}

TEST_HARNESS_MAIN
