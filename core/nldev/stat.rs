// SPDX-License-Identifier: GPL-2.0

//! Statistics: `STAT_GET`, `STAT_SET` and `STAT_DEL` (`rdma statistic`: the port's totals,
//! the counter mode, bind and unbind; upstream `nldev_stat_*()`) over [`crate::counters`].

use super::request::{
    dump_indexed, fill_handle, get_u32, parse, put_msg, req_device, req_port, ty, NlDev,
};
use super::res::fill_owner;
use crate::counters;
use crate::counters::CounterInfo;
use crate::ib_device::IbDevice;
use crate::netlink::codec::Attr;
use crate::netlink::codec::MsgWriter;
use crate::netlink::nldev_uapi::*;
use crate::netlink::DumpCursor;
use crate::netlink::Request;
use kernel::prelude::*;

/// Most hardware counters a port may have in one reply.
const MAX_HW_STATS: usize = 64;

/// `STAT_RES` values: the resource attribute of the counted type.
const STAT_RES_QP: u32 = RDMA_NLDEV_ATTR_RES_QP as u32;
/// `STAT_RES` of MR counters.
const STAT_RES_MR: u32 = RDMA_NLDEV_ATTR_RES_MR as u32;

/// upstream `nldev_stat_get_doit()`: without `STAT_RES` the port's totals
/// ([`stat_get_default`]); `STAT_RES` QP: a counter by `STAT_COUNTER_ID` or the port's mode
/// ([`stat_get_qp`]); MR (`rdma statistic mr`, per-MR driver counters) `EOPNOTSUPP` here;
/// anything else `EINVAL`.
pub(super) fn stat_get_doit(_: &NlDev, req: &Request<'_>, wr: &mut MsgWriter<'_>) -> Result {
    let tb = parse(req)?;
    let tb = &tb[..];
    match get_u32(tb, RDMA_NLDEV_ATTR_STAT_RES)? {
        None => stat_get_default(req, tb, wr),
        Some(STAT_RES_QP) => stat_get_qp(req, tb, wr),
        Some(STAT_RES_MR) => Err(EOPNOTSUPP),
        Some(_) => Err(EINVAL),
    }
}

/// upstream `stat_get_doit_default_counter()` (`rdma statistic show` asks it per port):
/// `DEV_INDEX` and `PORT_INDEX` required (`EINVAL`), a device without hardware counters or a
/// bad port `EINVAL`; the reply (type `STAT_GET`) carries the handle, the port and a
/// `STAT_HWCOUNTERS` table of `{NAME, VALUE}` entries (upstream
/// `rdma_nl_stat_hwcounter_entry()`), fresh from the driver, each the port's value plus the
/// bound and released counters' (`rdma_counter_get_hwstat_value()`, in `hw_stats`).
fn stat_get_default(req: &Request<'_>, tb: &[Option<Attr<'_>>], wr: &mut MsgWriter<'_>) -> Result {
    let port = get_u32(tb, RDMA_NLDEV_ATTR_PORT_INDEX)?;
    let dev = req_device(tb)?;
    let port = port.ok_or(EINVAL)?;
    let d = &**dev.device();
    let names = d.hw_stat_names(port).ok_or(EINVAL)?;
    let mut v = [0u64; MAX_HW_STATS];
    let n = d.hw_stats(port, &mut v).map_err(|_| EINVAL)?;
    put_msg(req, wr, RDMA_NLDEV_CMD_STAT_GET, 0, |wr| {
        fill_handle(wr, d.core())?;
        wr.put_u32(RDMA_NLDEV_ATTR_PORT_INDEX, port)?;
        fill_hwcounters(wr, names, v.get(..n).unwrap_or(&[]))
    })
}

/// A `STAT_HWCOUNTERS` table (upstream `fill_stat_counter_hwcounters()`).
fn fill_hwcounters(wr: &mut MsgWriter<'_>, names: &[&CStr], v: &[u64]) -> Result {
    let table = wr.nest_start(RDMA_NLDEV_ATTR_STAT_HWCOUNTERS)?;
    for (name, val) in names.iter().zip(v.iter()) {
        let e = wr.nest_start(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY)?;
        wr.put_str(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, name.to_bytes())?;
        wr.put_u64(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, *val)?;
        wr.nest_end(e)?;
    }
    Ok(wr.nest_end(table)?)
}

/// upstream `fill_res_counter_entry()`: port, id, mode (`fill_stat_counter_mode()`: an auto
/// counter's QP type and owner as its mask says), the bound QPs (`fill_stat_counter_qps()`)
/// and the values.
fn fill_counter(wr: &mut MsgWriter<'_>, d: &dyn IbDevice, c: &CounterInfo) -> Result {
    wr.put_u32(RDMA_NLDEV_ATTR_PORT_INDEX, c.port)?;
    wr.put_u32(RDMA_NLDEV_ATTR_STAT_COUNTER_ID, c.id)?;
    wr.put_u32(RDMA_NLDEV_ATTR_STAT_MODE, c.mode)?;
    if c.mode == counters::MODE_AUTO {
        if c.mask & counters::MASK_QP_TYPE != 0 {
            wr.put_u8(RDMA_NLDEV_ATTR_RES_TYPE, c.qp_type)?;
        }
        if c.mask & counters::MASK_PID != 0 {
            fill_owner(wr, &c.owner)?;
        }
    }
    let table = wr.nest_start(RDMA_NLDEV_ATTR_RES_QP)?;
    for &q in c.qps.iter() {
        let e = wr.nest_start(RDMA_NLDEV_ATTR_RES_QP_ENTRY)?;
        wr.put_u32(RDMA_NLDEV_ATTR_RES_LQPN, q)?;
        wr.nest_end(e)?;
    }
    wr.nest_end(table)?;
    let names = d.hw_stat_names(c.port).unwrap_or(&[]);
    fill_hwcounters(wr, names, &c.values)
}

/// upstream `stat_get_doit_qp()`: with `STAT_COUNTER_ID` the counter
/// (`nldev_res_get_counter_doit()` → `res_get_common_doit()`: `DEV_INDEX` and `PORT_INDEX`
/// required (`EINVAL`), an unknown id `ENOENT`, a counter of another port `EAGAIN` as
/// upstream's filler answers); else the port's mode (`STAT_MODE`, `DEV_INDEX`, `PORT_INDEX`
/// required): `STAT_MODE`, and in auto mode the mask and `STAT_OPCOUNTER_ENABLED`.
fn stat_get_qp(req: &Request<'_>, tb: &[Option<Attr<'_>>], wr: &mut MsgWriter<'_>) -> Result {
    if let Some(id) = get_u32(tb, RDMA_NLDEV_ATTR_STAT_COUNTER_ID)? {
        let dev = req_device(tb)?;
        let port = req_port(tb, &dev)?.ok_or(EINVAL)?;
        let d = &**dev.device();
        let list = d.counter_dump(None, Some(id))?;
        let c = list.first().ok_or(ENOENT)?;
        if c.port != port {
            return Err(EAGAIN);
        }
        return put_msg(req, wr, RDMA_NLDEV_CMD_STAT_GET, 0, |wr| {
            fill_handle(wr, d.core())?;
            fill_counter(wr, d, c)
        });
    }
    if tb[RDMA_NLDEV_ATTR_STAT_MODE as usize].is_none()
        || tb[RDMA_NLDEV_ATTR_DEV_INDEX as usize].is_none()
        || tb[RDMA_NLDEV_ATTR_PORT_INDEX as usize].is_none()
    {
        return Err(EINVAL);
    }
    let dev = req_device(tb)?;
    let port = req_port(tb, &dev)?.ok_or(EINVAL)?;
    let d = &**dev.device();
    let (mode, mask, opcnt) = d.counter_get_mode(port)?;
    put_msg(req, wr, RDMA_NLDEV_CMD_STAT_GET, 0, |wr| {
        fill_handle(wr, d.core())?;
        wr.put_u32(RDMA_NLDEV_ATTR_PORT_INDEX, port)?;
        wr.put_u32(RDMA_NLDEV_ATTR_STAT_MODE, mode)?;
        if mode == counters::MODE_AUTO {
            wr.put_u32(RDMA_NLDEV_ATTR_STAT_AUTO_MODE_MASK, mask)?;
            wr.put_u8(RDMA_NLDEV_ATTR_STAT_OPCOUNTER_ENABLED, u8::from(opcnt))?;
        }
        Ok(())
    })
}

/// upstream `nldev_stat_get_dumpit()`: `STAT_RES` required (`EINVAL`); QP: the counters
/// (`nldev_res_get_counter_dumpit()`, `rdma statistic qp show`: `DEV_INDEX` required, a
/// `PORT_INDEX` checked and filtering), one counter a message (upstream packs as many as fit;
/// the entries are the same), nothing at all without counters; MR `EOPNOTSUPP` here.
pub(super) fn stat_get_dump(
    _: &NlDev,
    req: &Request<'_>,
    cur: &mut DumpCursor<'_>,
    wr: &mut MsgWriter<'_>,
) -> Result {
    let tb = parse(req)?;
    let tb = &tb[..];
    match get_u32(tb, RDMA_NLDEV_ATTR_STAT_RES)? {
        Some(STAT_RES_QP) => {}
        Some(STAT_RES_MR) => return Err(EOPNOTSUPP),
        _ => return Err(EINVAL),
    }
    let dev = req_device(tb)?;
    let port = req_port(tb, &dev)?;
    let d = &**dev.device();
    let list = d.counter_dump(port, None)?;
    dump_indexed(
        req,
        cur,
        wr,
        RDMA_NLDEV_CMD_STAT_GET,
        list.len(),
        |wr, i| {
            fill_handle(wr, d.core())?;
            let table = wr.nest_start_noflag(RDMA_NLDEV_ATTR_STAT_COUNTER)?;
            let ent = wr.nest_start_noflag(RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY)?;
            fill_counter(wr, d, list.get(i).ok_or(EINVAL)?)?;
            wr.nest_end(ent)?;
            Ok(wr.nest_end(table)?)
        },
    );
    Ok(())
}

/// upstream `nldev_stat_set_doit()` (admin only): `DEV_INDEX` and `PORT_INDEX` required, a
/// registered device and a valid port (`EINVAL`), `STAT_MODE` or `STAT_HWCOUNTERS` required
/// (`EINVAL`); the reply (type `STAT_SET`) carries the handle and the port, and for a bind
/// the counter id and the QP number ([`stat_set_mode`]). `STAT_HWCOUNTERS` (enabling optional
/// counters, upstream `nldev_stat_set_counter_dynamic_doit()`): this device has no optional
/// counters, so every index is `EINVAL` and an empty list changes nothing, as upstream's loop.
pub(super) fn stat_set_doit(_: &NlDev, req: &Request<'_>, wr: &mut MsgWriter<'_>) -> Result {
    let tb = parse(req)?;
    let tb = &tb[..];
    if tb[RDMA_NLDEV_ATTR_DEV_INDEX as usize].is_none()
        || tb[RDMA_NLDEV_ATTR_PORT_INDEX as usize].is_none()
    {
        return Err(EINVAL);
    }
    let dev = req_device(tb)?;
    let port = req_port(tb, &dev)?.ok_or(EINVAL)?;
    let d = &**dev.device();
    let mode = get_u32(tb, RDMA_NLDEV_ATTR_STAT_MODE)?;
    let hwc = tb[RDMA_NLDEV_ATTR_STAT_HWCOUNTERS as usize];
    if mode.is_none() && hwc.is_none() {
        return Err(EINVAL);
    }
    wr.begin(ty(RDMA_NLDEV_CMD_STAT_SET), 0, req.seq(), req.portid)?;
    fill_handle(wr, d.core())?;
    wr.put_u32(RDMA_NLDEV_ATTR_PORT_INDEX, port)?;
    if let Some(mode) = mode {
        stat_set_mode(wr, tb, d, port, mode)?;
    }
    if let Some(h) = hwc {
        d.hw_stat_names(port).ok_or(EINVAL)?;
        // A u32 index each; none is of an optional counter.
        if let Some(e) = h.nested().next() {
            e.map_err(|_| EINVAL)?.u32().map_err(|_| EINVAL)?;
            return Err(EINVAL);
        }
    }
    Ok(wr.end()?)
}

/// upstream `nldev_stat_set_mode_doit()`: `STAT_RES` must be QP (`EINVAL`); auto mode sets
/// the port's mask (`rdma_counter_set_auto_mode()`); any other mode binds `RES_LQPN`
/// (required, `EINVAL`) to `STAT_COUNTER_ID` (`rdma_counter_bind_qpn()`) or to a new counter
/// (`rdma_counter_bind_qpn_alloc()`) and answers both ids.
fn stat_set_mode(
    wr: &mut MsgWriter<'_>,
    tb: &[Option<Attr<'_>>],
    d: &dyn IbDevice,
    port: u32,
    mode: u32,
) -> Result {
    if get_u32(tb, RDMA_NLDEV_ATTR_STAT_RES)? != Some(STAT_RES_QP) {
        return Err(EINVAL);
    }
    let opcnt = match tb[RDMA_NLDEV_ATTR_STAT_OPCOUNTER_ENABLED as usize] {
        Some(a) => a.u8().map_err(|_| EINVAL)? != 0,
        None => false,
    };
    if mode == counters::MODE_AUTO {
        let mask = get_u32(tb, RDMA_NLDEV_ATTR_STAT_AUTO_MODE_MASK)?.unwrap_or(0);
        return d.counter_set_auto_mode(port, mask, opcnt);
    }
    let qpn = get_u32(tb, RDMA_NLDEV_ATTR_RES_LQPN)?.ok_or(EINVAL)?;
    let id = match get_u32(tb, RDMA_NLDEV_ATTR_STAT_COUNTER_ID)? {
        Some(id) => {
            d.counter_bind_qpn(port, qpn, id)?;
            id
        }
        None => d.counter_bind_qpn_alloc(port, qpn)?,
    };
    let r = wr
        .put_u32(RDMA_NLDEV_ATTR_STAT_COUNTER_ID, id)
        .and_then(|()| wr.put_u32(RDMA_NLDEV_ATTR_RES_LQPN, qpn));
    if r.is_err() {
        let _ = d.counter_unbind_qpn(port, qpn, id);
    }
    Ok(r?)
}

/// upstream `nldev_stat_del_doit()` (admin only, `rdma statistic qp unbind`): `STAT_RES`,
/// `DEV_INDEX`, `PORT_INDEX`, `STAT_COUNTER_ID` and `RES_LQPN` required and `STAT_RES` QP
/// (`EINVAL`), a registered device and a valid port (`EINVAL`), then
/// `rdma_counter_unbind_qpn()`; the reply (type `STAT_SET`, as upstream's) echoes the ids.
pub(super) fn stat_del_doit(_: &NlDev, req: &Request<'_>, wr: &mut MsgWriter<'_>) -> Result {
    let tb = parse(req)?;
    let tb = &tb[..];
    let res = get_u32(tb, RDMA_NLDEV_ATTR_STAT_RES)?;
    let id = get_u32(tb, RDMA_NLDEV_ATTR_STAT_COUNTER_ID)?;
    let qpn = get_u32(tb, RDMA_NLDEV_ATTR_RES_LQPN)?;
    let (Some(res), Some(id), Some(qpn)) = (res, id, qpn) else {
        return Err(EINVAL);
    };
    if tb[RDMA_NLDEV_ATTR_DEV_INDEX as usize].is_none()
        || tb[RDMA_NLDEV_ATTR_PORT_INDEX as usize].is_none()
        || res != STAT_RES_QP
    {
        return Err(EINVAL);
    }
    let dev = req_device(tb)?;
    let port = req_port(tb, &dev)?.ok_or(EINVAL)?;
    let d = &**dev.device();
    d.counter_unbind_qpn(port, qpn, id)?;
    wr.begin(ty(RDMA_NLDEV_CMD_STAT_SET), 0, req.seq(), req.portid)?;
    fill_handle(wr, d.core())?;
    wr.put_u32(RDMA_NLDEV_ATTR_PORT_INDEX, port)?;
    wr.put_u32(RDMA_NLDEV_ATTR_STAT_COUNTER_ID, id)?;
    wr.put_u32(RDMA_NLDEV_ATTR_RES_LQPN, qpn)?;
    Ok(wr.end()?)
}
