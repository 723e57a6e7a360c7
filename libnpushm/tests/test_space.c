/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * test_space.c - npushm_space_*: with the module, a forked peer reads and
 * writes exactly what the owner granted through the space's descriptor,
 * is refused outside grants and after revoke (each with the status a
 * caller can act on), cannot grant itself, and learns when the owner is
 * gone. Without the module, opening a space fails with UNSUPPORTED and says
 * what to load.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "npushm_space.h"

static bool have_module(void)
{
	return access("/dev/npushm", F_OK) == 0;
}

TEST(space_without_module)
{
	npushm_space_t *sp = (npushm_space_t *)1;

	if (have_module())
		th_skip("the npushm module is loaded here (the other space tests cover it)");
	CHECK_ST_MSG(npushm_space_open(&sp), NPUSHM_ERR_UNSUPPORTED, "modprobe npushm");
	CHECK(sp == NULL);
	CHECK_ST(npushm_space_open(NULL), NPUSHM_ERR_INVALID);
	CHECK(npushm_space_fd(NULL) == -1);
	npushm_space_close(NULL);
}

/* What the child checks; its exit status is the first failed step. */
static int peer(int fd, char *buf, size_t len, char *ro, npushm_space_t *sp)
{
	char dst[64];
	size_t n = 99;
	uint64_t id;

	if (npushm_space_read(fd, (uintptr_t)buf, dst, len, &n) || n != len ||
	    memcmp(dst, "granted bytes", 13))
		return 1;
	if (npushm_space_read(fd, (uintptr_t)buf - 1, dst, 2, &n) != NPUSHM_ERR_ACCESS || n)
		return 2;
	if (!strstr(npushm_last_error(), "granted no such range"))
		return 3;
	if (npushm_space_write(fd, (uintptr_t)buf, "GRANTED", 7, NULL) != NPUSHM_OK)
		return 4;
	if (npushm_space_write(fd, (uintptr_t)ro, "x", 1, NULL) != NPUSHM_ERR_ACCESS)
		return 5;
	if (npushm_space_grant(sp, buf, 1, NPUSHM_SPACE_READ, &id) != NPUSHM_ERR_ACCESS ||
	    !strstr(npushm_last_error(), "another process"))
		return 6;
	return 0;
}

TEST(space_grants_exactly_what_the_owner_says)
{
	static char buf[32] = "granted bytes";
	static char ro[32] = "read-only grant";
	npushm_space_t *sp = NULL;
	uint64_t id, rid, bogus;
	int status;
	pid_t pid;

	if (!have_module())
		th_skip("the npushm module is not loaded here (test space_without_module covers this host)");
	REQUIRE_OK(npushm_space_open(&sp));
	CHECK(npushm_space_fd(sp) >= 0);
	CHECK_ST(npushm_space_grant(sp, buf, 0, NPUSHM_SPACE_READ, &id), NPUSHM_ERR_INVALID);
	CHECK_ST(npushm_space_grant(sp, buf, 8, 0, &id), NPUSHM_ERR_INVALID);
	CHECK_ST(npushm_space_grant(sp, buf, 8, 4, &id), NPUSHM_ERR_INVALID);
	CHECK_ST(npushm_space_grant(sp, (void *)(uintptr_t)(1ULL << 63), 8, NPUSHM_SPACE_READ,
				    &id), NPUSHM_ERR_INVALID);
	REQUIRE_OK(npushm_space_grant(sp, buf, 13, NPUSHM_SPACE_READ | NPUSHM_SPACE_WRITE, &id));
	REQUIRE_OK(npushm_space_grant(sp, ro, sizeof(ro), NPUSHM_SPACE_READ, &rid));
	pid = fork();
	REQUIRE(pid >= 0);
	if (!pid)
		_exit(peer(npushm_space_fd(sp), buf, 13, ro, sp));
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(memcmp(buf, "GRANTED bytes", 13) == 0);
	REQUIRE_OK(npushm_space_revoke(sp, id));
	CHECK_ST_MSG(npushm_space_revoke(sp, id), NPUSHM_ERR_NOT_FOUND, "no grant");
	CHECK_ST(npushm_space_read(npushm_space_fd(sp), (uintptr_t)buf, &bogus, 4, NULL),
		 NPUSHM_ERR_ACCESS);
	npushm_space_close(sp);
}

static int send_fd(int sock, int fd, uint64_t addr)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &addr, .iov_len = sizeof(addr) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == sizeof(addr) ? 0 : -1;
}

static int recv_fd(int sock, uint64_t *addr)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = addr, .iov_len = sizeof(*addr) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	int fd;

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != sizeof(*addr))
		return -1;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

TEST(space_of_an_exited_owner_says_so)
{
	uint64_t addr = 0;
	int sv[2], fd, status;
	char dst[8];
	pid_t pid;

	if (!have_module())
		th_skip("the npushm module is not loaded here (test space_without_module covers this host)");
	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (!pid) {
		static char word[8] = "child!!";
		npushm_space_t *mine = NULL;
		uint64_t id;

		if (npushm_space_open(&mine) ||
		    npushm_space_grant(mine, word, 8, NPUSHM_SPACE_READ, &id) ||
		    send_fd(sv[1], npushm_space_fd(mine), (uintptr_t)word))
			_exit(1);
		_exit(0);
	}
	fd = recv_fd(sv[0], &addr);
	REQUIRE(fd >= 0);
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK_ST_MSG(npushm_space_read(fd, addr, dst, 8, NULL), NPUSHM_ERR_NOT_FOUND, "exited");
	close(fd);
	close(sv[0]);
	close(sv[1]);
}
TEST_HARNESS_MAIN
