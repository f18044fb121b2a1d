// SPDX-License-Identifier: GPL-2.0

//! mlx5's sysfs attribute group in `/sys/class/infiniband/mlx5_N/` (upstream
//! `mlx5_attr_group`, main.c: `hw_rev`, `hca_type`, `board_id`, `fw_pages`, `reg_pages`),
//! installed with `set_sysfs_group()` before registration (upstream
//! `rdma_set_device_sysfs_group()` in `mlx5_ib_stage_ib_reg_init()`).

use crate::ib::device::{Mlx5Ib, Mlx5IbDev};
use core::fmt::Write;
use ib_core_rs::sysfs::{DevAttr, DriverGroup, IbSysfs, SysfsBuf};
use kernel::prelude::*;

fn data(d: &IbSysfs) -> Result<&Mlx5IbDev> {
    d.device::<Mlx5Ib>().map(|x| x.data()).ok_or(ENODEV)
}

fn put(b: &mut SysfsBuf<'_>, s: &CStr) -> Result {
    let s = s.to_str().map_err(|_| EINVAL)?;
    writeln!(b, "{}", s).map_err(|_| EINVAL)
}

fn hw_rev_show(d: &IbSysfs, b: &mut SysfsBuf<'_>) -> Result {
    put(b, &data(d)?.hw_rev()?)
}

fn hca_type_show(d: &IbSysfs, b: &mut SysfsBuf<'_>) -> Result {
    put(b, &data(d)?.hca_type()?)
}

fn board_id_show(d: &IbSysfs, b: &mut SysfsBuf<'_>) -> Result {
    put(b, &data(d)?.board_id()?)
}

fn fw_pages_show(d: &IbSysfs, b: &mut SysfsBuf<'_>) -> Result {
    writeln!(b, "{}", data(d)?.fw_pages().0).map_err(|_| EINVAL)
}

fn reg_pages_show(d: &IbSysfs, b: &mut SysfsBuf<'_>) -> Result {
    writeln!(b, "{}", data(d)?.fw_pages().1).map_err(|_| EINVAL)
}

static HW_REV: DevAttr<IbSysfs> = DevAttr::ro(c"hw_rev", hw_rev_show);
static HCA_TYPE: DevAttr<IbSysfs> = DevAttr::ro(c"hca_type", hca_type_show);
static BOARD_ID: DevAttr<IbSysfs> = DevAttr::ro(c"board_id", board_id_show);
static FW_PAGES: DevAttr<IbSysfs> = DevAttr::ro(c"fw_pages", fw_pages_show);
static REG_PAGES: DevAttr<IbSysfs> = DevAttr::ro(c"reg_pages", reg_pages_show);

/// The group (upstream `mlx5_attr_group`).
pub(crate) static MLX5_GROUP: DriverGroup = DriverGroup {
    name: None,
    attrs: &[&HW_REV, &HCA_TYPE, &BOARD_ID, &FW_PAGES, &REG_PAGES],
};
