// SPDX-License-Identifier: GPL-2.0

//! Device changes: `SET` (rename; upstream `nldev_set_doit()`) and the notifications of
//! `RDMA_NL_GROUP_NOTIFY` (upstream `rdma_nl_notify_event()`).

use super::request::{attr, fill_handle, parse, req_device, ty, NlDev};
use crate::ib_device::DeviceCore;
use crate::netlink::codec::MsgWriter;
use crate::netlink::nldev_uapi::*;
use crate::netlink::Request;
use kernel::prelude::*;

/// upstream `enum rdma_nl_notify_event_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum NotifyEvent {
    /// `RDMA_REGISTER_EVENT`.
    Register = 0,
    /// `RDMA_UNREGISTER_EVENT`.
    Unregister = 1,
    /// `RDMA_RENAME_EVENT`.
    Rename = 4,
}

/// upstream `rdma_nl_notify_event()` for the device events: a `MONITOR` message (seq 0, portid
/// 0) with the device handle (`fill_nldev_handle()`) and `EVENT_TYPE`, multicast to
/// `RDMA_NL_GROUP_NOTIFY` (what `rdma monitor` listens to). Failures are logged, as upstream's
/// `rdma_nl_notify_err_msg()`. No `NETDEV_ATTACH`/`DETACH`/`RENAME` events: no netdevs here.
pub(crate) fn notify(dev: &DeviceCore, ev: NotifyEvent) {
    let r = crate::netlink::multicast(RDMA_NL_GROUP_NOTIFY, |wr| {
        wr.begin(ty(RDMA_NLDEV_CMD_MONITOR), 0, 0, 0)?;
        fill_handle(wr, dev)?;
        wr.put_u8(RDMA_NLDEV_ATTR_EVENT_TYPE, ev as u8)?;
        Ok(wr.end()?)
    });
    if let Err(e) = r {
        pr_warn!(
            "ib_core_rs: {}: failed to send the {:?} notification ({:?})\n",
            dev.name(),
            ev,
            e
        );
    }
}

/// `IB_DEVICE_NAME_MAX`.
const IB_DEVICE_NAME_MAX: usize = 64;

/// upstream `nldev_set_doit()` (admin only: `EPERM` otherwise): `DEV_INDEX` required and
/// registered (`EINVAL`); `DEV_NAME` renames the device ([`crate::device::DeviceCore::rename`],
/// upstream `ib_device_rename()`: longer than 64 bytes `EINVAL` (`nldev_policy`), then cut to
/// 63 bytes as `nla_strscpy()`, empty `EINVAL`, taken `EEXIST`). `NET_NS_FD` (no network namespaces here) and `DEV_DIM` (no adaptive
/// moderation) are `EOPNOTSUPP`; with none of them, nothing is done (0), as upstream.
pub(super) fn set_doit(_: &NlDev, req: &Request<'_>, _wr: &mut MsgWriter<'_>) -> Result {
    let tb = parse(req)?;
    let tb = &tb[..];
    let dev = req_device(tb)?;
    if attr(tb, RDMA_NLDEV_NET_NS_FD).is_some() {
        return Err(EOPNOTSUPP);
    }
    if let Some(a) = attr(tb, RDMA_NLDEV_ATTR_DEV_NAME) {
        // nldev_policy: NLA_NUL_STRING of at most IB_DEVICE_NAME_MAX bytes (EINVAL), then
        // nla_strscpy() keeps IB_DEVICE_NAME_MAX - 1.
        let raw = a.str().map_err(|_| EINVAL)?;
        if raw.len() > IB_DEVICE_NAME_MAX {
            return Err(EINVAL);
        }
        let name = raw
            .get(..raw.len().min(IB_DEVICE_NAME_MAX - 1))
            .unwrap_or(&[]);
        if name.is_empty() {
            return Err(EINVAL);
        }
        if dev.device().rename(name)? {
            notify(dev.device().core(), NotifyEvent::Rename);
        }
        return Ok(());
    }
    if attr(tb, RDMA_NLDEV_ATTR_DEV_DIM).is_some() {
        return Err(EOPNOTSUPP);
    }
    Ok(())
}
