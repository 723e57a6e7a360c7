/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * workspace.c - the engine's activation buffers.
 *
 * One flat f32 buffer per role (hidden state, attention LayerNorm output,
 * the dense layers' partial output, Q/K/V, context, FFN activations, mask
 * bias), sized for the largest batch so far (in tokens) and reused
 * by every layer of every later request through views of their first
 * elements: a warm engine evaluates everything into these buffers
 * (npt_tensor_eval_into) and takes no fresh memory. With tensor parallelism
 * the partial-output buffer, the one the AllReduce works on, comes from
 * npccl_mem_alloc on every rank (shared memory, so the AllReduce reduces
 * straight between the ranks' buffers); growing it is then collective, and
 * every rank grows at the same request because they all get the same batch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char *const role[NPB_NBUF] = {
	"hidden state", "attention output", "dense output", "queries", "keys", "values",
	"context", "FFN activations", "mask",
};

static void release(npb_workspace_t *ws, npccl_comm_t comm)
{
	for (int i = 0; i < NPB_NBUF; i++) {
		npt_tensor_free(ws->buf[i]);
		ws->buf[i] = NULL;
		ws->data[i] = NULL;
		ws->cap[i] = 0;
	}
	if (ws->shared_part && comm)
		npccl_mem_free(comm, ws->shared_part);
	ws->shared_part = NULL;
	ws->bytes = ws->shared_bytes = 0;
	ws->tokens = 0;
}

void npb_workspace_free(struct npbert *e)
{
	release(&e->ws, e->comm);
}

npbert_status_t npb_workspace_fit(struct npbert *e, int batch, int seq_len)
{
	npb_workspace_t *ws = &e->ws;
	uint64_t T = (uint64_t)batch * (uint64_t)seq_len;
	uint64_t H = (uint64_t)e->cfg.hidden, Hl = (uint64_t)e->Hl, Fl = (uint64_t)e->Fl;
	uint64_t need[NPB_NBUF];

	if (T <= ws->tokens)
		return NPBERT_OK;
	need[NPB_X] = need[NPB_H1] = need[NPB_PART] = T * H;
	need[NPB_Q] = need[NPB_K] = need[NPB_V] = need[NPB_CTX] = T * Hl;
	need[NPB_INTER] = T * Fl;
	need[NPB_MASK] = T;
	release(ws, e->comm);
	for (int i = 0; i < NPB_NBUF; i++) {
		int64_t n = (int64_t)need[i];
		npt_status_t s;

		if (i == NPB_PART && e->comm) {
			npccl_status_t cs = npccl_mem_alloc(e->comm, need[i] * sizeof(float),
							    &ws->shared_part);

			if (cs) {
				ws->shared_part = NULL;
				release(ws, e->comm);
				return npb_fail(cs == NPCCL_ERR_NOMEM ? NPBERT_ERR_NO_MEMORY :
						NPBERT_ERR_COMM, "cannot allocate %llu bytes of shared "
						"memory for the AllReduce: %s",
						(unsigned long long)(need[i] * sizeof(float)),
						npccl_comm_last_error(e->comm));
			}
			s = npt_tensor_from_data(ws->shared_part, NPT_F32, 1, &n, NULL, 0, NULL, NULL,
						 &ws->buf[i]);
			ws->shared_bytes = need[i] * sizeof(float);
		} else {
			s = npt_tensor_empty(NPT_F32, 1, &n, &ws->buf[i]);
		}
		if (!s)
			s = npt_tensor_data(ws->buf[i], (void **)&ws->data[i]);
		if (s) {
			char what[96];

			snprintf(what, sizeof(what), "allocating the %s buffer (%llu floats)", role[i],
				 (unsigned long long)need[i]);
			release(ws, e->comm);
			return npb_tensor_fail(s, what);
		}
		ws->cap[i] = need[i];
		ws->bytes += need[i] * sizeof(float);
	}
	ws->tokens = T;
	return NPBERT_OK;
}

npbert_status_t npb_view(struct npbert *e, int which, int ndim, const int64_t *shape,
			 npt_tensor_t **out)
{
	int64_t n = 1;
	npt_tensor_t *flat;
	npt_status_t s;

	for (int i = 0; i < ndim; i++)
		n *= shape[i];
	s = npt_tensor_slice(e->ws.buf[which], 0, 0, n, 1, &flat);
	if (!s) {
		s = npt_tensor_reshape(flat, ndim, shape, out);
		npt_tensor_free(flat);
	}
	return s ? npb_tensor_fail(s, "viewing the workspace") : NPBERT_OK;
}
