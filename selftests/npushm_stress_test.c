// SPDX-License-Identifier: GPL-2.0
/*
 * npushm_stress_test.c - races every entry point from several processes:
 * anonymous alloc, O_TMPFILE and size, truncate to 0, close, mmap, munmap,
 * touch, publish (link), rename, open, unlink, seal, dma-buf export, info,
 * descriptor passing and fork, plus a netlink dumper, for
 * NPUSHM_STRESS_SECONDS (default 30). Afterwards every name is unlinked,
 * the instance unmounts and the pool must be back exactly where it started.
 */
#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>

#include "npushm_fixture.h"

#define WORKERS 6
#define SLOTS 8
#define NAMES 12

struct slot {
	int fd;
	void *map;
	size_t len;
};

static void name_of(char *buf, size_t n, unsigned int i)
{
	snprintf(buf, n, "stress.%u", i % NAMES);
}

static void drop(struct slot *s)
{
	if (s->map)
		munmap(s->map, s->len);
	if (s->fd >= 0)
		close(s->fd);
	s->map = NULL;
	s->fd = -1;
}

static void worker(int id, int seconds, int sock, int root)
{
	struct slot slots[SLOTS];
	int dev = npu_dev_open();
	time_t end = time(NULL) + seconds;
	unsigned int seed = id * 7919 + 1;
	unsigned long ops = 0, allocs = 0, maps = 0, named = 0, opened = 0, sealed = 0,
		      exported = 0, passed = 0;
	char name[32];
	int i;

	for (i = 0; i < SLOTS; i++)
		slots[i] = (struct slot){ .fd = -1 };
	while (time(NULL) < end) {
		unsigned int r = rand_r(&seed);
		struct slot *s = &slots[r % SLOTS];
		struct npushm_region_info info;
		int fd, op = (r >> 8) % 16;

		name_of(name, sizeof(name), r >> 12);
		ops++;
		switch (op) {
		case 0:
			drop(s);
			s->fd = npu_alloc(dev, 4096 * (1 + (r >> 16) % 1024));
			allocs += s->fd >= 0;
			break;
		case 1:
			drop(s);
			s->fd = npu_tmpfile(root, 4096 * (1 + (r >> 16) % 1024), 0666);
			allocs += s->fd >= 0;
			break;
		case 2:
			drop(s);
			break;
		case 3:
			if (s->fd < 0 || s->map || npu_info(s->fd, &info))
				break;
			s->len = info.size;
			s->map = mmap(NULL, s->len, PROT_READ | ((r & 1) ? PROT_WRITE : 0),
				      MAP_SHARED, s->fd, 0);
			maps += s->map != MAP_FAILED;
			if (s->map == MAP_FAILED)
				s->map = NULL;
			else if (r & 1)
				memset(s->map, id, s->len < 65536 ? s->len : 65536);
			break;
		case 4:
			if (s->map && s->len > 8192)
				munmap((char *)s->map + 4096, 4096);	/* split */
			break;
		case 5:
			if (s->fd >= 0)
				named += !npu_link(s->fd, root, name);
			break;
		case 6:
			drop(s);
			s->fd = npu_open(root, name, (r >> 20) & 1 ? O_RDWR : O_RDONLY);
			opened += s->fd >= 0;
			break;
		case 7:
			npu_unlink(root, name);
			break;
		case 8:
			if (s->fd >= 0)
				sealed += !npu_seal(s->fd);
			break;
		case 9:
			if (s->fd >= 0) {
				fd = npu_export(s->fd, (r >> 20) & 1);
				exported += fd >= 0;
				if (fd >= 0) {
					void *m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);

					close(fd);
					if (m != MAP_FAILED)
						munmap(m, 4096);
				}
			}
			break;
		case 10:
			if (s->fd >= 0 && !npu_send_fd(sock, s->fd)) {
				drop(s);
				passed++;
			}
			break;
		case 11:
			fd = npu_recv_fd(sock);
			if (fd >= 0) {
				drop(s);
				s->fd = fd;
			}
			break;
		case 12:
			if (!(r % 16)) {
				pid_t pid = fork();

				if (!pid) {
					/* Inherit, touch and die, sometimes by SIGKILL. */
					if (s->map)
						((volatile char *)s->map)[0];
					if (r & 32)
						raise(SIGKILL);
					_exit(0);
				}
				if (pid > 0)
					waitpid(pid, NULL, 0);
			}
			break;
		case 13:
			if (s->fd >= 0 && !s->map)
				npu_size(s->fd, 0);
			break;
		case 14: {
			char other[32];

			name_of(other, sizeof(other), r >> 20);
			renameat(root, name, root, other);
			break;
		}
		default:
			if (s->fd >= 0)
				npu_info(s->fd, &info);
			break;
		}
	}
	fprintf(stderr, "# worker %d: %lu ops: %lu allocs, %lu maps, %lu names, %lu opens, "
		"%lu seals, %lu dma-bufs, %lu handles passed\n", id, ops, allocs, maps, named,
		opened, sealed, exported, passed);
	/* Exit with whatever is still open: the kernel cleans up. */
	_exit(0);
}

static void dumper(int seconds)
{
	static const int cmds[] = {
		NPUSHM_CMD_REGION_GET, NPUSHM_CMD_STATS_GET, NPUSHM_CMD_UID_GET,
	};
	struct nl_sock *sk = nl_socket_alloc();
	time_t end = time(NULL) + seconds;
	int family;

	if (!sk || genl_connect(sk))
		_exit(1);
	family = genl_ctrl_resolve(sk, NPUSHM_GENL_NAME);
	if (family < 0)
		_exit(2);
	/* One reply per request: no acks left behind to confuse the next one. */
	nl_socket_disable_auto_ack(sk);
	/* Region and uid dumps and statistics race with everything else. */
	while (time(NULL) < end) {
		struct nl_msg *msg = nlmsg_alloc();
		int cmd = cmds[rand() % 3];

		genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0,
			    cmd == NPUSHM_CMD_STATS_GET ? 0 : NLM_F_DUMP, cmd,
			    NPUSHM_GENL_VERSION);
		int err = nl_send_auto(sk, msg);

		if (err >= 0)
			err = nl_recvmsgs_default(sk);
		if (err < 0) {
			fprintf(stderr, "# dumper: command %d: %s\n", cmd, nl_geterror(err));
			_exit(3);
		}
		nlmsg_free(msg);
	}
	nl_socket_free(sk);
	_exit(0);
}

TEST_F_TIMEOUT(npushm, stress_everything_at_once, 300)
{
	const char *env = getenv("NPUSHM_STRESS_SECONDS");
	int seconds = env ? atoi(env) : 30, i, status, sv[2];
	pid_t pids[WORKERS + 1];
	char name[32];

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));
	ASSERT_EQ(0, fcntl(sv[0], F_SETFL, O_NONBLOCK));
	ASSERT_EQ(0, fcntl(sv[1], F_SETFL, O_NONBLOCK));
	for (i = 0; i < WORKERS; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (!pids[i])
			worker(i, seconds, sv[i & 1], self->root);
	}
	pids[WORKERS] = fork();
	ASSERT_LE(0, pids[WORKERS]);
	if (!pids[WORKERS])
		dumper(seconds);
	for (i = 0; i <= WORKERS; i++) {
		ASSERT_EQ(pids[i], waitpid(pids[i], &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) {
			TH_LOG("%s %d: status %#x", i < WORKERS ? "worker" : "dumper", i, status);
		}
	}
	/* Descriptors still in flight in the sockets hold regions: drain them. */
	close(sv[0]);
	close(sv[1]);
	for (i = 0; i < NAMES; i++) {
		name_of(name, sizeof(name), i);
		npu_unlink(self->root, name);
	}
	/* The fixture's teardown unmounts and checks the pool is back where it started. */
}

TEST_HARNESS_MAIN
