// SPDX-License-Identifier: MIT
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * test_npbert.c - C tests of libnpbert's API (kselftest harness, TAP):
 * arguments and options refused, the configuration derived from the shapes,
 * every batch refusal naming the sequence and position, determinism and
 * padding invariance, the workspace reused across requests (no fresh memory
 * once warm, no implicit copy ever), the weights read in place (the
 * process's private memory grows by far less than the weights while its
 * shared-memory residency grows by them), a model without a pooler, the
 * profile counters, and packed weights (npushm_packer_t with libnptensor's
 * layouts): read in place with the results of the plain weights, a layout
 * from another CPU refused in one line and the plain weights used, and the
 * model's hash covering the packed bytes. Numerical agreement with PyTorch is test_bert.py's job.
 *
 * Models come from $BERT_TEST_DIR (run-tests.sh writes them with
 * npushm-bert-gen): tiny.safetensors (2 layers, hidden 64, 4 heads, FFN 256,
 * vocabulary 100, 32 positions), big.safetensors (2 layers, hidden 512,
 * FFN 2048: 25 MB of dense weights), nopool.safetensors (tiny, no pooler).
 * Each test loads what it needs under a name of its own and removes it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "npbert.h"
#include "nptensor.h"

static const char *model_path(const char *file, char *buf, size_t len)
{
	const char *dir = getenv("BERT_TEST_DIR");

	snprintf(buf, len, "%s/%s", dir ? dir : ".", file);
	return buf;
}

/* load FILE under a unique name (with @packer's layouts, stored with @flags) and attach it; 0 or -1 */
static int load_flags(const char *file, const npushm_packer_t *packer, uint32_t flags, char *name,
		      size_t len, npushm_model_t **m, npushm_load_result_t *res)
{
	static int seq;
	char path[4096];
	npushm_dev_t *dev;
	npushm_load_opts_t lo = { .mode = 0600, .flags = flags, .packer = packer };
	int rc = -1;

	snprintf(name, len, "npbert-test.%d.%d", (int)getpid(), seq++);
	if (npushm_dev_open(NPUSHM_BACKEND_AUTO, &dev))
		return -1;
	if (!npushm_model_load(dev, model_path(file, path, sizeof(path)), name, &lo, res) &&
	    !npushm_model_attach(name, m))
		rc = 0;
	else
		fprintf(stderr, "# load %s: %s\n", path, npushm_last_error());
	npushm_dev_close(dev);
	return rc;
}

static int load_packed(const char *file, const npushm_packer_t *packer, char *name, size_t len,
		       npushm_model_t **m, npushm_load_result_t *res)
{
	return load_flags(file, packer, 0, name, len, m, res);
}

static int load(const char *file, char *name, size_t len, npushm_model_t **m)
{
	return load_packed(file, NULL, name, len, m, NULL);
}

static void unload(const char *name)
{
	npushm_dev_t *dev;

	if (!npushm_dev_open(NPUSHM_BACKEND_AUTO, &dev)) {
		npushm_model_remove(dev, name);
		npushm_dev_close(dev);
	}
}

/* kB values of smaps_rollup keys */
static long smaps(const char *key)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "re");
	char line[256];
	long v = -1;
	size_t k = strlen(key);

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, k) && line[k] == ':')
			v = strtol(line + k + 1, NULL, 10);
	fclose(f);
	return v;
}

FIXTURE(tiny) {
	char name[96];
	npushm_model_t *m;
	npbert_t *bert;
	npbert_config_t c;
};

FIXTURE_SETUP(tiny)
{
	ASSERT_EQ(0, load("tiny.safetensors", self->name, sizeof(self->name), &self->m));
	ASSERT_EQ(NPBERT_OK, npbert_create(self->m, NULL, &self->bert)) {
		TH_LOG("%s", npbert_last_error());
	}
	npbert_get_config(self->bert, &self->c);
}

FIXTURE_TEARDOWN(tiny)
{
	npbert_destroy(self->bert);
	npushm_model_detach(self->m);
	unload(self->name);
}

TEST_F(tiny, config_from_shapes)
{
	ASSERT_EQ(2, self->c.layers);
	ASSERT_EQ(64, self->c.hidden);
	ASSERT_EQ(4, self->c.heads);	/* from __metadata__ num_attention_heads */
	ASSERT_EQ(16, self->c.head_dim);
	ASSERT_EQ(256, self->c.ffn);
	ASSERT_EQ(100, self->c.vocab);
	ASSERT_EQ(32, self->c.positions);
	ASSERT_EQ(2, self->c.type_vocab);
	ASSERT_EQ(1, self->c.has_pooler);
	ASSERT_EQ(0, self->c.tp_rank);
	ASSERT_EQ(1, self->c.tp_size);
	ASSERT_STREQ("", self->c.prefix);
	ASSERT_TRUE(fabs(self->c.layer_norm_eps - 1e-12) < 1e-20);
}

TEST_F(tiny, create_refuses_bad_arguments)
{
	npbert_opts_t o = { 0 };
	npbert_t *b = (npbert_t *)1;

	ASSERT_EQ(NPBERT_ERR_INVALID, npbert_create(self->m, NULL, NULL));
	ASSERT_EQ(NPBERT_ERR_INVALID, npbert_create(NULL, NULL, &b));
	ASSERT_EQ(NULL, b);
	ASSERT_NE(NULL, strstr(npbert_last_error(), "npushm_model_attach"));
	o.flags = 4;
	ASSERT_EQ(NPBERT_ERR_INVALID, npbert_create(self->m, &o, &b));
	ASSERT_NE(NULL, strstr(npbert_last_error(), "flags"));
	o.flags = 0;
	o.reserved[3] = 1;
	ASSERT_EQ(NPBERT_ERR_INVALID, npbert_create(self->m, &o, &b));
	ASSERT_NE(NULL, strstr(npbert_last_error(), "reserved[3]"));
	o.reserved[3] = 0;
	o.heads = -2;
	ASSERT_EQ(NPBERT_ERR_INVALID, npbert_create(self->m, &o, &b));
	o.heads = 3;	/* 64 % 3 != 0 */
	ASSERT_EQ(NPBERT_ERR_INVALID, npbert_create(self->m, &o, &b));
	ASSERT_NE(NULL, strstr(npbert_last_error(), "3 attention heads do not divide the hidden size 64"));
	o.heads = 8;	/* the option wins over __metadata__ */
	o.layer_norm_eps = 1e-5;
	ASSERT_EQ(NPBERT_OK, npbert_create(self->m, &o, &b));
	npbert_config_t c;

	npbert_get_config(b, &c);
	ASSERT_EQ(8, c.heads);
	ASSERT_EQ(8, c.head_dim);
	ASSERT_TRUE(c.layer_norm_eps == 1e-5);
	npbert_destroy(b);
	npbert_destroy(NULL);
	for (int s = NPBERT_OK; s <= NPBERT_ERR_WEIGHTS; s++)
		ASSERT_NE(NULL, npbert_strerror((npbert_status_t)s));
	ASSERT_EQ(NPBERT_ERR_INVALID, npbert_run(NULL, NULL, NULL, NULL));
	ASSERT_EQ(NPBERT_ERR_INVALID, npbert_run(self->bert, NULL, NULL, NULL));
}

struct bad_case {
	const char *what;
	int batch, seq_len, pos, field; /* field: 0 ids, 1 types, 2 mask, 3 NULL ids, 4 zero mask row */
	int64_t value;
	npbert_status_t status;
	const char *msg;
};

TEST_F(tiny, batch_refusals_name_the_value)
{
	static const struct bad_case cases[] = {
		{ "empty batch", 0, 4, -1, 0, 0, NPBERT_ERR_INPUT, "empty batch: 0 sequences" },
		{ "empty sequences", 2, 0, -1, 0, 0, NPBERT_ERR_INPUT, "seq_len is 0" },
		{ "too long", 1, 33, -1, 0, 0, NPBERT_ERR_INPUT,
		  "sequences of 33 tokens are longer than the model's 32 positions" },
		{ "id = vocab", 2, 5, 7, 0, 100, NPBERT_ERR_INPUT,
		  "token id 100 (sequence 1, position 2) is outside the vocabulary: ids must be 0..99" },
		{ "negative id", 2, 5, 0, 0, -1, NPBERT_ERR_INPUT, "token id -1 (sequence 0, position 0)" },
		{ "huge id", 1, 5, 4, 0, INT64_MAX, NPBERT_ERR_INPUT, "is outside the vocabulary" },
		{ "type 2", 2, 5, 9, 1, 2, NPBERT_ERR_INPUT,
		  "token type 2 (sequence 1, position 4) is outside 0..1" },
		{ "mask 2", 2, 5, 3, 2, 2, NPBERT_ERR_INPUT,
		  "attention mask value 2 (sequence 0, position 3)" },
		{ "mask -1", 2, 5, 6, 2, -1, NPBERT_ERR_INPUT, "attention mask value -1" },
		{ "no token", 3, 5, 2, 4, 0, NPBERT_ERR_INPUT,
		  "sequence 2 has no token: its attention mask is all 0" },
		{ "NULL ids", 2, 5, -1, 3, 0, NPBERT_ERR_INVALID, "input_ids is NULL" },
	};
	int64_t ids[3 * 40], types[3 * 40], mask[3 * 40];
	float hidden[3 * 40 * 64], pooled[3 * 64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct bad_case *k = &cases[i];
		npbert_batch_t b = { k->batch, k->seq_len, ids, types, mask };

		for (int j = 0; j < 3 * 40; j++) {
			ids[j] = 1 + j % 50;
			types[j] = j & 1;
			mask[j] = 1;
		}
		if (k->field == 4)
			for (int j = 0; j < k->seq_len; j++)
				mask[k->pos * k->seq_len + j] = 0;
		else if (k->pos >= 0)
			(k->field == 0 ? ids : k->field == 1 ? types : mask)[k->pos] = k->value;
		if (k->field == 3)
			b.input_ids = NULL;
		ASSERT_EQ(k->status, npbert_run(self->bert, &b, hidden, pooled)) {
			TH_LOG("%s: %s", k->what, npbert_last_error());
		}
		ASSERT_NE(NULL, strstr(npbert_last_error(), k->msg)) {
			TH_LOG("%s: got '%s'", k->what, npbert_last_error());
		}
	}
	/* the engine still works after every refusal */
	npbert_batch_t ok = { 2, 5, ids, NULL, NULL };

	ASSERT_EQ(NPBERT_OK, npbert_run(self->bert, &ok, hidden, pooled));
	ASSERT_EQ(NPBERT_ERR_INVALID, npbert_reserve(self->bert, 0, 4));
	ASSERT_EQ(NPBERT_ERR_INVALID, npbert_reserve(self->bert, 1, 33));
	/* a valid batch and length whose product is too large says so */
	ASSERT_EQ(NPBERT_ERR_INVALID, npbert_reserve(self->bert, INT32_MAX, 32));
	ASSERT_NE(NULL, strstr(npbert_last_error(), "too large: at most 2147483647 tokens"));
	ASSERT_EQ(NPBERT_ERR_INVALID, npbert_reserve(NULL, 1, 1));
}

TEST_F(tiny, deterministic_and_padding_invariant)
{
	enum { S = 12, H = 64 };
	int64_t ids[3 * S], mask[3 * S], one[7];
	float h1[3 * S * H], h2[3 * S * H], p1[3 * H], p2[3 * H], ha[7 * H], pa[H];
	double worst = 0, ref = 0;

	for (int j = 0; j < 3 * S; j++) {
		ids[j] = 1 + (j * 37) % 99;
		mask[j] = 1;
	}
	/* sequence 1 has 7 tokens, right-padded with id 0 */
	for (int j = 7; j < S; j++) {
		ids[S + j] = 0;
		mask[S + j] = 0;
	}
	npbert_batch_t b = { 3, S, ids, NULL, mask };

	ASSERT_EQ(NPBERT_OK, npbert_run(self->bert, &b, h1, p1));
	ASSERT_EQ(NPBERT_OK, npbert_run(self->bert, &b, h2, p2));
	ASSERT_EQ(0, memcmp(h1, h2, sizeof(h1)));
	ASSERT_EQ(0, memcmp(p1, p2, sizeof(p1)));
	/* the padded sequence alone, without padding */
	memcpy(one, ids + S, sizeof(one));
	npbert_batch_t a = { 1, 7, one, NULL, NULL };

	ASSERT_EQ(NPBERT_OK, npbert_run(self->bert, &a, ha, pa));
	for (int t = 0; t < 7; t++)
		for (int k = 0; k < H; k++) {
			double d = fabs(ha[t * H + k] - h1[(S + t) * H + k]);

			worst = d > worst ? d : worst;
			ref = fabs(ha[t * H + k]) > ref ? fabs(ha[t * H + k]) : ref;
		}
	for (int k = 0; k < H; k++)
		worst = fmax(worst, fabs(pa[k] - p1[H + k]));
	ASSERT_TRUE(worst <= 1e-5 * ref) {
		TH_LOG("padding changed the result by %g (largest value %g)", worst, ref);
	}
}

TEST_F(tiny, workspace_is_reused)
{
	enum { H = 64 };
	int64_t ids[8 * 32];
	float hidden[8 * 32 * H], pooled[8 * H];
	npbert_memory_t m0, m1, m2, m3;

	for (int j = 0; j < 8 * 32; j++)
		ids[j] = 1 + j % 99;
	npbert_batch_t big = { 4, 20, ids, NULL, NULL }, small = { 2, 7, ids, NULL, NULL };
	npbert_batch_t bigger = { 8, 32, ids, NULL, NULL };

	ASSERT_EQ(NPBERT_OK, npbert_run(self->bert, &big, hidden, pooled));
	npbert_get_memory(self->bert, &m0);
	ASSERT_EQ(80, m0.capacity_tokens);
	ASSERT_LT(0, m0.workspace_bytes);
	ASSERT_EQ(0, m0.copied_bytes);
	ASSERT_EQ(NPBERT_OK, npbert_run(self->bert, &big, hidden, pooled));
	npbert_get_memory(self->bert, &m1);
	ASSERT_EQ(0, m1.fresh_bytes);	/* warm: nothing new from the OS */
	ASSERT_EQ(0, m1.copied_bytes);
	ASSERT_EQ(m0.workspace_bytes, m1.workspace_bytes);
	ASSERT_EQ(NPBERT_OK, npbert_run(self->bert, &small, hidden, pooled));
	npbert_get_memory(self->bert, &m2);
	ASSERT_EQ(0, m2.fresh_bytes);	/* a smaller batch fits in the same buffers */
	ASSERT_EQ(m0.workspace_bytes, m2.workspace_bytes);
	ASSERT_EQ(NPBERT_OK, npbert_run(self->bert, &bigger, hidden, pooled));
	npbert_get_memory(self->bert, &m3);
	ASSERT_EQ(256, m3.capacity_tokens);	/* grown to the largest batch */
	ASSERT_LT(m0.workspace_bytes, m3.workspace_bytes);
	ASSERT_EQ(0, m3.copied_bytes);
	/* the workspace is the activations: a handful of [tokens, hidden or FFN] buffers */
	ASSERT_GE(m3.workspace_bytes, (uint64_t)256 * (7 * 64 + 256 + 1) * 4);
}

TEST_F(tiny, profile_counts_runs)
{
	int64_t ids[2 * 5];
	float hidden[2 * 5 * 64];
	npbert_profile_t p;

	for (int j = 0; j < 10; j++)
		ids[j] = 3 + j;
	npbert_batch_t b = { 2, 5, ids, NULL, NULL };

	ASSERT_EQ(NPBERT_OK, npbert_run(self->bert, &b, hidden, NULL));
	ASSERT_EQ(NPBERT_OK, npbert_run(self->bert, &b, NULL, NULL));
	npbert_get_profile(self->bert, &p);
	ASSERT_EQ(2, p.runs);
	ASSERT_EQ(4, p.sequences);
	ASSERT_EQ(20, p.tokens);
	ASSERT_LT(0, p.total);
	ASSERT_LT(0, p.matmul);
	ASSERT_LT(0, p.attention);
	ASSERT_EQ(0, p.allreduce);
	ASSERT_TRUE(p.matmul + p.attention + p.embed + p.elementwise <= p.total);
	npbert_reset_profile(self->bert);
	npbert_get_profile(self->bert, &p);
	ASSERT_EQ(0, p.runs);
	ASSERT_EQ(0, p.total);
}

/* a NULL engine's queries gave the caller's bytes back (get_config, get_memory, get_profile) */
TEST_F(tiny, queries_of_a_null_engine_give_zeros)
{
	npbert_config_t c, zc;
	npbert_memory_t m, zm;
	npbert_profile_t p, zp;
	int used = -1, total = -1;

	memset(&zc, 0, sizeof(zc));
	memset(&zm, 0, sizeof(zm));
	memset(&zp, 0, sizeof(zp));
	memset(&c, 0x5a, sizeof(c));
	memset(&m, 0x5a, sizeof(m));
	memset(&p, 0x5a, sizeof(p));
	npbert_get_config(NULL, &c);
	npbert_get_memory(NULL, &m);
	npbert_get_profile(NULL, &p);
	ASSERT_NE(NULL, c.prefix);
	ASSERT_STREQ("", c.prefix);
	c.prefix = NULL;
	ASSERT_EQ(0, memcmp(&c, &zc, sizeof(c)));
	ASSERT_EQ(0, memcmp(&m, &zm, sizeof(m)));
	ASSERT_EQ(0, memcmp(&p, &zp, sizeof(p)));
	ASSERT_EQ(NULL, npbert_packed_weights(NULL, &used, &total));
	ASSERT_EQ(0, used);
	ASSERT_EQ(0, total);
	/* NULL outputs are ignored */
	npbert_get_config(self->bert, NULL);
	npbert_get_memory(self->bert, NULL);
	npbert_get_profile(self->bert, NULL);
	npbert_reset_profile(NULL);
	ASSERT_STREQ("unknown status", npbert_strerror((npbert_status_t)-1));
}

TEST(no_pooler)
{
	char name[96];
	npushm_model_t *m;
	npbert_t *b;
	npbert_config_t c;
	int64_t ids[4] = { 1, 2, 3, 4 };
	float hidden[4 * 64], pooled[64];
	npbert_batch_t in = { 1, 4, ids, NULL, NULL };

	ASSERT_EQ(0, load("nopool.safetensors", name, sizeof(name), &m));
	ASSERT_EQ(NPBERT_OK, npbert_create(m, NULL, &b));
	npushm_model_detach(m);	/* the engine keeps its own references */
	npbert_get_config(b, &c);
	ASSERT_EQ(0, c.has_pooler);
	ASSERT_EQ(NPBERT_ERR_UNSUPPORTED, npbert_run(b, &in, hidden, pooled));
	ASSERT_NE(NULL, strstr(npbert_last_error(), "no pooler"));
	ASSERT_EQ(NPBERT_OK, npbert_run(b, &in, hidden, NULL));
	npbert_destroy(b);
	unload(name);
}

/* The weights are read in place: running the engine over 25 MB of dense
 * weights makes the process resident on them through the shared mapping
 * (RssShmem), while a second engine's private memory grows by the
 * activations and the libraries' own buffers only (scratchpads, thread
 * stacks); the first makes the GEMM kernels for these shapes. */
TEST(weights_read_in_place)
{
	enum { B = 2, S = 16, H = 512 };
	char name[96];
	npushm_model_t *m;
	npbert_t *b;
	npbert_memory_t mem;
	int64_t ids[B * S];
	static float hidden[B * S * H], pooled[B * H];
	npbert_batch_t in = { B, S, ids, NULL, NULL };
	long anon0, anon1, shm0, shm1;
	uint64_t dense = 2ull * (4 * H * H + 2 * H * 2048) * 4;

	for (int j = 0; j < B * S; j++)
		ids[j] = 1 + j;
	ASSERT_EQ(0, load("big.safetensors", name, sizeof(name), &m));
	shm0 = smaps("Rss") - smaps("Anonymous");
	/* a first engine makes the GEMM's kernels for these shapes (JIT code and
	 * its tables, per process and not per model; under ASan also the
	 * allocator's quarantine of what that freed): its private memory is not
	 * counted, the pages of the shared mapping it reads are */
	ASSERT_EQ(NPBERT_OK, npbert_create(m, NULL, &b));
	ASSERT_EQ(NPBERT_OK, npbert_run(b, &in, hidden, pooled));
	npbert_destroy(b);
	anon0 = smaps("Anonymous");
	ASSERT_EQ(NPBERT_OK, npbert_create(m, NULL, &b));
	ASSERT_EQ(NPBERT_OK, npbert_run(b, &in, hidden, pooled));
	ASSERT_EQ(NPBERT_OK, npbert_run(b, &in, hidden, pooled));
	anon1 = smaps("Anonymous");
	shm1 = smaps("Rss") - smaps("Anonymous");
	npbert_get_memory(b, &mem);
	TH_LOG("weights %llu kB; private +%ld kB; shared/file resident +%ld kB; workspace %llu kB",
	       (unsigned long long)mem.weight_bytes >> 10, anon1 - anon0, shm1 - shm0,
	       (unsigned long long)mem.workspace_bytes >> 10);
	ASSERT_LE(dense, mem.weight_bytes);
	ASSERT_EQ(0, mem.copied_bytes);
	ASSERT_EQ(0, mem.fresh_bytes);
	/* every dense weight byte was read, through the shared mapping */
	ASSERT_LE((long)(dense * 9 / 10 / 1024), shm1 - shm0);
	/* and none was copied (a copy would add them all): private growth is a
	 * fraction of the weights, about 2 MB natively, 6 MB under ASan */
	ASSERT_GT((long)(dense / 2 / 1024), anon1 - anon0);
	npbert_destroy(b);
	npushm_model_detach(m);
	unload(name);
}

/* ------------------------------------------------------------ packed weights */

/* mode of the test packer: real layouts, real tags with one byte changed,
 * another CPU's tag over bytes that are all NaN, real bytes under another
 * CPU's tag (the same blocking), or a tag of a library npushm does not know */
enum { PACK_REAL, PACK_FLIP, PACK_FOREIGN, PACK_FOREIGN_REAL, PACK_ALIEN };

static uint64_t test_pack_size(void *arg, const npushm_tensor_t *t, char tag[NPUSHM_LAYOUT_TAG_MAX])
{
	int mode = *(const int *)arg;
	size_t n = 0;
	char *isa, *rest, buf[NPUSHM_LAYOUT_TAG_MAX];

	if (t->dtype != NPUSHM_DTYPE_F32 || t->ndim != 2 || !strstr(t->name, ".weight") ||
	    strstr(t->name, "embeddings") ||
	    npt_pack_query(NPT_F32, t->shape[0], t->shape[1], tag, NPUSHM_LAYOUT_TAG_MAX, &n))
		return 0;
	if (mode == PACK_ALIEN)
		snprintf(tag, NPUSHM_LAYOUT_TAG_MAX, "alien-1.0/any/f32/%s", t->name);
	if ((mode == PACK_FOREIGN || mode == PACK_FOREIGN_REAL) && (isa = strchr(tag, '/')) &&
	    (rest = strchr(isa + 1, '/'))) {
		snprintf(buf, sizeof(buf), "%.*s/avx2_vnni%s", (int)(isa - tag), tag, rest);
		memcpy(tag, buf, sizeof(buf));
	}
	return n;
}

static int test_pack(void *arg, const npushm_tensor_t *t, const char *tag, void *dst,
		     uint64_t nbytes, char *why, size_t why_size)
{
	int mode = *(const int *)arg;
	npt_tensor_t *w = NULL;
	npt_status_t s;

	char real[NPT_PACK_TAG_MAX];
	size_t n;

	if (mode == PACK_FOREIGN || mode == PACK_ALIEN) {
		memset(dst, 0xff, nbytes);
		return 0;
	}
	s = npt_tensor_from_data((void *)t->data, NPT_F32, 2, t->shape, NULL, NPT_BORROW_READONLY,
				 NULL, NULL, &w);
	if (!s && mode == PACK_FOREIGN_REAL)	/* the bytes of this CPU's own layout */
		s = npt_pack_query(NPT_F32, t->shape[0], t->shape[1], real, sizeof(real), &n);
	if (!s)
		s = npt_pack_weight(w, mode == PACK_FOREIGN_REAL ? real : tag, dst, nbytes);
	npt_tensor_free(w);
	if (s) {
		snprintf(why, why_size, "%s", npt_last_error());
		return -1;
	}
	if (mode == PACK_FLIP)
		((unsigned char *)dst)[nbytes / 2] ^= 1;
	return 0;
}

FIXTURE(packed) {
	char plain_name[96];
	npushm_model_t *plain;
	npbert_t *ref;
	float *hidden, *pooled;
};

enum { PB = 2, PS = 16, PH = 512 };

static void fill_ids(int64_t *ids)
{
	for (int j = 0; j < PB * PS; j++)
		ids[j] = 1 + (j * 7) % 99;
}

FIXTURE_SETUP(packed)
{
	int64_t ids[PB * PS];
	npbert_batch_t in = { PB, PS, ids, NULL, NULL };
	char tag[NPT_PACK_TAG_MAX];
	size_t n;

	if (npt_pack_query(NPT_F32, 512, 512, tag, sizeof(tag), &n) == NPT_E_UNSUPPORTED)
		SKIP(return, "no packed layouts on this machine: %s", npt_last_error());
	fill_ids(ids);
	self->hidden = calloc(PB * PS * PH, sizeof(float));
	self->pooled = calloc(PB * PH, sizeof(float));
	ASSERT_NE(NULL, self->pooled);
	ASSERT_EQ(0, load("big.safetensors", self->plain_name, sizeof(self->plain_name),
			  &self->plain));
	ASSERT_EQ(NPBERT_OK, npbert_create(self->plain, NULL, &self->ref));
	ASSERT_EQ(NPBERT_OK, npbert_run(self->ref, &in, self->hidden, self->pooled));
}

FIXTURE_TEARDOWN(packed)
{
	npbert_destroy(self->ref);
	npushm_model_detach(self->plain);
	if (self->plain_name[0])
		unload(self->plain_name);
	free(self->hidden);
	free(self->pooled);
}

static double max_rel_diff(const float *a, const float *b, size_t n)
{
	double err = 0, mag = 0;

	for (size_t i = 0; i < n; i++) {
		err = fmax(err, fabs((double)a[i] - b[i]));
		mag = fmax(mag, fabs((double)b[i]));
	}
	return err / (mag + 1e-30);
}

/* run @b on the fixture's batch at the default thread count: 0 when its
 * outputs are bitwise the plain engine's (@hidden, @pooled) */
static int same_bits_as_plain(npbert_t *b, const float *hidden, const float *pooled)
{
	static float h[PB * PS * PH], p[PB * PH];
	int64_t ids[PB * PS];
	npbert_batch_t in = { PB, PS, ids, NULL, NULL };

	fill_ids(ids);
	if (npt_set_num_threads(0) || npbert_run(b, &in, h, p))
		return -1;
	return memcmp(h, hidden, sizeof(h)) || memcmp(p, pooled, sizeof(p));
}

/* read packed in place: same results, private memory does not grow by the weights */
TEST_F(packed, read_in_place_with_the_plain_results)
{
	if (_metadata->skip)	/* the setup skipped: no packed layouts */
		return;
	static const int mode = PACK_REAL;
	const npushm_packer_t pk = { test_pack_size, test_pack, (void *)&mode };
	int64_t ids[PB * PS];
	npbert_batch_t in = { PB, PS, ids, NULL, NULL };
	static float hidden[PB * PS * PH], pooled[PB * PH];
	uint64_t dense = 2ull * (4 * PH * PH + 2 * PH * 2048) * 4;
	npushm_load_result_t res;
	char name[96];
	npushm_model_t *m;
	npbert_t *b;
	long anon0, anon1, shm0, shm1;
	int used, total;

	fill_ids(ids);
	ASSERT_EQ(0, load_packed("big.safetensors", &pk, name, sizeof(name), &m, &res));
	ASSERT_EQ(13, npushm_model_layout_count(m));
	anon0 = smaps("Anonymous");
	shm0 = smaps("Rss") - smaps("Anonymous");
	ASSERT_EQ(NPBERT_OK, npbert_create(m, NULL, &b));
	ASSERT_EQ(NULL, npbert_packed_weights(b, &used, &total)) {
		TH_LOG("%s", npbert_packed_weights(b, NULL, NULL));
	}
	ASSERT_EQ(13, total);
	ASSERT_EQ(13, used);
	for (int threads = 1; threads <= 2; threads++) {
		ASSERT_EQ(NPT_OK, npt_set_num_threads(threads));
		ASSERT_EQ(NPBERT_OK, npbert_run(b, &in, hidden, pooled));
		double eh = max_rel_diff(hidden, self->hidden, PB * PS * PH);
		double ep = max_rel_diff(pooled, self->pooled, PB * PH);

		TH_LOG("%d threads: packed vs plain, hidden %.2g, pooled %.2g of the largest", threads,
		       eh, ep);
		ASSERT_TRUE(eh < 1e-5 && ep < 1e-5);
	}
	ASSERT_EQ(NPT_OK, npt_set_num_threads(0));
	anon1 = smaps("Anonymous");
	shm1 = smaps("Rss") - smaps("Anonymous");
	TH_LOG("private +%ld kB, shared resident +%ld kB (dense weights %llu kB)", anon1 - anon0,
	       shm1 - shm0, (unsigned long long)dense >> 10);
	/* the packed bytes were read through the shared mapping, not copied, and
	 * the plain copies of the packed weights were not read too */
	ASSERT_LE((long)(dense * 9 / 10 / 1024), shm1 - shm0);
	ASSERT_GT((long)(dense * 3 / 2 / 1024), shm1 - shm0);
	ASSERT_GT((long)(dense / 2 / 1024), anon1 - anon0);
	npbert_destroy(b);
	npushm_model_detach(m);
	unload(name);
}

/* a layout another CPU made is refused in one line; the plain weights give the same bits */
TEST_F(packed, foreign_layout_refused_and_plain_used)
{
	if (_metadata->skip)	/* the setup skipped: no packed layouts */
		return;
	static const int mode = PACK_FOREIGN;
	const npushm_packer_t pk = { test_pack_size, test_pack, (void *)&mode };
	char name[96];
	npushm_model_t *m;
	npbert_t *b;
	const char *why;
	int used, total;

	ASSERT_EQ(0, load_packed("big.safetensors", &pk, name, sizeof(name), &m, NULL));
	ASSERT_EQ(NPBERT_OK, npbert_create(m, NULL, &b));
	why = npbert_packed_weights(b, &used, &total);
	ASSERT_NE(NULL, why);
	TH_LOG("%s", why);
	ASSERT_EQ(13, total);
	ASSERT_EQ(0, used);
	ASSERT_NE(NULL, strstr(why, "avx2_vnni"));
	ASSERT_NE(NULL, strstr(why, "plain weights are used"));
	ASSERT_EQ(NULL, strchr(why, '\n'));
	ASSERT_EQ(0, same_bits_as_plain(b, self->hidden, self->pooled));
	npbert_destroy(b);
	npushm_model_detach(m);
	unload(name);
}

/* the hash covers the packed bytes: one changed byte, another hash; the same bytes, the same */
TEST_F(packed, hash_covers_the_packed_bytes)
{
	if (_metadata->skip)	/* the setup skipped: no packed layouts */
		return;
	static const int real = PACK_REAL, flip = PACK_FLIP;
	const npushm_packer_t pr = { test_pack_size, test_pack, (void *)&real };
	const npushm_packer_t pf = { test_pack_size, test_pack, (void *)&flip };
	npushm_load_result_t r1, r2, r3;
	npushm_model_info_t plain;
	char n1[96], n2[96], n3[96];
	npushm_model_t *m1, *m2, *m3;
	npushm_layout_t l1, l2;

	npushm_model_info(self->plain, &plain);
	ASSERT_EQ(0, load_packed("big.safetensors", &pr, n1, sizeof(n1), &m1, &r1));
	ASSERT_EQ(0, load_packed("big.safetensors", &pf, n2, sizeof(n2), &m2, &r2));
	ASSERT_EQ(0, load_packed("big.safetensors", &pr, n3, sizeof(n3), &m3, &r3));
	TH_LOG("plain %s, packed %s, one byte changed %s", plain.hash_hex, r1.hash_hex,
	       r2.hash_hex);
	ASSERT_NE(0, memcmp(plain.hash, r1.hash, 16));
	ASSERT_NE(0, memcmp(r1.hash, r2.hash, 16));
	ASSERT_FALSE(r2.deduplicated);
	/* identical packing: the same hash, and the published copy is reused */
	ASSERT_EQ(0, memcmp(r1.hash, r3.hash, 16));
	ASSERT_TRUE(r3.deduplicated);
	ASSERT_EQ(NPUSHM_OK, npushm_model_layout_find(m1, "pooler.dense.weight", &l1));
	ASSERT_EQ(NPUSHM_OK, npushm_model_layout_find(m2, "pooler.dense.weight", &l2));
	ASSERT_STREQ(l1.tag, l2.tag);
	ASSERT_NE(0, memcmp(l1.hash, l2.hash, 16));
	ASSERT_EQ(NPUSHM_ERR_NOT_FOUND, npushm_model_layout_find(m1, "pooler.dense.bias", &l1));
	ASSERT_EQ(0, npushm_model_layout_count(self->plain));
	npushm_model_detach(m1);
	npushm_model_detach(m2);
	npushm_model_detach(m3);
	unload(n1);
	unload(n2);
	unload(n3);
}

/* packed only: one copy in the region, read in place, private memory at activation size */
TEST_F(packed, packed_only_read_in_place_at_activation_memory)
{
	if (_metadata->skip)	/* the setup skipped: no packed layouts */
		return;
	static const int mode = PACK_REAL;
	const npushm_packer_t pk = { test_pack_size, test_pack, (void *)&mode };
	int64_t ids[PB * PS];
	npbert_batch_t in = { PB, PS, ids, NULL, NULL };
	static float hidden[PB * PS * PH], pooled[PB * PH];
	uint64_t dense = 2ull * (4 * PH * PH + 2 * PH * 2048) * 4;
	npushm_load_result_t rboth, ronly;
	npushm_model_info_t plain, only;
	char name[96], both[96];
	npushm_model_t *m, *mb;
	npbert_t *b;
	npbert_memory_t mem;
	long anon0, anon1, shm0, shm1;
	int used, total;

	fill_ids(ids);
	ASSERT_EQ(0, load_flags("big.safetensors", &pk, NPUSHM_LOAD_PACKED_ONLY, name, sizeof(name),
				&m, &ronly));
	ASSERT_EQ(0, load_packed("big.safetensors", &pk, both, sizeof(both), &mb, &rboth));
	npushm_model_info(self->plain, &plain);
	npushm_model_info(m, &only);
	TH_LOG("region: plain %llu kB, packed only %llu kB, packed and plain %llu kB",
	       (unsigned long long)plain.region_size >> 10,
	       (unsigned long long)only.region_size >> 10,
	       (unsigned long long)rboth.region_size >> 10);
	/* one copy of the weights: about the plain model's size, and another hash */
	ASSERT_LT(only.region_size, plain.region_size + plain.region_size / 10);
	ASSERT_LT(only.region_size + dense / 2, rboth.region_size);
	ASSERT_NE(0, memcmp(ronly.hash, rboth.hash, 16));
	ASSERT_NE(0, memcmp(ronly.hash, plain.hash, 16));
	anon0 = smaps("Anonymous");
	shm0 = smaps("Rss") - smaps("Anonymous");
	ASSERT_EQ(NPBERT_OK, npbert_create(m, NULL, &b)) {
		TH_LOG("%s", npbert_last_error());
	}
	ASSERT_EQ(NULL, npbert_packed_weights(b, &used, &total)) {
		TH_LOG("%s", npbert_packed_weights(b, NULL, NULL));
	}
	ASSERT_EQ(13, total);
	ASSERT_EQ(13, used);
	for (int threads = 1; threads <= 2; threads++) {
		ASSERT_EQ(NPT_OK, npt_set_num_threads(threads));
		ASSERT_EQ(NPBERT_OK, npbert_run(b, &in, hidden, pooled));
		double eh = max_rel_diff(hidden, self->hidden, PB * PS * PH);
		double ep = max_rel_diff(pooled, self->pooled, PB * PH);

		TH_LOG("%d threads: packed only vs plain, hidden %.2g, pooled %.2g of the largest",
		       threads, eh, ep);
		ASSERT_TRUE(eh < 1e-5 && ep < 1e-5);
	}
	ASSERT_EQ(NPT_OK, npt_set_num_threads(0));
	anon1 = smaps("Anonymous");
	shm1 = smaps("Rss") - smaps("Anonymous");
	npbert_get_memory(b, &mem);
	TH_LOG("private +%ld kB, shared resident +%ld kB (dense weights %llu kB), workspace %llu kB",
	       anon1 - anon0, shm1 - shm0, (unsigned long long)dense >> 10,
	       (unsigned long long)mem.workspace_bytes >> 10);
	ASSERT_LE((long)(dense * 9 / 10 / 1024), shm1 - shm0);
	ASSERT_GT((long)(dense / 2 / 1024), anon1 - anon0);
	/* a program that reads plain tensors only is refused, naming the layout */
	{
		npushm_model_t *m2;
		npushm_tensor_t t;

		ASSERT_EQ(NPUSHM_OK, npushm_model_attach(name, &m2));
		ASSERT_EQ(NPUSHM_ERR_UNSUPPORTED,
			  npushm_model_tensor_find(m2, "pooler.dense.weight", &t));
		ASSERT_NE(NULL, strstr(npushm_last_error(), "--packed-only"));
		npushm_model_detach(m2);
	}
	npbert_destroy(b);
	npushm_model_detach(m);
	npushm_model_detach(mb);
	unload(name);
	unload(both);
}

/* packed only, a layout another CPU made: said in one line, unpacked privately, the plain bits */
TEST_F(packed, packed_only_foreign_layout_unpacked_privately)
{
	if (_metadata->skip)	/* the setup skipped: no packed layouts */
		return;
	static const int mode = PACK_FOREIGN_REAL;
	const npushm_packer_t pk = { test_pack_size, test_pack, (void *)&mode };
	uint64_t dense = 2ull * (4 * PH * PH + 2 * PH * 2048) * 4;
	char name[96];
	npushm_model_t *m;
	npbert_t *b;
	const char *why;
	long anon0, anon1;
	int used, total;

	ASSERT_EQ(0, load_flags("big.safetensors", &pk, NPUSHM_LOAD_PACKED_ONLY, name, sizeof(name),
				&m, NULL));
	anon0 = smaps("Anonymous");
	ASSERT_EQ(NPBERT_OK, npbert_create(m, NULL, &b)) {
		TH_LOG("%s", npbert_last_error());
	}
	anon1 = smaps("Anonymous");
	why = npbert_packed_weights(b, &used, &total);
	ASSERT_NE(NULL, why);
	TH_LOG("%s", why);
	TH_LOG("private +%ld kB for %llu kB of dense weights", anon1 - anon0,
	       (unsigned long long)dense >> 10);
	ASSERT_EQ(13, total);
	ASSERT_EQ(0, used);
	ASSERT_NE(NULL, strstr(why, "unpacked into this process's memory"));
	ASSERT_NE(NULL, strstr(why, "avx2_vnni"));
	ASSERT_EQ(NULL, strchr(why, '\n'));
	ASSERT_LE((long)(dense / 2 / 1024), anon1 - anon0);	/* the private copy */
	ASSERT_EQ(0, same_bits_as_plain(b, self->hidden, self->pooled));
	npbert_destroy(b);
	npushm_model_detach(m);
	unload(name);
}

/* packed only, a layout of a library the engine does not know: refused, nothing read */
TEST_F(packed, packed_only_unreadable_layout_refused)
{
	if (_metadata->skip)	/* the setup skipped: no packed layouts */
		return;
	static const int mode = PACK_ALIEN;
	const npushm_packer_t pk = { test_pack_size, test_pack, (void *)&mode };
	char name[96];
	npushm_model_t *m;
	npbert_t *b = NULL;

	ASSERT_EQ(0, load_flags("big.safetensors", &pk, NPUSHM_LOAD_PACKED_ONLY, name, sizeof(name),
				&m, NULL));
	ASSERT_EQ(NPBERT_ERR_LAYOUT, npbert_create(m, NULL, &b));
	TH_LOG("%s", npbert_last_error());
	ASSERT_NE(NULL, strstr(npbert_last_error(), "alien-1.0/any/f32/"));
	ASSERT_NE(NULL, strstr(npbert_last_error(), "without --packed-only"));
	ASSERT_EQ(NULL, b);
	npushm_model_detach(m);
	unload(name);
}

TEST_HARNESS_MAIN
