/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * onednn.h - oneDNN 2.x (Debian's libdnnl2), opened with dlopen at the first
 * GEMM and never linked: a machine without it, or a fully static program,
 * runs every GEMM on OpenBLAS. Types come from libdnnl-dev's headers; the
 * functions from the table below, filled by npt_dnnl_load().
 *
 * Contracts: npt_dnnl_load() is idempotent and thread-safe; it returns the
 * table with every entry set, or NULL (why in npt_dnnl_why()).
 */
#ifndef NPT_ONEDNN_H
#define NPT_ONEDNN_H

#include <oneapi/dnnl/dnnl.h>

#define NPT_DNNL_FUNCS(X)                                                                  \
	X(dnnl_status_t, dnnl_engine_create, (dnnl_engine_t *, dnnl_engine_kind_t, size_t))  \
	X(dnnl_status_t, dnnl_engine_destroy, (dnnl_engine_t))                               \
	X(dnnl_status_t, dnnl_stream_create, (dnnl_stream_t *, dnnl_engine_t, unsigned))     \
	X(dnnl_status_t, dnnl_stream_wait, (dnnl_stream_t))                                  \
	X(dnnl_status_t, dnnl_stream_destroy, (dnnl_stream_t))                               \
	X(dnnl_status_t, dnnl_memory_desc_init_by_strides,                                   \
	  (dnnl_memory_desc_t *, int, const dnnl_dims_t, dnnl_data_type_t, const dnnl_dims_t)) \
	X(dnnl_status_t, dnnl_memory_desc_init_by_tag,                                       \
	  (dnnl_memory_desc_t *, int, const dnnl_dims_t, dnnl_data_type_t, dnnl_format_tag_t)) \
	X(size_t, dnnl_memory_desc_get_size, (const dnnl_memory_desc_t *))                   \
	X(dnnl_status_t, dnnl_matmul_desc_init,                                              \
	  (dnnl_matmul_desc_t *, const dnnl_memory_desc_t *, const dnnl_memory_desc_t *,      \
	   const dnnl_memory_desc_t *, const dnnl_memory_desc_t *))                          \
	X(dnnl_status_t, dnnl_primitive_attr_create, (dnnl_primitive_attr_t *))              \
	X(dnnl_status_t, dnnl_primitive_attr_destroy, (dnnl_primitive_attr_t))               \
	X(dnnl_status_t, dnnl_post_ops_create, (dnnl_post_ops_t *))                          \
	X(dnnl_status_t, dnnl_post_ops_destroy, (dnnl_post_ops_t))                           \
	X(dnnl_status_t, dnnl_post_ops_append_eltwise,                                       \
	  (dnnl_post_ops_t, float, dnnl_alg_kind_t, float, float))                           \
	X(dnnl_status_t, dnnl_post_ops_append_sum, (dnnl_post_ops_t, float))                 \
	X(dnnl_status_t, dnnl_primitive_attr_set_scratchpad_mode,                            \
	  (dnnl_primitive_attr_t, dnnl_scratchpad_mode_t))                                   \
	X(dnnl_status_t, dnnl_primitive_attr_set_post_ops,                                   \
	  (dnnl_primitive_attr_t, const_dnnl_post_ops_t))                                    \
	X(dnnl_status_t, dnnl_primitive_desc_create,                                         \
	  (dnnl_primitive_desc_t *, const_dnnl_op_desc_t, const_dnnl_primitive_attr_t,       \
	   dnnl_engine_t, const_dnnl_primitive_desc_t))                                      \
	X(dnnl_status_t, dnnl_reorder_primitive_desc_create,                                 \
	  (dnnl_primitive_desc_t *, const dnnl_memory_desc_t *, dnnl_engine_t,                \
	   const dnnl_memory_desc_t *, dnnl_engine_t, const_dnnl_primitive_attr_t))          \
	X(dnnl_status_t, dnnl_primitive_desc_query,                                          \
	  (const_dnnl_primitive_desc_t, dnnl_query_t, int, void *))                          \
	X(const dnnl_memory_desc_t *, dnnl_primitive_desc_query_md,                          \
	  (const_dnnl_primitive_desc_t, dnnl_query_t, int))                                  \
	X(dnnl_status_t, dnnl_primitive_desc_destroy, (dnnl_primitive_desc_t))               \
	X(dnnl_status_t, dnnl_primitive_create, (dnnl_primitive_t *, const_dnnl_primitive_desc_t)) \
	X(dnnl_status_t, dnnl_primitive_destroy, (dnnl_primitive_t))                         \
	X(dnnl_status_t, dnnl_primitive_execute,                                             \
	  (const_dnnl_primitive_t, dnnl_stream_t, int, const dnnl_exec_arg_t *))             \
	X(dnnl_status_t, dnnl_memory_create,                                                 \
	  (dnnl_memory_t *, const dnnl_memory_desc_t *, dnnl_engine_t, void *))              \
	X(dnnl_status_t, dnnl_memory_destroy, (dnnl_memory_t))                               \
	X(dnnl_status_t, dnnl_memory_set_data_handle, (dnnl_memory_t, void *))               \
	X(const dnnl_version_t *, dnnl_version, (void))                                      \
	X(dnnl_cpu_isa_t, dnnl_get_effective_cpu_isa, (void))                                \
	X(void, omp_set_num_threads, (int))

#define NPT_DNNL_MEMBER(ret, name, args) ret(*name) args;
typedef struct {
	NPT_DNNL_FUNCS(NPT_DNNL_MEMBER)
} npt_dnnl_t;
#undef NPT_DNNL_MEMBER

NPT_HIDDEN const npt_dnnl_t *npt_dnnl_load(void);
NPT_HIDDEN const char *npt_dnnl_why(void);

#endif
