/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * signal_pipe.h - how the engines' programs (npushm-bert, npushm-llama) end
 * on SIGINT, SIGTERM and SIGHUP: the handler, whichever thread runs it (the
 * libraries start threads before main, with no signal blocked), only writes
 * the signal's number to a pipe; one thread reads it and calls the
 * program's own stop function, which removes what the run published and
 * dies of the signal. Without the pipe or the thread the signals keep their
 * default action. For one program each: the state is static.
 */
#ifndef NPUSHM_APPS_SIGNAL_PIPE_H
#define NPUSHM_APPS_SIGNAL_PIPE_H

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <unistd.h>

static const int signal_pipe_signals[] = { SIGINT, SIGTERM, SIGHUP };
static int signal_pipe_fd[2] = { -1, -1 };
static void (*signal_pipe_stop)(int sig);

static inline void signal_pipe_handler(int sig)
{
	unsigned char c = (unsigned char)sig;
	int saved = errno;

	if (write(signal_pipe_fd[1], &c, 1) < 0)
		_exit(128 + sig);
	errno = saved;
}

static inline void *signal_pipe_main(void *arg)
{
	unsigned char c;

	(void)arg;
	while (read(signal_pipe_fd[0], &c, 1) < 0)
		if (errno != EINTR)
			return NULL;
	signal_pipe_stop(c);
	return NULL;
}

/* @stop(sig) runs on a thread of its own when one of the signals arrives */
static inline void signal_pipe_start(void (*stop)(int sig))
{
	struct sigaction sa = { .sa_handler = signal_pipe_handler, .sa_flags = SA_RESTART };
	pthread_t t;

	signal_pipe_stop = stop;
	if (pipe2(signal_pipe_fd, O_CLOEXEC))
		return;
	if (pthread_create(&t, NULL, signal_pipe_main, NULL)) {
		close(signal_pipe_fd[0]);
		close(signal_pipe_fd[1]);
		return;
	}
	pthread_detach(t);
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(signal_pipe_signals) / sizeof(signal_pipe_signals[0]); i++)
		sigaction(signal_pipe_signals[i], &sa, NULL);
}

/* the signals at their default actions again (a forked rank) */
static inline void signal_pipe_defaults(void)
{
	for (size_t i = 0; i < sizeof(signal_pipe_signals) / sizeof(signal_pipe_signals[0]); i++)
		signal(signal_pipe_signals[i], SIG_DFL);
}

#endif
