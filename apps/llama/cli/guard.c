/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * guard.c - the model a run of npushm-llama loaded from a file goes when the
 * run ends, also on SIGINT, SIGTERM and SIGHUP. The handler (whichever
 * thread runs it: OpenBLAS starts threads before main, with no signal
 * blocked) only writes the signal to a pipe; one thread reads it, removes
 * the model and dies of the signal. main holds the lock over the load, so a
 * signal during it waits and then removes what the load published.
 * ranks_run takes the signals itself while its ranks run (its cleanup calls
 * guard_unload).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "cli.h"
#include "npushm.h"

static const int guard_signals[] = { SIGINT, SIGTERM, SIGHUP };

static struct {
	pthread_mutex_t lock;
	int pipe[2];
	char name[NPUSHM_NAME_MAX + 1];	/* the model to remove, "" if none */
} guard = { .lock = PTHREAD_MUTEX_INITIALIZER, .pipe = { -1, -1 } };

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

static void handler(int sig)
{
	unsigned char c = (unsigned char)sig;
	int saved = errno;

	if (write(guard.pipe[1], &c, 1) < 0)
		_exit(128 + sig);
	errno = saved;
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

static void *guard_main(void *arg)
{
	unsigned char c;

	(void)arg;
	while (read(guard.pipe[0], &c, 1) < 0)
		if (errno != EINTR)
			return NULL;
	stop(c);
	return NULL;
}

void guard_start(void)
{
	struct sigaction sa = { .sa_handler = handler, .sa_flags = SA_RESTART };
	pthread_t t;

	if (pipe2(guard.pipe, O_CLOEXEC))
		return;
	if (pthread_create(&t, NULL, guard_main, NULL)) {
		close(guard.pipe[0]);
		close(guard.pipe[1]);
		return;
	}
	pthread_detach(t);
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(guard_signals) / sizeof(guard_signals[0]); i++)
		sigaction(guard_signals[i], &sa, NULL);
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
