// SPDX-License-Identifier: GPL-2.0

//! Device, port, char device and system information: `GET`, `PORT_GET`, `GET_CHARDEV` and
//! `SYS_GET` (upstream `fill_dev_info()`, `fill_port_info()`, `nldev_get_chardev()`,
//! `nldev_sys_get_doit()`).

use super::request::{
    dump_indexed, fill_handle, get_u32, parse, put_msg, req_device, ty, DeviceReply, NlDev,
};
use crate::attr::LinkLayer;
use crate::client;
use crate::client::ClientNlInfo;
use crate::ib_device::IbDevice;
use crate::netlink::codec::MsgWriter;
use crate::netlink::nldev_uapi::*;
use crate::netlink::DumpCursor;
use crate::netlink::Request;
use kernel::prelude::*;

/// upstream `fill_dev_info()`.
///
/// # Errors
///
/// `EMSGSIZE` when the message is full.
pub(crate) fn fill_dev_info(wr: &mut MsgWriter<'_>, dev: &dyn IbDevice) -> Result {
    let core = dev.core();
    let attrs = core.attrs();
    fill_handle(wr, core)?;
    wr.put_u32(RDMA_NLDEV_ATTR_PORT_INDEX, core.phys_port_cnt())?;
    wr.put_u64(RDMA_NLDEV_ATTR_CAP_FLAGS, attrs.device_cap_flags)?;
    let mut fw = [0u8; 64];
    let n = dev.fw_str(&mut fw);
    // A device without firmware has no FW_VERSION.
    if n != 0 {
        wr.put_str(RDMA_NLDEV_ATTR_FW_VERSION, &fw[..n])?;
    }
    wr.put_u64(RDMA_NLDEV_ATTR_NODE_GUID, attrs.node_guid)?;
    wr.put_u64(RDMA_NLDEV_ATTR_SYS_IMAGE_GUID, attrs.sys_image_guid)?;
    wr.put_u8(RDMA_NLDEV_ATTR_DEV_NODE_TYPE, crate::sysfs::RDMA_NODE_IB_CA)?;
    // No adaptive CQ moderation (upstream `use_cq_dim`).
    wr.put_u8(RDMA_NLDEV_ATTR_DEV_DIM, 0)?;
    // upstream RDMA_NAME_ASSIGN_TYPE_UNKNOWN.
    wr.put_u8(RDMA_NLDEV_ATTR_NAME_ASSIGN_TYPE, 0)?;
    // The protocol of the first port, as upstream.
    let proto: &[u8] = match core.port_immutable(1).map(|i| i.link_layer) {
        Ok(LinkLayer::Ethernet) => b"roce",
        _ => b"ib",
    };
    Ok(wr.put_str(RDMA_NLDEV_ATTR_DEV_PROTOCOL, proto)?)
}

/// upstream `fill_port_info()`.
///
/// # Errors
///
/// `EINVAL` for a bad port, the driver's `query_port` error, `EMSGSIZE` when the message is
/// full.
pub(crate) fn fill_port_info(wr: &mut MsgWriter<'_>, dev: &dyn IbDevice, port: u32) -> Result {
    let core = dev.core();
    fill_handle(wr, core)?;
    wr.put_u32(RDMA_NLDEV_ATTR_PORT_INDEX, port)?;
    let a = dev.query_port_attr(port)?;
    if core.port_immutable(port)?.link_layer == LinkLayer::Infiniband {
        wr.put_u64(RDMA_NLDEV_ATTR_CAP_FLAGS, u64::from(a.port_cap_flags))?;
        wr.put_u64(RDMA_NLDEV_ATTR_SUBNET_PREFIX, a.subnet_prefix)?;
        wr.put_u32(RDMA_NLDEV_ATTR_LID, a.lid)?;
        wr.put_u32(RDMA_NLDEV_ATTR_SM_LID, a.sm_lid)?;
        wr.put_u8(RDMA_NLDEV_ATTR_LMC, a.lmc)?;
    }
    wr.put_u8(RDMA_NLDEV_ATTR_PORT_STATE, a.state as u8)?;
    wr.put_u8(RDMA_NLDEV_ATTR_PORT_PHYS_STATE, a.phys_state)?;
    // upstream: the port's netdev (`ib_device_get_netdev()`); devices are shared by every
    // network namespace here, so no `net_eq()` filter.
    if let Some(nd) = core.netdev(port) {
        wr.put_u32(RDMA_NLDEV_ATTR_NDEV_INDEX, nd.ifindex())?;
        wr.put_str(RDMA_NLDEV_ATTR_NDEV_NAME, nd.name().as_bytes())?;
    }
    Ok(())
}

/// `GET` (upstream `nldev_get_doit()`, `nldev_get_dumpit()`): `EINVAL` without `DEV_INDEX`
/// or for an unknown index.
pub(super) struct DevInfo;

impl DeviceReply for DevInfo {
    const CMD: u16 = RDMA_NLDEV_CMD_GET;
    const FILL: fn(&mut MsgWriter<'_>, &dyn IbDevice) -> Result = fill_dev_info;
}

/// upstream `nldev_port_get_doit()` (whose reply carries the `GET` type, as upstream's).
pub(super) fn port_get_doit(_: &NlDev, req: &Request<'_>, wr: &mut MsgWriter<'_>) -> Result {
    let tb = parse(req)?;
    let tb = &tb[..];
    let port = get_u32(tb, RDMA_NLDEV_ATTR_PORT_INDEX)?;
    let dev = req_device(tb)?;
    let port = port.ok_or(EINVAL)?;
    if port == 0 || port > dev.phys_port_cnt() {
        return Err(EINVAL);
    }
    put_msg(req, wr, RDMA_NLDEV_CMD_GET, 0, |wr| {
        fill_port_info(wr, &**dev.device(), port)
    })
}

/// upstream `nldev_port_get_dumpit()`: the ports of the device `DEV_INDEX` (required), from
/// cursor word 0 on.
pub(super) fn port_get_dump(
    _: &NlDev,
    req: &Request<'_>,
    cur: &mut DumpCursor<'_>,
    wr: &mut MsgWriter<'_>,
) -> Result {
    let tb = parse(req)?;
    let tb = &tb[..];
    let dev = req_device(tb)?;
    let ports = dev.phys_port_cnt() as usize;
    // Item i is port i + 1.
    dump_indexed(req, cur, wr, RDMA_NLDEV_CMD_PORT_GET, ports, |wr, i| {
        fill_port_info(wr, &**dev.device(), i as u32 + 1)
    });
    Ok(())
}

/// `huge_encode_dev()` of a `dev_t` (12-bit major, 20-bit minor).
pub(crate) fn huge_encode_dev(dev: u32) -> u64 {
    let major = u64::from(dev >> 20);
    let minor = u64::from(dev & 0xfffff);
    (minor & 0xff) | (major << 8) | ((minor & !0xff) << 12)
}

/// Builds the `GET_CHARDEV` reply from a client's answer.
///
/// # Errors
///
/// `EMSGSIZE` when the message is full.
pub(crate) fn chardev_reply(
    wr: &mut MsgWriter<'_>,
    seq: u32,
    portid: u32,
    info: &ClientNlInfo,
) -> Result {
    wr.begin(ty(RDMA_NLDEV_CMD_GET_CHARDEV), 0, seq, portid)?;
    if let Some(id) = info.driver_id {
        wr.put_u32(RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID, id)?;
    }
    wr.put_u64(RDMA_NLDEV_ATTR_CHARDEV, huge_encode_dev(info.devt))?;
    wr.put_u64(RDMA_NLDEV_ATTR_CHARDEV_ABI, info.abi)?;
    wr.put_str(RDMA_NLDEV_ATTR_CHARDEV_NAME, info.name.as_bytes())?;
    Ok(wr.end()?)
}

/// upstream `nldev_get_chardev()`: `EINVAL` without `CHARDEV_TYPE`, for an unknown
/// `DEV_INDEX`, a bad port or a `PORT_INDEX` without a device; `EOPNOTSUPP` when no client of
/// that name answers.
pub(super) fn get_chardev_doit(_: &NlDev, req: &Request<'_>, wr: &mut MsgWriter<'_>) -> Result {
    let tb = parse(req)?;
    let tb = &tb[..];
    let name = tb[RDMA_NLDEV_ATTR_CHARDEV_TYPE as usize]
        .ok_or(EINVAL)?
        .str()
        .map_err(|_| EINVAL)?;
    // nla_strscpy(): up to the first NUL.
    let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
    let port = get_u32(tb, RDMA_NLDEV_ATTR_PORT_INDEX)?;
    let info = if tb[RDMA_NLDEV_ATTR_DEV_INDEX as usize].is_some() {
        let dev = req_device(tb)?;
        if let Some(p) = port {
            if p == 0 || p > dev.phys_port_cnt() {
                return Err(EINVAL);
            }
        }
        client::get_nl_info(Some(&dev), name, port)?
    } else if port.is_some() {
        return Err(EINVAL);
    } else {
        client::get_nl_info(None, name, None)?
    };
    chardev_reply(wr, req.seq(), req.portid, &info)
}

/// Builds the `SYS_GET` reply (upstream `nldev_sys_get_doit()`): netns mode shared (1),
/// privileged Q_Key mode off (0), monitor supported (1), copy-on-fork supported (1).
///
/// # Errors
///
/// `EMSGSIZE` when the message is full.
pub(crate) fn sys_get_reply(wr: &mut MsgWriter<'_>, seq: u32, portid: u32) -> Result {
    wr.begin(ty(RDMA_NLDEV_CMD_SYS_GET), 0, seq, portid)?;
    wr.put_u8(RDMA_NLDEV_SYS_ATTR_NETNS_MODE, 1)?;
    wr.put_u8(RDMA_NLDEV_SYS_ATTR_PRIVILEGED_QKEY_MODE, 0)?;
    wr.put_u8(RDMA_NLDEV_SYS_ATTR_MONITOR_MODE, 1)?;
    wr.put_u8(RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1)?;
    Ok(wr.end()?)
}

pub(super) fn sys_get_doit(_: &NlDev, req: &Request<'_>, wr: &mut MsgWriter<'_>) -> Result {
    sys_get_reply(wr, req.seq(), req.portid)
}
