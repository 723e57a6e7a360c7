/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * model_owner.h - the engines' refusal of a model another user published
 * under the name a .safetensors MODEL is loaded as (npushm-bert.<hash>,
 * npushm-llama.<hash>): the name is keyed by the file's hash, but anyone may
 * publish under it, with any bytes and any claimed hash.
 */
#ifndef NPUSHM_APPS_MODEL_OWNER_H
#define NPUSHM_APPS_MODEL_OWNER_H

#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "npushm.h"

/* 0 when @m, found under @name for @file, is the caller's own model; else
 * -1 with what to tell the user in @msg */
static inline int model_of_this_user(const npushm_model_t *m, const char *file, const char *name,
				     char *msg, size_t size)
{
	uint32_t owner = npushm_model_owner_uid(m);

	if (owner == (uint32_t)geteuid())
		return 0;
	snprintf(msg, size, "%s would be loaded as '%s', but that name holds a model of uid %u, not "
		 "one of this user's; uid %u or root can remove it with `npushm rm %s`, or load "
		 "the file under a name of yours with `npushm load %s --name NAME` and run NAME",
		 file, name, owner, owner, name, file);
	return -1;
}

#endif
