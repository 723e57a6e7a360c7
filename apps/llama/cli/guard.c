/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * guard.c - the model a run of npushm-llama loaded from a file goes when the
 * run ends, also on SIGINT, SIGTERM and SIGHUP (apps/common/signal_pipe.h:
 * one thread takes the signal, removes the model and dies of it). main
 * holds the lock over the load, so a signal during it waits and then
 * removes what the load published.
 * ranks_run takes the signals itself while its ranks run (its cleanup calls
 * guard_unload).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "cli.h"
#include "npushm.h"
#include "signal_pipe.h"

static struct {
	pthread_mutex_t lock;
	char name[NPUSHM_NAME_MAX + 1];	/* the model to remove, "" if none */
} guard = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* under the lock */
static void unload_locked(void)
{
	npushm_dev_t *dev;

	if (!guard.name[0])
		return;
	if (npushm_dev_open(NPUSHM_BACKEND_AUTO, &dev) == NPUSHM_OK) {
		if (npushm_model_remove(dev, guard.name))
			fprintf(stderr, "%s: %s\n", prog, npushm_last_error());
		npushm_dev_close(dev);
	}
	guard.name[0] = '\0';
}

/* the signal @sig ends the run: nothing more to say, the model goes, die of it */
static void stop(int sig)
{
	sigset_t set;

	pthread_mutex_lock(&guard.lock);
	atomic_store(cli_stopping, 1);
	unload_locked();
	signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	_exit(128 + sig);
}

void guard_start(void)
{
	signal_pipe_start(stop);
}

void guard_hold(void)
{
	pthread_mutex_lock(&guard.lock);
}

void guard_release(void)
{
	pthread_mutex_unlock(&guard.lock);
}

void guard_loaded(const char *name)
{
	snprintf(guard.name, sizeof(guard.name), "%s", name);
}

void guard_unload(void)
{
	pthread_mutex_lock(&guard.lock);
	unload_locked();
	pthread_mutex_unlock(&guard.lock);
}
