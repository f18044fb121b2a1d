/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C shim between mlx5_ib_rs (Rust) and the in-tree mlx5_core: the parts of
 * mlx5_core's API that are static inlines, struct members or macros
 * (container_of of struct mlx5_adev, mdev->caps, fw_rev_*), plus a thin
 * wrapper of the exported mlx5_cmd_do(). Implemented in rust/mlx5_core.c,
 * declared for Rust by hand in rust/mlx5_core.rs (the types are opaque
 * pointers, integers and byte buffers, so there is nothing for bindgen to
 * lay out).
 */
#ifndef RDMA_RS_MLX5_CORE_H
#define RDMA_RS_MLX5_CORE_H

#include <linux/types.h>

struct auxiliary_device;
struct device;
struct page;
struct mlx5_core_dev;

/* What Rust needs to know about a function, read once at bind time. */
struct rdma_rs_mlx5_ident {
	u16 pci_vendor;
	u16 pci_device;
	u8 pci_revision;
	u16 fw_maj;
	u16 fw_min;
	u16 fw_sub;
};

/*
 * The mlx5_core_dev of a `mlx5_core.rdma.N` auxiliary device, or NULL when
 * the device is not one that mlx5_core created (its parent is not a device
 * bound to mlx5_core, or the mlx5_adev's mdev does not belong to that parent).
 */
struct mlx5_core_dev *rdma_rs_mlx5_adev_mdev(struct auxiliary_device *adev);

/* mlx5_cmd_do(): 0, -EREMOTEIO with status/syndrome in @out, or an errno. */
int rdma_rs_mlx5_cmd_do(struct mlx5_core_dev *mdev, const void *in, int in_size,
			void *out, int out_size);

/*
 * mdev->caps.hca[cap_type]->cur (MLX5_CAP_GEN() and friends read it); NULL
 * if mlx5_core keeps no page of that type. @len gets the page size.
 */
const void *rdma_rs_mlx5_caps_cur(struct mlx5_core_dev *mdev, int cap_type,
				  size_t *len);

/* PCI ids, firmware revision (init segment). */
void rdma_rs_mlx5_ident(struct mlx5_core_dev *mdev,
			struct rdma_rs_mlx5_ident *out);

/*
 * The physical address of UAR @index's system page in BAR 0 (upstream mlx5_ib
 * uar_index2paddress()), for user mappings.
 */
u64 rdma_rs_mlx5_uar_paddr(struct mlx5_core_dev *mdev, u32 index);

/* mlx5_wc_support_get(): whether write-combining UAR mappings work. */
bool rdma_rs_mlx5_wc_support(struct mlx5_core_dev *mdev);

/*
 * The kernel UAR page @index (allocated by ALLOC_UAR), ioremap()ed uncached as
 * upstream mlx5_get_uars_page() maps mdev->priv.uar: the address of the UAR
 * within the mapping, or NULL. Process context. Undone by
 * rdma_rs_mlx5_uar_unmap() with the same address.
 */
void __iomem *rdma_rs_mlx5_uar_map(struct mlx5_core_dev *mdev, u32 index);
void rdma_rs_mlx5_uar_unmap(void __iomem *uar);

/*
 * mlx5_write64(): stores the 8 bytes @be_value (the doorbell as a big-endian
 * number) at @offset of a mapped UAR in one 64-bit MMIO write. Any context.
 */
void rdma_rs_mlx5_uar_write64(void __iomem *uar, u32 offset, u64 be_value);

/* mlx5_comp_vectors_max(): the function's completion vectors. */
unsigned int rdma_rs_mlx5_comp_vectors(struct mlx5_core_dev *mdev);

/* mlx5_comp_eqn_get(): the completion EQ of @vector, created on first use. */
int rdma_rs_mlx5_comp_eqn(struct mlx5_core_dev *mdev, u16 vector, u32 *eqn);

/*
 * dma_map_page() of @n whole pages for @dev (the PCI function mlx5_core
 * drives), DMA_BIDIRECTIONAL as upstream's umems; @addrs gets the bus
 * address of each. 0, or -ENOMEM with nothing left mapped.
 */
int rdma_rs_mlx5_dma_map_pages(struct device *dev, struct page *const *pages,
			       u32 n, u64 *addrs);

/* dma_unmap_page() of what rdma_rs_mlx5_dma_map_pages() mapped. */
void rdma_rs_mlx5_dma_unmap_pages(struct device *dev, const u64 *addrs, u32 n);

/*
 * Device events for Rust: @type is 0 (MLX5_EVENT_TYPE_COMP) for a completion
 * of CQ @num, else an `enum mlx5_event` of the async EQ (CQ_ERROR for CQ @num,
 * QP events for QP @num, SRQ events for SRQ @num). Called in interrupt
 * context (mlx5_core's EQ handlers); must not sleep.
 */
typedef void (*rdma_rs_mlx5_event_fn)(void *ctx, u32 type, u32 num);

struct rdma_rs_mlx5_cq;
struct rdma_rs_mlx5_events;

/*
 * mlx5_create_cq() (CREATE_CQ, then the CQ in its completion EQ's and the
 * async EQ's CQ tables, so that mlx5_eq_comp_int() and the CQ-error
 * notifier call @fn): the CQ, or NULL with *@err = -EREMOTEIO (status in
 * @out), -ENOMEM or mlx5_core's errno. @in is copied (mlx5_create_cq()
 * writes its opcode).
 */
struct rdma_rs_mlx5_cq *rdma_rs_mlx5_create_cq(struct mlx5_core_dev *mdev,
					       const void *in, int in_size,
					       void *out, int out_size,
					       rdma_rs_mlx5_event_fn fn,
					       void *ctx, int *err);

/* The CQN mlx5_core assigned. */
u32 rdma_rs_mlx5_cq_cqn(const struct rdma_rs_mlx5_cq *cq);

/*
 * mlx5_core_destroy_cq() (out of the EQs' tables, DESTROY_CQ, waits for
 * callbacks in progress): 0 and @cq is freed, or mlx5_core's errno and
 * @cq stays (out of the tables: no more events).
 */
int rdma_rs_mlx5_destroy_cq(struct mlx5_core_dev *mdev,
			    struct rdma_rs_mlx5_cq *cq);

/*
 * mlx5_notifier_register() of a notifier that passes the QP and SRQ events
 * of the async EQ to @fn; NULL if out of memory.
 */
struct rdma_rs_mlx5_events *
rdma_rs_mlx5_events_register(struct mlx5_core_dev *mdev,
			     rdma_rs_mlx5_event_fn fn, void *ctx);

/* mlx5_notifier_unregister() (waits for calls in progress), then free. */
void rdma_rs_mlx5_events_unregister(struct mlx5_core_dev *mdev,
				    struct rdma_rs_mlx5_events *ev);

#endif
