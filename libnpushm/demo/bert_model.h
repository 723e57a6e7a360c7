/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * bert_model.h - write the demo's BERT-base-shaped safetensors file.
 */
#ifndef NPUSHM_BERT_MODEL_H
#define NPUSHM_BERT_MODEL_H

#include <stdint.h>

#define BERT_LAYERS 12
#define BERT_HIDDEN 768
#define BERT_HEADS 12
#define BERT_FFN 3072
#define BERT_VOCAB 30522
#define BERT_POSITIONS 512
#define BERT_SEED 42

/*
 * Write the model (F32, ~438 MB, 199 tensors, values from a fixed-seed
 * generator: identical bytes on every run) to @path atomically (a temporary
 * file renamed into place). Returns 0 or an errno; *bytes gets the size.
 */
int bert_model_write(const char *path, uint64_t *bytes);
/* Size in bytes the file will have. */
uint64_t bert_model_size(void);

#endif
