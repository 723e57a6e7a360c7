/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * ranks.c - fork the tensor-parallel ranks of npushm-llama and supervise
 * them (ranks.h).
 *
 * The parent blocks SIGCHLD, SIGINT, SIGTERM and SIGHUP before forking and
 * takes them synchronously with sigwaitinfo(): no handler runs in an
 * arbitrary thread, and the cleanup (removing a model this run loaded)
 * happens in the parent's own flow. Each rank restores the signal mask it
 * inherited and the default action of those signals, and asks for SIGKILL
 * when its parent dies.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ranks.h"

#define MAX_RANKS 64

/* reap every rank that ended; 1 once all have */
static int reap(pid_t *pids, int n, int *failed, const char *prog)
{
	int left = 0;

	for (int r = 0; r < n; r++) {
		pid_t p;
		int st;

		if (!pids[r])
			continue;
		p = waitpid(pids[r], &st, WNOHANG);
		if (p == 0) {
			left++;
			continue;
		}
		if (p == pids[r] && WIFSIGNALED(st)) {
			fprintf(stderr, "%s: rank %d died of signal %d (%s)\n", prog, r,
				WTERMSIG(st), strsignal(WTERMSIG(st)));
			*failed = 1;
		} else if (p != pids[r] || WEXITSTATUS(st)) {
			*failed = 1;
		}
		pids[r] = 0;
	}
	return left == 0;
}

int ranks_run(int n, rank_fn fn, void *arg, void (*cleanup)(void *), const char *prog)
{
	pid_t pids[MAX_RANKS] = { 0 }, parent = getpid();
	sigset_t set, old;
	npccl_unique_id_t id;
	int failed = 0, sig;

	if (n < 1 || n > MAX_RANKS) {
		fprintf(stderr, "%s: %d ranks: use 1 to %d\n", prog, n, MAX_RANKS);
		return 1;
	}
	if (npccl_get_unique_id(&id)) {
		fprintf(stderr, "%s: cannot start the rendezvous of the %d ranks\n", prog, n);
		return 1;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, &old);
	fflush(NULL);
	for (int r = 0; r < n; r++) {
		pids[r] = fork();
		if (pids[r] == 0) {
			/* a rank dies of these, whatever the parent's handlers (guard.c) do */
			signal(SIGINT, SIG_DFL);
			signal(SIGTERM, SIG_DFL);
			signal(SIGHUP, SIG_DFL);
			sigprocmask(SIG_SETMASK, &old, NULL);
			if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
				_exit(1);
			_exit(fn(r, n, &id, arg));
		}
		if (pids[r] < 0) {
			fprintf(stderr, "%s: cannot start rank %d: %s\n", prog, r, strerror(errno));
			pids[r] = 0;
			for (int k = 0; k < r; k++)
				kill(pids[k], SIGTERM);
			failed = 1;
			break;
		}
	}
	while (!reap(pids, n, &failed, prog)) {
		sig = sigwaitinfo(&set, NULL);
		if (sig < 0 || sig == SIGCHLD)
			continue;
		/* asked to stop: the ranks first, then what the run made, then die of it */
		for (int r = 0; r < n; r++)
			if (pids[r])
				kill(pids[r], SIGTERM);
		for (int r = 0; r < n; r++)
			if (pids[r])
				while (waitpid(pids[r], NULL, 0) < 0 && errno == EINTR)
					;
		if (cleanup)
			cleanup(arg);
		signal(sig, SIG_DFL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		raise(sig);
		_exit(128 + sig);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	return failed;
}
