// SPDX-License-Identifier: GPL-2.0
/* C shim for rust/eventfd.rs: eventfd_signal() is a static inline; no Rust binding in 7.3. */

#include <linux/err.h>
#include <linux/eventfd.h>

void *rdma_rs_eventfd_ctx_fdget(int fd);
void rdma_rs_eventfd_signal(void *ctx);
void rdma_rs_eventfd_ctx_put(void *ctx);

void *rdma_rs_eventfd_ctx_fdget(int fd)
{
	return eventfd_ctx_fdget(fd);
}

void rdma_rs_eventfd_signal(void *ctx)
{
	eventfd_signal(ctx);
}

void rdma_rs_eventfd_ctx_put(void *ctx)
{
	eventfd_ctx_put(ctx);
}
