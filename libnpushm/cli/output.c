/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * output.c - what every npushm command prints with: errors in text or JSON
 * (cli_fail), JSON results, sizes in words, status names, text from files
 * and other users made safe for a terminal (cli_text), and the backend
 * opened as the options say. Below the commands and the dispatcher
 * (npushm.c); calls nothing of theirs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char *cli_status_name(npushm_status_t st)
{
	static const char *const names[] = {
		"OK", "INVALID", "NO_MEMORY", "NO_SPACE", "QUOTA", "NOT_FOUND", "EXISTS",
		"ACCESS", "SEALED", "BUSY", "NAME", "UNSUPPORTED", "NO_DEVICE", "IO", "FORMAT",
		"CORRUPT", "PROTOCOL", "SYSTEM",
	};

	return (unsigned)st < sizeof(names) / sizeof(names[0]) ? names[st] : "UNKNOWN";
}

int cli_print_json(struct json_object *obj)
{
	puts(json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(obj);
	return 0;
}

/* Bytes of the well-formed UTF-8 sequence at @s other than a C1 control, else 0. */
static size_t utf8_printable_len(const unsigned char *s)
{
	size_t n, i;
	uint32_t c;

	if (s[0] < 0xc2 || s[0] > 0xf4)
		return 0;
	n = s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : 4;
	c = s[0] & (0x7f >> n);
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
	    (c >= 0xd800 && c <= 0xdfff) || (c >= 0x80 && c <= 0x9f))
		return 0;
	return n;
}

/*
 * @s with the bytes it may not hold written as \xNN. For JSON (@json) every
 * ASCII byte and well-formed UTF-8 sequence stays (C1 controls too: JSON
 * escapes them itself); for a terminal only printable ASCII and UTF-8
 * outside the C1 controls.
 */
static char *escape_text(const char *s, int json)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	char *out = malloc(4 * strlen((const char *)p) + 1), *o = out;

	if (!out)
		return NULL;
	while (*p) {
		size_t n;

		if (*p < 0x80)
			n = json || (*p >= 0x20 && *p != 0x7f);
		else if (!(n = utf8_printable_len(p)) && json && p[0] == 0xc2 && p[1] >= 0x80 &&
			 p[1] <= 0x9f)
			n = 2;
		if (n) {
			memcpy(o, p, n);
			o += n;
			p += n;
		} else {
			o += sprintf(o, "\\x%02x", *p++);
		}
	}
	*o = '\0';
	return out;
}

char *cli_text(const char *s)
{
	return escape_text(s, 0);
}

char *cli_utf8(const char *s)
{
	return escape_text(s, 1);
}

struct json_object *cli_json_string(const char *s)
{
	char *u = cli_utf8(s);
	struct json_object *j = json_object_new_string(u ? u : "");

	free(u);
	return j;
}

void cli_many_init(struct cli_many *m, const struct cli_opts *o, const char *key)
{
	memset(m, 0, sizeof(*m));
	m->o = o;
	m->key = key;
	m->errs = o->json ? json_object_new_array() : NULL;
}

void cli_many_fail(struct cli_many *m, const char *arg, npushm_status_t st)
{
	const char *msg = *npushm_last_error() ? npushm_last_error() : npushm_strerror(st);
	char *safe = cli_text(msg);

	fprintf(stderr, "npushm: %s\n", safe ? safe : "(out of memory)");
	free(safe);
	if (!m->failed++) {
		m->first = st;
		snprintf(m->first_msg, sizeof(m->first_msg), "%s", msg);
	}
	if (m->errs) {
		struct json_object *j = json_object_new_object();

		json_object_object_add(j, m->key, cli_json_string(arg));
		json_object_object_add(j, "status", json_object_new_string(cli_status_name(st)));
		json_object_object_add(j, "message", cli_json_string(msg));
		json_object_array_add(m->errs, j);
	}
}

int cli_many_end(struct cli_many *m, struct json_object *root, const char *what)
{
	if (root && m->failed) {
		struct json_object *err = json_object_new_object();
		char msg[1200];

		if (m->failed == 1)
			snprintf(msg, sizeof(msg), "%s", m->first_msg);
		else
			snprintf(msg, sizeof(msg), "%d of %d %s; the first: %s", m->failed,
				 m->o->nargs, what, m->first_msg);
		json_object_object_add(err, "status", json_object_new_string(cli_status_name(m->first)));
		json_object_object_add(err, "message", cli_json_string(msg));
		json_object_object_add(root, "error", err);
		json_object_object_add(root, "errors", m->errs);
	} else if (m->errs) {
		json_object_put(m->errs);
	}
	m->errs = NULL;
	if (root)
		cli_print_json(root);
	if (m->failed && m->o->nargs > 1)
		fprintf(stderr, "npushm: %d of %d %s\n", m->failed, m->o->nargs, what);
	return m->failed ? 1 : 0;
}

int cli_fail(const struct cli_opts *o, npushm_status_t st, const char *msg)
{
	const char *text = msg ? msg : npushm_last_error();
	char *safe;

	if (!*text)
		text = npushm_strerror(st);
	safe = cli_text(text);
	fprintf(stderr, "npushm: %s\n", safe ? safe : "(out of memory)");
	free(safe);
	if (o && o->json) {
		struct json_object *err = json_object_new_object();
		struct json_object *root = json_object_new_object();

		json_object_object_add(err, "status", json_object_new_string(cli_status_name(st)));
		json_object_object_add(err, "message", cli_json_string(text));
		json_object_object_add(root, "error", err);
		cli_print_json(root);
	}
	return 1;
}

npushm_dev_t *cli_open_dev(const struct cli_opts *o, int *rc)
{
	npushm_dev_t *dev;
	npushm_status_t st = npushm_dev_open(o->backend, &dev);

	if (st) {
		*rc = cli_fail(o, st, NULL);
		return NULL;
	}
	return dev;
}

const char *cli_size(unsigned long long b, char *buf, unsigned len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)b;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", b);
	else
		snprintf(buf, len, "%.1f %s", v, unit[u]);
	return buf;
}
