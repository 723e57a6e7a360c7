/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * dlpack.c - DLPack (v0.6 ABI, <dlpack/dlpack.h> from Debian's
 * libdlpack-dev) export and import of CPU tensors without copying.
 *
 * Contracts: an exported DLManagedTensor holds one tensor reference, freed
 * by its deleter; strides are exported in elements (as DLPack wants). An
 * imported one becomes a borrowed buffer whose release runs the producer's
 * deleter exactly once, when the last view is freed.
 */
#include "internal.h"

#include <dlpack/dlpack.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	DLManagedTensor m;
	npt_tensor_t *t;
	int64_t shape[NPT_MAX_DIMS], strides[NPT_MAX_DIMS];
} export_t;

static void export_deleter(DLManagedTensor *m)
{
	export_t *e = m->manager_ctx;

	npt_tensor_free(e->t);
	free(e);
}

static int to_dl(npt_dtype_t d, DLDataType *o)
{
	o->lanes = 1;
	o->bits = (uint8_t)(npt_dtype_size(d) * 8);
	switch (d) {
	case NPT_BOOL: case NPT_U8: o->code = kDLUInt; break;
	case NPT_I8: case NPT_I32: case NPT_I64: o->code = kDLInt; break;
	case NPT_BF16: o->code = kDLBfloat; break;
	default: o->code = kDLFloat; break;
	}
	return 1;
}

static int from_dl(DLDataType t, npt_dtype_t *d)
{
	if (t.lanes != 1)
		return 0;
	switch (t.code) {
	case kDLInt:
		*d = t.bits == 8 ? NPT_I8 : t.bits == 32 ? NPT_I32 : t.bits == 64 ? NPT_I64 : NPT_NDTYPES;
		break;
	case kDLUInt:
		*d = t.bits == 8 ? NPT_U8 : NPT_NDTYPES;
		break;
	case kDLFloat:
		*d = t.bits == 16 ? NPT_F16 : t.bits == 32 ? NPT_F32 : t.bits == 64 ? NPT_F64 : NPT_NDTYPES;
		break;
	case kDLBfloat:
		*d = t.bits == 16 ? NPT_BF16 : NPT_NDTYPES;
		break;
	default:
		*d = NPT_NDTYPES;
		break;
	}
	return *d != NPT_NDTYPES;
}

NPT_API npt_status_t npt_tensor_to_dlpack(npt_tensor_t *t, struct DLManagedTensor **out)
{
	npt_status_t s;

	if (out)
		*out = NULL;
	if (!t || !out)
		return npt_fail(NPT_E_INVAL, "to_dlpack: %s is NULL", t ? "out" : "the tensor");
	if ((s = npt_tensor_eval(t)))
		return s;
	if (t->packed_only)
		return npt_plain_refused("to_dlpack", t);
	export_t *e = calloc(1, sizeof(*e));

	if (!e)
		return npt_fail(NPT_E_NOMEM, "to_dlpack: out of memory");
	e->t = npt_tensor_retain(t);
	memcpy(e->shape, t->shape, t->ndim * sizeof(int64_t));
	memcpy(e->strides, t->strides, t->ndim * sizeof(int64_t));
	e->m.dl_tensor.data = npt_tensor_ptr(t);
	e->m.dl_tensor.device.device_type = kDLCPU;
	e->m.dl_tensor.device.device_id = 0;
	e->m.dl_tensor.ndim = t->ndim;
	to_dl(t->dtype, &e->m.dl_tensor.dtype);
	e->m.dl_tensor.shape = e->shape;
	e->m.dl_tensor.strides = e->strides;
	e->m.dl_tensor.byte_offset = 0;
	e->m.manager_ctx = e;
	e->m.deleter = export_deleter;
	*out = &e->m;
	return NPT_OK;
}

static void import_release(void *arg)
{
	DLManagedTensor *m = arg;

	if (m->deleter)
		m->deleter(m);
}

NPT_API npt_status_t npt_tensor_from_dlpack(struct DLManagedTensor *m, bool readonly,
					    npt_tensor_t **out)
{
	npt_dtype_t dt;
	const DLTensor *d;

	if (out)
		*out = NULL;
	if (!m || !out)
		return npt_fail(NPT_E_INVAL, "from_dlpack: %s is NULL", m ? "out" : "the DLPack tensor");
	d = &m->dl_tensor;
	if (d->device.device_type != kDLCPU && d->device.device_type != kDLCUDAHost)
		return npt_fail(NPT_E_UNSUPPORTED, "from_dlpack: device type %d is not CPU memory; "
				"copy the tensor to the host first", d->device.device_type);
	if (!from_dl(d->dtype, &dt))
		return npt_fail(NPT_E_DTYPE, "from_dlpack: DLPack dtype (code %u, %u bits, %u lanes) "
				"has no nptensor equivalent", d->dtype.code, d->dtype.bits,
				d->dtype.lanes);
	if (d->ndim < 0 || d->ndim > NPT_MAX_DIMS)
		return npt_check_shape("from_dlpack", d->ndim, d->shape, NULL);
	/* NULL data stays NULL (from_data refuses it unless empty); an offset
	 * that wraps is no address */
	if (d->data && d->byte_offset > UINTPTR_MAX - (uintptr_t)d->data)
		return npt_fail(NPT_E_OVERFLOW, "from_dlpack: byte_offset %llu past data %p "
				"overflows the address range",
				(unsigned long long)d->byte_offset, d->data);
	return npt_tensor_wrap("from_dlpack", d->data ? (char *)d->data + d->byte_offset : NULL,
			       dt, d->ndim, d->shape, d->strides, readonly ? NPT_BORROW_READONLY : 0,
			       import_release, m, out);
}
