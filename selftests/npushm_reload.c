// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm_reload.c - loading and unloading npushm.ko: the defaults a
 * distribution would ship, out-of-range parameters at load time, the device
 * node appearing only once everything works, unloading while generic
 * netlink requests and dumps are in flight, and an open watch pinning the
 * module.
 *
 * Unloads and reloads the module (NPUSHM_KO, loaded with
 * NPUSHM_TEST_PARAMS), so it runs on its own after the other selftests
 * (selftests/run-module-tests.sh) and leaves the module loaded as it found
 * it. Nothing else may hold the module meanwhile.
 */
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>

#include "kselftest_harness.h"
#include "npushm_util.h"

static const char *ko(void)
{
	return getenv("NPUSHM_KO") ? getenv("NPUSHM_KO") : "kmod/npushm.ko";
}

static const char *test_params(void)
{
	return getenv("NPUSHM_TEST_PARAMS") ? getenv("NPUSHM_TEST_PARAMS") :
	       "capacity=512M uid_quota=256M";
}

static int load(const char *params)
{
	int fd = open(ko(), O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, params, 0) ? -errno : 0;
	close(fd);
	return ret;
}

static int unload(void)
{
	return syscall(SYS_delete_module, "npushm", O_NONBLOCK) ? -errno : 0;
}

/* Unload, retrying while something transient holds the module. */
static int unload_wait(void)
{
	int i, ret = -EBUSY;

	for (i = 0; i < 500 && (ret == -EBUSY || ret == -EAGAIN); i++) {
		ret = unload();
		if (ret)
			usleep(10000);
	}
	return ret;
}

FIXTURE(module) {
	bool loaded;
};

FIXTURE_SETUP(module)
{
	if (access(ko(), R_OK))
		SKIP(return, "%s not found (set NPUSHM_KO)", ko());
	self->loaded = !access(NPUSHM_DEVICE_PATH, F_OK);
	if (self->loaded)
		ASSERT_EQ(0, unload_wait()) {
			TH_LOG("npushm is in use: run this test alone, after the others");
		}
}

FIXTURE_TEARDOWN(module)
{
	if (access(NPUSHM_DEVICE_PATH, F_OK) && self->loaded)
		EXPECT_EQ(0, load(test_params()));
	if (!self->loaded)
		unload_wait();
	if (!access(NPUSHM_DEVICE_PATH, F_OK))
		chmod(NPUSHM_DEVICE_PATH, 0666);
}

static unsigned long long meminfo_kb(const char *key)
{
	char line[256];
	unsigned long long v = 0;
	FILE *f = fopen("/proc/meminfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			sscanf(line + strlen(key), ": %llu", &v);
	if (f)
		fclose(f);
	return v;
}

/* What a distribution gets without any parameter. */
TEST_F(module, defaults_a_distribution_can_ship)
{
	unsigned long long ram = meminfo_kb("MemTotal") * 1024;
	struct npushm_query q;
	struct stat st;
	char dir[64];
	int dev;

	ASSERT_EQ(0, load(""));
	ASSERT_EQ(0, stat(NPUSHM_DEVICE_PATH, &st));
	EXPECT_EQ(0660, st.st_mode & 07777);
	EXPECT_EQ(0, st.st_uid);
	EXPECT_EQ(0, npu_param_get("capacity"));
	dev = npu_dev_open();
	ASSERT_LE(0, dev);
	ASSERT_EQ(0, npu_query(dev, &q));
	/* A quarter of the RAM, of which one uid may hold half. */
	EXPECT_EQ(ram / 4 / 4096, q.capacity / 4096);
	EXPECT_EQ(q.capacity / 2, q.uid_quota);
	EXPECT_EQ(q.uid_quota, npu_param_get("uid_quota"));
	/* An instance: mode 1777, 16384 inodes, the pool's size. */
	ASSERT_EQ(0, npu_mount(dir, NULL));
	ASSERT_EQ(0, stat(dir, &st));
	EXPECT_EQ(01777, st.st_mode & 07777);
	EXPECT_EQ(0, npu_umount(dir));
	close(dev);
	ASSERT_EQ(0, unload_wait());
	/* dev_mode: at most 0666. */
	ASSERT_EQ(0, load("dev_mode=0666"));
	ASSERT_EQ(0, stat(NPUSHM_DEVICE_PATH, &st));
	EXPECT_EQ(0666, st.st_mode & 07777);
	ASSERT_EQ(0, unload_wait());
	EXPECT_EQ(-EINVAL, load("dev_mode=0777"));
	EXPECT_EQ(-EINVAL, load("dev_mode=04666"));
}

/* Out-of-range parameters fail the load instead of wrapping to 0 (no limit). */
TEST_F(module, load_refuses_wrapping_parameters)
{
	EXPECT_EQ(-ERANGE, load("capacity=16E"));
	EXPECT_EQ(-ERANGE, load("uid_quota=16E"));
	EXPECT_EQ(-ERANGE, load("capacity=18446744073709551616"));
	EXPECT_EQ(-EINVAL, load("uid_quota=lots"));
	EXPECT_EQ(-1, access(NPUSHM_DEVICE_PATH, F_OK));
}

static bool family_resolves(void)
{
	struct nl_sock *sk = nl_socket_alloc();
	bool ok = sk && !genl_connect(sk) && genl_ctrl_resolve(sk, NPUSHM_GENL_NAME) >= 0;

	nl_socket_free(sk);
	return ok;
}

static bool fs_registered(void)
{
	char line[128];
	bool found = false;
	FILE *f = fopen("/proc/filesystems", "r");

	while (f && fgets(line, sizeof(line), f))
		found |= !strcmp(line, "nodev\tnpushm\n");
	if (f)
		fclose(f);
	return found;
}

/*
 * Attack: /dev/npushm appeared before the module had finished setting up.
 * A watcher uses everything the moment the node appears: it all works.
 */
TEST_F(module, device_node_appears_last)
{
	int status, i;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct npushm_query q;
		char dir[64];
		int dev, fd;

		for (i = 0; i < 20000000 && access(NPUSHM_DEVICE_PATH, F_OK); i++)
			;
		dev = npu_dev_open();
		if (dev < 0)
			_exit(1);
		if (npu_query(dev, &q) || q.abi_version != NPUSHM_ABI_VERSION)
			_exit(2);
		fd = npu_alloc(dev, 4096);
		if (fd < 0)
			_exit(3);
		close(fd);
		if (!fs_registered() || npu_mount(dir, NULL) || npu_umount(dir))
			_exit(4);
		if (!family_resolves())
			_exit(5);
		close(dev);
		_exit(0);
	}
	usleep(20000);
	ASSERT_EQ(0, load(test_params()));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

static void netlink_hammer(void)
{
	static const int cmds[] = {
		NPUSHM_CMD_REGION_GET, NPUSHM_CMD_STATS_GET, NPUSHM_CMD_UID_GET,
	};
	unsigned int n = 0;

	for (;;) {
		struct nl_sock *sk = nl_socket_alloc();
		int family, i;

		if (!sk || genl_connect(sk)) {
			nl_socket_free(sk);
			continue;
		}
		nl_socket_disable_auto_ack(sk);
		family = genl_ctrl_resolve(sk, NPUSHM_GENL_NAME);
		for (i = 0; family >= 0 && i < 50; i++) {
			struct nl_msg *msg = nlmsg_alloc();
			int cmd = cmds[n++ % 3];

			genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0,
				    cmd == NPUSHM_CMD_STATS_GET ? 0 : NLM_F_DUMP, cmd,
				    NPUSHM_GENL_VERSION);
			/* Errors are expected: the family comes and goes. */
			if (nl_send_auto(sk, msg) >= 0)
				nl_recvmsgs_default(sk);
			nlmsg_free(msg);
		}
		nl_socket_free(sk);
	}
}

/*
 * Attack: unloading tore down state a generic netlink request in flight
 * could still use. Requests and dumps race rmmod and insmod in a loop.
 */
TEST_F(module, unload_races_netlink_requests)
{
	time_t end = time(NULL) + 8;
	int i, status, unloads = 0, loads = 0, ret;
	pid_t pids[3];

	ASSERT_EQ(0, load(test_params()));
	for (i = 0; i < 3; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (!pids[i])
			netlink_hammer();
	}
	while (time(NULL) < end) {
		ret = unload();
		if (ret == -EBUSY || ret == -EAGAIN)
			continue;
		ASSERT_EQ(0, ret);
		unloads++;
		ASSERT_EQ(0, load(test_params()));
		loads++;
	}
	for (i = 0; i < 3; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], &status, 0);
	}
	TH_LOG("%d unloads and %d loads raced the requests", unloads, loads);
	EXPECT_LT(0, unloads);
	EXPECT_EQ(0, unload_wait());
}

/* A watch's notifier callbacks are module code: an open watch pins it. */
TEST_F(module, watch_pins_the_module)
{
	struct npushm_watch_open o = { 0 };
	struct npushm_watch_range r = { .len = 4096, .cookie = 5 };
	struct npushm_watch_event ev;
	char *p;
	int dev, ret;

	ASSERT_EQ(0, load(test_params()));
	dev = npu_dev_open();
	ASSERT_LE(0, dev);
	ASSERT_EQ(0, npu_ioctl(dev, NPUSHM_IOC_WATCH, &o));
	close(dev);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	r.start = (uintptr_t)p;
	ASSERT_EQ(0, npu_ioctl(o.fd, NPUSHM_IOC_WATCH_ADD, &r));
	ret = unload();
	EXPECT_TRUE(ret == -EAGAIN || ret == -EBUSY) {
		TH_LOG("rmmod with a watch open: %d", ret);
	}
	ASSERT_EQ(0, access(NPUSHM_DEVICE_PATH, F_OK));
	munmap(p, 4096);
	ASSERT_EQ(sizeof(ev), read(o.fd, &ev, sizeof(ev)));
	EXPECT_EQ(r.id, ev.id);
	EXPECT_EQ(5, ev.cookie);
	close(o.fd);
	EXPECT_EQ(0, unload_wait());
}

TEST_HARNESS_MAIN
