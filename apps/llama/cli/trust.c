/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * trust.c - what npushm-llama says about shared prefixes it did not trust:
 * one "prefix: ..." line on stdout naming the region and its publisher (user
 * name and uid), so that a prefix another user planted under the expected
 * name is seen, not silently skipped or silently in the way of publishing.
 * The rule itself is libnpllama's (npllama.h, "Trust").
 */
#include <pwd.h>
#include <stdio.h>

#include "cli.h"

/* "user NAME (uid N)", "uid N" without a passwd entry, "a user it may not see" */
static const char *who(uint32_t uid, char *buf, size_t len)
{
	struct passwd pw, *p = NULL;
	char tmp[1024];

	if (uid == UINT32_MAX)
		snprintf(buf, len, "a user whose region this run may not read");
	else if (!getpwuid_r((uid_t)uid, &pw, tmp, sizeof(tmp), &p) && p)
		snprintf(buf, len, "user %s (uid %u)", p->pw_name, (unsigned)uid);
	else
		snprintf(buf, len, "uid %u", (unsigned)uid);
	return buf;
}

void prefix_say_untrusted(const npllama_seq_t *seq, int publishing)
{
	char name[NPLLAMA_PREFIX_NAME_SIZE], by[300];
	uint32_t uid;
	int n = npllama_seq_untrusted_prefix(seq, name, sizeof(name), &uid);

	if (!n)
		return;
	if (publishing)
		printf("prefix: not published: the name %s is taken by a prefix of %s, whom this "
		       "run does not trust; that user or root can remove it with `npushm rm %s`\n",
		       name, who(uid, by, sizeof(by)), name);
	else
		printf("prefix: ignored %d untrusted prefix%s: %s%s was published by %s (this run "
		       "only uses prefixes of its own user and of the user who loaded the model)\n",
		       n, n > 1 ? "es" : "", name, n > 1 ? ", the longest," : "",
		       who(uid, by, sizeof(by)));
}
