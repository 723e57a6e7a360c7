/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * test_nodes.c - one sealed copy of a model per NUMA node
 * (NPUSHM_LOAD_PER_NODE): a process pinned to each node's CPU attaches the
 * model and gets that node's copy, whose every page lies on the node
 * (move_pages(2), checked here independently of the library), with the
 * same bytes and content hash as the others; remove removes every copy;
 * a node without room fails the load with the node named and nothing
 * published. check-libnpushm-kmod runs this in a VM of two nodes with one
 * CPU each (VM_NUMA_SPLIT); on a one-node machine there is one copy.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define MAX_NODES 64

/* A sysfs node list ("0-1,3") as a mask. */
static uint64_t node_list(const char *file)
{
	char buf[256] = "", *p = buf, *end;
	uint64_t mask = 0;
	FILE *f = fopen(file, "r");

	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	while (*p && *p != '\n') {
		long a = strtol(p, &end, 10), b = a;

		if (end == p)
			break;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (long i = a; i <= b && i < MAX_NODES; i++)
			mask |= 1ULL << i;
		p = *end == ',' ? end + 1 : end;
	}
	return mask;
}

/* Nodes with CPUs and memory, into @nodes; how many. */
static int nodes_with_cpus(int *nodes)
{
	uint64_t m = node_list("/sys/devices/system/node/has_cpu") &
		     node_list("/sys/devices/system/node/has_memory");
	int n = 0;

	for (int i = 0; i < MAX_NODES; i++)
		if (m & (1ULL << i))
			nodes[n++] = i;
	if (!n)
		nodes[n++] = 0;
	return n;
}

static int first_cpu_of(int node)
{
	char path[96];
	uint64_t cpus;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", node);
	cpus = node_list(path);
	for (int i = 0; i < 64; i++)
		if (cpus & (1ULL << i))
			return i;
	return 0;
}

/* Pages of [p, p + len) not on @node, touched first; -1 on error. */
static long pages_off_node(const void *p, uint64_t len, int node)
{
	uint64_t n = len / 4096, off = 0;
	void **pages = calloc(n, sizeof(*pages));
	int *status = calloc(n, sizeof(*status));
	volatile const char *c = p;

	if (!pages || !status)
		return -1;
	for (uint64_t i = 0; i < n; i++) {
		(void)c[i * 4096];
		pages[i] = (char *)p + i * 4096;
	}
	if (syscall(SYS_move_pages, 0, n, pages, NULL, status, 0))
		off = (uint64_t)-1;
	for (uint64_t i = 0; off != (uint64_t)-1 && i < n; i++)
		off += status[i] != node;
	free(pages);
	free(status);
	return (long)off;
}

/*
 * In a child pinned to @node's first CPU: attach @name and check it maps
 * @node's copy, wholly on @node, with @hash. Exit status: 0 ok, else what
 * failed (1 attach, 2 node, 3 pages, 4 hash).
 */
static int attach_on_node(const char *name, int node, const uint8_t hash[16], uint64_t *id)
{
	int pipefd[2], status;
	cpu_set_t set;
	pid_t pid;

	REQUIRE(pipe(pipefd) == 0);
	pid = fork();
	REQUIRE(pid >= 0);
	if (!pid) {
		npushm_model_info_t mi;
		npushm_model_t *m;

		CPU_ZERO(&set);
		CPU_SET(first_cpu_of(node), &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			_exit(5);
		if (npushm_model_attach(name, &m))
			_exit(1);
		npushm_model_info(m, &mi);
		if (write(pipefd[1], &mi.region_id, 8) != 8)
			_exit(6);
		if (npushm_model_node(m) != node)
			_exit(2);
		if (pages_off_node(npushm_model_base(m), mi.region_size, node) != 0)
			_exit(3);
		if (memcmp(mi.hash, hash, 16))
			_exit(4);
		npushm_model_detach(m);
		_exit(0);
	}
	close(pipefd[1]);
	if (read(pipefd[0], id, 8) != 8)
		*id = 0;
	close(pipefd[0]);
	REQUIRE(waitpid(pid, &status, 0) == pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void copy_name(char *out, size_t size, const char *name, int node)
{
	snprintf(out, size, "%s@node%d", name, node);
}

static bool published(npushm_dev_t *dev, const char *name)
{
	npushm_region_t *r = NULL;
	bool ok = npushm_region_open(dev, name, 0, &r) == NPUSHM_OK;

	npushm_region_close(r);
	return ok;
}

TEST(model_per_node_one_copy_on_each_node)
{
	npushm_load_opts_t per_node = { .flags = NPUSHM_LOAD_PER_NODE };
	const char *name = th_name("pernode");
	const char *file = th_big_model("pn.safetensors", 4 << 20, 31);
	npushm_dev_t *dev = th_dev();
	uint64_t used0 = th_pool_used(dev), ids[MAX_NODES];
	int nodes[MAX_NODES], n = nodes_with_cpus(nodes);
	npushm_load_result_t res, again;
	char copy[300];

	th_diag("%d node(s) with CPUs", n);
	REQUIRE_OK(npushm_model_load(dev, file, name, &per_node, &res));
	CHECK(!res.deduplicated);
	/* n copies: the pool holds n times the model */
	CHECK_EQ(th_pool_used(dev) - used0, (uint64_t)n * res.region_size);
	for (int i = 0; i < n; i++) {
		copy_name(copy, sizeof(copy), name, nodes[i]);
		CHECK(published(dev, copy));
		CHECK_EQ(attach_on_node(name, nodes[i], res.hash, &ids[i]), 0);
		for (int j = 0; j < i; j++)
			CHECK(ids[i] != ids[j]);
	}
	CHECK_EQ(ids[0], res.region_id);
	/* Loading it again per node: nothing to do. */
	REQUIRE_OK(npushm_model_load(dev, file, name, &per_node, &again));
	CHECK(again.already_loaded);
	/* rm removes every copy, and the memory comes back */
	REQUIRE_OK(npushm_model_remove(dev, name));
	CHECK(!published(dev, name));
	for (int i = 0; i < n; i++) {
		copy_name(copy, sizeof(copy), name, nodes[i]);
		CHECK(!published(dev, copy));
	}
	CHECK_EQ(th_pool_used(dev), used0);
	npushm_dev_close(dev);
}

/* Write @val to a module parameter; false if it cannot be written. */
static bool param_set(const char *param, const char *val)
{
	char path[128];
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "/sys/module/npushm/parameters/%s", param);
	f = fopen(path, "w");
	if (!f)
		return false;
	ok = fputs(val, f) >= 0;
	return fclose(f) == 0 && ok;
}

static void param_get(const char *param, char *val, size_t size)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/npushm/parameters/%s", param);
	val[0] = 0;
	f = fopen(path, "r");
	if (f) {
		if (!fgets(val, (int)size, f))
			val[0] = 0;
		fclose(f);
	}
	val[strcspn(val, "\n")] = 0;
}

static uint64_t node_free(int node)
{
	char path[96], line[128];
	unsigned long long kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/meminfo", node);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Node %*d MemFree: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

TEST(model_per_node_full_node_publishes_nothing)
{
	npushm_load_opts_t per_node = { .flags = NPUSHM_LOAD_PER_NODE };
	const char *name = th_name("pnfull");
	const char *file = th_big_model("pnf.safetensors", 32 << 20, 32);
	int nodes[MAX_NODES], n = nodes_with_cpus(nodes), last;
	char cap[64], quota[64], copy[300];
	bool filled = false;
	npushm_dev_t *dev;
	int filler;
	unsigned long mask;
	npushm_status_t st;
	uint64_t used0;

	if (n < 2)
		th_skip("one NUMA node with CPUs: no node to fill while another has room");
	if (!th_is_kmod() || !th_is_root())
		th_skip("fills a node through the module's pool, lifting its limits: kmod as root");
	dev = th_dev();
	used0 = th_pool_used(dev);
	last = nodes[n - 1];
	/* The node, not the pool or the quota, is what runs out. */
	param_get("capacity", cap, sizeof(cap));
	param_get("uid_quota", quota, sizeof(quota));
	REQUIRE(param_set("capacity", "64G") && param_set("uid_quota", "0"));
	/*
	 * Fill it with a region of the instance, bound to the node for the
	 * sizing call only (nothing else of this process may land there), as
	 * much as it gives to within 16 MiB (the rest is its reserve).
	 */
	filler = open(getenv("NPUSHM_DIR"), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	REQUIRE(filler >= 0);
	/* No page fault of ours under the binding (it would OOM-kill us). */
	REQUIRE(mlockall(MCL_CURRENT) == 0);
	mask = 1UL << last;
	for (uint64_t size = (node_free(last) - (8 << 20)) & ~((uint64_t)(1 << 20) - 1);
	     !filled && size > (64 << 20); size -= 16 << 20) {
		REQUIRE(syscall(SYS_set_mempolicy, 2 /* MPOL_BIND */, &mask, 65) == 0);
		filled = !ftruncate(filler, (off_t)size);
		syscall(SYS_set_mempolicy, 0 /* MPOL_DEFAULT */, NULL, 0);
	}
	munlockall();
	REQUIRE(filled);

	st = npushm_model_load(dev, file, name, &per_node, NULL);
	CHECK(st == NPUSHM_ERR_NO_MEMORY || st == NPUSHM_ERR_NO_SPACE);
	snprintf(copy, sizeof(copy), "NUMA node %d", last);
	CHECK(strstr(npushm_last_error(), copy) != NULL);
	CHECK(strstr(npushm_last_error(), "nothing was published") != NULL);
	th_diag("%s", npushm_last_error());
	CHECK(!published(dev, name));
	for (int i = 0; i < n; i++) {
		copy_name(copy, sizeof(copy), name, nodes[i]);
		CHECK(!published(dev, copy));
	}
	close(filler);
	CHECK(param_set("capacity", cap) && param_set("uid_quota", quota));
	CHECK_EQ(th_pool_used(dev), used0);
	npushm_dev_close(dev);
}

TEST(model_per_node_copy_with_other_content_is_refused)
{
	npushm_load_opts_t per_node = { .flags = NPUSHM_LOAD_PER_NODE };
	const char *name = th_name("pnbad"), *other = th_name("pnother");
	const char *f1 = th_big_model("pb1.safetensors", 1 << 20, 33);
	const char *f2 = th_big_model("pb2.safetensors", 1 << 20, 34);
	int nodes[MAX_NODES], node = nodes_with_cpus(nodes) > 0 ? nodes[0] : 0;
	npushm_dev_t *dev = th_dev();
	npushm_load_result_t res;
	npushm_region_t *r;
	char copy[300];
	uint64_t id;

	/* A copy name that holds another model: attach from its node says so. */
	REQUIRE_OK(npushm_model_load(dev, f1, name, NULL, &res));
	REQUIRE_OK(npushm_model_load(dev, f2, other, NULL, NULL));
	REQUIRE_OK(npushm_region_open(dev, other, 0, &r));
	copy_name(copy, sizeof(copy), name, node);
	REQUIRE_OK(npushm_region_publish(r, copy, 0640, NPUSHM_PUBLISH_PERSISTENT));
	npushm_region_close(r);
	CHECK_EQ(attach_on_node(name, node, res.hash, &id), 1);
	/* a per-node load over it is not "already loaded" */
	CHECK_ST(npushm_model_load(dev, f1, name, &per_node, NULL), NPUSHM_ERR_EXISTS);
	CHECK(strstr(npushm_last_error(), "without a copy on every NUMA node") != NULL);
	REQUIRE_OK(npushm_model_remove(dev, name));
	REQUIRE_OK(npushm_model_remove(dev, other));
	CHECK(!published(dev, copy));
	npushm_dev_close(dev);
}

/* What uid 65534 does in model_per_node_copy_of_another_user_is_never_mapped. */
struct squat_ctx {
	const char *name, *copy;
};

/*
 * Publish "NAME@nodeN" for NAME, a model of root's it may read: the same
 * bytes (manifest, hash and size) but one tensor byte changed, sealed.
 */
static void squat_copy(void *arg)
{
	struct squat_ctx *c = arg;
	npushm_dev_t *dev = th_dev();
	npushm_region_t *theirs, *mine;
	unsigned char *src, *dst;

	REQUIRE_OK(npushm_region_open(dev, c->name, 0, &theirs));
	REQUIRE_OK(npushm_region_map(theirs, NPUSHM_PROT_READ, (void **)&src));
	REQUIRE_OK(npushm_region_alloc(dev, npushm_region_size(theirs), 0, &mine));
	REQUIRE_OK(npushm_region_map(mine, NPUSHM_PROT_READ | NPUSHM_PROT_WRITE, (void **)&dst));
	memcpy(dst, src, npushm_region_size(theirs));
	dst[npushm_region_size(theirs) - 1] ^= 0xff;
	REQUIRE_OK(npushm_region_unmap(mine, dst));
	REQUIRE_OK(npushm_region_seal(mine));
	REQUIRE_OK(npushm_region_publish(mine, c->copy, 0644, NPUSHM_PUBLISH_PERSISTENT));
	npushm_region_unmap(theirs, src);
	npushm_region_close(theirs);
	npushm_region_close(mine);
	npushm_dev_close(dev);
}

/*
 * Anyone may publish a name, "NAME@nodeN" too: another user's region under
 * a model's copy name is no copy of it, whatever its manifest claims. Attach
 * maps the model's own region (not the other user's bytes, no CORRUPT), a
 * per-node load does not take it for a copy ("already loaded"), and remove
 * leaves it to its owner.
 */
TEST(model_per_node_copy_of_another_user_is_never_mapped)
{
	npushm_load_opts_t lo = { .mode = 0644, .flags = NPUSHM_LOAD_NO_DEDUP };
	npushm_load_opts_t per_node = { .mode = 0644, .flags = NPUSHM_LOAD_PER_NODE };
	const char *name = th_name("pnsquat");
	const char *f = th_big_model("ps.safetensors", 1 << 20, 35);
	int nodes[MAX_NODES], node = nodes_with_cpus(nodes) > 0 ? nodes[0] : 0;
	struct squat_ctx c = { .name = name };
	npushm_dev_t *dev = th_dev();
	npushm_load_result_t res;
	char copy[300];
	uint64_t id = 0;

	if (!th_is_root())
		th_skip("needs root to switch to uid 65534");
	REQUIRE_OK(npushm_model_load(dev, f, name, &lo, &res));
	copy_name(copy, sizeof(copy), name, node);
	c.copy = copy;
	REQUIRE(th_as_nobody(squat_copy, &c) == 0);
	/* the model's own region (node -1), not uid 65534's */
	CHECK_EQ(attach_on_node(name, node, res.hash, &id), 2);
	CHECK_EQ(id, res.region_id);
	CHECK_ST_MSG(npushm_model_load(dev, f, name, &per_node, NULL), NPUSHM_ERR_EXISTS,
		     "without a copy on every NUMA node");
	REQUIRE_OK(npushm_model_remove(dev, name));
	CHECK(published(dev, copy));
	CHECK_ST(npushm_name_unlink(dev, copy), NPUSHM_OK);
	npushm_dev_close(dev);
}

TEST_HARNESS_MAIN
