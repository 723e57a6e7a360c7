/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * use_npllama.c - a program built only from the installed tree (`pkg-config
 * npllama`): asks libnpllama for an engine without a model and checks the
 * refusal (status and message), that every status has a description, and
 * samples the larger of two logits greedily. Prints "ok" and exits 0 on
 * success.
 */
#include <npllama.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	npllama_t *llm = (npllama_t *)&llm;
	const float logits[2] = { 0.25f, 1.5f };
	int64_t token = -1;

	if (npllama_create(NULL, NULL, &llm) != NPLLAMA_ERR_INVALID || llm != NULL ||
	    !*npllama_last_error()) {
		fprintf(stderr, "use_npllama: a NULL model was not refused as INVALID: %s\n",
			npllama_last_error());
		return 1;
	}
	for (int s = NPLLAMA_OK; s <= NPLLAMA_ERR_COMM; s++) {
		const char *t = npllama_strerror((npllama_status_t)s);

		if (!t || !*t) {
			fprintf(stderr, "use_npllama: status %d has no description\n", s);
			return 1;
		}
	}
	if (npllama_sample(logits, 2, NULL, NULL, &token) != NPLLAMA_OK || token != 1) {
		fprintf(stderr, "use_npllama: greedy sampling picked %lld: %s\n", (long long)token,
			npllama_last_error());
		return 1;
	}
	npllama_destroy(NULL);
	printf("ok\n");
	return 0;
}
