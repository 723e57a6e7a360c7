// SPDX-License-Identifier: GPL-2.0
/*
 * npushm_dmabuf_test.c - regions exported as dma-bufs: mmap through the
 * dma-buf, DMA_BUF_IOCTL_SYNC, and a kernel importer (npushm_test.ko, the
 * selftests' own module) that attaches, DMA-maps and reads or writes the
 * buffer; read-only exports refuse device writes. Attacks: a read-only
 * export written through an importer's dma_buf_mmap() or its vmap(), CPU
 * syncs in the wrong direction wiping what the CPU wrote (through
 * swiotlb's bounce buffers), segments longer than the device takes.
 */
#include <sys/mman.h>
#include <linux/dma-buf.h>

#include "npushm_fixture.h"
#include "npushm_test_uapi.h"

#define MiB (1024UL * 1024)
#define IMPORTER NPUSHM_TEST_DEVICE_PATH

static int importer_open(struct __test_metadata *_metadata)
{
	int fd = open(IMPORTER, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		TH_LOG("%s: %s (load kmod/test/npushm_test.ko)", IMPORTER, strerror(errno));
	return fd;
}

static int import(int imp, struct npushm_test_import *req)
{
	return npu_ioctl(imp, NPUSHM_TEST_IOC_IMPORT, req);
}

TEST_F(npushm, dmabuf_mmap_shares_region)
{
	size_t size = 2 * MiB;
	int fd = npu_tmpfile(self->root, size, 0600), buf;
	char *p, *q;

	ASSERT_LE(0, fd);
	buf = npu_export(fd, NPUSHM_EXPORT_RDWR);
	ASSERT_LE(0, buf);
	EXPECT_EQ(FD_CLOEXEC, fcntl(buf, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(O_RDWR, fcntl(buf, F_GETFL) & O_ACCMODE);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, buf, 0);
	ASSERT_NE(MAP_FAILED, p);
	q = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, q);
	npu_fill(p, size, 17);
	EXPECT_TRUE(npu_check(q, size, 17));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, size, PROT_READ, MAP_PRIVATE, buf, 0));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, size + 4096, PROT_READ, MAP_SHARED, buf, 0));
	munmap(p, size);
	munmap(q, size);
	close(buf);
	close(fd);
}

TEST_F(npushm, dmabuf_sync_is_accepted)
{
	static const __u64 ok[] = {
		DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ, DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ,
		DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW, DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW,
		DMA_BUF_SYNC_START | DMA_BUF_SYNC_WRITE, DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE,
	};
	struct dma_buf_sync sync;
	int fd = npu_tmpfile(self->root, MiB, 0600), bufs[2];
	unsigned int i, j;

	ASSERT_LE(0, fd);
	bufs[0] = npu_export(fd, NPUSHM_EXPORT_RDWR);
	bufs[1] = npu_export(fd, 0);
	ASSERT_LE(0, bufs[0]);
	ASSERT_LE(0, bufs[1]);
	for (j = 0; j < 2; j++) {
		for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
			sync.flags = ok[i];
			EXPECT_EQ(0, npu_ioctl(bufs[j], DMA_BUF_IOCTL_SYNC, &sync));
		}
		sync.flags = 0x100;
		EXPECT_EQ(-EINVAL, npu_ioctl(bufs[j], DMA_BUF_IOCTL_SYNC, &sync));
	}
	close(bufs[0]);
	close(bufs[1]);
	close(fd);
}

TEST_F(npushm, dmabuf_export_rejects_bad_requests)
{
	struct npushm_export e = { .flags = 2 };
	int fd = npu_tmpfile(self->root, 0, 0600);

	ASSERT_LE(0, fd);
	/* Unsized: nothing to export. */
	EXPECT_EQ(-EINVAL, npu_export(fd, 0));
	ASSERT_EQ(0, npu_size(fd, 4096));
	EXPECT_EQ(-EINVAL, npu_ioctl(fd, NPUSHM_IOC_EXPORT_DMABUF, &e));
	e.flags = 0;
	e.reserved = 1;
	EXPECT_EQ(-EINVAL, npu_ioctl(fd, NPUSHM_IOC_EXPORT_DMABUF, &e));
	close(fd);
}

TEST_F(npushm, importer_reads_what_user_wrote)
{
	size_t size = 8 * MiB + 3 * 4096, i;
	struct npushm_test_import req = { 0 };
	int fd = npu_tmpfile(self->root, size, 0600), buf, imp = importer_open(_metadata);
	uint64_t sum = 0;
	unsigned char *p;

	ASSERT_LE(0, imp);
	ASSERT_LE(0, fd);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	for (i = 0; i < size; i++)
		p[i] = (i * 7 + i / 4096) & 0xff;
	for (i = 4096; i < size - 100; i++)
		sum += p[i];
	buf = npu_export(fd, 0);
	ASSERT_LE(0, buf);
	req.fd = buf;
	req.op = NPUSHM_TEST_READ_SUM;
	req.offset = 4096;
	req.length = size - 100 - 4096;
	ASSERT_EQ(0, import(imp, &req));
	EXPECT_EQ(sum, req.value);
	EXPECT_EQ(size, req.dma_size);
	EXPECT_EQ(size, req.sg_bytes);
	EXPECT_LE(1, req.sg_nents);
	/* Contiguous chunks merge, up to the device's maximum: fewer segments than pages. */
	EXPECT_LT(req.sg_nents, size / 4096 / 8);
	EXPECT_LE(req.sg_max_seg, req.dev_max_seg);
	munmap(p, size);
	close(buf);
	close(fd);
	close(imp);
}

TEST_F(npushm, importer_writes_what_user_reads)
{
	size_t size = 3 * MiB, i;
	struct npushm_test_import req = { 0 };
	int fd = npu_tmpfile(self->root, size, 0600), buf, imp = importer_open(_metadata);
	unsigned char *p;

	ASSERT_LE(0, imp);
	ASSERT_LE(0, fd);
	buf = npu_export(fd, NPUSHM_EXPORT_RDWR);
	ASSERT_LE(0, buf);
	req.fd = buf;
	req.op = NPUSHM_TEST_WRITE_FILL;
	req.offset = 5000;
	req.length = MiB;
	req.value = 0x5a;
	ASSERT_EQ(0, import(imp, &req));
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	for (i = 0; i < size; i++)
		if (p[i] != ((i >= 5000 && i < 5000 + MiB) ? 0x5a : 0))
			break;
	EXPECT_EQ(size, i);
	munmap(p, size);
	close(buf);
	close(fd);
	close(imp);
}

TEST_F(npushm, readonly_dmabuf_refuses_writes)
{
	struct npushm_test_import req = { 0 };
	int fd = npu_tmpfile(self->root, MiB, 0600), buf, imp = importer_open(_metadata);

	ASSERT_LE(0, imp);
	ASSERT_LE(0, fd);
	buf = npu_export(fd, 0);
	ASSERT_LE(0, buf);
	EXPECT_EQ(O_RDONLY, fcntl(buf, F_GETFL) & O_ACCMODE);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, MiB, PROT_READ | PROT_WRITE, MAP_SHARED, buf, 0));
	EXPECT_EQ(EACCES, errno);
	req.fd = buf;
	req.op = NPUSHM_TEST_WRITE_FILL;
	req.length = 4096;
	EXPECT_EQ(-EACCES, import(imp, &req));
	close(buf);
	close(fd);
	close(imp);
}

TEST_F(npushm, importer_rejects_bad_input)
{
	struct npushm_test_import req = { 0 };
	int fd = npu_tmpfile(self->root, MiB, 0600), buf, imp = importer_open(_metadata);

	ASSERT_LE(0, imp);
	ASSERT_LE(0, fd);
	buf = npu_export(fd, 0);
	ASSERT_LE(0, buf);
	req.op = NPUSHM_TEST_READ_SUM;
	req.fd = fd;		/* a region handle is not a dma-buf */
	EXPECT_EQ(-EINVAL, import(imp, &req));
	req.fd = -1;
	EXPECT_EQ(-EBADF, import(imp, &req));
	req.fd = buf;
	req.offset = MiB;
	req.length = 1;
	EXPECT_EQ(-EINVAL, import(imp, &req));
	req.offset = 1;
	req.length = UINT64_MAX;
	EXPECT_EQ(-EINVAL, import(imp, &req));
	req.offset = 0;
	req.length = 1;
	req.op = 99;
	EXPECT_EQ(-EINVAL, import(imp, &req));
	req.op = NPUSHM_TEST_VMAP_WRITABLE;
	req.offset = MiB;
	EXPECT_EQ(-EINVAL, import(imp, &req));
	close(buf);
	close(fd);
	close(imp);
}

/*
 * Attack: segments as long as the region's 2 MiB chunks went to a device
 * whose maximum segment size is 64 KiB (the DMA API's default).
 */
TEST_F(npushm, segments_respect_the_device_maximum)
{
	size_t size = 4 * MiB;
	struct npushm_test_import req = { 0 };
	int fd = npu_tmpfile(self->root, size, 0600), buf, imp = importer_open(_metadata);

	ASSERT_LE(0, imp);
	ASSERT_LE(0, fd);
	buf = npu_export(fd, 0);
	ASSERT_LE(0, buf);
	req.fd = buf;
	req.op = NPUSHM_TEST_READ_SUM;
	req.length = size;
	ASSERT_EQ(0, import(imp, &req));
	EXPECT_EQ(64 * 1024, req.dev_max_seg);
	EXPECT_LE(req.sg_max_seg, req.dev_max_seg) {
		TH_LOG("a %llu-byte segment for a device that takes %llu",
		       (unsigned long long)req.sg_max_seg, (unsigned long long)req.dev_max_seg);
	}
	EXPECT_EQ(size, req.sg_bytes);
	EXPECT_LE(size / req.dev_max_seg, req.sg_nents);
	close(buf);
	close(fd);
	close(imp);
}

/*
 * Attack: a read-only export was writable through an importer's own mmap
 * (dma_buf_mmap() does not look at the dma-buf's mode) and through the
 * kernel mapping dma_buf_vmap() gave.
 */
TEST_F(npushm, readonly_export_stays_readonly_for_importers)
{
	size_t size = MiB;
	struct npushm_test_import req = { 0 };
	int fd = npu_tmpfile(self->root, size, 0600), ro, rw, imp = importer_open(_metadata);
	unsigned char *p;

	ASSERT_LE(0, imp);
	ASSERT_LE(0, fd);
	ro = npu_export(fd, 0);
	rw = npu_export(fd, NPUSHM_EXPORT_RDWR);
	ASSERT_LE(0, ro);
	ASSERT_LE(0, rw);
	ASSERT_EQ(0, npu_ioctl(imp, NPUSHM_TEST_IOC_SET_MMAP, &ro));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, imp, 0));
	EXPECT_EQ(EACCES, errno);
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, imp, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-1, mprotect(p, size, PROT_READ | PROT_WRITE));
	EXPECT_EQ(0, p[100]);
	munmap(p, size);
	/* The read-write export maps writable through the importer. */
	ASSERT_EQ(0, npu_ioctl(imp, NPUSHM_TEST_IOC_SET_MMAP, &rw));
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, imp, 0);
	ASSERT_NE(MAP_FAILED, p);
	p[100] = 0x42;
	munmap(p, size);

	req.op = NPUSHM_TEST_VMAP_WRITABLE;
	req.offset = 4096;
	req.fd = ro;
	ASSERT_EQ(0, import(imp, &req));
	EXPECT_EQ(0, req.value);
	req.fd = rw;
	req.value = 0;
	ASSERT_EQ(0, import(imp, &req));
	EXPECT_EQ(1, req.value);
	close(imp);
	close(ro);
	close(rw);
	close(fd);
}

static bool swiotlb_forced(void)
{
	char line[4096] = "";
	FILE *f = fopen("/proc/cmdline", "r");

	if (f) {
		if (!fgets(line, sizeof(line), f))
			line[0] = 0;
		fclose(f);
	}
	return strstr(line, "swiotlb=force");
}

/*
 * Attack: CPU access brackets synced every attachment in the direction the
 * caller asked for, not the one it was mapped with. Through a bounce buffer
 * (swiotlb), a begin_cpu_access(READ) on a mapping made for the device to
 * read copied the stale bounce buffer over what the CPU had written since.
 */
TEST_F(npushm, cpu_sync_keeps_each_attachment_direction)
{
	size_t size = 256 * 1024;
	struct npushm_test_attach att = { 0 };
	struct dma_buf_sync sync = { 0 };
	int fd = npu_tmpfile(self->root, size, 0600), buf, imp = importer_open(_metadata);
	char *p;

	if (!swiotlb_forced())
		SKIP(return, "needs swiotlb=force on the kernel command line (the module suite's VM has it)");
	ASSERT_LE(0, imp);
	ASSERT_LE(0, fd);
	buf = npu_export(fd, NPUSHM_EXPORT_RDWR);
	ASSERT_LE(0, buf);
	/* The device will read: the bounce buffer gets the zeroes now. */
	att.fd = buf;
	att.dir = NPUSHM_TEST_DMA_TO_DEVICE;
	ASSERT_EQ(0, npu_ioctl(imp, NPUSHM_TEST_IOC_ATTACH, &att));
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, buf, 0);
	ASSERT_NE(MAP_FAILED, p);
	npu_fill(p, size, 123);
	sync.flags = DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ;
	ASSERT_EQ(0, npu_ioctl(buf, DMA_BUF_IOCTL_SYNC, &sync));
	EXPECT_TRUE(npu_check(p, size, 123)) {
		TH_LOG("what the CPU wrote was replaced by the device's stale copy");
	}
	sync.flags = DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ;
	ASSERT_EQ(0, npu_ioctl(buf, DMA_BUF_IOCTL_SYNC, &sync));
	sync.flags = DMA_BUF_SYNC_START | DMA_BUF_SYNC_RW;
	ASSERT_EQ(0, npu_ioctl(buf, DMA_BUF_IOCTL_SYNC, &sync));
	EXPECT_TRUE(npu_check(p, size, 123));
	sync.flags = DMA_BUF_SYNC_END | DMA_BUF_SYNC_RW;
	ASSERT_EQ(0, npu_ioctl(buf, DMA_BUF_IOCTL_SYNC, &sync));
	munmap(p, size);
	ASSERT_EQ(0, npu_ioctl(imp, NPUSHM_TEST_IOC_DETACH, NULL));
	close(imp);
	close(buf);
	close(fd);
}

TEST_HARNESS_MAIN
