/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * onednn.c - opens oneDNN 2.x at run time (onednn.h says why): libdnnl.so.2,
 * every function of the table, and OpenMP's omp_set_num_threads from the
 * libgomp it brings along. Not in a statically linked program (dlopen there
 * would load a second C library), nor with NPT_GEMM=openblas.
 */
#include "backend.h"
#include "onednn.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* defined in every dynamically linked object, absent in a static program */
extern char _DYNAMIC[] __attribute__((weak, visibility("hidden")));

static npt_dnnl_t D;
static const npt_dnnl_t *loaded;
static char why[256];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
	const char *e = getenv("NPT_GEMM");
	const char *missing = NULL;
	void *lib;

	if (e && !strcmp(e, "openblas")) {
		snprintf(why, sizeof(why), "NPT_GEMM=openblas");
		return;
	}
	if (!_DYNAMIC) {
		snprintf(why, sizeof(why), "a statically linked program does not load oneDNN");
		return;
	}
	lib = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		e = dlerror();
		snprintf(why, sizeof(why), "%s (install Debian's libdnnl2 for the faster GEMM)",
			 e ? e : "cannot open libdnnl.so.2");
		return;
	}
#define NPT_DNNL_SYM(ret, name, args) \
	if (!(*(void **)&D.name = dlsym(lib, #name)) && !missing) \
		missing = #name;
	NPT_DNNL_FUNCS(NPT_DNNL_SYM)
#undef NPT_DNNL_SYM
	if (missing) {
		snprintf(why, sizeof(why), "libdnnl.so.2 has no %s", missing);
		dlclose(lib);
		return;
	}
	if (D.dnnl_version()->major != 2) {
		snprintf(why, sizeof(why), "libdnnl.so.2 says it is version %d",
			 D.dnnl_version()->major);
		dlclose(lib);
		return;
	}
	loaded = &D;
}

const npt_dnnl_t *npt_dnnl_load(void)
{
	pthread_once(&once, load);
	return loaded;
}

const char *npt_dnnl_why(void)
{
	pthread_once(&once, load);
	return why;
}
