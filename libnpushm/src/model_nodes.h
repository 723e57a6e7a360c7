/* SPDX-License-Identifier: MIT */
/* SPDX-FileCopyrightText: 2026 The npushm authors */
/*
 * model_nodes.h - NUMA nodes for per-node model copies (model_nodes.c):
 * the nodes that get a copy, the calling thread's node, the copies' names,
 * placing an allocation on a node and checking where pages are.
 */
#ifndef NPUSHM_MODEL_NODES_H
#define NPUSHM_MODEL_NODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NPI_MAX_NODES 64
/* Copy N of model NAME is published as NAME NPI_NODE_COPY_INFIX N. */
#define NPI_NODE_COPY_INFIX "@node"

/* Nodes with CPUs and memory, ascending, into @nodes; their count (>= 1). */
int npi_nodes_with_cpus(int nodes[NPI_MAX_NODES]);
/* The highest possible node number (0 without NUMA). */
int npi_node_possible_max(void);
/* The node of the CPU the calling thread runs on, or -1. */
int npi_node_of_thread(void);
/* "NAME@nodeN" into @out. */
void npi_node_copy_name(const char *name, int node, char *out, size_t size);
/* Pages of the mapped [p, p + len) not on @node (move_pages(2) query; they must be mapped), or -1. */
long npi_node_pages_off(const void *p, uint64_t len, long page, int node);

#endif
