/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * test_share.c - handing regions to other processes: SCM_RIGHTS over stream
 * and seqpacket sockets (both directions of writes visible), the access
 * mode travelling with the handle, malformed or missing messages (no
 * descriptor leaked), and fork inheritance of mappings.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static int wait_child(pid_t pid)
{
	int status;

	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void pass_region(int type)
{
	npushm_dev_t *dev = th_dev();
	npushm_region_t *r;
	uint64_t *p;
	int sv[2];
	pid_t pid;

	REQUIRE(socketpair(AF_UNIX, type, 0, sv) == 0);
	REQUIRE_OK(npushm_region_alloc(dev, 1 << 20, 0, &r));
	REQUIRE_OK(npushm_region_map(r, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, (void **)&p));
	p[0] = 0x1122334455667788ULL;
	pid = fork();
	if (pid == 0) {
		npushm_dev_t *d2 = th_dev();
		npushm_region_t *got = NULL;
		uint64_t *q;
		char ack;

		close(sv[0]);
		REQUIRE_OK(npushm_region_recv(d2, sv[1], &got));
		CHECK_EQ(npushm_region_size(got), 1 << 20);
		CHECK_EQ(npushm_region_id(got), npushm_region_id(r));
		CHECK(npushm_region_writable(got));
		REQUIRE_OK(npushm_region_map(got, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, (void **)&q));
		CHECK(q[0] == 0x1122334455667788ULL);
		q[131071] = 99;	/* last word, seen by the parent */
		CHECK(write(sv[1], "k", 1) == 1);
		CHECK(read(sv[1], &ack, 1) == 1);
		CHECK(q[1] == 77);	/* written by the parent after the handoff */
		_exit(0);
	}
	close(sv[1]);
	REQUIRE_OK(npushm_region_send(r, sv[0]));
	{
		char c;

		REQUIRE(read(sv[0], &c, 1) == 1);
	}
	CHECK(p[131071] == 99);
	p[1] = 77;
	CHECK(write(sv[0], "k", 1) == 1);
	CHECK_EQ(wait_child(pid), 0);
	close(sv[0]);
	npushm_region_close(r);
	npushm_dev_close(dev);
}

TEST(share_region_over_stream_socket)
{
	pass_region(SOCK_STREAM);
}

TEST(share_region_over_seqpacket_socket)
{
	pass_region(SOCK_SEQPACKET);
}

TEST(share_read_only_handle_stays_read_only)
{
	npushm_dev_t *dev = th_dev();
	const char *name = th_name("rosend");
	npushm_region_t *r, *ro, *got = NULL;
	void *p = NULL;
	int sv[2];

	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	REQUIRE_OK(npushm_region_alloc(dev, 4096, 0, &r));
	REQUIRE_OK(npushm_region_publish(r, name, 0644, NPUSHM_PUBLISH_PERSISTENT));
	REQUIRE_OK(npushm_region_open(dev, name, 0, &ro));
	REQUIRE_OK(npushm_region_send(ro, sv[0]));
	REQUIRE_OK(npushm_region_recv(dev, sv[1], &got));
	CHECK(!npushm_region_writable(got));
	CHECK_ST(npushm_region_map(got, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, &p), NPUSHM_ERR_ACCESS);
	CHECK(mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, npushm_region_fd(got), 0) == MAP_FAILED);
	npushm_region_close(got);
	npushm_region_close(ro);
	npushm_region_close(r);
	CHECK_ST(npushm_name_unlink(dev, name), NPUSHM_OK);
	close(sv[0]);
	close(sv[1]);
	npushm_dev_close(dev);
}

static int send_fds(int sock, const void *buf, size_t len, const int *fds, int nfd)
{
	char ctl[CMSG_SPACE(sizeof(int) * 4)] = { 0 };
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;

	if (nfd) {
		msg.msg_control = ctl;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfd);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfd);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfd);
	}
	return (int)sendmsg(sock, &msg, 0);
}

TEST(share_recv_rejects_bad_messages_without_leaking)
{
	npushm_dev_t *dev = th_dev();
	npushm_region_t *r, *got = NULL;
	char junk[32] = "this is not a region message!!!";
	int sv[2], fds0, two[2];

	REQUIRE_OK(npushm_region_alloc(dev, 4096, 0, &r));
	REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
	fds0 = th_fd_count();
	/* No descriptor at all. */
	REQUIRE(send_fds(sv[0], junk, sizeof(junk), NULL, 0) > 0);
	CHECK_ST_MSG(npushm_region_recv(dev, sv[1], &got), NPUSHM_ERR_PROTOCOL, "got 0");
	/* Two descriptors. */
	two[0] = two[1] = npushm_region_fd(r);
	REQUIRE(send_fds(sv[0], junk, sizeof(junk), two, 2) > 0);
	CHECK_ST_MSG(npushm_region_recv(dev, sv[1], &got), NPUSHM_ERR_PROTOCOL, "got 2");
	/* One descriptor, wrong payload. */
	REQUIRE(send_fds(sv[0], junk, sizeof(junk), two, 1) > 0);
	CHECK_ST_MSG(npushm_region_recv(dev, sv[1], &got), NPUSHM_ERR_PROTOCOL, "not an npushm region");
	/* One descriptor that is no region, with a good-looking header: a pipe. */
	{
		int pfd[2];

		REQUIRE(pipe(pfd) == 0);
		REQUIRE_OK(npushm_region_send(r, sv[0]));	/* valid message to copy */
		{
			char buf[64];
			struct iovec iov = { buf, sizeof(buf) };
			char ctl[CMSG_SPACE(sizeof(int) * 4)];
			struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
					    .msg_controllen = sizeof(ctl) };
			ssize_t n = recvmsg(sv[1], &m, MSG_CMSG_CLOEXEC);
			int fd;

			REQUIRE(n > 0);
			memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof(int));
			close(fd);
			REQUIRE(send_fds(sv[0], buf, (size_t)n, pfd, 1) > 0);
		}
		CHECK_ST(npushm_region_recv(dev, sv[1], &got), NPUSHM_ERR_INVALID);
		close(pfd[0]);
		close(pfd[1]);
	}
	CHECK(got == NULL);
	CHECK_EQ(th_fd_count(), fds0);
	/* The peer is gone. */
	close(sv[0]);
	CHECK_ST_MSG(npushm_region_recv(dev, sv[1], &got), NPUSHM_ERR_PROTOCOL, "closed");
	CHECK_ST(npushm_region_send(r, sv[1]), NPUSHM_ERR_PROTOCOL);
	CHECK_ST(npushm_region_recv(dev, -1, &got), NPUSHM_ERR_INVALID);
	CHECK_ST(npushm_region_send(r, 0x7fff), NPUSHM_ERR_INVALID);
	close(sv[1]);
	npushm_region_close(r);
	npushm_dev_close(dev);
}

TEST(share_wrong_backend_is_rejected)
{
	npushm_dev_t *dev = th_dev(), *other = NULL;
	npushm_region_t *r, *got = NULL;
	int sv[2];

	if (!th_is_kmod() && access("/dev/npushm", F_OK) != 0)
		th_skip("needs both backends; the npushm module is not loaded here (the kmod run covers it)");
	REQUIRE_OK(npushm_dev_open(th_is_kmod() ? NPUSHM_BACKEND_POSIX : NPUSHM_BACKEND_KMOD, &other));
	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	REQUIRE_OK(npushm_region_alloc(other, 4096, 0, &r));
	REQUIRE_OK(npushm_region_send(r, sv[0]));
	CHECK_ST_MSG(npushm_region_recv(dev, sv[1], &got), NPUSHM_ERR_PROTOCOL, "NPUSHM_BACKEND");
	npushm_region_close(r);
	npushm_dev_close(other);
	npushm_dev_close(dev);
	close(sv[0]);
	close(sv[1]);
}

TEST(share_fork_inherits_mappings_both_ways)
{
	npushm_dev_t *dev = th_dev();
	npushm_region_t *r;
	volatile uint32_t *p;
	pid_t pid;

	REQUIRE_OK(npushm_region_alloc(dev, 4096, 0, &r));
	REQUIRE_OK(npushm_region_map(r, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, (void **)&p));
	p[0] = 1;
	pid = fork();
	if (pid == 0) {
		CHECK(p[0] == 1);
		p[1] = 2;
		while (p[2] != 3)
			usleep(1000);
		_exit(0);
	}
	while (p[1] != 2)
		usleep(1000);
	p[2] = 3;
	CHECK_EQ(wait_child(pid), 0);
	/* The handle survives in a child after the parent closed it. */
	pid = fork();
	if (pid == 0) {
		npushm_region_info_t info;

		CHECK_ST(npushm_region_info(r, &info), NPUSHM_OK);
		_exit(0);
	}
	CHECK_EQ(wait_child(pid), 0);
	npushm_region_unmap(r, (void *)p);
	npushm_region_close(r);
	npushm_dev_close(dev);
}

TEST(share_killed_peer_holding_a_region)
{
	npushm_dev_t *dev = th_dev();
	uint64_t used0 = th_pool_used(dev);
	int sv[2];
	pid_t pid;

	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	pid = fork();
	if (pid == 0) {
		npushm_region_t *r;
		void *p;

		REQUIRE_OK(npushm_region_alloc(dev, 4 << 20, 0, &r));
		REQUIRE_OK(npushm_region_map(r, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, &p));
		memset(p, 0x5a, 4 << 20);
		REQUIRE_OK(npushm_region_send(r, sv[1]));
		pause();
		_exit(0);
	}
	{
		npushm_region_t *got;
		unsigned char *q;

		REQUIRE_OK(npushm_region_recv(dev, sv[0], &got));
		kill(pid, SIGKILL);
		wait_child(pid);
		/* The sender is dead; the region lives on through our handle. */
		REQUIRE_OK(npushm_region_map(got, NPUSHM_PROT_READ, (void **)&q));
		CHECK(q[0] == 0x5a && q[(4 << 20) - 1] == 0x5a);
		npushm_region_unmap(got, q);
		npushm_region_close(got);
	}
	CHECK_EQ(th_pool_used(dev), used0);
	close(sv[0]);
	close(sv[1]);
	npushm_dev_close(dev);
}

TEST_HARNESS_MAIN
