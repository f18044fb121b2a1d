// SPDX-License-Identifier: GPL-2.0
/*
 * C shim for rust/page_ref.rs: get_page() and put_page() are static inlines.
 * Exported because mlx5_ib_rs (the simulated IOMMU) holds page references of
 * the core's pinned user memory and may inline PageRef's methods.
 */

#include <linux/export.h>
#include <linux/mm.h>

void rdma_rs_page_get(struct page *page);
void rdma_rs_page_put(struct page *page);

void rdma_rs_page_get(struct page *page)
{
	get_page(page);
}
EXPORT_SYMBOL_GPL(rdma_rs_page_get);

void rdma_rs_page_put(struct page *page)
{
	put_page(page);
}
EXPORT_SYMBOL_GPL(rdma_rs_page_put);
