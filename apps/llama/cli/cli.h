/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * cli.h - what the parts of npushm-llama share: the parsed options, the
 * message helper, the clock, and the entry points of the run modes
 * (generate.c: one prompt; serve.c: --stream; timing.c: latency figures).
 */
#ifndef NPLLAMA_CLI_H
#define NPLLAMA_CLI_H

#include <stdatomic.h>
#include <stdint.h>

#include "npccl.h"
#include "npllama.h"

/* --stream COUNT,MIN_LEN,MAX_LEN,NEW,SEED */
typedef struct {
	int count;		/* requests */
	int min_len, max_len;	/* prompt tokens after the shared prefix, uniform in range */
	int max_new;		/* tokens generated per request (greedy) */
	uint64_t seed;
} llama_stream_t;

struct args {
	const char *model, *ids, *out, *logits, *prompt_logits, *dtype, *stream_s;
	int max_new, threads, greedy, sampled, keep, info, attach_prefix, publish_prefix, timing;
	int tp, hold, json, shared_prefix;
	double temperature, top_p;
	unsigned long long seed;
	llama_stream_t stream;
};

/* what a rank runs on: the engine, its communicator (NULL at --tp 1) */
struct rank_ctx {
	const struct args *a;
	npllama_t *llm;
	npccl_comm_t comm;
	int rank, nranks;
	const int64_t *prompt;	/* --ids */
	int prompt_len;
};

extern const char *prog;
/*
 * Set once the run is ending on SIGINT, SIGTERM or SIGHUP: die() says nothing
 * more (a model removed under a rank that was still attaching it is no error
 * of the user's).
 */
/* set once a signal ends the run; in memory the ranks share with the parent
 * after cli_stopping_share() (called before they are forked), so that a rank
 * whose model the parent removed on its way out says nothing either */
extern atomic_int *cli_stopping;
void cli_stopping_share(void);

/* "npushm-llama: MESSAGE" on stderr (nothing once cli_stopping); returns 1 */
int die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
double now(void);

/*
 * guard.c: the model this run loaded, removed by guard_unload at the end or
 * on SIGINT, SIGTERM or SIGHUP (then the process dies of it; guard_start
 * first). guard_loaded names it, between guard_hold and guard_release.
 */
void guard_start(void);
void guard_hold(void);
void guard_loaded(const char *name);
void guard_release(void);
void guard_unload(void);

/*
 * trust.c: after npllama_seq_attach_prefix (@publishing 0) or an UNTRUSTED
 * npllama_seq_publish_prefix (1), the line saying which prefix region of
 * which user was not trusted; nothing when there was none.
 */
void prefix_say_untrusted(const npllama_seq_t *seq, int publishing);

/* generate.c: --ids */
int run_generate(const struct rank_ctx *x);
/* serve.c: --stream */
int stream_parse(const char *s, llama_stream_t *out);
int run_stream(const struct rank_ctx *x);

/* timing.c */
double percentile(double *v, int n, double p);	/* sorts v */
/* p50 of an AllReduce of @count floats in npccl shared memory, in seconds
 * (collective; negative on failure, said on stderr) */
double allreduce_latency(npccl_comm_t comm, int count);
/* the --timing line of the collectives: share of @feed_s, per token, the
 * latency of one hidden vector's AllReduce (collective; rank 0 prints) */
int print_collectives(const struct rank_ctx *x, const npllama_profile_t *p, int tokens);

#endif
