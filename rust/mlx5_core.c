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
#include <linux/mlx5/driver.h>
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
	return mlx5_cmd_do(mdev, (void *)in, in_size, out, out_size);
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
