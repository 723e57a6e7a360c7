/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * ewise.c - fused elementwise evaluation.
 *
 * A maximal chain of lazy elementwise nodes is compiled into a small
 * register program (npt_prog_t): leaves are materialised tensors read
 * through their broadcast strides (stride 0 = the FUSED expansion: a bias is
 * never copied), instructions are typed kernel calls with explicit casts
 * (NumPy promotion) and f16/bf16 rounding after every op. The output space
 * is coalesced and walked in blocks sized for L1/L2 (npt_prog_t.block); each
 * block runs every instruction over block-sized register buffers, so a chain
 * of k ops makes one pass over memory and allocates no intermediate tensor.
 * Unit-stride leaves of the register type are read in place, and the last
 * instruction writes straight into a unit-stride output.
 *
 * Contracts: npt_build_prog is called under the evaluation lock; it
 * evaluates inputs that are not fused (shared, broadcast to a bigger shape,
 * or over budget) before returning. npt_run_prog writes `out` (any strides,
 * shape equal to the program's) and reports integer ** negative as
 * NPT_E_VALUE.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

enum { I_ROUND_F16 = NPT_EW_COPY + 1, I_ROUND_BF16 };

#define MAXREG (NPT_PROG_MAX_LEAVES + NPT_PROG_MAX_INSTR)
#define MAXMAP 256

typedef struct {
	npt_tensor_t *t;
	int reg;
} ent_t;

typedef struct {
	npt_prog_t *p;
	npt_tensor_t *root;
	uint64_t epoch;
	int64_t root_numel;
	int claimed_instr, claimed_leaves; /* worst case of the nodes fused so far */
	int nmap;
	ent_t map[MAXMAP];
	npt_dtype_t dt[MAXREG]; /* logical dtype per register */
} builder_t;

static ent_t *find(builder_t *b, npt_tensor_t *t, int add)
{
	for (int i = 0; i < b->nmap; i++)
		if (b->map[i].t == t)
			return &b->map[i];
	if (!add || b->nmap == MAXMAP)
		return NULL;
	ent_t *e = &b->map[b->nmap++];

	e->t = t;
	e->reg = -1;
	return e;
}

static int is_ew_lazy(const npt_tensor_t *t)
{
	return t->node && t->node->kind == NPT_NODE_EW;
}

/*
 * A lazy elementwise input is fused (recomputed inside this pass) unless it is
 * broadcast to a bigger shape (then it is materialised once, AUTO mode) or
 * the program is full. Handles held elsewhere do not prevent fusion: a lazy
 * tensor's value is a pure function of its inputs (the write barrier keeps
 * them unchanged), so whoever evaluates it later recomputes it; evaluate a
 * shared intermediate explicitly to compute it only once.
 */
static int fusible(builder_t *b, npt_tensor_t *t)
{
	if (t == b->root)
		return 1;
	if (!is_ew_lazy(t))
		return 0;
	if (npt_tensor_numel(t) != b->root_numel && npt_cfg_expand_mode() != NPT_EXPAND_FUSED)
		return 0; /* broadcast intermediate: materialise, do not recompute */
	/* room for this node's worst case: 3 leaves, 3 casts + op + round */
	return b->claimed_leaves + 3 <= NPT_PROG_MAX_LEAVES &&
	       b->claimed_instr + 6 <= NPT_PROG_MAX_INSTR;
}

static int new_reg(builder_t *b, npt_dtype_t logical)
{
	npt_prog_t *p = b->p;
	int r = p->nreg++;

	p->reg_rt[r] = npt_rt(logical);
	b->dt[r] = logical;
	return r;
}

static int instr(builder_t *b, int op, npt_dtype_t logical, npt_dtype_t rt, int a, int x, int c)
{
	npt_prog_t *p = b->p;
	npt_instr_t *in = &p->ins[p->ninstr++];
	int r = new_reg(b, logical);

	p->reg_rt[r] = rt;
	in->op = (unsigned char)op;
	in->rt = (unsigned char)rt;
	in->dst = (short)r;
	in->a = (short)a;
	in->b = (short)x;
	in->c = (short)c;
	return r;
}

static int exact_in_half(npt_dtype_t from)
{
	return from == NPT_BOOL || from == NPT_I8 || from == NPT_U8;
}

static int cast_to(builder_t *b, int reg, npt_dtype_t to)
{
	npt_dtype_t from = b->dt[reg];

	if (from == to)
		return reg;
	if (npt_rt(from) != npt_rt(to))
		reg = instr(b, NPT_EW_CAST, to, npt_rt(to), reg, -1, -1);
	if ((to == NPT_F16 || to == NPT_BF16) && !exact_in_half(from))
		reg = instr(b, to == NPT_F16 ? I_ROUND_F16 : I_ROUND_BF16, to, NPT_F32, reg, -1, -1);
	b->dt[reg] = to;
	return reg;
}

static int round_result(builder_t *b, int reg, npt_dtype_t logical)
{
	if (logical == NPT_F16 || logical == NPT_BF16)
		reg = instr(b, logical == NPT_F16 ? I_ROUND_F16 : I_ROUND_BF16, logical, NPT_F32, reg,
			    -1, -1);
	b->dt[reg] = logical;
	return reg;
}

static npt_status_t materialize_broadcast_leaf(builder_t *b, npt_tensor_t **leafp)
{
	npt_tensor_t *l = *leafp, *v = NULL, *c = NULL;
	npt_tensor_t *root = b->root;
	npt_status_t s;

	if (l->ndim == root->ndim && !memcmp(l->shape, root->shape, l->ndim * sizeof(int64_t)))
		return NPT_OK;
	if ((s = npt_tensor_broadcast_to(l, root->ndim, root->shape, &v)))
		return s;
	s = npt_tensor_contiguous(v, &c);
	npt_tensor_free(v);
	if (s)
		return s;
	if ((s = npt_eval_locked(c))) {
		npt_tensor_free(c);
		return s;
	}
	npt_note_materialize(npt_op_name(root->node->op), l->ndim, l->shape, root->ndim,
			     root->shape, (size_t)npt_tensor_numel(c) * npt_dtype_size(c->dtype),
			     "expansion mode MATERIALIZE");
	*leafp = c; /* owned by the builder's caller through the extra list */
	return NPT_OK;
}

static npt_status_t emit(builder_t *b, npt_tensor_t *t, int excl, int *out);

/* excl: every holder of t is a node that dies with this evaluation's root */
static npt_status_t emit_leaf(builder_t *b, npt_tensor_t *t, ent_t *e, int excl, int *out)
{
	npt_prog_t *p = b->p;
	npt_status_t s;

	if ((s = npt_eval_locked(t)))
		return s;
	if (p->nleaf == NPT_PROG_MAX_LEAVES)
		return npt_fail(NPT_E_INVAL, "%s: too many distinct inputs in one fused chain "
				"(internal limit %d)", npt_op_name(b->root->node->op),
				NPT_PROG_MAX_LEAVES);
	npt_tensor_t *leaf = t;

	if (npt_cfg_expand_mode() == NPT_EXPAND_MATERIALIZE) {
		if ((s = materialize_broadcast_leaf(b, &leaf)))
			return s;
	}
	if (leaf == t)
		npt_tensor_retain(leaf);
	int r = new_reg(b, t->dtype);

	p->leaf_dead[p->nleaf] = excl && leaf == t && atomic_load(&t->refs) == 2;
	p->leaf[p->nleaf] = leaf; /* reference released by npt_prog_release */
	p->leaf_reg[p->nleaf] = (short)r;
	p->leaf_rt[p->nleaf] = npt_rt(t->dtype);
	p->nleaf++;
	if (e)
		e->reg = r;
	*out = r;
	return NPT_OK;
}

static npt_status_t emit(builder_t *b, npt_tensor_t *t, int excl, int *out)
{
	ent_t *e = t == b->root ? NULL : find(b, t, 1);
	npt_status_t s;

	if (e && e->reg >= 0) {
		*out = e->reg;
		return NPT_OK;
	}
	if (!fusible(b, t))
		return emit_leaf(b, t, e, excl, out);
	t->mark = b->epoch;
	b->claimed_leaves += 3;
	b->claimed_instr += 6;
	npt_node_t *n = t->node;
	int r[3] = { -1, -1, -1 }, reg;

	for (int i = 0; i < n->nin; i++) {
		npt_tensor_t *in = n->in[i];

		if ((s = emit(b, in, excl && atomic_load(&in->refs) == 1, &r[i])))
			return s;
	}
	npt_dtype_t c, res;

	if (n->op <= NPT_OP_GE) {
		if ((s = npt_binary_types(n->op, b->dt[r[0]], b->dt[r[1]], &c, &res)))
			return s;
		int x = cast_to(b, r[0], c), y = cast_to(b, r[1], c);
		npt_dtype_t ort = res == NPT_BOOL ? NPT_BOOL : npt_rt(c);

		if (n->op == NPT_OP_POW && !npt_dtype_is_float(c))
			b->p->has_int_pow = 1;
		reg = instr(b, n->op, res, ort, x, y, -1);
		reg = round_result(b, reg, res);
	} else if (n->op <= NPT_OP_ERF) {
		if ((s = npt_unary_types(n->op, b->dt[r[0]], &c, &res)))
			return s;
		int x = cast_to(b, r[0], c);

		reg = instr(b, n->op, res, npt_rt(c), x, -1, -1);
		reg = round_result(b, reg, res);
	} else if (n->op == NPT_OP_WHERE) {
		int cr = cast_to(b, r[0], NPT_BOOL);
		int x = cast_to(b, r[1], t->dtype), y = cast_to(b, r[2], t->dtype);

		reg = instr(b, NPT_OP_WHERE, t->dtype, npt_rt(t->dtype), cr, x, y);
	} else if (n->op == NPT_EW_CAST) {
		reg = cast_to(b, r[0], t->dtype);
	} else { /* copy */
		reg = r[0];
	}
	if (e)
		e->reg = reg;
	*out = reg;
	return NPT_OK;
}

/* buffer slots: one per leaf, temporaries recycled after their last use */
static void assign_slots(npt_prog_t *p)
{
	int last[MAXREG], free_slots[MAXREG], nfree = 0;

	for (int r = 0; r < p->nreg; r++)
		last[r] = -1;
	for (int i = 0; i < p->ninstr; i++) {
		const npt_instr_t *in = &p->ins[i];

		if (in->a >= 0) last[in->a] = i;
		if (in->b >= 0) last[in->b] = i;
		if (in->c >= 0) last[in->c] = i;
	}
	last[p->out_reg] = p->ninstr;
	int nslot = 0;

	for (int k = 0; k < p->nleaf; k++)
		p->slot[p->leaf_reg[k]] = (short)nslot++;
	for (int i = 0; i < p->ninstr; i++) {
		const npt_instr_t *in = &p->ins[i];

		p->slot[in->dst] = (short)(nfree ? free_slots[--nfree] : nslot++);
		short ops[3] = { in->a, in->b, in->c };

		for (int k = 0; k < 3; k++) {
			int r = ops[k];
			int leaf = 0;

			if (r < 0 || last[r] != i)
				continue;
			for (int j = 0; j < p->nleaf; j++)
				leaf |= p->leaf_reg[j] == r;
			if (!leaf && (k == 0 || r != ops[0]) && (k < 2 || r != ops[1])) {
				free_slots[nfree++] = p->slot[r];
				last[r] = -2;
			}
		}
	}
	p->nslot = nslot ? nslot : 1;
	int blk = (192 << 10) / (8 * p->nslot);

	blk &= ~255;
	if (blk < 1024)
		blk = 1024;
	if (blk > 16384)
		blk = 16384;
	p->block = blk;
}

npt_status_t npt_build_prog(npt_tensor_t *root, npt_prog_t *p, uint64_t epoch)
{
	builder_t *b = calloc(1, sizeof(*b));
	npt_status_t s;
	int reg;

	if (!b)
		return npt_fail(NPT_E_NOMEM, "out of memory compiling a fused chain");
	memset(p, 0, offsetof(npt_prog_t, ins));
	b->p = p;
	b->root = root;
	b->epoch = epoch;
	b->root_numel = npt_tensor_numel(root);
	s = emit(b, root, 1, &reg);
	if (!s) {
		p->out_reg = reg;
		p->out_dtype = b->dt[reg];
		assign_slots(p);
	}
	free(b);
	return s;
}

void npt_prog_release(npt_prog_t *p)
{
	for (int k = 0; k < p->nleaf; k++)
		npt_tensor_free(p->leaf[k]);
	p->nleaf = 0;
}

void npt_prog_single(npt_prog_t *p, npt_tensor_t *t)
{
	memset(p, 0, offsetof(npt_prog_t, ins));
	p->nleaf = 1;
	p->nreg = 1;
	p->leaf[0] = npt_tensor_retain(t);
	p->leaf_reg[0] = 0;
	p->leaf_rt[0] = npt_rt(t->dtype);
	p->reg_rt[0] = npt_rt(t->dtype);
	p->out_reg = 0;
	p->out_dtype = t->dtype;
	p->nslot = 1;
	p->block = 4096;
}

void npt_prog_space(const npt_prog_t *p, int ndim, const int64_t *shape, npt_space_t *sp)
{
	sp->ndim = ndim;
	memcpy(sp->shape, shape, ndim * sizeof(int64_t));
	sp->nop = p->nleaf;
	for (int k = 0; k < p->nleaf; k++)
		npt_broadcast_strides(p->leaf[k], ndim, shape, sp->strides[k]);
}

/* ---- block execution ---- */

struct npt_block_ctx {
	char *mem;
	size_t cap;
};

static _Thread_local struct npt_block_ctx tls_ctx;

npt_block_ctx_t *npt_block_ctx_get(const npt_prog_t *p)
{
	size_t need = (size_t)p->nslot * p->block * 8 + 64;
	struct npt_block_ctx *c = &tls_ctx;

	if (c->cap < need) {
		free(c->mem);
		c->mem = aligned_alloc(64, (need + 63) & ~(size_t)63);
		c->cap = c->mem ? need : 0;
	}
	return c->mem ? c : NULL;
}

void npt_block_ctx_release(void)
{
	free(tls_ctx.mem);
	tls_ctx.mem = NULL;
	tls_ctx.cap = 0;
}

const void *npt_block_run(npt_block_ctx_t *bc, const npt_prog_t *p, int64_t n, char *const *ptr,
			  const int64_t *st, void *direct, int nt, int *scalar)
{
	const void *val[MAXREG];
	char sc[MAXREG];
	const size_t slot_bytes = (size_t)p->block * 8;

#define SLOT(r) (bc->mem + (size_t)p->slot[r] * slot_bytes)
	for (int k = 0; k < p->nleaf; k++) {
		int r = p->leaf_reg[k];
		npt_dtype_t dt = p->leaf[k]->dtype, rt = p->leaf_rt[k];

		if (st[k] == 0) {
			npt_conv(dt, rt)(1, SLOT(r), 1, ptr[k], 0);
			val[r] = SLOT(r);
			sc[r] = 1;
		} else if (st[k] == 1 && dt == rt) {
			val[r] = ptr[k];
			sc[r] = 0;
		} else {
			npt_conv(dt, rt)(n, SLOT(r), 1, ptr[k], st[k]);
			val[r] = SLOT(r);
			sc[r] = 0;
		}
	}
	for (int i = 0; i < p->ninstr; i++) {
		const npt_instr_t *in = &p->ins[i];
		int allsc = sc[in->a] && (in->b < 0 || sc[in->b]) && (in->c < 0 || sc[in->c]);
		int64_t nn = allsc ? 1 : n;
		int last = direct && i == p->ninstr - 1 && !allsc;
		void *dst = last && !nt ? direct : SLOT(in->dst);

		if (in->op <= NPT_OP_GE) {
			int v = sc[in->a] ? 2 : sc[in->b] ? 1 : 0;

			if (allsc)
				v = 0;
			if (last && nt && in->rt == NPT_F32 &&
			    npt_stream_binary_f32(in->op, v, nn, direct, val[in->a], val[in->b])) {
				val[in->dst] = direct;
				sc[in->dst] = 0;
				continue;
			}
			if (in->op == NPT_OP_POW && p->has_int_pow &&
			    npt_any_negative(p->reg_rt[in->b], sc[in->b] ? 1 : nn, val[in->b]))
				return NULL;
			npt_kernel2(in->op, p->reg_rt[in->a], v)(nn, dst, val[in->a], val[in->b]);
		} else if (in->op <= NPT_OP_ERF) {
			npt_kernel1(in->op, in->rt)(nn, dst, val[in->a]);
		} else if (in->op == NPT_OP_WHERE) {
			npt_kernel_where(in->rt)(nn, dst, val[in->a], allsc ? 0 : sc[in->a],
						 val[in->b], allsc ? 0 : sc[in->b], val[in->c],
						 allsc ? 0 : sc[in->c]);
		} else if (in->op == NPT_EW_CAST) {
			npt_conv(p->reg_rt[in->a], in->rt)(nn, dst, 1, val[in->a], 1);
		} else if (in->op == I_ROUND_F16) {
			npt_round_f16(nn, dst, val[in->a]);
		} else {
			npt_round_bf16(nn, dst, val[in->a]);
		}
		val[in->dst] = dst;
		sc[in->dst] = (char)allsc;
	}
#undef SLOT
	*scalar = sc[p->out_reg];
	return val[p->out_reg];
}

npt_status_t npt_value_error(void)
{
	return npt_fail(NPT_E_VALUE, "power: integers to negative integer powers are not "
			"allowed (as NumPy's ValueError); use a floating-point base or "
			"non-negative exponents");
}

/* ---- the elementwise driver ---- */

typedef struct {
	const npt_prog_t *p;
	npt_space_t sp;     /* operand 0 = output, 1.. = leaves */
	char *base[NPT_MAX_OPERANDS];
	size_t isz[NPT_MAX_OPERANDS];
	npt_dtype_t out_dt;
	int64_t inner, nblk, blk;
	int direct_ok;
	int stream;         /* big unit-stride output: block in L1, then streaming stores */
	atomic_int failed;
} ew_job_t;

static void ew_task(void *arg, int64_t begin, int64_t end, int tid)
{
	ew_job_t *j = arg;
	const npt_prog_t *p = j->p;
	const npt_space_t *sp = &j->sp;
	int nd = sp->ndim, nop = sp->nop;
	npt_block_ctx_t *bc = npt_block_ctx_get(p);
	char *rowp[NPT_MAX_OPERANDS], *ptr[NPT_MAX_OPERANDS];
	int64_t st[NPT_MAX_OPERANDS];
	int64_t cur = -1;

	(void)tid;
	if (!bc) {
		atomic_store(&j->failed, 2);
		return;
	}
	for (int o = 0; o < nop; o++)
		st[o] = sp->strides[o][nd - 1];
	for (int64_t it = begin; it < end; it++) {
		int64_t o = it / j->nblk, b = it % j->nblk;

		if (o != cur) {
			int64_t rem = o;

			for (int k = 0; k < nop; k++)
				rowp[k] = j->base[k];
			for (int d = nd - 2; d >= 0; d--) {
				int64_t idx = rem % sp->shape[d];

				rem /= sp->shape[d];
				for (int k = 0; k < nop; k++)
					rowp[k] += idx * sp->strides[k][d] * (int64_t)j->isz[k];
			}
			cur = o;
		}
		int64_t start = b * j->blk, n = j->inner - start;

		if (n > j->blk)
			n = j->blk;
		for (int k = 0; k < nop; k++)
			ptr[k] = rowp[k] + start * st[k] * (int64_t)j->isz[k];
		int scalar;
		const void *v = npt_block_run(bc, p, n, ptr + 1, st + 1,
					      j->direct_ok || j->stream ? ptr[0] : NULL, j->stream,
					      &scalar);

		if (!v) {
			atomic_store(&j->failed, 1);
			return;
		}
		if (v == ptr[0])
			continue;
		if (j->stream && !scalar && p->reg_rt[p->out_reg] == j->out_dt)
			npt_stream_store(ptr[0], v, (size_t)n * j->isz[0]);
		else
			npt_conv(p->reg_rt[p->out_reg], j->out_dt)(n, ptr[0], st[0], v,
								    scalar ? 0 : 1);
	}
	if (j->stream)
		npt_stream_fence();
}

npt_status_t npt_run_prog(const npt_prog_t *p, const char *opname, int ndim, const int64_t *shape,
			  npt_tensor_t *out)
{
	ew_job_t *j = calloc(1, sizeof(*j));

	if (!j)
		return npt_fail(NPT_E_NOMEM, "%s: out of memory", opname);
	if (npt_numel(ndim, shape) == 0) {
		free(j);
		return NPT_OK;
	}
	j->p = p;
	j->sp.ndim = ndim;
	memcpy(j->sp.shape, shape, ndim * sizeof(int64_t));
	j->sp.nop = p->nleaf + 1;
	memcpy(j->sp.strides[0], out->strides, ndim * sizeof(int64_t));
	for (int k = 0; k < p->nleaf; k++)
		npt_broadcast_strides(p->leaf[k], ndim, shape, j->sp.strides[k + 1]);
	npt_space_simplify(&j->sp, 0);
	j->base[0] = npt_tensor_ptr(out);
	j->isz[0] = npt_dtype_size(out->dtype);
	for (int k = 0; k < p->nleaf; k++) {
		j->base[k + 1] = npt_tensor_ptr(p->leaf[k]);
		j->isz[k + 1] = npt_dtype_size(p->leaf[k]->dtype);
	}
	j->out_dt = out->dtype;
	j->inner = j->sp.shape[j->sp.ndim - 1];
	j->direct_ok = j->sp.strides[0][j->sp.ndim - 1] == 1 &&
		       out->dtype == p->reg_rt[p->out_reg] && p->ninstr > 0;
	if (j->direct_ok && (size_t)npt_numel(ndim, shape) * j->isz[0] >= NPT_STREAM_MIN_BYTES) {
		j->direct_ok = 0; /* the last op writes L1; streaming stores copy it out */
		j->stream = 1;
	}
	/* streaming: keep the block that is copied out small enough to stay in L1 */
	int64_t maxblk = j->stream && p->block > 2048 ? 2048 : p->block;

	j->nblk = (j->inner + maxblk - 1) / maxblk;
	/* equal blocks per row (multiples of 64 elements), at most the slot size */
	j->blk = ((j->inner + j->nblk - 1) / j->nblk + 63) & ~(int64_t)63;
	if (j->blk > maxblk)
		j->blk = maxblk;
	j->nblk = (j->inner + j->blk - 1) / j->blk;
	int64_t items = npt_numel(j->sp.ndim, j->sp.shape) / j->inner * j->nblk;
	int64_t per_item = j->inner < j->blk ? j->inner : j->blk;
	int64_t grain = (64 * 1024 + per_item - 1) / per_item;

	npt_parallel_for(items, grain, ew_task, j);
	int failed = atomic_load(&j->failed);

	free(j);
	if (failed == 1)
		return npt_value_error();
	if (failed)
		return npt_fail(NPT_E_NOMEM, "%s: out of memory for block buffers", opname);
	return NPT_OK;
}
