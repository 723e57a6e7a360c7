/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * decode_isa.h - which instruction set the decode-step products (gemv.c,
 * q4.c) may use: each product picks its kernel from the CPU's features at
 * run time, never above the level returned here, so that every kernel can
 * be tested on a CPU that would pick a faster one.
 */
#ifndef NPT_DECODE_ISA_H
#define NPT_DECODE_ISA_H

#include "internal.h"

enum {
	NPT_ISA_C,		/* portable C */
	NPT_ISA_AVX2,		/* AVX2 with FMA and F16C */
	NPT_ISA_AVX512,		/* AVX-512 (each kernel checks the extensions it needs) */
};

/*
 * The highest level the decode kernels may use: $NPT_DECODE_ISA ("c",
 * "avx2", "avx512"; read once per process) caps it, default no cap.
 * Thread-safe.
 */
NPT_HIDDEN int npt_decode_isa(void);
/* npt_decode_isa() >= @level and the CPU has every feature of @features
 * ("avx512f,avx512bw": names as __builtin_cpu_supports takes them) */
NPT_HIDDEN int npt_decode_has(int level, const char *features);

#endif
