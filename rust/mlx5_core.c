// SPDX-License-Identifier: GPL-2.0
/*
 * The mlx5_core side of mlx5_ib_rs's hardware interface (see
 * include/rdma_rs_mlx5_core.h and rust/mlx5_core.rs).
 *
 * Linking this file makes mlx5_ib_rs depend on mlx5_core (mlx5_cmd_do is an
 * EXPORT_SYMBOL, not _GPL, so symbol_get() refuses it since Linux 6.6 and a
 * load-time dependency is the only way; upstream mlx5_ib depends on
 * mlx5_core the same way). See Documentation/mlx5.md.
 */
#include <linux/auxiliary_bus.h>
#include <linux/dma-mapping.h>
#include <linux/io.h>
#include <linux/mlx5/cq.h>
#include <linux/mlx5/driver.h>
#include <linux/slab.h>
#include <linux/pci.h>
#include <linux/string.h>

#include "../include/rdma_rs_mlx5_core.h"

/* KBUILD_MODNAME of mlx5_core: its PCI driver's and its modules's name. */
#define MLX5_CORE_NAME "mlx5_core"

static bool rdma_rs_is_mlx5_core_driver(const struct device_driver *drv)
{
	if (!drv)
		return false;
	if (drv->owner)
		return !strcmp(module_name(drv->owner), MLX5_CORE_NAME);
	/* mlx5_core built in: the PCI driver carries the module's name. */
	return !strcmp(drv->name, MLX5_CORE_NAME);
}

struct mlx5_core_dev *rdma_rs_mlx5_adev_mdev(struct auxiliary_device *adev)
{
	struct device *parent = adev->dev.parent;
	struct mlx5_adev *madev;

	/*
	 * Only mlx5_core puts auxiliary devices under the devices its drivers
	 * (the PCI driver, and the SF auxiliary driver) are bound to; any
	 * other `mlx5_core.rdma.N` (a test, another module reusing the name) is
	 * refused before the container_of below reads beyond its
	 * auxiliary_device. The parent's driver is stable here: mlx5_core
	 * deletes its auxiliary devices (which waits for our probe, holding
	 * the device lock) before it unbinds from the parent.
	 */
	if (!parent || !rdma_rs_is_mlx5_core_driver(parent->driver))
		return NULL;
	madev = container_of(adev, struct mlx5_adev, adev);
	if (!madev->mdev || madev->mdev->device != parent)
		return NULL;
	return madev->mdev;
}

int rdma_rs_mlx5_cmd_do(struct mlx5_core_dev *mdev, const void *in, int in_size,
			void *out, int out_size)
{
	/* mlx5_cmd_do() only reads the inbox (copied into command mailboxes). */
	int err = mlx5_cmd_do(mdev, (void *)in, in_size, out, out_size);

	/*
	 * As mlx5_cmd_exec() (upstream mlx5_ib's path) does: a command aborted
	 * because the function is in its error state gets the result mlx5_core
	 * emulates for a smooth teardown (mlx5_cmd_check() ->
	 * mlx5_internal_err_ret_value(): destroy commands succeed, the others
	 * fail with -ENOLINK).
	 */
	if (err == -ENXIO)
		err = mlx5_cmd_check(mdev, err, (void *)in, out);
	return err;
}

const void *rdma_rs_mlx5_caps_cur(struct mlx5_core_dev *mdev, int cap_type,
				  size_t *len)
{
	struct mlx5_hca_cap *cap;

	if (cap_type < 0 || cap_type >= MLX5_CAP_NUM)
		return NULL;
	cap = mdev->caps.hca[cap_type];
	if (!cap)
		return NULL;
	*len = sizeof(cap->cur);
	return cap->cur;
}

void rdma_rs_mlx5_ident(struct mlx5_core_dev *mdev,
			struct rdma_rs_mlx5_ident *out)
{
	/* rust/mlx5_core.rs asserts the same size for its mirror of the struct. */
	BUILD_BUG_ON(sizeof(*out) != 12);
	out->pci_vendor = mdev->pdev->vendor;
	out->pci_device = mdev->pdev->device;
	out->pci_revision = mdev->pdev->revision;
	out->fw_maj = fw_rev_maj(mdev);
	out->fw_min = fw_rev_min(mdev);
	out->fw_sub = fw_rev_sub(mdev);
}

u64 rdma_rs_mlx5_uar_paddr(struct mlx5_core_dev *mdev, u32 index)
{
	/* upstream mlx5_ib uar_index2paddress() */
	unsigned int fw_uars_per_page =
		MLX5_CAP_GEN(mdev, uar_4k) ? MLX5_UARS_IN_PAGE : 1;

	return mdev->bar_addr + (u64)(index / fw_uars_per_page) * PAGE_SIZE;
}

bool rdma_rs_mlx5_wc_support(struct mlx5_core_dev *mdev)
{
	return mlx5_wc_support_get(mdev);
}

void __iomem *rdma_rs_mlx5_uar_map(struct mlx5_core_dev *mdev, u32 index)
{
	unsigned int fw_uars_per_page =
		MLX5_CAP_GEN(mdev, uar_4k) ? MLX5_UARS_IN_PAGE : 1;
	void __iomem *page;

	/* upstream alloc_uars_page(): ioremap() of the system page, not WC */
	page = ioremap(rdma_rs_mlx5_uar_paddr(mdev, index), PAGE_SIZE);
	if (!page)
		return NULL;
	return page + (index % fw_uars_per_page) * MLX5_ADAPTER_PAGE_SIZE;
}

void rdma_rs_mlx5_uar_unmap(void __iomem *uar)
{
	iounmap((void __iomem *)((unsigned long)uar & PAGE_MASK));
}

void rdma_rs_mlx5_uar_write64(void __iomem *uar, u32 offset, u64 be_value)
{
	__be64 v = cpu_to_be64(be_value);

	/* mlx5_write64(): the doorbell's bytes in memory order, one store */
	__raw_writeq(*(u64 *)&v, uar + offset);
}

unsigned int rdma_rs_mlx5_comp_vectors(struct mlx5_core_dev *mdev)
{
	return mlx5_comp_vectors_max(mdev);
}

int rdma_rs_mlx5_comp_eqn(struct mlx5_core_dev *mdev, u16 vector, u32 *eqn)
{
	int n = 0;
	int err = mlx5_comp_eqn_get(mdev, vector, &n);

	if (!err)
		*eqn = n;
	return err;
}

int rdma_rs_mlx5_dma_map_pages(struct device *dev, struct page *const *pages,
			       u32 n, u64 *addrs)
{
	u32 i;

	/* upstream maps every umem DMA_BIDIRECTIONAL (ib_umem_get()). */
	for (i = 0; i < n; i++) {
		dma_addr_t a = dma_map_page(dev, pages[i], 0, PAGE_SIZE,
					    DMA_BIDIRECTIONAL);

		if (dma_mapping_error(dev, a)) {
			rdma_rs_mlx5_dma_unmap_pages(dev, addrs, i);
			return -ENOMEM;
		}
		addrs[i] = a;
	}
	return 0;
}

void rdma_rs_mlx5_dma_unmap_pages(struct device *dev, const u64 *addrs, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++)
		dma_unmap_page(dev, addrs[i], PAGE_SIZE, DMA_BIDIRECTIONAL);
}

struct rdma_rs_mlx5_cq {
	struct mlx5_core_cq mcq;
	rdma_rs_mlx5_event_fn fn;
	void *ctx;
};

/* mcq->comp, from mlx5_eq_comp_int() (hard interrupt). */
static void rdma_rs_mlx5_cq_comp(struct mlx5_core_cq *mcq,
				 struct mlx5_eqe *eqe)
{
	struct rdma_rs_mlx5_cq *cq = container_of(mcq, struct rdma_rs_mlx5_cq, mcq);

	cq->fn(cq->ctx, MLX5_EVENT_TYPE_COMP, mcq->cqn);
}

/* mcq->event, from the async EQ's CQ-error notifier. */
static void rdma_rs_mlx5_cq_event(struct mlx5_core_cq *mcq,
				  enum mlx5_event type)
{
	struct rdma_rs_mlx5_cq *cq = container_of(mcq, struct rdma_rs_mlx5_cq, mcq);

	cq->fn(cq->ctx, type, mcq->cqn);
}

struct rdma_rs_mlx5_cq *rdma_rs_mlx5_create_cq(struct mlx5_core_dev *mdev,
					       const void *in, int in_size,
					       void *out, int out_size,
					       rdma_rs_mlx5_event_fn fn,
					       void *ctx, int *err)
{
	struct rdma_rs_mlx5_cq *cq;
	void *inb;

	cq = kzalloc(sizeof(*cq), GFP_KERNEL);
	inb = kmemdup(in, in_size, GFP_KERNEL);
	if (!cq || !inb) {
		kfree(cq);
		kfree(inb);
		*err = -ENOMEM;
		return NULL;
	}
	cq->fn = fn;
	cq->ctx = ctx;
	/* As upstream mlx5_ib's create_cq_user(): no arm_db, our callbacks. */
	cq->mcq.comp = rdma_rs_mlx5_cq_comp;
	cq->mcq.event = rdma_rs_mlx5_cq_event;
	*err = mlx5_create_cq(mdev, &cq->mcq, inb, in_size, out, out_size);
	kfree(inb);
	if (*err) {
		kfree(cq);
		return NULL;
	}
	return cq;
}

u32 rdma_rs_mlx5_cq_cqn(const struct rdma_rs_mlx5_cq *cq)
{
	return cq->mcq.cqn;
}

int rdma_rs_mlx5_destroy_cq(struct mlx5_core_dev *mdev,
			    struct rdma_rs_mlx5_cq *cq)
{
	int err = mlx5_core_destroy_cq(mdev, &cq->mcq);

	if (!err)
		kfree(cq);
	return err;
}

struct rdma_rs_mlx5_events {
	struct notifier_block nb;
	rdma_rs_mlx5_event_fn fn;
	void *ctx;
};

/* upstream mlx5_ib's rsc_event_notifier() and srq_event_notifier(). */
static int rdma_rs_mlx5_event_notifier(struct notifier_block *nb,
				       unsigned long type, void *data)
{
	struct rdma_rs_mlx5_events *ev =
		container_of(nb, struct rdma_rs_mlx5_events, nb);
	struct mlx5_eqe *eqe = data;
	u32 num;

	switch (type) {
	case MLX5_EVENT_TYPE_PATH_MIG:
	case MLX5_EVENT_TYPE_COMM_EST:
	case MLX5_EVENT_TYPE_SQ_DRAINED:
	case MLX5_EVENT_TYPE_SRQ_LAST_WQE:
	case MLX5_EVENT_TYPE_WQ_CATAS_ERROR:
	case MLX5_EVENT_TYPE_PATH_MIG_FAILED:
	case MLX5_EVENT_TYPE_WQ_INVAL_REQ_ERROR:
	case MLX5_EVENT_TYPE_WQ_ACCESS_ERROR:
		/* QPs only: DCTs, RQs and SQs are not ours. */
		if (eqe->data.qp_srq.type != MLX5_EVENT_QUEUE_TYPE_QP)
			return NOTIFY_DONE;
		fallthrough;
	case MLX5_EVENT_TYPE_SRQ_CATAS_ERROR:
	case MLX5_EVENT_TYPE_SRQ_RQ_LIMIT:
		num = be32_to_cpu(eqe->data.qp_srq.qp_srq_n) & 0xffffff;
		ev->fn(ev->ctx, type, num);
		return NOTIFY_OK;
	case MLX5_EVENT_TYPE_PORT_CHANGE:
		/*
		 * upstream mlx5_ib_event() -> handle_port_change(): the port in
		 * bits 7:4, the subtype; the callee must not sleep.
		 */
		num = ((eqe->data.port.port >> 4) & 0xf) | (eqe->sub_type << 8);
		ev->fn(ev->ctx, type, num);
		return NOTIFY_OK;
	case MLX5_DEV_EVENT_SYS_ERROR:
		/*
		 * upstream mlx5_ib_sys_error_event(): from enter_error_state(), no
		 * EQE (data is the port number); the callee must not sleep.
		 */
		ev->fn(ev->ctx, type, 0);
		return NOTIFY_OK;
	default:
		return NOTIFY_DONE;
	}
}

struct rdma_rs_mlx5_events *
rdma_rs_mlx5_events_register(struct mlx5_core_dev *mdev,
			     rdma_rs_mlx5_event_fn fn, void *ctx)
{
	struct rdma_rs_mlx5_events *ev = kzalloc(sizeof(*ev), GFP_KERNEL);

	if (!ev)
		return NULL;
	ev->fn = fn;
	ev->ctx = ctx;
	ev->nb.notifier_call = rdma_rs_mlx5_event_notifier;
	if (mlx5_notifier_register(mdev, &ev->nb)) {
		kfree(ev);
		return NULL;
	}
	return ev;
}

void rdma_rs_mlx5_events_unregister(struct mlx5_core_dev *mdev,
				    struct rdma_rs_mlx5_events *ev)
{
	mlx5_notifier_unregister(mdev, &ev->nb);
	kfree(ev);
}
