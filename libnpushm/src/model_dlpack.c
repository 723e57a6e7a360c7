/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * model_dlpack.c - DLPack (ABI 0.6, Debian's libdlpack-dev) views of tensors.
 *
 * Each DLManagedTensor points straight into the model's read-only mapping
 * (no copy), borrows shape and strides from the manifest and holds a model
 * reference that its deleter drops, so a framework may keep the tensor after
 * the model is detached. Consumers must not write: the pages are mapped
 * read-only and a write faults.
 */
#include <errno.h>
#include <stdlib.h>

#include <dlpack/dlpack.h>

#include "model.h"

struct npi_dl {
	DLManagedTensor mt;
	npushm_model_t *model;
};

static void dl_delete(DLManagedTensor *mt)
{
	struct npi_dl *d = mt ? mt->manager_ctx : NULL;

	if (!d)
		return;
	npi_model_unref(d->model);
	free(d);
}

static bool dl_type(npushm_dtype_t t, DLDataType *out)
{
	out->lanes = 1;
	switch (t) {
	case NPUSHM_DTYPE_U8: out->code = kDLUInt; out->bits = 8; return true;
	case NPUSHM_DTYPE_U16: out->code = kDLUInt; out->bits = 16; return true;
	case NPUSHM_DTYPE_U32: out->code = kDLUInt; out->bits = 32; return true;
	case NPUSHM_DTYPE_U64: out->code = kDLUInt; out->bits = 64; return true;
	case NPUSHM_DTYPE_I8: out->code = kDLInt; out->bits = 8; return true;
	case NPUSHM_DTYPE_I16: out->code = kDLInt; out->bits = 16; return true;
	case NPUSHM_DTYPE_I32: out->code = kDLInt; out->bits = 32; return true;
	case NPUSHM_DTYPE_I64: out->code = kDLInt; out->bits = 64; return true;
	case NPUSHM_DTYPE_F16: out->code = kDLFloat; out->bits = 16; return true;
	case NPUSHM_DTYPE_F32: out->code = kDLFloat; out->bits = 32; return true;
	case NPUSHM_DTYPE_F64: out->code = kDLFloat; out->bits = 64; return true;
	case NPUSHM_DTYPE_BF16: out->code = kDLBfloat; out->bits = 16; return true;
	default: return false;
	}
}

NPUSHM_API npushm_status_t npushm_model_tensor_dlpack(npushm_model_t *m, size_t index,
						      struct DLManagedTensor **outp)
{
	npushm_tensor_t t;
	struct npi_dl *d;
	npushm_status_t st;

	if (!m || !outp)
		return npi_fail(NPUSHM_ERR_INVALID, 0, "npushm_model_tensor_dlpack: NULL argument");
	*outp = NULL;
	st = npushm_model_tensor_at(m, index, &t);
	if (st)
		return st;
	if (!t.data)
		return npi_fail(NPUSHM_ERR_UNSUPPORTED, 0, "tensor '%s' is stored only in its packed "
				"layout (npushm load --packed-only): it has no plain elements for "
				"DLPack; read it through npushm_model_layout_find", t.name);
	d = calloc(1, sizeof(*d));
	if (!d)
		return npi_fail(NPUSHM_ERR_NO_MEMORY, ENOMEM, "cannot allocate a DLPack tensor");
	if (!dl_type(t.dtype, &d->mt.dl_tensor.dtype)) {
		free(d);
		return npi_fail(NPUSHM_ERR_UNSUPPORTED, 0,
				"tensor '%s' has dtype %s, which DLPack 0.6 cannot describe; read it through npushm_model_tensor_find",
				t.name, npushm_dtype_name(t.dtype));
	}
	d->model = m;
	npi_model_ref(m);
	d->mt.dl_tensor.data = (void *)t.data;
	d->mt.dl_tensor.device.device_type = kDLCPU;
	d->mt.dl_tensor.device.device_id = 0;
	d->mt.dl_tensor.ndim = (int)t.ndim;
	d->mt.dl_tensor.shape = (int64_t *)t.shape;
	d->mt.dl_tensor.strides = (int64_t *)t.strides;
	d->mt.dl_tensor.byte_offset = 0;
	d->mt.manager_ctx = d;
	d->mt.deleter = dl_delete;
	*outp = &d->mt;
	return NPUSHM_OK;
}
