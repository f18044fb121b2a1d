// SPDX-License-Identifier: GPL-2.0

//! The nldev client of `NETLINK_RDMA` (upstream `drivers/infiniband/core/nldev.c`).
//!
//! So far: `RDMA_NLDEV_CMD_SYS_GET` (`rdma system show`), which needs no device;
//! `RDMA_NLDEV_CMD_GET` (dump and doit) with the attributes rdma-core's device discovery
//! requires (`find_sysfs_devs_nl_cb()`: DEV_INDEX, DEV_NAME, PORT_INDEX, NODE_GUID,
//! DEV_NODE_TYPE; plus FW_VERSION, SYS_IMAGE_GUID, CAP_FLAGS); and
//! `RDMA_NLDEV_CMD_GET_CHARDEV` for "uverbs" (upstream `nldev_get_chardev()` +
//! `ib_uverbs_get_nl_info()`). Port, resource and statistics commands are the core issue's.

use crate::device::DeviceCore;
use crate::netlink::{
    codec::{MsgWriter, NLM_F_MULTI},
    nldev_uapi::*,
    DumpCursor, NlHandler, NlOp, Request,
};
use crate::registry;
use kernel::prelude::*;

/// The state of the nldev client.
pub(crate) struct NlDev;

impl NlHandler for NlDev {
    const OPS: &'static [NlOp<Self>] = &[
        NlOp {
            client: RDMA_NL_NLDEV,
            op: RDMA_NLDEV_CMD_GET,
            doit: Some(get_doit),
            dump: Some(get_dump),
            admin: false,
        },
        NlOp {
            client: RDMA_NL_NLDEV,
            op: RDMA_NLDEV_CMD_GET_CHARDEV,
            doit: Some(get_chardev_doit),
            dump: None,
            admin: false,
        },
        NlOp {
            client: RDMA_NL_NLDEV,
            op: RDMA_NLDEV_CMD_SYS_GET,
            doit: Some(sys_get_doit),
            dump: None,
            admin: false,
        },
    ];
}

/// `RDMA_NODE_IB_CA`.
const RDMA_NODE_IB_CA: u8 = 1;

/// upstream `fill_dev_info()` (the attributes rdma-core needs).
fn fill_dev_info(w: &mut MsgWriter<'_>, dev: &DeviceCore) -> Result {
    let name = dev.name();
    let attrs = dev.attrs();
    w.put_u32(RDMA_NLDEV_ATTR_DEV_INDEX, dev.index())?;
    w.put_str(RDMA_NLDEV_ATTR_DEV_NAME, name.as_bytes())?;
    w.put_u32(RDMA_NLDEV_ATTR_PORT_INDEX, dev.phys_port_cnt())?;
    w.put_u64(RDMA_NLDEV_ATTR_CAP_FLAGS, 0)?;
    w.put_u64(RDMA_NLDEV_ATTR_NODE_GUID, attrs.node_guid)?;
    w.put_u64(RDMA_NLDEV_ATTR_SYS_IMAGE_GUID, attrs.sys_image_guid)?;
    w.put_u8(RDMA_NLDEV_ATTR_DEV_NODE_TYPE, RDMA_NODE_IB_CA)?;
    Ok(())
}

fn req_index(req: &Request<'_>) -> Result<u32> {
    for a in req.msg.attrs() {
        let a = a.map_err(|_| EINVAL)?;
        if a.ty == RDMA_NLDEV_ATTR_DEV_INDEX {
            return a.u32().map_err(|_| EINVAL);
        }
    }
    Err(EINVAL)
}

/// upstream `nldev_get_doit()`: `EINVAL` without `DEV_INDEX` or for an unknown index.
fn get_doit(_: &NlDev, req: &Request<'_>, w: &mut MsgWriter<'_>) -> Result {
    let dev = registry::get_by_index(req_index(req)?).ok_or(EINVAL)?;
    w.begin(
        rdma_nl_get_type(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET),
        0,
        req.seq(),
        req.portid,
    )?;
    fill_dev_info(w, &dev)?;
    w.end()?;
    Ok(())
}

/// upstream `nldev_get_dumpit()`: one `NLM_F_MULTI` message per device, resuming after the
/// index in cursor word 0 (+1).
fn get_dump(
    _: &NlDev,
    req: &Request<'_>,
    cur: &mut DumpCursor<'_>,
    w: &mut MsgWriter<'_>,
) -> Result {
    let mut after = match cur.get(0) {
        0 => None,
        n => Some((n - 1) as u32),
    };
    while let Some(dev) = registry::next_registered(after) {
        let index = dev.core().index();
        w.begin(
            rdma_nl_get_type(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET),
            NLM_F_MULTI,
            req.seq(),
            req.portid,
        )?;
        if fill_dev_info(w, dev.core()).is_err() || w.end().is_err() {
            w.cancel();
            break;
        }
        after = Some(index);
        cur.set(0, u64::from(index) + 1);
    }
    Ok(())
}

/// `huge_encode_dev()`.
fn huge_encode_dev(dev: u32) -> u64 {
    let major = u64::from(dev >> 20);
    let minor = u64::from(dev & 0xfffff);
    (minor & 0xff) | (major << 8) | ((minor & !0xff) << 12)
}

/// upstream `nldev_get_chardev()` for `CHARDEV_TYPE` "uverbs" with a `DEV_INDEX`
/// (`ib_uverbs_get_nl_info()`): `EINVAL` without them, for another type, or for a device
/// without a uverbs char device (upstream: `EOPNOTSUPP` from the client's `get_nl_info`).
fn get_chardev_doit(_: &NlDev, req: &Request<'_>, w: &mut MsgWriter<'_>) -> Result {
    let mut ty = None;
    let mut index = None;
    for a in req.msg.attrs() {
        let a = a.map_err(|_| EINVAL)?;
        match a.ty {
            RDMA_NLDEV_ATTR_CHARDEV_TYPE => ty = Some(a.str().map_err(|_| EINVAL)?),
            RDMA_NLDEV_ATTR_DEV_INDEX => index = Some(a.u32().map_err(|_| EINVAL)?),
            _ => {}
        }
    }
    let ty = ty.ok_or(EINVAL)?;
    if ty.strip_suffix(b"\0").unwrap_or(ty) != b"uverbs" {
        return Err(EINVAL);
    }
    let index = index.ok_or(EINVAL)?;
    let (devnum, devt, abi, driver_id) = crate::uverbs::chardev_of(index).ok_or(EOPNOTSUPP)?;
    let mut name = [0u8; 16];
    let mut n = 0;
    for b in b"uverbs".iter().copied() {
        name[n] = b;
        n += 1;
    }
    let mut digits = [0u8; 10];
    let mut i = digits.len();
    let mut v = devnum;
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for d in digits[i..].iter().copied() {
        if let Some(slot) = name.get_mut(n) {
            *slot = d;
            n += 1;
        }
    }
    w.begin(
        rdma_nl_get_type(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET_CHARDEV),
        0,
        req.seq(),
        req.portid,
    )?;
    w.put_u64(RDMA_NLDEV_ATTR_CHARDEV, huge_encode_dev(devt))?;
    w.put_u64(RDMA_NLDEV_ATTR_CHARDEV_ABI, u64::from(abi))?;
    w.put_str(RDMA_NLDEV_ATTR_CHARDEV_NAME, name.get(..n).unwrap_or(&[]))?;
    w.put_u32(RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID, driver_id)?;
    w.end()?;
    Ok(())
}

/// Builds the `SYS_GET` reply (upstream `nldev_sys_get_doit()`): netns mode shared (1),
/// privileged Q_Key mode off (0), monitor supported (1), copy-on-fork supported (1).
pub(crate) fn sys_get_reply(w: &mut MsgWriter<'_>, seq: u32, portid: u32) -> Result {
    w.begin(
        rdma_nl_get_type(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET),
        0,
        seq,
        portid,
    )?;
    w.put_u8(RDMA_NLDEV_SYS_ATTR_NETNS_MODE, 1)?;
    w.put_u8(RDMA_NLDEV_SYS_ATTR_PRIVILEGED_QKEY_MODE, 0)?;
    w.put_u8(RDMA_NLDEV_SYS_ATTR_MONITOR_MODE, 1)?;
    w.put_u8(RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1)?;
    w.end()?;
    Ok(())
}

fn sys_get_doit(_: &NlDev, req: &Request<'_>, w: &mut MsgWriter<'_>) -> Result {
    sys_get_reply(w, req.seq(), req.portid)
}
