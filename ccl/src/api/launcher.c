/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * launcher.c - npccl_comm_init_env(): rank, size and rendezvous from the
 * environment that launchers set.
 *
 * Rank/size, first match wins: NPCCL_RANK/NPCCL_NRANKS; Open MPI's
 * OMPI_COMM_WORLD_RANK/SIZE; MPICH Hydra's PMI_RANK/PMI_SIZE; torchrun's
 * RANK/WORLD_SIZE. Rendezvous address, first match wins:
 *   1. NPCCL_ROOT_ADDR=host:port;
 *   2. MASTER_ADDR and MASTER_PORT (torchrun; under torchrun itself, whose
 *      agent already listens on MASTER_PORT, port MASTER_PORT+1 is used);
 *   3. one host only: a file $NPCCL_RENDEZVOUS_DIR (default /tmp)/npccl-<job>.id
 *      that rank 0 writes and the others poll, <job> being NPCCL_JOB_ID, Open
 *      MPI's OMPI_MCA_ess_base_jobid, or else the launcher's process id (the
 *      ranks' common parent: mpirun, Hydra's proxy). Rank 0 removes it once
 *      every rank has joined; a file left by a rank 0 that was killed (its
 *      pid is in the file) is removed by the next run.
 * With 1 or 2, rank 0 listens on the port and serves the rendezvous; the tag
 * that keeps communicators apart is derived from the address and job (not
 * the size, so that ranks given different sizes are told so).
 */
#include "npccl_internal.h"
#include "transport/transport.h"
#include "algo/algo.h"
#include "api/api.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

static int env_int(const char *name, int *out)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return 0;
	char *end;
	long v = strtol(s, &end, 10);
	if (*end || v < 0 || v > 1 << 24)
		return -1;
	*out = (int)v;
	return 1;
}

static const char *const rank_vars[][2] = {
	{ "NPCCL_RANK", "NPCCL_NRANKS" },
	{ "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE" },
	{ "PMI_RANK", "PMI_SIZE" },
	{ "RANK", "WORLD_SIZE" },
};

static const char *job_id(void)
{
	const char *v[] = { "NPCCL_JOB_ID", "TORCHELASTIC_RUN_ID", "OMPI_MCA_ess_base_jobid",
			    "PMIX_NAMESPACE" };
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (getenv(v[i]) && *getenv(v[i]))
			return getenv(v[i]);
	return NULL;
}

/*
 * The rendezvous file holds "<id hex> <pid of rank 0>\n". A file whose
 * writer is gone (rank 0 killed before every rank joined) is stale: readers
 * remove it and wait for a fresh one, and rank 0 sweeps the stale files of
 * other jobs from the directory when it writes its own.
 */
#define RDV_FILE_MAX (NPCCL_UNIQUE_ID_STRLEN + 32)

static int file_writer_alive(const char *buf)
{
	const char *sp = strchr(buf, ' ');
	long pid = sp ? strtol(sp + 1, NULL, 10) : 0;
	if (pid <= 0)
		return 1;	/* not ours to judge */
	return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

/* Remove @path if it still holds @content (whose writer is dead). */
static void remove_stale(const char *path, const char *content)
{
	char again[RDV_FILE_MAX];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, again, sizeof(again) - 1);
	close(fd);
	if (n > 0) {
		again[n] = 0;
		if (!strcmp(again, content))
			unlink(path);
	}
}

static void sweep_stale_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	if (!d)
		return;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (strncmp(de->d_name, "npccl-", 6) || len < 9 || strcmp(de->d_name + len - 3, ".id"))
			continue;
		char path[4200], buf[RDV_FILE_MAX];
		struct stat sb;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		ssize_t n = fstat(fd, &sb) == 0 && sb.st_uid == geteuid() ? read(fd, buf, sizeof(buf) - 1) : -1;
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = 0;
		if (!file_writer_alive(buf))
			remove_stale(path, buf);
	}
	closedir(d);
}

static npccl_status_t file_rendezvous(int rank, int nranks, npccl_unique_id_t *id, char *path,
				      size_t pathlen, char *err, size_t errlen)
{
	const char *dir = getenv("NPCCL_RENDEZVOUS_DIR");
	if (!dir || !*dir)
		dir = "/tmp";
	const char *job = job_id();
	char jb[64];
	if (!job) {
		snprintf(jb, sizeof(jb), "ppid%d", (int)getppid());
		job = jb;
	}
	/* Not the size: ranks started with different sizes must meet, so that
	 * the root can tell them so. */
	snprintf(path, pathlen, "%s/npccl-%s.id", dir, job);
	char hex[NPCCL_UNIQUE_ID_STRLEN], buf[RDV_FILE_MAX];
	if (rank == 0) {
		npccl_status_t st = unique_id_create(htonl(INADDR_LOOPBACK), 0, -1, 0, id, err,
						     errlen);
		if (st)
			return st;
		sweep_stale_files(dir);
		npccl_unique_id_to_string(id, hex);
		int len = snprintf(buf, sizeof(buf), "%s %d\n", hex, (int)getpid());
		char tmp[4200];
		snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
		int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0 || write(fd, buf, (size_t)len) != (ssize_t)len || rename(tmp, path) < 0) {
			snprintf(err, errlen, "cannot write the rendezvous file %s: %s (set "
				 "NPCCL_RENDEZVOUS_DIR to a writable directory)", path, strerror(errno));
			if (fd >= 0)
				close(fd);
			unlink(tmp);
			return NPCCL_ERR_BOOTSTRAP;
		}
		close(fd);
		return NPCCL_OK;
	}
	int tmo = npccl_config()->bootstrap_timeout_ms;
	uint64_t end = now_ns() + (uint64_t)tmo * 1000000ull;
	for (;;) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			ssize_t n = read(fd, buf, sizeof(buf) - 1);
			close(fd);
			if (n >= (ssize_t)sizeof(hex) - 1) {
				buf[n] = 0;
				memcpy(hex, buf, sizeof(hex) - 1);
				hex[sizeof(hex) - 1] = 0;
				if (!file_writer_alive(buf))
					remove_stale(path, buf);
				else if (npccl_unique_id_from_string(hex, id) == NPCCL_OK)
					return NPCCL_OK;
			}
		}
		if (now_ns() > end) {
			snprintf(err, errlen,
				 "rank %d: no rendezvous: rank 0 did not write %s within %d ms. The "
				 "file is named after NPCCL_JOB_ID (here '%s'%s): every rank of a job "
				 "must see the same NPCCL_JOB_ID and NPCCL_RENDEZVOUS_DIR; on several "
				 "hosts set NPCCL_ROOT_ADDR=host:port (or MASTER_ADDR and MASTER_PORT) "
				 "for every rank",
				 rank, path, tmo, job,
				 job == jb ? ", from the launcher's process id as NPCCL_JOB_ID is "
					     "unset" : "");
			return NPCCL_ERR_BOOTSTRAP;
		}
		usleep(2000);
	}
}

npccl_status_t npccl_comm_init_env(npccl_comm_t *comm, char *err, size_t errlen)
{
	char dummy[8];
	if (!err || !errlen) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	err[0] = 0;
	if (!comm)
		return NPCCL_ERR_INVALID_ARG;
	*comm = NULL;
	int rank = -1, nranks = -1;
	const char *which = NULL;
	for (size_t i = 0; i < sizeof(rank_vars) / sizeof(rank_vars[0]); i++) {
		int r1 = env_int(rank_vars[i][0], &rank), r2 = env_int(rank_vars[i][1], &nranks);
		if (r1 == 0 && r2 == 0)
			continue;
		if (r1 <= 0 || r2 <= 0 || nranks <= 0 || rank >= nranks) {
			snprintf(err, errlen, "%s=%s and %s=%s do not make a valid rank and size",
				 rank_vars[i][0], getenv(rank_vars[i][0]) ?: "(unset)",
				 rank_vars[i][1], getenv(rank_vars[i][1]) ?: "(unset)");
			return NPCCL_ERR_INVALID_ARG;
		}
		which = rank_vars[i][0];
		break;
	}
	if (!which) {
		snprintf(err, errlen, "no launcher environment: set RANK/WORLD_SIZE (torchrun), run "
				      "under mpirun, or set NPCCL_RANK/NPCCL_NRANKS");
		return NPCCL_ERR_INVALID_ARG;
	}

	char addr[300] = "";
	const char *ra = getenv("NPCCL_ROOT_ADDR");
	if (ra && *ra) {
		snprintf(addr, sizeof(addr), "%s", ra);
	} else if (getenv("MASTER_ADDR") && getenv("MASTER_PORT")) {
		int port = atoi(getenv("MASTER_PORT"));
		if (getenv("TORCHELASTIC_RUN_ID"))
			port++;
		snprintf(addr, sizeof(addr), "%s:%d", getenv("MASTER_ADDR"), port);
	}
	npccl_unique_id_t id;
	npccl_status_t st;
	char path[4096] = "";
	if (addr[0]) {
		uint32_t ip;
		uint16_t port;
		if (parse_host_port(addr, &ip, &port) < 0) {
			snprintf(err, errlen, "rendezvous address '%s' is not host:port", addr);
			return NPCCL_ERR_INVALID_ARG;
		}
		char key[512];
		const char *job = job_id();
		/* Not the size: a rank started with another size must reach the
		 * root's size check, not look like another communicator. */
		int kl = snprintf(key, sizeof(key), "%s|%s", addr, job ? job : "");
		uint64_t magic = XXH64(key, (size_t)kl, 0x6e70636c) | 1;
		if (rank == 0) {
			int lfd = sock_listen_tcp(htonl(INADDR_ANY), port, err, errlen);
			if (lfd < 0)
				return NPCCL_ERR_BOOTSTRAP;
			st = unique_id_create(ip, port, lfd, magic, &id, err, errlen);
			if (st)
				return st;
		} else {
			memset(&id, 0, sizeof(id));
			struct unique_id_wire *w = (void *)id.internal;
			memcpy(w->tag, "NPCCLID1", 8);
			w->magic = magic;
			w->ipv4 = ip;
			w->port = port;
		}
	} else {
		st = file_rendezvous(rank, nranks, &id, path, sizeof(path), err, errlen);
		if (st)
			return st;
	}
	st = comm_init_common(comm, nranks, &(struct boot_src){ .id = &id }, rank, err, errlen);
	if (rank == 0 && path[0])
		unlink(path);
	return st;
}
