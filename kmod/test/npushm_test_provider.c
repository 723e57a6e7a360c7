// SPDX-License-Identifier: GPL-2.0-only
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * npushm_test_provider.c - a provider for the selftests only, registered
 * the way an accelerator driver would register its memory: "test", with a
 * small capacity of its own (module parameter), backed by kernel pages
 * allocated one at a time. It counts what it handed out, so that the tests
 * can check every page came back to it (/sys/module/.../parameters/in_use).
 */
#include <linux/atomic.h>
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/module.h>

#include "../npushm_provider.h"

static unsigned long capacity = 1UL << 20;
module_param(capacity, ulong, 0444);
MODULE_PARM_DESC(capacity, "Bytes the provider may hand out at once (default 1 MiB)");

static atomic_long_t pages_out;

static int pages_out_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%ld\n", atomic_long_read(&pages_out));
}

static const struct kernel_param_ops pages_out_ops = {
	.get = pages_out_get,
};
module_param_cb(pages_out, &pages_out_ops, NULL, 0444);
MODULE_PARM_DESC(pages_out, "Pages handed out and not yet given back");

static void npushm_test_free(struct npushm_provider *provider,
			     struct page **pages, unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++)
		__free_page(pages[i]);
	atomic_long_sub(n, &pages_out);
}

static int npushm_test_alloc(struct npushm_provider *provider,
			     struct page **pages, unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n; i++) {
		pages[i] = alloc_page(GFP_HIGHUSER | __GFP_ZERO | __GFP_ACCOUNT |
				      __GFP_NOWARN | __GFP_RETRY_MAYFAIL);
		if (!pages[i]) {
			atomic_long_add(i, &pages_out);
			npushm_test_free(provider, pages, i);
			return -ENOMEM;
		}
	}
	atomic_long_add(n, &pages_out);
	return 0;
}

static struct npushm_provider npushm_test_provider = {
	.name = "test",
	.owner = THIS_MODULE,
	.chunk_order = 0,
	.alloc = npushm_test_alloc,
	.free = npushm_test_free,
};

static int __init npushm_test_provider_init(void)
{
	npushm_test_provider.capacity = capacity;
	return npushm_provider_register(&npushm_test_provider);
}

static void __exit npushm_test_provider_exit(void)
{
	WARN_ON(npushm_provider_unregister(&npushm_test_provider));
}

module_init(npushm_test_provider_init);
module_exit(npushm_test_provider_exit);

MODULE_DESCRIPTION("npushm selftests: a provider registered from another module");
MODULE_LICENSE("GPL");
