/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * name.c - the naming rules shared by both backends.
 *
 * A name is 1..NPUSHM_NAME_MAX bytes of printable ASCII other than space
 * (0x21..0x7e), the rule the kernel module enforces. Checking it here gives
 * the same answer and the same message on both backends.
 */
#include <string.h>

#include "internal.h"

npushm_status_t npi_name_check(const char *name)
{
	size_t i, n;

	if (!name)
		return npi_fail(NPUSHM_ERR_NAME, 0, "no name given (NULL)");
	n = strnlen(name, NPUSHM_NAME_MAX + 1);
	if (n == 0)
		return npi_fail(NPUSHM_ERR_NAME, 0, "the name is empty; use 1 to %d printable characters",
				NPUSHM_NAME_MAX);
	if (n > NPUSHM_NAME_MAX)
		return npi_fail(NPUSHM_ERR_NAME, 0,
				"the name '%.32s...' is longer than %d bytes; choose a shorter one",
				name, NPUSHM_NAME_MAX);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c < 0x21 || c > 0x7e)
			return npi_fail(NPUSHM_ERR_NAME, 0,
					"the name '%s' has the byte 0x%02x at offset %zu; names are printable ASCII without spaces",
					name, c, i);
	}
	return NPUSHM_OK;
}

NPUSHM_API npushm_status_t npushm_name_check(const char *name)
{
	return npi_name_check(name);
}
