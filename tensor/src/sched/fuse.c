/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * fuse.c - the fusion planner: a maximal chain of lazy elementwise nodes
 * compiled into one register program (npt_prog_t, run by kernels/ewise.c).
 *
 * Leaves are the chain's inputs that are not fused (materialised tensors,
 * other kinds of nodes, shared broadcast intermediates): read through their
 * broadcast strides (stride 0 = the FUSED expansion: a bias is never
 * copied). Instructions are typed kernel calls with explicit casts (NumPy
 * promotion) and f16/bf16 rounding after every op. Registers get buffer
 * slots, temporaries recycled after their last use, and the block length
 * is sized so all slots stay in L1/L2.
 *
 * Contracts: called under the evaluation lock; it evaluates nothing: the
 * scheduler materialises the leaves of a planned program (in leaf order)
 * before running it. Fused nodes are marked with the plan's epoch.
 */
#include "sched.h"

#include <stdlib.h>
#include <string.h>

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
		reg = instr(b, to == NPT_F16 ? NPT_EW_ROUND_F16 : NPT_EW_ROUND_BF16, to, NPT_F32, reg, -1, -1);
	b->dt[reg] = to;
	return reg;
}

static int round_result(builder_t *b, int reg, npt_dtype_t logical)
{
	if (logical == NPT_F16 || logical == NPT_BF16)
		reg = instr(b, logical == NPT_F16 ? NPT_EW_ROUND_F16 : NPT_EW_ROUND_BF16, logical, NPT_F32, reg,
			    -1, -1);
	b->dt[reg] = logical;
	return reg;
}

static npt_status_t emit(builder_t *b, npt_tensor_t *t, int excl, int *out);

/* t is read as it is (the scheduler materialises it before the program runs);
 * excl: every holder of t is a node that dies with this evaluation's root */
static npt_status_t emit_leaf(builder_t *b, npt_tensor_t *t, ent_t *e, int excl, int *out)
{
	npt_prog_t *p = b->p;

	if (p->nleaf == NPT_PROG_MAX_LEAVES)
		return npt_fail(NPT_E_INVAL, "%s: too many distinct inputs in one fused chain "
				"(internal limit %d)", npt_op_name(b->root->node->op),
				NPT_PROG_MAX_LEAVES);
	int r = new_reg(b, t->dtype);

	p->leaf_excl[p->nleaf] = (char)excl;
	p->leaf[p->nleaf] = npt_tensor_retain(t); /* released by npt_prog_release */
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

npt_status_t npt_fuse_plan(npt_tensor_t *root, npt_prog_t *p, uint64_t epoch)
{
	builder_t *b;
	npt_status_t s;
	int reg;

	memset(p, 0, offsetof(npt_prog_t, ins));
	if (!(b = calloc(1, sizeof(*b))))
		return npt_fail(NPT_E_NOMEM, "out of memory compiling a fused chain");
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
