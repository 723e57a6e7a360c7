/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * gen_model.c - npushm-bert-gen: write a deterministic BERT-shaped
 * safetensors file for tests, the demo and the benchmark.
 *
 *   npushm-bert-gen [--layers L] [--hidden H] [--heads N] [--ffn F] [--vocab V]
 *                   [--positions P] [--type-vocab T] [--seed S] OUT.safetensors
 *
 * Defaults are bert-base-uncased's sizes (12 layers, hidden 768, 12 heads,
 * FFN 3072, vocabulary 30522, 512 positions, 2 token types). Tensor names
 * and shapes are Hugging Face's BertModel's; F32 values come from
 * splitmix64 seeded with S: weights ~U(-0.05, 0.05), LayerNorm gains
 * 1 + U(-0.1, 0.1), biases ~U(-0.01, 0.01). The same arguments give the
 * same bytes on every machine. __metadata__ records num_attention_heads,
 * layer_norm_eps and the seed. --prefix prepends a string to every name (as
 * BertFor* checkpoints' "bert."), --no-pooler leaves the pooler out. The file is written to a temporary name and
 * renamed into place.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "splitmix64.h"

struct spec {
	char name[144];
	int ndim;
	uint64_t shape[2];
	int kind; /* 0 weight, 1 bias, 2 LayerNorm gain */
};

struct cfg {
	long layers, hidden, heads, ffn, vocab, positions, types, seed;
	const char *prefix;	/* prepended to every name ("bert.") */
	int pooler;
};

static const char *prefix = "";

static int add(struct spec *s, int n, int kind, uint64_t d0, uint64_t d1, const char *fmt, long l,
	       const char *part)
{
	char name[112];

	if (l >= 0)
		snprintf(name, sizeof(name), fmt, l, part);
	else
		snprintf(name, sizeof(name), "%s", fmt);
	snprintf(s[n].name, sizeof(s[n].name), "%s%s", prefix, name);
	s[n].kind = kind;
	s[n].ndim = d1 ? 2 : 1;
	s[n].shape[0] = d0;
	s[n].shape[1] = d1;
	return n + 1;
}

static int specs(const struct cfg *c, struct spec *s)
{
	static const char *const qkv[] = { "query", "key", "value" };
	uint64_t H = c->hidden, F = c->ffn;
	int n = 0;

	n = add(s, n, 0, c->vocab, H, "embeddings.word_embeddings.weight", -1, NULL);
	n = add(s, n, 0, c->positions, H, "embeddings.position_embeddings.weight", -1, NULL);
	n = add(s, n, 0, c->types, H, "embeddings.token_type_embeddings.weight", -1, NULL);
	n = add(s, n, 2, H, 0, "embeddings.LayerNorm.weight", -1, NULL);
	n = add(s, n, 1, H, 0, "embeddings.LayerNorm.bias", -1, NULL);
	for (long l = 0; l < c->layers; l++) {
		for (int j = 0; j < 3; j++) {
			n = add(s, n, 0, H, H, "encoder.layer.%ld.attention.self.%s.weight", l, qkv[j]);
			n = add(s, n, 1, H, 0, "encoder.layer.%ld.attention.self.%s.bias", l, qkv[j]);
		}
		n = add(s, n, 0, H, H, "encoder.layer.%ld.attention.output.%s.weight", l, "dense");
		n = add(s, n, 1, H, 0, "encoder.layer.%ld.attention.output.%s.bias", l, "dense");
		n = add(s, n, 2, H, 0, "encoder.layer.%ld.attention.output.%s.weight", l, "LayerNorm");
		n = add(s, n, 1, H, 0, "encoder.layer.%ld.attention.output.%s.bias", l, "LayerNorm");
		n = add(s, n, 0, F, H, "encoder.layer.%ld.intermediate.%s.weight", l, "dense");
		n = add(s, n, 1, F, 0, "encoder.layer.%ld.intermediate.%s.bias", l, "dense");
		n = add(s, n, 0, H, F, "encoder.layer.%ld.output.%s.weight", l, "dense");
		n = add(s, n, 1, H, 0, "encoder.layer.%ld.output.%s.bias", l, "dense");
		n = add(s, n, 2, H, 0, "encoder.layer.%ld.output.%s.weight", l, "LayerNorm");
		n = add(s, n, 1, H, 0, "encoder.layer.%ld.output.%s.bias", l, "LayerNorm");
	}
	if (c->pooler) {
		n = add(s, n, 0, H, H, "pooler.dense.weight", -1, NULL);
		n = add(s, n, 1, H, 0, "pooler.dense.bias", -1, NULL);
	}
	return n;
}

static uint64_t count(const struct spec *s)
{
	return s->ndim == 1 ? s->shape[0] : s->shape[0] * s->shape[1];
}

/* The JSON header padded with spaces to a multiple of 8; caller frees. */
static char *header(const struct cfg *c, const struct spec *s, int n, size_t *len)
{
	size_t cap = 256 + (size_t)n * 200, o = 0;
	char *h = malloc(cap);
	uint64_t off = 0;

	if (!h)
		return NULL;
	o += (size_t)snprintf(h + o, cap - o,
			      "{\"__metadata__\":{\"format\":\"pt\",\"model\":\"bert\",\"num_attention_heads\":\"%ld\","
			      "\"layer_norm_eps\":\"1e-12\",\"seed\":\"%ld\"}", c->heads, c->seed);
	for (int i = 0; i < n; i++) {
		uint64_t b = count(&s[i]) * 4;
		char shape[64];

		if (s[i].ndim == 1)
			snprintf(shape, sizeof(shape), "%llu", (unsigned long long)s[i].shape[0]);
		else
			snprintf(shape, sizeof(shape), "%llu,%llu", (unsigned long long)s[i].shape[0],
				 (unsigned long long)s[i].shape[1]);
		o += (size_t)snprintf(h + o, cap - o,
				      ",\"%s\":{\"dtype\":\"F32\",\"shape\":[%s],\"data_offsets\":[%llu,%llu]}",
				      s[i].name, shape, (unsigned long long)off, (unsigned long long)(off + b));
		off += b;
	}
	o += (size_t)snprintf(h + o, cap - o, "}");
	while (o % 8)
		h[o++] = ' ';
	h[o] = '\0';
	*len = o;
	return h;
}

static int write_model(const struct cfg *c, const char *path)
{
	struct spec *s = calloc((size_t)c->layers * 16 + 8, sizeof(*s));
	float *buf = malloc((size_t)1 << 20);
	uint64_t rng = (uint64_t)c->seed, hl;
	char tmp[4096];
	size_t len = 0;
	char *h = NULL;
	int n, err = 0;
	FILE *f;

	if (!s || !buf) {
		err = ENOMEM;
		goto out;
	}
	prefix = c->prefix;
	n = specs(c, s);
	h = header(c, s, n, &len);
	if (!h) {
		err = ENOMEM;
		goto out;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	f = fopen(tmp, "wb");
	if (!f) {
		err = errno;
		goto out;
	}
	hl = len;
	if (fwrite(&hl, 8, 1, f) != 1 || fwrite(h, 1, len, f) != len)
		err = errno ? errno : EIO;
	for (int i = 0; i < n && !err; i++) {
		uint64_t left = count(&s[i]);

		while (left && !err) {
			size_t k = left < (1 << 18) ? (size_t)left : (1 << 18);

			for (size_t j = 0; j < k; j++) {
				/* 24 random bits -> [-1, 1) */
				float u = (float)((int32_t)(splitmix64(&rng) >> 40) - (1 << 23)) /
					  (float)(1 << 23);

				buf[j] = s[i].kind == 0 ? 0.05f * u : s[i].kind == 1 ? 0.01f * u :
					 1.0f + 0.1f * u;
			}
			if (fwrite(buf, 4, k, f) != k)
				err = errno ? errno : EIO;
			left -= k;
		}
	}
	if (fclose(f) && !err)
		err = errno;
	if (!err && rename(tmp, path))
		err = errno;
	if (err)
		unlink(tmp);
out:
	free(s);
	free(buf);
	free(h);
	return err;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: npushm-bert-gen [--layers L] [--hidden H] [--heads N] [--ffn F] [--vocab V]\n"
		   "                       [--positions P] [--type-vocab T] [--seed S] [--prefix bert.]\n"
		   "                       [--no-pooler] OUT.safetensors\n"
		   "Writes a deterministic BERT-shaped F32 safetensors file (default: bert-base sizes).\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "layers", required_argument, NULL, 'l' }, { "hidden", required_argument, NULL, 'H' },
		{ "heads", required_argument, NULL, 'n' }, { "ffn", required_argument, NULL, 'f' },
		{ "vocab", required_argument, NULL, 'v' }, { "positions", required_argument, NULL, 'p' },
		{ "type-vocab", required_argument, NULL, 't' }, { "seed", required_argument, NULL, 's' },
		{ "prefix", required_argument, NULL, 'P' }, { "no-pooler", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' }, { "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct cfg c = { 12, 768, 12, 3072, 30522, 512, 2, 42, "", 1 };
	int o, err;

	while ((o = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		long *dst = NULL;
		char *end;

		switch (o) {
		case 'l': dst = &c.layers; break;
		case 'H': dst = &c.hidden; break;
		case 'n': dst = &c.heads; break;
		case 'f': dst = &c.ffn; break;
		case 'v': dst = &c.vocab; break;
		case 'p': dst = &c.positions; break;
		case 't': dst = &c.types; break;
		case 's': dst = &c.seed; break;
		case 'P':
			if (strlen(optarg) > 16) {
				fprintf(stderr, "npushm-bert-gen: --prefix is at most 16 bytes\n");
				return 2;
			}
			c.prefix = optarg;
			continue;
		case 'N': c.pooler = 0; continue;
		case 'h': usage(stdout); return 0;
		case 'V': printf("npushm-bert-gen (npushm) %s\n", NPUSHM_VERSION); return 0;
		default: usage(stderr); return 2;
		}
		errno = 0;
		*dst = strtol(optarg, &end, 10);
		if (errno || *end || *dst < (o == 's' ? 0 : 1) || *dst > (1L << 24)) {
			fprintf(stderr, "npushm-bert-gen: --%s wants an integer in 1..16777216, got '%s'\n",
				lo[o == 'l' ? 0 : o == 'H' ? 1 : o == 'n' ? 2 : o == 'f' ? 3 : o == 'v' ? 4 :
				   o == 'p' ? 5 : o == 't' ? 6 : 7].name, optarg);
			return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	if (c.hidden % c.heads) {
		fprintf(stderr, "npushm-bert-gen: --hidden %ld does not divide by --heads %ld\n", c.hidden,
			c.heads);
		return 2;
	}
	if (c.layers > 4096) {
		fprintf(stderr, "npushm-bert-gen: --layers must be at most 4096\n");
		return 2;
	}
	err = write_model(&c, argv[optind]);
	if (err) {
		fprintf(stderr, "npushm-bert-gen: cannot write %s: %s\n", argv[optind], strerror(err));
		return 1;
	}
	return 0;
}
