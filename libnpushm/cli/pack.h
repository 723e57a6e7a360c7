/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * pack.h - the packer of `npushm load --dtype f32` (pack.c, libnptensor's
 * oneDNN layouts), also compiled into npushm-bert for its --dtype.
 */
#ifndef NPUSHM_CLI_PACK_H
#define NPUSHM_CLI_PACK_H

#include <stddef.h>

#include "npushm.h"

/* the tag of --dtype q4's layouts, followed by "/NxK" */
#define CLI_Q4_TAG "npt-q4_0/g32-f16"

/* the packer for @dtype ("f32", "bf16", "bf16x3", "int8" or "q4"; NULL for anything else): 2-D
 * float32 '*.weight' tensors outside the embeddings */
const npushm_packer_t *cli_packer(const char *dtype);
/* "73 onednn-2.6.3/avx512_core" (how many packed layouts @m carries and what
 * made them: their tags up to the second '/'; "mixed" if they differ; then
 * ", packed only" when they replace the plain tensors), "-" if none. Marks
 * @m as read by a caller that understands packed-only tensors. */
const char *cli_layouts_summary(npushm_model_t *m, char *buf, size_t len);
/* after a load with a packer: why no weight was packed (libnptensor's first
 * refusal), or NULL when at least one was or none was asked for */
const char *cli_packer_nothing_packed(void);
/* after a load with --dtype @dtype (NULL: none): say on stderr, as @prog, that nothing was
 * packed and why, when that is so */
void cli_packer_warn_unpacked(const char *prog, const char *dtype);

#endif
