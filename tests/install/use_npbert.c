/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * use_npbert.c - a program built only from the installed tree (`pkg-config
 * npbert`): asks libnpbert for an engine without a model and checks the
 * refusal (status and message), and that every status has a description.
 * Prints "ok" and exits 0 on success.
 */
#include <npbert.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	npbert_t *bert = (npbert_t *)&bert;

	if (npbert_create(NULL, NULL, &bert) != NPBERT_ERR_INVALID || bert != NULL ||
	    !*npbert_last_error()) {
		fprintf(stderr, "use_npbert: a NULL model was not refused as INVALID: %s\n",
			npbert_last_error());
		return 1;
	}
	for (int s = NPBERT_OK; s <= NPBERT_ERR_WEIGHTS; s++) {
		const char *t = npbert_strerror((npbert_status_t)s);

		if (!t || !*t) {
			fprintf(stderr, "use_npbert: status %d has no description\n", s);
			return 1;
		}
	}
	npbert_destroy(NULL);
	printf("ok\n");
	return 0;
}
