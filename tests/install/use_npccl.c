/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * use_npccl.c - a program built only from the installed tree (`pkg-config
 * npccl`): forks a second rank and runs an AllReduce between the two (shared
 * memory through libnpushm's posix backend), checking the sums on both ranks.
 * Prints "ok" and exits 0 on success.
 */
#include <npccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int rank_main(const npccl_unique_id_t *id, int rank)
{
	float in[1024], out[1024];
	npccl_comm_t comm;
	npccl_status_t st;

	for (int i = 0; i < 1024; i++)
		in[i] = (float)(i + rank);
	if ((st = npccl_comm_init_rank(&comm, 2, id, rank))) {
		fprintf(stderr, "use_npccl: rank %d: init: %s\n", rank, npccl_strerror(st));
		return 1;
	}
	if ((st = npccl_allreduce(in, out, 1024, NPCCL_FLOAT32, NPCCL_SUM, comm))) {
		fprintf(stderr, "use_npccl: rank %d: allreduce: %s\n", rank, npccl_comm_last_error(comm));
		return 1;
	}
	for (int i = 0; i < 1024; i++) {
		if (out[i] != (float)(2 * i + 1)) {
			fprintf(stderr, "use_npccl: rank %d: element %d is %g, not %d\n", rank, i, out[i], 2 * i + 1);
			return 1;
		}
	}
	npccl_comm_destroy(comm);
	return 0;
}

int main(void)
{
	npccl_unique_id_t id;
	int status, rc;
	pid_t pid;

	if (npccl_get_unique_id(&id)) {
		fprintf(stderr, "use_npccl: no unique id\n");
		return 1;
	}
	pid = fork();
	if (pid == 0)
		_exit(rank_main(&id, 1));
	rc = rank_main(&id, 0);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		rc = 1;
	if (!rc)
		printf("ok\n");
	return rc;
}
