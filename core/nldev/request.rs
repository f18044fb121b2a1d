// SPDX-License-Identifier: GPL-2.0

//! The request side every nldev command shares: the client type, the request's attributes,
//! the device and port it names, and the walk over the registered devices of a dump.

use crate::ib_device::DeviceCore;
use crate::ib_device::DeviceRef;
use crate::ib_device::IbDevice;
use crate::netlink::codec;
use crate::netlink::codec::Attr;
use crate::netlink::codec::MsgWriter;
use crate::netlink::codec::NLM_F_MULTI;
use crate::netlink::nldev_uapi::*;
use crate::netlink::DumpCursor;
use crate::netlink::Request;
use crate::registry;
use kernel::prelude::*;

/// The state of the nldev client.
pub(crate) struct NlDev;

pub(super) const NATTR: usize = RDMA_NLDEV_ATTR_MAX as usize;

/// A request's attributes by type. On the heap: a table is a few KiB, and a command's frame
/// would hold it more than once (upstream's `tb[]` is an array of pointers).
pub(super) type AttrTable<'a> = KBox<[Option<Attr<'a>>; NATTR]>;

/// The request's attributes by type (upstream `__nlmsg_parse(..., nldev_policy, LIBERAL)`).
pub(super) fn parse<'a>(req: &Request<'a>) -> Result<AttrTable<'a>> {
    let mut tb = KBox::new([None; NATTR], GFP_KERNEL)?;
    codec::parse_attrs(req.msg.payload, &mut tb[..]).map_err(|_| EINVAL)?;
    Ok(tb)
}

/// The request's attribute of type `ty`, if it carries one.
pub(super) fn attr<'a>(tb: &[Option<Attr<'a>>], ty: u16) -> Option<Attr<'a>> {
    tb.get(ty as usize).copied().flatten()
}

pub(super) fn get_u32(tb: &[Option<Attr<'_>>], ty: u16) -> Result<Option<u32>> {
    match attr(tb, ty) {
        None => Ok(None),
        Some(a) => a.u32().map(Some).map_err(|_| EINVAL),
    }
}

/// `DEV_INDEX` of the request and the registered device with that index (upstream
/// `ib_device_get_by_index()`): `EINVAL` without either.
pub(super) fn req_device(tb: &[Option<Attr<'_>>]) -> Result<DeviceRef> {
    let index = get_u32(tb, RDMA_NLDEV_ATTR_DEV_INDEX)?.ok_or(EINVAL)?;
    registry::get_by_index(index).ok_or(EINVAL)
}

pub(super) fn ty(op: u16) -> u16 {
    rdma_nl_get_type(RDMA_NL_NLDEV, op)
}

/// upstream `fill_nldev_handle()`.
pub(super) fn fill_handle(w_: &mut MsgWriter<'_>, dev: &DeviceCore) -> Result {
    w_.put_u32(RDMA_NLDEV_ATTR_DEV_INDEX, dev.index())?;
    Ok(w_.put_str(RDMA_NLDEV_ATTR_DEV_NAME, dev.name().as_bytes())?)
}

/// A reply about one whole device (`GET`, `RES_GET`): answered for the device `DEV_INDEX`
/// names by [`device_doit`], for every registered device by [`dump_devices`].
pub(super) trait DeviceReply {
    /// The command of the request and of its reply messages.
    const CMD: u16;
    /// Fills one message about a device.
    const FILL: fn(&mut MsgWriter<'_>, &dyn IbDevice) -> Result;
}

/// The doit of a [`DeviceReply`]: one message about the device `DEV_INDEX` names (`EINVAL`
/// without it or for an unknown index).
pub(super) fn device_doit<R: DeviceReply>(
    _: &NlDev,
    req: &Request<'_>,
    wr: &mut MsgWriter<'_>,
) -> Result {
    let tb = parse(req)?;
    let tb = &tb[..];
    let dev = req_device(tb)?;
    put_msg(req, wr, R::CMD, 0, |wr| (R::FILL)(wr, &**dev.device()))
}

/// Writes one message of type `cmd` with `flags` (0 for a doit's reply, `NLM_F_MULTI` in a
/// dump), filled by `fill` (upstream `nlmsg_put()` .. `nlmsg_end()`); drops it
/// (`nlmsg_cancel()`) on error, so a dump that runs out of room keeps the messages before.
pub(super) fn put_msg(
    req: &Request<'_>,
    wr: &mut MsgWriter<'_>,
    cmd: u16,
    flags: u16,
    fill: impl FnOnce(&mut MsgWriter<'_>) -> Result,
) -> Result {
    let msg = || -> Result {
        wr.begin(ty(cmd), flags, req.seq(), req.portid)?;
        fill(wr)?;
        Ok(wr.end()?)
    };
    msg().inspect_err(|_| wr.cancel())
}

/// Dumps items `0..n` from cursor word 0 (the number already written), one `NLM_F_MULTI`
/// message of type `cmd` each, filled by `fill` with the item's index, until the buffer is
/// full (upstream's `cb->args[0]` walks of a device's ports or counters).
pub(super) fn dump_indexed(
    req: &Request<'_>,
    cur: &mut DumpCursor<'_>,
    wr: &mut MsgWriter<'_>,
    cmd: u16,
    n: usize,
    fill: impl Fn(&mut MsgWriter<'_>, usize) -> Result,
) {
    let mut i = cur.get(0) as usize;
    while i < n && put_msg(req, wr, cmd, NLM_F_MULTI, |wr| fill(wr, i)).is_ok() {
        i += 1;
        cur.set(0, i as u64);
    }
}

/// The dump of a [`DeviceReply`]: walks the registered devices from the cursor (word 0:
/// last index + 1) and writes one `NLM_F_MULTI` message each, stopping when the buffer is
/// full (upstream `ib_enum_all_devs()` with `cb->args[0]`).
pub(super) fn dump_devices<R: DeviceReply>(
    _: &NlDev,
    req: &Request<'_>,
    cur: &mut DumpCursor<'_>,
    wr: &mut MsgWriter<'_>,
) -> Result {
    let mut after = match cur.get(0) {
        0 => None,
        n => Some((n - 1) as u32),
    };
    while let Some(dev) = registry::next_registered(after) {
        let index = dev.core().index();
        if put_msg(req, wr, R::CMD, NLM_F_MULTI, |wr| (R::FILL)(wr, &*dev)).is_err() {
            break;
        }
        after = Some(index);
        cur.set(0, u64::from(index) + 1);
    }
    Ok(())
}

/// The port of a request that names one, checked (`EINVAL` for a bad one).
pub(super) fn req_port(tb: &[Option<Attr<'_>>], dev: &DeviceCore) -> Result<Option<u32>> {
    match get_u32(tb, RDMA_NLDEV_ATTR_PORT_INDEX)? {
        Some(p) if p == 0 || p > dev.phys_port_cnt() => Err(EINVAL),
        p => Ok(p),
    }
}
