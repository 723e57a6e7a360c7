/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * isa.c - the instruction-set cap of the hand-written vector kernels (the
 * decode-step products of gemv.c and q4.c, the register tiles of
 * backend/tiles.c): each picks its code from the CPU's features at run
 * time, never above the level $NPT_KERNEL_ISA allows, so that every kernel
 * can be tested on a CPU that would pick a faster one.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

static atomic_int cap = -1;

int npt_isa_cap(void)
{
	int c = atomic_load_explicit(&cap, memory_order_relaxed);

	if (c < 0) {
		const char *e = getenv("NPT_KERNEL_ISA");

		c = !e || !*e ? NPT_ISA_AVX512 : !strcmp(e, "c") ? NPT_ISA_C :
		    !strcmp(e, "avx2") ? NPT_ISA_AVX2 : NPT_ISA_AVX512;
		atomic_store_explicit(&cap, c, memory_order_relaxed);
	}
	return c;
}

/* one feature name as __builtin_cpu_supports takes it (it wants a literal) */
static int supports(const char *f, size_t len)
{
#define F(name)                                                                 \
	if (len == sizeof(name) - 1 && !strncmp(f, name, len))                  \
		return __builtin_cpu_supports(name);
	F("avx2") F("fma") F("f16c") F("avx512f") F("avx512bw") F("avx512vl")
	F("avx512vnni") F("avx512bf16") F("avx512vbmi")
#undef F
	return 0;
}

int npt_isa_has(int level, const char *features)
{
	if (npt_isa_cap() < level)
		return 0;
	__builtin_cpu_init();
	while (*features) {
		size_t len = strcspn(features, ",");

		if (!supports(features, len))
			return 0;
		features += len + (features[len] == ',');
	}
	return 1;
}
