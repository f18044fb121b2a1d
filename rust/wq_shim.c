// SPDX-License-Identifier: GPL-2.0
/*
 * C shim for rust/wq.rs: alloc_workqueue() and flush_workqueue() are macros.
 */

#include <linux/workqueue.h>

struct workqueue_struct *rdma_rs_alloc_wq(const char *name);
void rdma_rs_flush_wq(struct workqueue_struct *wq);
void rdma_rs_destroy_wq(struct workqueue_struct *wq);
struct workqueue_struct *rdma_rs_alloc_ordered_wq(const char *name);

struct workqueue_struct *rdma_rs_alloc_wq(const char *name)
{
	/* Unbound: the work items sleep (port cache refresh, client event handlers). */
	return alloc_workqueue("%s", WQ_UNBOUND, 0, name);
}

void rdma_rs_flush_wq(struct workqueue_struct *wq)
{
	flush_workqueue(wq);
}

void rdma_rs_destroy_wq(struct workqueue_struct *wq)
{
	destroy_workqueue(wq);
}

struct workqueue_struct *rdma_rs_alloc_ordered_wq(const char *name)
{
	/* upstream roce_gid_mgmt_init(): gid_cache_wq, ordered (address events in order). */
	return alloc_ordered_workqueue("%s", 0, name);
}
