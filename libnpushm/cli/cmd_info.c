/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * cmd_info.c - `npushm info NAME`: one model's summary and tensor table
 * (name, dtype, shape, region offset, bytes), read from its manifest.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void shape_text(const npushm_tensor_t *t, char *buf, size_t len)
{
	size_t o = (size_t)snprintf(buf, len, "[");

	for (uint32_t i = 0; i < t->ndim && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
	if (o < len)
		snprintf(buf + o, len - o, "]");
}

static struct json_object *int_array(const int64_t *v, uint32_t n)
{
	struct json_object *a = json_object_new_array();

	for (uint32_t i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_int64(v[i]));
	return a;
}

int cmd_info(const struct cli_opts *o)
{
	npushm_model_info_t mi;
	npushm_model_t *m = NULL;
	npushm_dev_t *dev;
	npushm_status_t st;
	char a[32], b[32], shape[256], lay[NPUSHM_LAYOUT_TAG_MAX + 32], node[48] = "";
	char *safe, *made_by;
	size_t only;
	int rc = 0;

	dev = cli_open_dev(o, &rc);
	if (!dev)
		return rc;
	st = npushm_model_attach_dev(dev, o->args[0], &m);
	if (st) {
		rc = cli_fail(o, st, NULL);
		goto out;
	}
	npushm_model_info(m, &mi);
	only = npushm_model_accept_packed_only(m);	/* listed with no offset */
	if (o->json) {
		struct json_object *j = json_object_new_object(), *ts = json_object_new_array();
		struct json_object *meta = json_tokener_parse(mi.metadata_json);

		json_object_object_add(j, "name", json_object_new_string(o->args[0]));
		json_object_object_add(j, "backend", json_object_new_string(npushm_backend_name(npushm_dev_backend(dev))));
		json_object_object_add(j, "hash", json_object_new_string(mi.hash_hex));
		json_object_object_add(j, "source_size", json_object_new_uint64(mi.source_size));
		json_object_object_add(j, "region_size", json_object_new_uint64(mi.region_size));
		json_object_object_add(j, "region_id", json_object_new_uint64(mi.region_id));
		json_object_object_add(j, "node", json_object_new_int(npushm_model_node(m)));
		json_object_object_add(j, "data_size", json_object_new_uint64(mi.data_size));
		json_object_object_add(j, "packed_only_tensors", json_object_new_uint64(only));
		json_object_object_add(j, "metadata", meta ? meta : json_object_new_object());
		for (size_t i = 0; i < mi.tensor_count; i++) {
			struct json_object *t = json_object_new_object();
			npushm_tensor_t tt;

			npushm_model_tensor_at(m, i, &tt);
			json_object_object_add(t, "name", json_object_new_string_len(tt.name, (int)tt.name_len));
			json_object_object_add(t, "dtype", json_object_new_string(npushm_dtype_name(tt.dtype)));
			json_object_object_add(t, "shape", int_array(tt.shape, tt.ndim));
			json_object_object_add(t, "strides", int_array(tt.strides, tt.ndim));
			json_object_object_add(t, "offset", json_object_new_uint64(tt.offset));
			json_object_object_add(t, "nbytes", json_object_new_uint64(tt.nbytes));
			json_object_object_add(t, "packed_only", json_object_new_boolean(!tt.data));
			json_object_array_add(ts, t);
		}
		json_object_object_add(j, "tensors", ts);
		ts = json_object_new_array();
		for (size_t i = 0; i < npushm_model_layout_count(m); i++) {
			struct json_object *t = json_object_new_object();
			npushm_layout_t l;
			char hex[33];

			npushm_model_layout_at(m, i, &l);
			for (int k = 0; k < 16; k++)
				snprintf(hex + 2 * k, 3, "%02x", l.hash[k]);
			json_object_object_add(t, "tensor", json_object_new_string(l.tensor));
			json_object_object_add(t, "tag", json_object_new_string(l.tag));
			json_object_object_add(t, "offset", json_object_new_uint64(l.offset));
			json_object_object_add(t, "nbytes", json_object_new_uint64(l.nbytes));
			json_object_object_add(t, "hash", json_object_new_string(hex));
			json_object_array_add(ts, t);
		}
		json_object_object_add(j, "layouts", ts);
		cli_print_json(j);
		goto out;
	}
	safe = cli_text(mi.metadata_json);
	made_by = cli_text(cli_layouts_summary(m, lay, sizeof(lay)));
	if (npushm_model_node(m) >= 0)
		snprintf(node, sizeof(node), ", the copy of NUMA node %d", npushm_model_node(m));
	printf("model     %s\nbackend   %s\nhash      %s (%s)\nsource    %s (%llu bytes)\n"
	       "region    %llu, %s%s\ntensors   %zu\nlayouts   %s\nmetadata  %s\n\n",
	       o->args[0], npushm_backend_name(npushm_dev_backend(dev)), mi.hash_hex,
	       only ? "XXH3-128 of the file's hash and the packed layouts, packed only" :
	       npushm_model_layout_count(m) ? "XXH3-128 of the file's hash and the packed layouts" :
	       "XXH3-128 over 8 MiB blocks",
	       cli_size(mi.source_size, a, sizeof(a)), (unsigned long long)mi.source_size,
	       (unsigned long long)mi.region_id, cli_size(mi.region_size, b, sizeof(b)), node,
	       mi.tensor_count, made_by ? made_by : "?", safe ? safe : "?");
	free(safe);
	free(made_by);
	printf("%-48s %-7s %-20s %12s %12s\n", "TENSOR", "DTYPE", "SHAPE", "OFFSET", "BYTES");
	for (size_t i = 0; i < mi.tensor_count; i++) {
		npushm_tensor_t t;

		npushm_model_tensor_at(m, i, &t);
		shape_text(&t, shape, sizeof(shape));
		/* whoever loaded the model chose the names: nothing reaches the terminal raw */
		safe = cli_text(t.name);
		if (!t.data)
			printf("%-48s %-7s %-20s %12s %12llu\n", safe ? safe : "?", npushm_dtype_name(t.dtype),
			       shape, "packed only", (unsigned long long)t.nbytes);
		else
			printf("%-48s %-7s %-20s %12llu %12llu\n", safe ? safe : "?", npushm_dtype_name(t.dtype),
			       shape, (unsigned long long)t.offset, (unsigned long long)t.nbytes);
		free(safe);
	}
	if (npushm_model_layout_count(m))
		printf("\n%-48s %-60s %12s %12s\n", "PACKED LAYOUT OF", "TAG", "OFFSET", "BYTES");
	for (size_t i = 0; i < npushm_model_layout_count(m); i++) {
		npushm_layout_t l;
		char *tag;

		npushm_model_layout_at(m, i, &l);
		safe = cli_text(l.tensor);
		tag = cli_text(l.tag);
		printf("%-48s %-60s %12llu %12llu\n", safe ? safe : "?", tag ? tag : "?",
		       (unsigned long long)l.offset, (unsigned long long)l.nbytes);
		free(safe);
		free(tag);
	}
out:
	npushm_model_detach(m);
	npushm_dev_close(dev);
	return rc;
}
