/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * stream_field.h - one field of the engines' "--stream A,B,..." options
 * (npushm-bert, npushm-llama): an integer in a range, read with strtoll,
 * not sscanf's %d, whose overflow wraps (4294967297 was read as 1).
 */
#ifndef NPUSHM_APPS_STREAM_FIELD_H
#define NPUSHM_APPS_STREAM_FIELD_H

#include <errno.h>
#include <stdlib.h>

/* the integer at *@s, in [@lo, @hi] and followed by a comma, into *@v; *@s
 * moves past the comma. -1 when there is none. */
static inline int stream_next_field(const char **s, long long lo, long long hi, long long *v)
{
	char *end;

	errno = 0;
	*v = strtoll(*s, &end, 10);
	if (end == *s || errno || *v < lo || *v > hi || *end != ',')
		return -1;
	*s = end + 1;
	return 0;
}

#endif
