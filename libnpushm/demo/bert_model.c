/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * bert_model.c - a deterministic BERT-base-shaped safetensors file: the
 * tensor names and shapes of Hugging Face's bert-base-uncased (12 layers,
 * hidden 768, 12 heads, FFN 3072, vocabulary 30522, 512 positions), F32,
 * with values from splitmix64 seeded with BERT_SEED: weights ~U(-0.05, 0.05),
 * LayerNorm gains ~1, biases ~U(-0.01, 0.01). Same bytes on every machine.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bert_model.h"

struct spec {
	char name[96];
	int ndim;
	uint64_t shape[2];
	int kind;	/* 0 weight, 1 bias, 2 LayerNorm gain */
};

static int specs(struct spec *s)
{
	int n = 0;

#define ADD(k, d0, d1, nd, ...)                                                       \
	do {                                                                          \
		snprintf(s[n].name, sizeof(s[n].name), __VA_ARGS__);                  \
		s[n].kind = (k);                                                      \
		s[n].ndim = (nd);                                                     \
		s[n].shape[0] = (d0);                                                 \
		s[n].shape[1] = (d1);                                                 \
		n++;                                                                  \
	} while (0)
	ADD(0, BERT_VOCAB, BERT_HIDDEN, 2, "embeddings.word_embeddings.weight");
	ADD(0, BERT_POSITIONS, BERT_HIDDEN, 2, "embeddings.position_embeddings.weight");
	ADD(0, 2, BERT_HIDDEN, 2, "embeddings.token_type_embeddings.weight");
	ADD(2, BERT_HIDDEN, 0, 1, "embeddings.LayerNorm.weight");
	ADD(1, BERT_HIDDEN, 0, 1, "embeddings.LayerNorm.bias");
	for (int l = 0; l < BERT_LAYERS; l++) {
		static const char *const qkv[] = { "query", "key", "value" };

		for (int j = 0; j < 3; j++) {
			ADD(0, BERT_HIDDEN, BERT_HIDDEN, 2, "encoder.layer.%d.attention.self.%s.weight", l, qkv[j]);
			ADD(1, BERT_HIDDEN, 0, 1, "encoder.layer.%d.attention.self.%s.bias", l, qkv[j]);
		}
		ADD(0, BERT_HIDDEN, BERT_HIDDEN, 2, "encoder.layer.%d.attention.output.dense.weight", l);
		ADD(1, BERT_HIDDEN, 0, 1, "encoder.layer.%d.attention.output.dense.bias", l);
		ADD(2, BERT_HIDDEN, 0, 1, "encoder.layer.%d.attention.output.LayerNorm.weight", l);
		ADD(1, BERT_HIDDEN, 0, 1, "encoder.layer.%d.attention.output.LayerNorm.bias", l);
		ADD(0, BERT_FFN, BERT_HIDDEN, 2, "encoder.layer.%d.intermediate.dense.weight", l);
		ADD(1, BERT_FFN, 0, 1, "encoder.layer.%d.intermediate.dense.bias", l);
		ADD(0, BERT_HIDDEN, BERT_FFN, 2, "encoder.layer.%d.output.dense.weight", l);
		ADD(1, BERT_HIDDEN, 0, 1, "encoder.layer.%d.output.dense.bias", l);
		ADD(2, BERT_HIDDEN, 0, 1, "encoder.layer.%d.output.LayerNorm.weight", l);
		ADD(1, BERT_HIDDEN, 0, 1, "encoder.layer.%d.output.LayerNorm.bias", l);
	}
	ADD(0, BERT_HIDDEN, BERT_HIDDEN, 2, "pooler.dense.weight");
	ADD(1, BERT_HIDDEN, 0, 1, "pooler.dense.bias");
#undef ADD
	return n;
}

static uint64_t count(const struct spec *s)
{
	return s->ndim == 1 ? s->shape[0] : s->shape[0] * s->shape[1];
}

/* The header text, padded with spaces to a multiple of 8; caller frees. */
static char *header(const struct spec *s, int n, size_t *len)
{
	size_t cap = 64 * 1024, o = 0;
	char *h = malloc(cap);
	uint64_t off = 0;

	if (!h)
		return NULL;
	o += (size_t)snprintf(h + o, cap - o,
			      "{\"__metadata__\":{\"format\":\"pt\",\"model\":\"bert-base-shaped\",\"heads\":\"%d\",\"seed\":\"%d\"}",
			      BERT_HEADS, BERT_SEED);
	for (int i = 0; i < n; i++) {
		uint64_t b = count(&s[i]) * 4;

		if (s[i].ndim == 1)
			o += (size_t)snprintf(h + o, cap - o, ",\"%s\":{\"dtype\":\"F32\",\"shape\":[%llu],\"data_offsets\":[%llu,%llu]}",
					      s[i].name, (unsigned long long)s[i].shape[0],
					      (unsigned long long)off, (unsigned long long)(off + b));
		else
			o += (size_t)snprintf(h + o, cap - o, ",\"%s\":{\"dtype\":\"F32\",\"shape\":[%llu,%llu],\"data_offsets\":[%llu,%llu]}",
					      s[i].name, (unsigned long long)s[i].shape[0],
					      (unsigned long long)s[i].shape[1], (unsigned long long)off,
					      (unsigned long long)(off + b));
		off += b;
	}
	o += (size_t)snprintf(h + o, cap - o, "}");
	while (o % 8)
		h[o++] = ' ';
	h[o] = '\0';
	*len = o;
	return h;
}

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t bert_model_size(void)
{
	struct spec s[256];
	int n = specs(s);
	size_t len;
	char *h = header(s, n, &len);
	uint64_t total = 8 + len;

	for (int i = 0; i < n; i++)
		total += count(&s[i]) * 4;
	free(h);
	return total;
}

int bert_model_write(const char *path, uint64_t *bytes)
{
	struct spec s[256];
	int n = specs(s), err = 0;
	char tmp[4096];
	uint64_t rng = BERT_SEED, hl, total;
	size_t len;
	float *buf = malloc(1 << 20);
	char *h = header(s, n, &len);
	FILE *f;

	if (!buf || !h) {
		free(buf);
		free(h);
		return ENOMEM;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	f = fopen(tmp, "wb");
	if (!f) {
		err = errno;
		goto out;
	}
	hl = len;
	fwrite(&hl, 8, 1, f);
	fwrite(h, 1, len, f);
	total = 8 + len;
	for (int i = 0; i < n; i++) {
		uint64_t left = count(&s[i]);

		while (left) {
			size_t k = left < (1 << 18) ? (size_t)left : (1 << 18);

			for (size_t j = 0; j < k; j++) {
				/* 24 random bits -> [-1, 1) */
				float u = (float)(int32_t)((splitmix(&rng) >> 40) - (1 << 23)) / (float)(1 << 23);

				buf[j] = s[i].kind == 0 ? 0.05f * u : s[i].kind == 1 ? 0.01f * u : 1.0f + 0.1f * u;
			}
			if (fwrite(buf, 4, k, f) != k) {
				err = errno ? errno : EIO;
				break;
			}
			left -= k;
			total += k * 4;
		}
	}
	if (fclose(f) && !err)
		err = errno;
	if (!err && rename(tmp, path))
		err = errno;
	if (err)
		unlink(tmp);
	else if (bytes)
		*bytes = total;
out:
	free(buf);
	free(h);
	return err;
}
