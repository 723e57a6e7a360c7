/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * config.c - global settings (expansion mode, materialisation threshold,
 * reproducibility mode of reductions) read once from the environment and
 * changeable through the API, plus the report of implicit materialisations.
 *
 * Contracts: settings are atomics, safe to change from any thread; a change
 * affects evaluations that start afterwards.
 */
#include "core.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <limits.h>

static atomic_int expand_mode = -1;
static atomic_llong warn_bytes = -1;
static atomic_int repro_mode = -1;

static void read_env(void)
{
	if (atomic_load_explicit(&expand_mode, memory_order_relaxed) >= 0 &&
	    atomic_load_explicit(&warn_bytes, memory_order_relaxed) >= 0 &&
	    atomic_load_explicit(&repro_mode, memory_order_relaxed) >= 0)
		return;
	const char *e = getenv("NPT_EXPAND_MODE");
	int m = NPT_EXPAND_AUTO;
	long long w = 16ll << 20;

	if (e && *e) {
		if (!strcasecmp(e, "view")) m = NPT_EXPAND_VIEW;
		else if (!strcasecmp(e, "materialize")) m = NPT_EXPAND_MATERIALIZE;
		else if (!strcasecmp(e, "fused")) m = NPT_EXPAND_FUSED;
		else if (strcasecmp(e, "auto"))
			npt_log(NPT_LOG_WARN, "NPT_EXPAND_MODE=%s is not an expansion mode (use 'auto', "
				"'view', 'materialize' or 'fused'); using 'auto'", e);
	}
	e = getenv("NPT_MATERIALIZE_WARN_BYTES");
	if (e && *e)
		w = strtoll(e, NULL, 0);
	e = getenv("NPT_REPRO");
	int r = NPT_REPRO_DEFAULT;

	if (e && *e) {
		if (!strcasecmp(e, "threads"))
			r = NPT_REPRO_THREADS;
		else if (!strcasecmp(e, "independent"))
			r = NPT_REPRO_INDEPENDENT;
		else
			npt_log(NPT_LOG_WARN, "NPT_REPRO=%s is not a reproducibility mode (use "
				"'independent' or 'threads'); using the default", e);
	}
	int expr = -1;
	atomic_compare_exchange_strong(&repro_mode, &expr, r);
	int exp = -1;
	atomic_compare_exchange_strong(&expand_mode, &exp, m);
	long long expw = -1;
	atomic_compare_exchange_strong(&warn_bytes, &expw, w < 0 ? 0 : w);
}

NPT_API void npt_set_expand_mode(npt_expand_mode_t mode)
{
	read_env();
	if (mode >= NPT_EXPAND_AUTO && mode <= NPT_EXPAND_FUSED)
		atomic_store(&expand_mode, mode);
	else
		npt_log(NPT_LOG_WARN, "npt_set_expand_mode: %d is not an npt_expand_mode_t; the "
			"mode stays %d", (int)mode, atomic_load(&expand_mode));
}

NPT_API npt_expand_mode_t npt_get_expand_mode(void)
{
	read_env();
	return atomic_load(&expand_mode);
}

npt_expand_mode_t npt_cfg_expand_mode(void)
{
	return npt_get_expand_mode();
}

NPT_API void npt_set_materialize_threshold(size_t bytes)
{
	read_env();
	atomic_store(&warn_bytes, bytes > (size_t)LLONG_MAX ? LLONG_MAX : (long long)bytes);
}

NPT_API size_t npt_get_materialize_threshold(void)
{
	read_env();
	return (size_t)atomic_load(&warn_bytes);
}

size_t npt_cfg_warn_bytes(void)
{
	return npt_get_materialize_threshold();
}

NPT_API npt_status_t npt_set_repro_mode(npt_repro_mode_t mode)
{
	read_env();
	if (mode != NPT_REPRO_INDEPENDENT && mode != NPT_REPRO_THREADS)
		return npt_fail(NPT_E_INVAL, "set_repro_mode: %d is not a mode; use "
				"NPT_REPRO_INDEPENDENT (%d) or NPT_REPRO_THREADS (%d)", (int)mode,
				NPT_REPRO_INDEPENDENT, NPT_REPRO_THREADS);
	atomic_store(&repro_mode, mode);
	return NPT_OK;
}

NPT_API npt_repro_mode_t npt_get_repro_mode(void)
{
	read_env();
	return atomic_load(&repro_mode);
}

void npt_note_materialize(const char *op, int nf, const int64_t *from, int nt, const int64_t *to,
			  size_t bytes, const char *why)
{
	char a[NPT_SHAPE_STRLEN], b[NPT_SHAPE_STRLEN];

	npt_stats_add_materialized(bytes);
	if (bytes < npt_cfg_warn_bytes())
		return;
	npt_log(NPT_LOG_WARN, "%s: implicit copy of a view of shape %s into a contiguous "
		"tensor of shape %s, %zu bytes (%s); reported because it is at least "
		"%zu bytes (NPT_MATERIALIZE_WARN_BYTES)",
		op, npt_shape_str(a, sizeof(a), nf, from), npt_shape_str(b, sizeof(b), nt, to),
		bytes, why, npt_cfg_warn_bytes());
}
