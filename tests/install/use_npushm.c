/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * use_npushm.c - a program built only from the installed tree (headers and
 * flags from `pkg-config npushm`): allocates a region on the posix backend,
 * publishes it under a name, opens it again by that name and reads back what
 * was written; hashes a file (the content hash, known value from xxhsum:
 * the static link takes libxxhash's archive, which lacks its SIMD dispatch).
 * Also compiles the installed UAPI header. Prints "ok" and exits
 * 0 on success; otherwise the library's message and 1.
 */
#include <linux/npushm.h>
#include <npushm.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int fail(const char *what, npushm_status_t st)
{
	fprintf(stderr, "use_npushm: %s: %s (%s)\n", what, npushm_strerror(st), npushm_last_error());
	return 1;
}

int main(void)
{
	npushm_region_t *r, *r2;
	npushm_status_t st;
	npushm_dev_t *dev;
	char name[64], path[96], hex[33];
	uint8_t hash[16];
	void *p, *q;
	FILE *f;

	snprintf(name, sizeof(name), "install-test-%d", (int)getpid());
	if ((st = npushm_dev_open(NPUSHM_BACKEND_POSIX, &dev)))
		return fail("open the posix backend", st);
	if ((st = npushm_region_alloc(dev, 4096, 0, &r)))
		return fail("alloc", st);
	if ((st = npushm_region_map(r, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, &p)))
		return fail("map", st);
	strcpy(p, "written through the installed libnpushm");
	if ((st = npushm_region_publish(r, name, 0600, NPUSHM_PUBLISH_PERSISTENT)))
		return fail("publish", st);
	if ((st = npushm_region_open(dev, name, 0, &r2)))
		return fail("open by name", st);
	if ((st = npushm_region_map(r2, NPUSHM_PROT_READ, &q)))
		return fail("map by name", st);
	if (strcmp(q, "written through the installed libnpushm")) {
		fprintf(stderr, "use_npushm: the region opened by name holds '%.40s'\n", (char *)q);
		return 1;
	}
	npushm_region_unmap(r2, q);
	npushm_region_close(r2);
	npushm_region_unmap(r, p);
	if ((st = npushm_name_unlink(dev, name)))
		return fail("unlink", st);
	npushm_region_close(r);
	npushm_dev_close(dev);

	/* printf TEXT | xxhsum -H2 | cut -d' ' -f1 | xxd -r -p | xxhsum -H2 */
	snprintf(path, sizeof(path), "/tmp/%s", name);
	f = fopen(path, "w");
	if (!f || fputs("written through the installed libnpushm", f) < 0 || fclose(f)) {
		perror("use_npushm: write the file to hash");
		return 1;
	}
	st = npushm_file_hash(path, hash, hex);
	unlink(path);
	if (st)
		return fail("hash a file", st);
	if (strcmp(hex, "05a9fdda669e5d6ba7361b9985712399")) {
		fprintf(stderr, "use_npushm: content hash %s, xxhsum gives 05a9fdda669e5d6ba7361b9985712399\n", hex);
		return 1;
	}
	printf("ok (ioctl ABI version %d)\n", NPUSHM_ABI_VERSION);
	return 0;
}
