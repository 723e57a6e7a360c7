/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * wire.c - the 48-byte header of every message (TCP frames, shm FIFO slots,
 * control messages): filled from the current operation, sealed with an
 * XXH32 checksum, checked and read back into an operation descriptor.
 */
#include "npccl_internal.h"
#include "transport/transport.h"

#include <string.h>
#include <xxhash.h>

void wire_hdr_seal(struct wire_hdr *h)
{
	h->check = XXH32(h, offsetof(struct wire_hdr, check), 0x6e70);
}

bool wire_hdr_valid(const struct wire_hdr *h)
{
	return h->magic == WIRE_MAGIC &&
	       h->check == XXH32(h, offsetof(struct wire_hdr, check), 0x6e70);
}

void wire_hdr_desc(const struct wire_hdr *h, struct op_desc *d)
{
	d->seq = h->seq;
	d->count = h->count;
	d->root = h->root;
	d->coll = h->coll;
	d->dtype = h->dtype;
	d->redop = h->redop;
	d->algo = (uint8_t)h->algo;
}

void p2p_set_hdr(struct npccl_comm *c, struct wire_hdr *h, uint64_t len)
{
	memset(h, 0, sizeof(*h));
	h->magic = WIRE_MAGIC;
	h->type = FRAME_DATA;
	h->coll = c->cur.coll;
	h->dtype = c->cur.dtype;
	h->redop = c->cur.redop;
	h->root = c->cur.root;
	h->src_rank = (uint32_t)c->rank;
	h->seq = c->cur.seq;
	h->count = c->cur.count;
	h->len = len;
	h->algo = c->cur.algo;
	wire_hdr_seal(h);
}
