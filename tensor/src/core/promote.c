/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * promote.c - the elementwise ops' names and the dtypes they compute in and
 * return (NumPy's promotion, true division, boolean refusals): asked by the
 * op constructors when a node is built and by the fusion planner when a
 * chain is compiled.
 *
 * Contracts: pure functions of their arguments; errors name the op.
 */
#include "core.h"

static const char *const op_names[NPT_OP_COUNT_] = {
	"add", "subtract", "multiply", "divide", "power", "maximum", "minimum",
	"equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
	"negative", "absolute", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu",
	"gelu", "erf", "where"
};

NPT_API const char *npt_op_name(npt_op_t op)
{
	if (op >= 0 && op < NPT_OP_COUNT_)
		return op_names[op];
	if ((int)op == NPT_EW_CAST)
		return "cast";
	if ((int)op == NPT_EW_COPY)
		return "copy";
	return "invalid-op";
}

const char *npt_reduce_name(int op)
{
	static const char *const n[] = { "sum", "prod", "mean", "max", "min" };

	return (unsigned)op <= NPT_RED_MIN ? n[op] : "reduce";
}

/* dtype the binary op computes in, and its result dtype */
npt_status_t npt_binary_types(int op, npt_dtype_t a, npt_dtype_t b, npt_dtype_t *compute,
			      npt_dtype_t *result)
{
	npt_dtype_t p;
	npt_status_t s = npt_promote_types(a, b, &p);

	if (s)
		return s;
	switch (op) {
	case NPT_OP_SUB:
		if (p == NPT_BOOL)
			return npt_fail(NPT_E_DTYPE, "subtract: boolean subtract is not supported "
					"(as in NumPy); use where/not_equal (logical xor) or cast "
					"to an integer dtype first");
		break;
	case NPT_OP_DIV:
		if (!npt_dtype_is_float(p))
			p = NPT_F64; /* NumPy true_divide: integers divide as float64 */
		break;
	case NPT_OP_POW:
		if (p == NPT_BOOL)
			p = NPT_I8; /* NumPy power('??') uses the int8 loop */
		break;
	default:
		break;
	}
	*compute = p;
	*result = (op >= NPT_OP_EQ && op <= NPT_OP_GE) ? NPT_BOOL : p;
	return NPT_OK;
}

npt_status_t npt_unary_types(int op, npt_dtype_t a, npt_dtype_t *compute, npt_dtype_t *result)
{
	switch (op) {
	case NPT_OP_NEG:
		if (a == NPT_BOOL)
			return npt_fail(NPT_E_DTYPE, "negative: boolean negative is not supported (as "
					"in NumPy); use equal(x, false) (logical not) instead");
		*compute = *result = a;
		return NPT_OK;
	case NPT_OP_RELU:
		if (a == NPT_BOOL)
			return npt_fail(NPT_E_DTYPE, "relu: not defined for bool tensors; cast to a "
					"numeric dtype first");
		/* fall through */
	case NPT_OP_ABS:
		*compute = *result = a;
		return NPT_OK;
	default:
		/* transcendental: integers use NumPy's smallest safe float */
		*compute = *result = npt_float_for(a);
		return NPT_OK;
	}
}
