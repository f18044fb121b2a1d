// SPDX-License-Identifier: GPL-2.0

//! The nldev client of `NETLINK_RDMA` (upstream `drivers/infiniband/core/nldev.c`).
//!
//! * `SYS_GET` (`rdma system`).
//! * `GET` doit (by `DEV_INDEX`) and dump (`rdma dev`): upstream `fill_dev_info()`.
//! * `PORT_GET` doit (by `DEV_INDEX` + `PORT_INDEX`) and dump (by `DEV_INDEX`; `rdma link`
//!   sends one per device): upstream `fill_port_info()`.
//! * `GET_CHARDEV`: asks the client named by `CHARDEV_TYPE` ([`client::get_nl_info`], upstream
//!   `ib_get_client_nl_info()`), `EOPNOTSUPP` when none answers.
//! * `RES_GET` doit and dump (`rdma res`): per-type counts; `RES_{PD,CQ,QP,MR}_GET` dumps
//!   (by `DEV_INDEX`; `rdma res show pd|cq|qp|mr`): one message per device with a table of
//!   entries from restrack, with the owner (`RES_KERN_NAME` or `RES_PID`).
//! * `STAT_GET` (`rdma statistic show`: the port's totals; with `STAT_RES` QP the port's
//!   counter mode or one counter, and the counter dump of `rdma statistic qp show`),
//!   `STAT_SET` (auto mode, bind) and `STAT_DEL` (unbind) over [`crate::counters`].
//!
//! Replies are built by pure functions over a [`MsgWriter`] so that KUnit can run them on a
//! byte buffer and parse the result with the same codec.

use crate::attr::LinkLayer;
use crate::client::{self, ClientNlInfo};
use crate::counters::{self, CounterInfo};
use crate::device::{DeviceCore, DeviceRef, IbDevice};
use crate::netlink::{
    codec::{self, Attr, CodecError, MsgWriter, NLM_F_MULTI},
    nldev_uapi::*,
    DumpCursor, NlHandler, NlOp, Request,
};
use crate::registry;
use crate::restrack::{Owner, ResDetails, ResInfo, ResType};
use kernel::prelude::*;

/// The state of the nldev client.
pub(crate) struct NlDev;

const fn op<T>(
    op: u16,
    doit: Option<crate::netlink::DoitFn<T>>,
    dump: Option<crate::netlink::DumpFn<T>>,
) -> NlOp<T> {
    NlOp {
        client: RDMA_NL_NLDEV,
        op,
        doit,
        dump,
        admin: false,
    }
}

/// The dumpit of the `RES_*_GET` command of one resource type (upstream `res_get_common_dumpit()`
/// with the type from `fill_entries[]`): a [`DumpFn`](crate::netlink::DumpFn) has no argument to
/// carry the type, so each gets its own function.
macro_rules! res_type_dump {
    ($kind:ident) => {{
        fn dump(
            _: &NlDev,
            r: &Request<'_>,
            c: &mut DumpCursor<'_>,
            wr: &mut MsgWriter<'_>,
        ) -> Result {
            res_dump(r, c, wr, ResType::$kind)
        }
        dump
    }};
}

impl NlHandler for NlDev {
    const OPS: &'static [NlOp<Self>] = &[
        op(RDMA_NLDEV_CMD_GET, Some(get_doit), Some(get_dump)),
        op(
            RDMA_NLDEV_CMD_PORT_GET,
            Some(port_get_doit),
            Some(port_get_dump),
        ),
        op(RDMA_NLDEV_CMD_GET_CHARDEV, Some(get_chardev_doit), None),
        op(
            RDMA_NLDEV_CMD_RES_GET,
            Some(res_get_doit),
            Some(res_get_dump),
        ),
        op(RDMA_NLDEV_CMD_RES_PD_GET, None, Some(res_type_dump!(Pd))),
        op(RDMA_NLDEV_CMD_RES_CQ_GET, None, Some(res_type_dump!(Cq))),
        op(RDMA_NLDEV_CMD_RES_QP_GET, None, Some(res_type_dump!(Qp))),
        op(RDMA_NLDEV_CMD_RES_MR_GET, None, Some(res_type_dump!(Mr))),
        op(RDMA_NLDEV_CMD_RES_SRQ_GET, None, Some(res_type_dump!(Srq))),
        op(RDMA_NLDEV_CMD_RES_CTX_GET, None, Some(res_type_dump!(Ctx))),
        op(RDMA_NLDEV_CMD_SYS_GET, Some(sys_get_doit), None),
        op(
            RDMA_NLDEV_CMD_STAT_GET,
            Some(stat_get_doit),
            Some(stat_get_dump),
        ),
        NlOp {
            admin: true,
            ..op(RDMA_NLDEV_CMD_STAT_SET, Some(stat_set_doit), None)
        },
        NlOp {
            admin: true,
            ..op(RDMA_NLDEV_CMD_STAT_DEL, Some(stat_del_doit), None)
        },
        NlOp {
            admin: true,
            ..op(RDMA_NLDEV_CMD_SET, Some(set_doit), None)
        },
    ];
}

const NATTR: usize = RDMA_NLDEV_ATTR_MAX as usize;

/// The request's attributes by type (upstream `__nlmsg_parse(..., nldev_policy, LIBERAL)`).
fn parse<'a>(req: &Request<'a>) -> Result<[Option<Attr<'a>>; NATTR]> {
    let mut tb = [None; NATTR];
    codec::parse_attrs(req.msg.payload, &mut tb).map_err(|_| EINVAL)?;
    Ok(tb)
}

fn get_u32(tb: &[Option<Attr<'_>>], ty: u16) -> Result<Option<u32>> {
    match tb.get(ty as usize).copied().flatten() {
        None => Ok(None),
        Some(a) => a.u32().map(Some).map_err(|_| EINVAL),
    }
}

/// `DEV_INDEX` of the request and the registered device with that index (upstream
/// `ib_device_get_by_index()`): `EINVAL` without either.
fn req_device(tb: &[Option<Attr<'_>>]) -> Result<DeviceRef> {
    let index = get_u32(tb, RDMA_NLDEV_ATTR_DEV_INDEX)?.ok_or(EINVAL)?;
    registry::get_by_index(index).ok_or(EINVAL)
}

fn ty(op: u16) -> u16 {
    rdma_nl_get_type(RDMA_NL_NLDEV, op)
}

fn w<T>(r: core::result::Result<T, CodecError>) -> Result<T> {
    r.map_err(Error::from)
}

/// upstream `fill_nldev_handle()`.
fn fill_handle(w_: &mut MsgWriter<'_>, dev: &DeviceCore) -> Result {
    w(w_.put_u32(RDMA_NLDEV_ATTR_DEV_INDEX, dev.index()))?;
    w(w_.put_str(RDMA_NLDEV_ATTR_DEV_NAME, dev.name().as_bytes()))
}

/// upstream `fill_dev_info()`.
///
/// # Errors
///
/// `EMSGSIZE` when the message is full.
pub(crate) fn fill_dev_info(wr: &mut MsgWriter<'_>, dev: &dyn IbDevice) -> Result {
    let core = dev.core();
    let attrs = core.attrs();
    fill_handle(wr, core)?;
    w(wr.put_u32(RDMA_NLDEV_ATTR_PORT_INDEX, core.phys_port_cnt()))?;
    w(wr.put_u64(RDMA_NLDEV_ATTR_CAP_FLAGS, attrs.device_cap_flags))?;
    let mut fw = [0u8; 64];
    let n = dev.fw_str(&mut fw);
    // A device without firmware has no FW_VERSION.
    if n != 0 {
        w(wr.put_str(RDMA_NLDEV_ATTR_FW_VERSION, &fw[..n]))?;
    }
    w(wr.put_u64(RDMA_NLDEV_ATTR_NODE_GUID, attrs.node_guid))?;
    w(wr.put_u64(RDMA_NLDEV_ATTR_SYS_IMAGE_GUID, attrs.sys_image_guid))?;
    w(wr.put_u8(RDMA_NLDEV_ATTR_DEV_NODE_TYPE, crate::sysfs::RDMA_NODE_IB_CA))?;
    // No adaptive CQ moderation (upstream `use_cq_dim`).
    w(wr.put_u8(RDMA_NLDEV_ATTR_DEV_DIM, 0))?;
    // upstream RDMA_NAME_ASSIGN_TYPE_UNKNOWN.
    w(wr.put_u8(RDMA_NLDEV_ATTR_NAME_ASSIGN_TYPE, 0))?;
    // The protocol of the first port, as upstream.
    let proto: &[u8] = match core.port_immutable(1).map(|i| i.link_layer) {
        Ok(LinkLayer::Ethernet) => b"roce",
        _ => b"ib",
    };
    w(wr.put_str(RDMA_NLDEV_ATTR_DEV_PROTOCOL, proto))
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
    w(wr.put_u32(RDMA_NLDEV_ATTR_PORT_INDEX, port))?;
    let a = dev.query_port_attr(port)?;
    if core.port_immutable(port)?.link_layer == LinkLayer::Infiniband {
        w(wr.put_u64(RDMA_NLDEV_ATTR_CAP_FLAGS, u64::from(a.port_cap_flags)))?;
        w(wr.put_u64(RDMA_NLDEV_ATTR_SUBNET_PREFIX, a.subnet_prefix))?;
        w(wr.put_u32(RDMA_NLDEV_ATTR_LID, a.lid))?;
        w(wr.put_u32(RDMA_NLDEV_ATTR_SM_LID, a.sm_lid))?;
        w(wr.put_u8(RDMA_NLDEV_ATTR_LMC, a.lmc))?;
    }
    w(wr.put_u8(RDMA_NLDEV_ATTR_PORT_STATE, a.state as u8))?;
    w(wr.put_u8(RDMA_NLDEV_ATTR_PORT_PHYS_STATE, a.phys_state))?;
    // No netdev association yet (NDEV_INDEX/NDEV_NAME): RoCE netdev tracking is TODO.
    Ok(())
}

/// upstream `nldev_get_doit()`: `EINVAL` without `DEV_INDEX` or for an unknown index.
fn get_doit(_: &NlDev, req: &Request<'_>, wr: &mut MsgWriter<'_>) -> Result {
    let tb = parse(req)?;
    let dev = req_device(&tb)?;
    w(wr.begin(ty(RDMA_NLDEV_CMD_GET), 0, req.seq(), req.portid))?;
    fill_dev_info(wr, &**dev.device())?;
    w(wr.end())
}

/// Walks the registered devices from the cursor (word 0: last index + 1) and writes one
/// `NLM_F_MULTI` message each with `fill`, stopping when the buffer is full (upstream
/// `ib_enum_all_devs()` with `cb->args[0]`).
fn dump_devices(
    req: &Request<'_>,
    cur: &mut DumpCursor<'_>,
    wr: &mut MsgWriter<'_>,
    cmd: u16,
    fill: fn(&mut MsgWriter<'_>, &dyn IbDevice) -> Result,
) -> Result {
    let mut after = match cur.get(0) {
        0 => None,
        n => Some((n - 1) as u32),
    };
    while let Some(dev) = registry::next_registered(after) {
        let index = dev.core().index();
        if w(wr.begin(ty(cmd), NLM_F_MULTI, req.seq(), req.portid)).is_err() {
            break;
        }
        if fill(wr, &*dev).is_err() || wr.end().is_err() {
            wr.cancel();
            break;
        }
        after = Some(index);
        cur.set(0, u64::from(index) + 1);
    }
    Ok(())
}

/// upstream `nldev_get_dumpit()`.
fn get_dump(
    _: &NlDev,
    req: &Request<'_>,
    cur: &mut DumpCursor<'_>,
    wr: &mut MsgWriter<'_>,
) -> Result {
    dump_devices(req, cur, wr, RDMA_NLDEV_CMD_GET, fill_dev_info)
}

/// upstream `nldev_port_get_doit()` (whose reply carries the `GET` type, as upstream's).
fn port_get_doit(_: &NlDev, req: &Request<'_>, wr: &mut MsgWriter<'_>) -> Result {
    let tb = parse(req)?;
    let port = get_u32(&tb, RDMA_NLDEV_ATTR_PORT_INDEX)?;
    let dev = req_device(&tb)?;
    let port = port.ok_or(EINVAL)?;
    if port == 0 || port > dev.phys_port_cnt() {
        return Err(EINVAL);
    }
    w(wr.begin(ty(RDMA_NLDEV_CMD_GET), 0, req.seq(), req.portid))?;
    fill_port_info(wr, &**dev.device(), port)?;
    w(wr.end())
}

/// upstream `nldev_port_get_dumpit()`: the ports of the device `DEV_INDEX` (required), from
/// cursor word 0 on.
fn port_get_dump(
    _: &NlDev,
    req: &Request<'_>,
    cur: &mut DumpCursor<'_>,
    wr: &mut MsgWriter<'_>,
) -> Result {
    let tb = parse(req)?;
    let dev = req_device(&tb)?;
    let start = cur.get(0) as u32;
    let mut done = start;
    for port in (start + 1)..=dev.phys_port_cnt() {
        if w(wr.begin(
            ty(RDMA_NLDEV_CMD_PORT_GET),
            NLM_F_MULTI,
            req.seq(),
            req.portid,
        ))
        .is_err()
        {
            break;
        }
        if fill_port_info(wr, &**dev.device(), port).is_err() || wr.end().is_err() {
            wr.cancel();
            break;
        }
        done = port;
    }
    cur.set(0, u64::from(done));
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
    w(wr.begin(ty(RDMA_NLDEV_CMD_GET_CHARDEV), 0, seq, portid))?;
    if let Some(id) = info.driver_id {
        w(wr.put_u32(RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID, id))?;
    }
    w(wr.put_u64(RDMA_NLDEV_ATTR_CHARDEV, huge_encode_dev(info.devt)))?;
    w(wr.put_u64(RDMA_NLDEV_ATTR_CHARDEV_ABI, info.abi))?;
    w(wr.put_str(RDMA_NLDEV_ATTR_CHARDEV_NAME, info.name.as_bytes()))?;
    w(wr.end())
}

/// upstream `nldev_get_chardev()`: `EINVAL` without `CHARDEV_TYPE`, for an unknown
/// `DEV_INDEX`, a bad port or a `PORT_INDEX` without a device; `EOPNOTSUPP` when no client of
/// that name answers.
fn get_chardev_doit(_: &NlDev, req: &Request<'_>, wr: &mut MsgWriter<'_>) -> Result {
    let tb = parse(req)?;
    let name = tb[RDMA_NLDEV_ATTR_CHARDEV_TYPE as usize]
        .ok_or(EINVAL)?
        .str()
        .map_err(|_| EINVAL)?;
    // nla_strscpy(): up to the first NUL.
    let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
    let port = get_u32(&tb, RDMA_NLDEV_ATTR_PORT_INDEX)?;
    let info = if tb[RDMA_NLDEV_ATTR_DEV_INDEX as usize].is_some() {
        let dev = req_device(&tb)?;
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

/// upstream `fill_res_info()`: every restrack type with its count and the device's limit.
///
/// # Errors
///
/// `EMSGSIZE` when the message is full.
pub(crate) fn fill_res_info(wr: &mut MsgWriter<'_>, dev: &dyn IbDevice) -> Result {
    let core = dev.core();
    let attrs = core.attrs();
    let rt = core.restrack();
    fill_handle(wr, core)?;
    let table = w(wr.nest_start_noflag(RDMA_NLDEV_ATTR_RES_SUMMARY))?;
    // upstream's order (enum rdma_restrack_type) and names.
    let rows: [(&[u8], u64, u64); 7] = [
        (b"pd", rt.count(ResType::Pd) as u64, u64::from(attrs.max_pd)),
        (b"cq", rt.count(ResType::Cq) as u64, u64::from(attrs.max_cq)),
        (b"qp", rt.count(ResType::Qp) as u64, u64::from(attrs.max_qp)),
        (b"cm_id", 0, 0),
        (b"mr", rt.count(ResType::Mr) as u64, u64::from(attrs.max_mr)),
        (b"ctx", rt.count(ResType::Ctx) as u64, 0),
        (b"srq", rt.count(ResType::Srq) as u64, 0),
    ];
    for (name, curr, max) in rows {
        let e = w(wr.nest_start_noflag(RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY))?;
        w(wr.put_str(RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME, name))?;
        w(wr.put_u64(RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR, curr))?;
        if max != 0 {
            w(wr.put_u64(RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_MAX, max))?;
        }
        w(wr.nest_end(e))?;
    }
    w(wr.nest_end(table))
}

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
        w(wr.begin(ty(RDMA_NLDEV_CMD_MONITOR), 0, 0, 0))?;
        fill_handle(wr, dev)?;
        w(wr.put_u8(RDMA_NLDEV_ATTR_EVENT_TYPE, ev as u8))?;
        w(wr.end())
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
fn set_doit(_: &NlDev, req: &Request<'_>, _wr: &mut MsgWriter<'_>) -> Result {
    let tb = parse(req)?;
    let dev = req_device(&tb)?;
    if tb
        .get(RDMA_NLDEV_NET_NS_FD as usize)
        .copied()
        .flatten()
        .is_some()
    {
        return Err(EOPNOTSUPP);
    }
    if let Some(a) = tb.get(RDMA_NLDEV_ATTR_DEV_NAME as usize).copied().flatten() {
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
        if dev.device().core().rename(name)? {
            notify(dev.device().core(), NotifyEvent::Rename);
        }
        return Ok(());
    }
    if tb
        .get(RDMA_NLDEV_ATTR_DEV_DIM as usize)
        .copied()
        .flatten()
        .is_some()
    {
        return Err(EOPNOTSUPP);
    }
    Ok(())
}

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
fn stat_get_doit(_: &NlDev, req: &Request<'_>, wr: &mut MsgWriter<'_>) -> Result {
    let tb = parse(req)?;
    match get_u32(&tb, RDMA_NLDEV_ATTR_STAT_RES)? {
        None => stat_get_default(req, &tb, wr),
        Some(STAT_RES_QP) => stat_get_qp(req, &tb, wr),
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
    w(wr.begin(ty(RDMA_NLDEV_CMD_STAT_GET), 0, req.seq(), req.portid))?;
    fill_handle(wr, d.core())?;
    w(wr.put_u32(RDMA_NLDEV_ATTR_PORT_INDEX, port))?;
    fill_hwcounters(wr, names, v.get(..n).unwrap_or(&[]))?;
    w(wr.end())
}

/// A `STAT_HWCOUNTERS` table (upstream `fill_stat_counter_hwcounters()`).
fn fill_hwcounters(wr: &mut MsgWriter<'_>, names: &[&CStr], v: &[u64]) -> Result {
    let table = w(wr.nest_start(RDMA_NLDEV_ATTR_STAT_HWCOUNTERS))?;
    for (name, val) in names.iter().zip(v.iter()) {
        let e = w(wr.nest_start(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY))?;
        w(wr.put_str(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, name.to_bytes()))?;
        w(wr.put_u64(RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, *val))?;
        w(wr.nest_end(e))?;
    }
    w(wr.nest_end(table))
}

/// upstream `fill_res_counter_entry()`: port, id, mode (`fill_stat_counter_mode()`: an auto
/// counter's QP type and owner as its mask says), the bound QPs (`fill_stat_counter_qps()`)
/// and the values.
fn fill_counter(wr: &mut MsgWriter<'_>, d: &dyn IbDevice, c: &CounterInfo) -> Result {
    w(wr.put_u32(RDMA_NLDEV_ATTR_PORT_INDEX, c.port))?;
    w(wr.put_u32(RDMA_NLDEV_ATTR_STAT_COUNTER_ID, c.id))?;
    w(wr.put_u32(RDMA_NLDEV_ATTR_STAT_MODE, c.mode))?;
    if c.mode == counters::MODE_AUTO {
        if c.mask & counters::MASK_QP_TYPE != 0 {
            w(wr.put_u8(RDMA_NLDEV_ATTR_RES_TYPE, c.qp_type))?;
        }
        if c.mask & counters::MASK_PID != 0 {
            fill_owner(wr, &c.owner)?;
        }
    }
    let table = w(wr.nest_start(RDMA_NLDEV_ATTR_RES_QP))?;
    for &q in c.qps.iter() {
        let e = w(wr.nest_start(RDMA_NLDEV_ATTR_RES_QP_ENTRY))?;
        w(wr.put_u32(RDMA_NLDEV_ATTR_RES_LQPN, q))?;
        w(wr.nest_end(e))?;
    }
    w(wr.nest_end(table))?;
    let names = d.hw_stat_names(c.port).unwrap_or(&[]);
    fill_hwcounters(wr, names, &c.values)
}

/// The port of a request that names one, checked (`EINVAL` for a bad one).
fn req_port(tb: &[Option<Attr<'_>>], dev: &DeviceCore) -> Result<Option<u32>> {
    match get_u32(tb, RDMA_NLDEV_ATTR_PORT_INDEX)? {
        Some(p) if p == 0 || p > dev.phys_port_cnt() => Err(EINVAL),
        p => Ok(p),
    }
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
        w(wr.begin(ty(RDMA_NLDEV_CMD_STAT_GET), 0, req.seq(), req.portid))?;
        fill_handle(wr, d.core())?;
        fill_counter(wr, d, c)?;
        return w(wr.end());
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
    w(wr.begin(ty(RDMA_NLDEV_CMD_STAT_GET), 0, req.seq(), req.portid))?;
    fill_handle(wr, d.core())?;
    w(wr.put_u32(RDMA_NLDEV_ATTR_PORT_INDEX, port))?;
    w(wr.put_u32(RDMA_NLDEV_ATTR_STAT_MODE, mode))?;
    if mode == counters::MODE_AUTO {
        w(wr.put_u32(RDMA_NLDEV_ATTR_STAT_AUTO_MODE_MASK, mask))?;
        w(wr.put_u8(RDMA_NLDEV_ATTR_STAT_OPCOUNTER_ENABLED, u8::from(opcnt)))?;
    }
    w(wr.end())
}

/// upstream `nldev_stat_get_dumpit()`: `STAT_RES` required (`EINVAL`); QP: the counters
/// (`nldev_res_get_counter_dumpit()`, `rdma statistic qp show`: `DEV_INDEX` required, a
/// `PORT_INDEX` checked and filtering), one counter a message (upstream packs as many as fit;
/// the entries are the same), nothing at all without counters; MR `EOPNOTSUPP` here.
fn stat_get_dump(
    _: &NlDev,
    req: &Request<'_>,
    cur: &mut DumpCursor<'_>,
    wr: &mut MsgWriter<'_>,
) -> Result {
    let tb = parse(req)?;
    match get_u32(&tb, RDMA_NLDEV_ATTR_STAT_RES)? {
        Some(STAT_RES_QP) => {}
        Some(STAT_RES_MR) => return Err(EOPNOTSUPP),
        _ => return Err(EINVAL),
    }
    let dev = req_device(&tb)?;
    let port = req_port(&tb, &dev)?;
    let d = &**dev.device();
    let list = d.counter_dump(port, None)?;
    let mut i = cur.get(0) as usize;
    while let Some(c) = list.get(i) {
        let mut body = || -> Result {
            w(wr.begin(
                ty(RDMA_NLDEV_CMD_STAT_GET),
                NLM_F_MULTI,
                req.seq(),
                req.portid,
            ))?;
            fill_handle(wr, d.core())?;
            let table = w(wr.nest_start_noflag(RDMA_NLDEV_ATTR_STAT_COUNTER))?;
            let ent = w(wr.nest_start_noflag(RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY))?;
            fill_counter(wr, d, c)?;
            w(wr.nest_end(ent))?;
            w(wr.nest_end(table))?;
            w(wr.end())
        };
        if body().is_err() {
            wr.cancel();
            break;
        }
        i += 1;
        cur.set(0, i as u64);
    }
    Ok(())
}

/// upstream `nldev_stat_set_doit()` (admin only): `DEV_INDEX` and `PORT_INDEX` required, a
/// registered device and a valid port (`EINVAL`), `STAT_MODE` or `STAT_HWCOUNTERS` required
/// (`EINVAL`); the reply (type `STAT_SET`) carries the handle and the port, and for a bind
/// the counter id and the QP number ([`stat_set_mode`]). `STAT_HWCOUNTERS` (enabling optional
/// counters, upstream `nldev_stat_set_counter_dynamic_doit()`): this device has no optional
/// counters, so every index is `EINVAL` and an empty list changes nothing, as upstream's loop.
fn stat_set_doit(_: &NlDev, req: &Request<'_>, wr: &mut MsgWriter<'_>) -> Result {
    let tb = parse(req)?;
    if tb[RDMA_NLDEV_ATTR_DEV_INDEX as usize].is_none()
        || tb[RDMA_NLDEV_ATTR_PORT_INDEX as usize].is_none()
    {
        return Err(EINVAL);
    }
    let dev = req_device(&tb)?;
    let port = req_port(&tb, &dev)?.ok_or(EINVAL)?;
    let d = &**dev.device();
    let mode = get_u32(&tb, RDMA_NLDEV_ATTR_STAT_MODE)?;
    let hwc = tb[RDMA_NLDEV_ATTR_STAT_HWCOUNTERS as usize];
    if mode.is_none() && hwc.is_none() {
        return Err(EINVAL);
    }
    w(wr.begin(ty(RDMA_NLDEV_CMD_STAT_SET), 0, req.seq(), req.portid))?;
    fill_handle(wr, d.core())?;
    w(wr.put_u32(RDMA_NLDEV_ATTR_PORT_INDEX, port))?;
    if let Some(mode) = mode {
        stat_set_mode(wr, &tb, d, port, mode)?;
    }
    if let Some(h) = hwc {
        d.hw_stat_names(port).ok_or(EINVAL)?;
        // A u32 index each; none is of an optional counter.
        if let Some(e) = h.nested().next() {
            e.map_err(|_| EINVAL)?.u32().map_err(|_| EINVAL)?;
            return Err(EINVAL);
        }
    }
    w(wr.end())
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
    let r = w(wr.put_u32(RDMA_NLDEV_ATTR_STAT_COUNTER_ID, id))
        .and_then(|()| w(wr.put_u32(RDMA_NLDEV_ATTR_RES_LQPN, qpn)));
    if r.is_err() {
        let _ = d.counter_unbind_qpn(port, qpn, id);
    }
    r
}

/// upstream `nldev_stat_del_doit()` (admin only, `rdma statistic qp unbind`): `STAT_RES`,
/// `DEV_INDEX`, `PORT_INDEX`, `STAT_COUNTER_ID` and `RES_LQPN` required and `STAT_RES` QP
/// (`EINVAL`), a registered device and a valid port (`EINVAL`), then
/// `rdma_counter_unbind_qpn()`; the reply (type `STAT_SET`, as upstream's) echoes the ids.
fn stat_del_doit(_: &NlDev, req: &Request<'_>, wr: &mut MsgWriter<'_>) -> Result {
    let tb = parse(req)?;
    let res = get_u32(&tb, RDMA_NLDEV_ATTR_STAT_RES)?;
    let id = get_u32(&tb, RDMA_NLDEV_ATTR_STAT_COUNTER_ID)?;
    let qpn = get_u32(&tb, RDMA_NLDEV_ATTR_RES_LQPN)?;
    let (Some(res), Some(id), Some(qpn)) = (res, id, qpn) else {
        return Err(EINVAL);
    };
    if tb[RDMA_NLDEV_ATTR_DEV_INDEX as usize].is_none()
        || tb[RDMA_NLDEV_ATTR_PORT_INDEX as usize].is_none()
        || res != STAT_RES_QP
    {
        return Err(EINVAL);
    }
    let dev = req_device(&tb)?;
    let port = req_port(&tb, &dev)?.ok_or(EINVAL)?;
    let d = &**dev.device();
    d.counter_unbind_qpn(port, qpn, id)?;
    w(wr.begin(ty(RDMA_NLDEV_CMD_STAT_SET), 0, req.seq(), req.portid))?;
    fill_handle(wr, d.core())?;
    w(wr.put_u32(RDMA_NLDEV_ATTR_PORT_INDEX, port))?;
    w(wr.put_u32(RDMA_NLDEV_ATTR_STAT_COUNTER_ID, id))?;
    w(wr.put_u32(RDMA_NLDEV_ATTR_RES_LQPN, qpn))?;
    w(wr.end())
}

/// upstream `nldev_res_get_doit()`.
fn res_get_doit(_: &NlDev, req: &Request<'_>, wr: &mut MsgWriter<'_>) -> Result {
    let tb = parse(req)?;
    let dev = req_device(&tb)?;
    w(wr.begin(ty(RDMA_NLDEV_CMD_RES_GET), 0, req.seq(), req.portid))?;
    fill_res_info(wr, &**dev.device())?;
    w(wr.end())
}

/// upstream `nldev_res_get_dumpit()`.
fn res_get_dump(
    _: &NlDev,
    req: &Request<'_>,
    cur: &mut DumpCursor<'_>,
    wr: &mut MsgWriter<'_>,
) -> Result {
    dump_devices(req, cur, wr, RDMA_NLDEV_CMD_RES_GET, fill_res_info)
}

/// upstream `fill_res_name_pid()`.
fn fill_owner(wr: &mut MsgWriter<'_>, owner: &Owner) -> Result {
    match owner {
        Owner::Kernel(m) => w(wr.put_str(RDMA_NLDEV_ATTR_RES_KERN_NAME, m.to_bytes())),
        Owner::User { pid, .. } if *pid > 0 => w(wr.put_u32(RDMA_NLDEV_ATTR_RES_PID, *pid as u32)),
        Owner::User { .. } => Ok(()),
    }
}

/// upstream `!rdma_is_kernel_res()`: a resource created for a user process.
fn is_user(e: &ResInfo) -> bool {
    matches!(e.owner, Owner::User { .. })
}

/// The context number of a user PD or CQ (upstream: `RES_CTXN` only when not a kernel
/// resource).
fn fill_ctxn(wr: &mut MsgWriter<'_>, e: &ResInfo) -> Result {
    match e.links.ctxn {
        Some(n) if is_user(e) => w(wr.put_u32(RDMA_NLDEV_ATTR_RES_CTXN, n)),
        _ => Ok(()),
    }
}

/// The PD number of a user QP or MR (upstream: `RES_PDN` only when not a kernel resource).
fn fill_pdn(wr: &mut MsgWriter<'_>, e: &ResInfo) -> Result {
    match e.links.pdn {
        Some(n) if is_user(e) => w(wr.put_u32(RDMA_NLDEV_ATTR_RES_PDN, n)),
        _ => Ok(()),
    }
}

/// One restrack type's dump: the table attribute, the entry attribute and the entry filler
/// (upstream `fill_entries[]` and `fill_res_*_entry()`).
struct ResKind {
    kind: ResType,
    table: u16,
    entry: u16,
    fill: fn(&mut MsgWriter<'_>, &ResInfo, bool) -> Result,
}

/// upstream `fill_res_pd_entry()`.
fn fill_pd(wr: &mut MsgWriter<'_>, e: &ResInfo, admin: bool) -> Result {
    if admin {
        // No device-wide local DMA lkey (upstream `pd->local_dma_lkey`) yet: 0.
        w(wr.put_u32(RDMA_NLDEV_ATTR_RES_LOCAL_DMA_LKEY, 0))?;
    }
    w(wr.put_u64(RDMA_NLDEV_ATTR_RES_USECNT, e.usecnt.max(0) as u64))?;
    w(wr.put_u32(RDMA_NLDEV_ATTR_RES_PDN, e.id))?;
    fill_ctxn(wr, e)?;
    fill_owner(wr, &e.owner)
}

/// upstream `fill_res_cq_entry()`.
fn fill_cq(wr: &mut MsgWriter<'_>, e: &ResInfo, _admin: bool) -> Result {
    // The current number of entries (`num`: a resize changes it).
    w(wr.put_u32(RDMA_NLDEV_ATTR_RES_CQE, e.num))?;
    w(wr.put_u64(RDMA_NLDEV_ATTR_RES_USECNT, e.usecnt.max(0) as u64))?;
    if matches!(e.owner, Owner::Kernel(_)) {
        // ib_create_cq() leaves poll_ctx 0 (IB_POLL_SOFTIRQ).
        w(wr.put_u8(RDMA_NLDEV_ATTR_RES_POLL_CTX, 0))?;
    }
    w(wr.put_u8(RDMA_NLDEV_ATTR_DEV_DIM, 0))?;
    w(wr.put_u32(RDMA_NLDEV_ATTR_RES_CQN, e.id))?;
    fill_ctxn(wr, e)?;
    fill_owner(wr, &e.owner)
}

/// upstream `fill_res_qp_entry()` + `fill_res_qp_entry_query()`: the port, state, PSNs and
/// destination QP number from the last successful modifies that set them instead of a driver
/// query.
fn fill_qp(wr: &mut MsgWriter<'_>, e: &ResInfo, _admin: bool) -> Result {
    let qp_type = match e.details {
        ResDetails::Qp { qp_type, .. } => qp_type,
        _ => 0,
    };
    if e.qp_port != 0 {
        w(wr.put_u32(RDMA_NLDEV_ATTR_PORT_INDEX, e.qp_port))?;
    }
    w(wr.put_u32(RDMA_NLDEV_ATTR_RES_LQPN, e.num))?;
    fill_pdn(wr, e)?;
    fill_owner(wr, &e.owner)?;
    // RC/UC: RQPN and RQ_PSN, as upstream's query.
    if qp_type == 2 || qp_type == 3 {
        w(wr.put_u32(RDMA_NLDEV_ATTR_RES_RQPN, e.dest_qpn))?;
        w(wr.put_u32(RDMA_NLDEV_ATTR_RES_RQ_PSN, e.rq_psn))?;
    }
    w(wr.put_u32(RDMA_NLDEV_ATTR_RES_SQ_PSN, e.sq_psn))?;
    if qp_type == 2 || qp_type == 3 {
        // IB_MIG_MIGRATED.
        w(wr.put_u8(RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE, 0))?;
    }
    w(wr.put_u8(RDMA_NLDEV_ATTR_RES_TYPE, qp_type))?;
    w(wr.put_u8(RDMA_NLDEV_ATTR_RES_STATE, e.state))
}

/// upstream `fill_res_mr_entry()`: keys only for `CAP_NET_ADMIN`.
fn fill_mr(wr: &mut MsgWriter<'_>, e: &ResInfo, admin: bool) -> Result {
    if admin {
        w(wr.put_u32(RDMA_NLDEV_ATTR_RES_RKEY, e.rkey))?;
        w(wr.put_u32(RDMA_NLDEV_ATTR_RES_LKEY, e.num))?;
    }
    let length = match e.details {
        ResDetails::Mr { length } => length,
        _ => 0,
    };
    w(wr.put_u64(RDMA_NLDEV_ATTR_RES_MRLEN, length))?;
    w(wr.put_u32(RDMA_NLDEV_ATTR_RES_MRN, e.id))?;
    fill_pdn(wr, e)?;
    fill_owner(wr, &e.owner)
}

/// upstream `fill_res_ctx_entry()`: a user context's id and owner; a kernel one's entry is
/// empty.
fn fill_ctx(wr: &mut MsgWriter<'_>, e: &ResInfo, _admin: bool) -> Result {
    if !is_user(e) {
        return Ok(());
    }
    w(wr.put_u32(RDMA_NLDEV_ATTR_RES_CTXN, e.id))?;
    fill_owner(wr, &e.owner)
}

/// upstream `fill_res_range_qp_entry()`.
fn fill_qp_range(wr: &mut MsgWriter<'_>, min: u32, max: u32) -> Result {
    if min == 0 {
        return Ok(());
    }
    let ent = w(wr.nest_start_noflag(RDMA_NLDEV_ATTR_RES_QP_ENTRY))?;
    if min == max {
        w(wr.put_u32(RDMA_NLDEV_ATTR_RES_LQPN, min))?;
    } else {
        w(wr.put_u32(RDMA_NLDEV_ATTR_MIN_RANGE, min))?;
        w(wr.put_u32(RDMA_NLDEV_ATTR_MAX_RANGE, max))?;
    }
    w(wr.nest_end(ent))
}

/// upstream `fill_res_srq_entry()` with `fill_res_srq_qps()`: the SRQ's id, type and PD, then
/// its QPs as ranges of ascending QP numbers, then the owner. `qps` are the QP numbers that
/// receive from it, ascending.
fn fill_srq_with(wr: &mut MsgWriter<'_>, e: &ResInfo, qps: &[u32]) -> Result {
    let (srq_type, pdn) = match e.details {
        ResDetails::Srq { srq_type, pdn } => (srq_type, pdn),
        _ => (0, 0),
    };
    w(wr.put_u32(RDMA_NLDEV_ATTR_RES_SRQN, e.id))?;
    w(wr.put_u8(RDMA_NLDEV_ATTR_RES_TYPE, srq_type))?;
    w(wr.put_u32(RDMA_NLDEV_ATTR_RES_PDN, pdn))?;
    let table = w(wr.nest_start_noflag(RDMA_NLDEV_ATTR_RES_QP))?;
    let (mut min, mut prev) = (0u32, 0u32);
    for &n in qps {
        if min == 0 {
            min = n;
        } else if n > prev + 1 {
            fill_qp_range(wr, min, prev)?;
            min = n;
        }
        prev = n;
    }
    fill_qp_range(wr, min, prev)?;
    w(wr.nest_end(table))?;
    fill_owner(wr, &e.owner)
}

const RES_CTX: ResKind = ResKind {
    kind: ResType::Ctx,
    table: RDMA_NLDEV_ATTR_RES_CTX,
    entry: RDMA_NLDEV_ATTR_RES_CTX_ENTRY,
    fill: fill_ctx,
};

const RES_PD: ResKind = ResKind {
    kind: ResType::Pd,
    table: RDMA_NLDEV_ATTR_RES_PD,
    entry: RDMA_NLDEV_ATTR_RES_PD_ENTRY,
    fill: fill_pd,
};
const RES_CQ: ResKind = ResKind {
    kind: ResType::Cq,
    table: RDMA_NLDEV_ATTR_RES_CQ,
    entry: RDMA_NLDEV_ATTR_RES_CQ_ENTRY,
    fill: fill_cq,
};
const RES_QP: ResKind = ResKind {
    kind: ResType::Qp,
    table: RDMA_NLDEV_ATTR_RES_QP,
    entry: RDMA_NLDEV_ATTR_RES_QP_ENTRY,
    fill: fill_qp,
};
const RES_MR: ResKind = ResKind {
    kind: ResType::Mr,
    table: RDMA_NLDEV_ATTR_RES_MR,
    entry: RDMA_NLDEV_ATTR_RES_MR_ENTRY,
    fill: fill_mr,
};

/// Writes one message with the entries `snap[start..start + max]`; returns how many were
/// written.
#[allow(clippy::too_many_arguments)]
fn res_message(
    wr: &mut MsgWriter<'_>,
    req_ty: u16,
    seq: u32,
    portid: u32,
    dev: &DeviceCore,
    rk: &ResKind,
    snap: &[ResInfo],
    admin: bool,
    max: usize,
) -> core::result::Result<usize, usize> {
    let mut n = 0;
    let mut body = || -> Result {
        w(wr.begin(req_ty, NLM_F_MULTI, seq, portid))?;
        fill_handle(wr, dev)?;
        let table = w(wr.nest_start_noflag(rk.table))?;
        for e in snap.iter().take(max) {
            let ent = w(wr.nest_start_noflag(rk.entry))?;
            (rk.fill)(wr, e, admin)?;
            w(wr.nest_end(ent))?;
            n += 1;
        }
        w(wr.nest_end(table))?;
        w(wr.end())
    };
    match body() {
        Ok(()) => Ok(n),
        Err(_) => {
            wr.cancel();
            Err(n)
        }
    }
}

/// Builds one step of a `RES_*_GET` dump of `dev` (upstream `res_get_common_dumpit()`): a
/// message with the device handle and a table of the entries from `start` on; returns the
/// index to resume from, or `None` when there was nothing left (the dump ends).
///
/// # Errors
///
/// `EINVAL` for a restrack type nldev does not dump, `EMSGSIZE` when not even one entry fits
/// the message, `ENOMEM`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn res_dump_step(
    wr: &mut MsgWriter<'_>,
    req_ty: u16,
    seq: u32,
    portid: u32,
    dev: &DeviceCore,
    kind: ResType,
    start: usize,
    admin: bool,
) -> Result<Option<usize>> {
    if kind == ResType::Srq {
        return srq_dump_step(wr, req_ty, seq, portid, dev, start);
    }
    let rk = match kind {
        ResType::Pd => &RES_PD,
        ResType::Cq => &RES_CQ,
        ResType::Qp => &RES_QP,
        ResType::Mr => &RES_MR,
        ResType::Ctx => &RES_CTX,
        _ => return Err(EINVAL),
    };
    let snap = dev.restrack().dump(rk.kind)?;
    let rest = snap.get(start..).unwrap_or(&[]);
    if rest.is_empty() {
        return Ok(None);
    }
    let n = match res_message(wr, req_ty, seq, portid, dev, rk, rest, admin, rest.len()) {
        Ok(n) => n,
        // Not everything fits: as many entries as did (at least one, else the skb is too
        // small for anything).
        Err(0) => return Err(EMSGSIZE),
        Err(fit) => {
            res_message(wr, req_ty, seq, portid, dev, rk, rest, admin, fit).map_err(|_| EMSGSIZE)?
        }
    };
    Ok(Some(start + n))
}

/// [`res_dump_step`] for SRQs: one SRQ a message (each carries the QP numbers of its QPs,
/// read from the QP table).
fn srq_dump_step(
    wr: &mut MsgWriter<'_>,
    req_ty: u16,
    seq: u32,
    portid: u32,
    dev: &DeviceCore,
    start: usize,
) -> Result<Option<usize>> {
    let snap = dev.restrack().dump(ResType::Srq)?;
    let Some(e) = snap.get(start) else {
        return Ok(None);
    };
    let mut qps = KVec::new();
    for q in dev.restrack().dump(ResType::Qp)?.iter() {
        if matches!(q.details, ResDetails::Qp { srq, .. } if srq == e.id + 1) && q.num != 0 {
            qps.push(q.num, GFP_KERNEL)?;
        }
    }
    qps.sort_unstable();
    let mut body = || -> Result {
        w(wr.begin(req_ty, NLM_F_MULTI, seq, portid))?;
        fill_handle(wr, dev)?;
        let table = w(wr.nest_start_noflag(RDMA_NLDEV_ATTR_RES_SRQ))?;
        let ent = w(wr.nest_start_noflag(RDMA_NLDEV_ATTR_RES_SRQ_ENTRY))?;
        fill_srq_with(wr, e, &qps)?;
        w(wr.nest_end(ent))?;
        w(wr.nest_end(table))?;
        w(wr.end())
    };
    if body().is_err() {
        wr.cancel();
        return Err(EMSGSIZE);
    }
    Ok(Some(start + 1))
}

fn res_dump(
    req: &Request<'_>,
    cur: &mut DumpCursor<'_>,
    wr: &mut MsgWriter<'_>,
    kind: ResType,
) -> Result {
    let tb = parse(req)?;
    let dev = req_device(&tb)?;
    if let Some(p) = get_u32(&tb, RDMA_NLDEV_ATTR_PORT_INDEX)? {
        if p == 0 || p > dev.phys_port_cnt() {
            return Err(EINVAL);
        }
    }
    let start = cur.get(0) as usize;
    if let Some(next) = res_dump_step(
        wr,
        req.msg.hdr.ty,
        req.seq(),
        req.portid,
        &dev,
        kind,
        start,
        req.admin,
    )? {
        cur.set(0, next as u64);
    }
    Ok(())
}

/// Builds the `SYS_GET` reply (upstream `nldev_sys_get_doit()`): netns mode shared (1),
/// privileged Q_Key mode off (0), monitor supported (1), copy-on-fork supported (1).
///
/// # Errors
///
/// `EMSGSIZE` when the message is full.
pub(crate) fn sys_get_reply(wr: &mut MsgWriter<'_>, seq: u32, portid: u32) -> Result {
    w(wr.begin(ty(RDMA_NLDEV_CMD_SYS_GET), 0, seq, portid))?;
    w(wr.put_u8(RDMA_NLDEV_SYS_ATTR_NETNS_MODE, 1))?;
    w(wr.put_u8(RDMA_NLDEV_SYS_ATTR_PRIVILEGED_QKEY_MODE, 0))?;
    w(wr.put_u8(RDMA_NLDEV_SYS_ATTR_MONITOR_MODE, 1))?;
    w(wr.put_u8(RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1))?;
    w(wr.end())
}

fn sys_get_doit(_: &NlDev, req: &Request<'_>, wr: &mut MsgWriter<'_>) -> Result {
    sys_get_reply(wr, req.seq(), req.portid)
}

#[kunit_tests(ib_core_rs_nldev)]
mod tests {
    use super::*;
    use crate::attr::{DeviceAttr, Gid, PortAttr, PortImmutable, PortState};
    use crate::client::{register_client, Client};
    use crate::device::{DevName, Device};
    use crate::driver::Driver;
    use crate::netlink::codec::{NlMsg, NlMsgIter, NLM_F_REQUEST};
    use crate::ops::{DeviceOps, Ops};
    use crate::restrack::ResLinks;
    use crate::sysfs::{show, IbSysfs, SysfsBuf};
    use crate::verbs::Pd;
    use kernel::str::CString;
    use kernel::sync::atomic::Relaxed;
    use kernel::sync::Arc;

    struct T;
    impl Driver for T {
        type DevData = ();
        type PdData = ();
        type CqData = ();
        type QpData = ();
        type SrqData = ();
        type MrData = ();
        type AhData = ();
        type MwData = ();
        type DmData = ();
    }

    struct TOps;

    #[vtable]
    impl DeviceOps for TOps {
        type Driver = T;

        fn query_device(_: &Device<T>) -> Result<DeviceAttr> {
            Ok(DeviceAttr {
                node_guid: 0x1122_3344_5566_7788,
                sys_image_guid: 0x0102_0304_0506_0708,
                device_cap_flags: 0x40,
                max_pd: 9,
                ..DeviceAttr::default()
            })
        }

        fn get_port_immutable(_: &Device<T>, _: u32) -> Result<PortImmutable> {
            Ok(PortImmutable {
                pkey_tbl_len: 1,
                gid_tbl_len: 2,
                ..PortImmutable::default()
            })
        }

        fn query_port(_: &Device<T>, _: u32) -> Result<PortAttr> {
            Ok(PortAttr {
                subnet_prefix: 0xfe80_0000_0000_0000,
                state: PortState::Active,
                phys_state: 5,
                lid: 0x12,
                active_width: 2,
                active_speed: 16,
                ..PortAttr::default()
            })
        }

        fn query_gid(_: &Device<T>, _: u32, i: u32) -> Result<Gid> {
            Ok(if i == 0 {
                Gid::new(0xfe80_0000_0000_0000, 0xabcd)
            } else {
                Gid::ZERO
            })
        }

        fn query_pkey(_: &Device<T>, _: u32, _: u32) -> Result<u16> {
            Ok(0xffff)
        }

        fn get_dev_fw_str(_: &Device<T>) -> Result<CString> {
            CString::try_from_fmt(fmt!("20.1.42"))
        }

        fn alloc_pd(
            _: &Device<T>,
            _user: Option<&mut crate::verbs::UserCtx<'_, '_, T>>,
        ) -> Result<()> {
            Ok(())
        }
    }

    const OPS: Ops<T> = Ops::of::<TOps>();

    fn device() -> Result<Arc<Device<T>>> {
        let dev = Device::alloc(&OPS, 1, Ok(()))?;
        Device::register(&dev, c"nltest_%d")?;
        Ok(dev)
    }

    /// A request of `op` with `DEV_INDEX` (and `extra` u32 attributes).
    fn request(buf: &mut [u8], op: u16, index: Option<u32>, extra: &[(u16, u32)]) -> usize {
        let mut w = MsgWriter::new(buf);
        w.begin(ty(op), NLM_F_REQUEST, 5, 0).unwrap();
        if let Some(i) = index {
            w.put_u32(RDMA_NLDEV_ATTR_DEV_INDEX, i).unwrap();
        }
        for (t, v) in extra {
            w.put_u32(*t, *v).unwrap();
        }
        w.end().unwrap();
        w.len()
    }

    fn req(b: &[u8]) -> Request<'_> {
        Request {
            msg: NlMsg::parse(b).unwrap(),
            portid: 77,
            admin: true,
        }
    }

    /// The attributes of the single message in `reply`.
    fn single<'a>(reply: &'a [u8]) -> Result<(u16, [Option<Attr<'a>>; NATTR])> {
        let mut it = NlMsgIter::new(reply);
        let m = it.next().ok_or(EINVAL)?.map_err(|_| EINVAL)?;
        assert!(it.next().is_none());
        assert_eq!((m.hdr.seq, m.hdr.pid), (5, 77));
        let mut tb = [None; NATTR];
        codec::parse_attrs(m.payload, &mut tb).map_err(|_| EINVAL)?;
        Ok((m.hdr.ty, tb))
    }

    fn a_u32(tb: &[Option<Attr<'_>>], t: u16) -> Option<u32> {
        tb[t as usize].and_then(|a| a.u32().ok())
    }
    fn a_u64(tb: &[Option<Attr<'_>>], t: u16) -> Option<u64> {
        tb[t as usize].and_then(|a| a.u64().ok())
    }
    fn a_u8(tb: &[Option<Attr<'_>>], t: u16) -> Option<u8> {
        tb[t as usize].and_then(|a| a.u8().ok())
    }
    fn a_str<'a>(tb: &[Option<Attr<'a>>], t: u16) -> Option<&'a [u8]> {
        tb[t as usize].and_then(|a| a.str().ok())
    }

    #[test]
    fn get_and_port_get_carry_upstream_attributes() -> Result {
        let dev = device()?;
        let idx = dev.index();
        let mut rb = [0u8; 64];
        let n = request(&mut rb, RDMA_NLDEV_CMD_GET, Some(idx), &[]);
        let mut out = [0u8; 512];
        let mut w = MsgWriter::new(&mut out);
        get_doit(&NlDev, &req(&rb[..n]), &mut w)?;
        let (t, tb) = single(w.bytes())?;
        assert_eq!(t, ty(RDMA_NLDEV_CMD_GET));
        assert_eq!(a_u32(&tb, RDMA_NLDEV_ATTR_DEV_INDEX), Some(idx));
        assert_eq!(a_str(&tb, RDMA_NLDEV_ATTR_DEV_NAME), Some(&b"nltest_0"[..]));
        assert_eq!(a_u32(&tb, RDMA_NLDEV_ATTR_PORT_INDEX), Some(1));
        assert_eq!(a_u64(&tb, RDMA_NLDEV_ATTR_CAP_FLAGS), Some(0x40));
        assert_eq!(
            a_str(&tb, RDMA_NLDEV_ATTR_FW_VERSION),
            Some(&b"20.1.42"[..])
        );
        assert_eq!(
            a_u64(&tb, RDMA_NLDEV_ATTR_NODE_GUID),
            Some(0x1122_3344_5566_7788)
        );
        assert_eq!(
            a_u64(&tb, RDMA_NLDEV_ATTR_SYS_IMAGE_GUID),
            Some(0x0102_0304_0506_0708)
        );
        assert_eq!(a_u8(&tb, RDMA_NLDEV_ATTR_DEV_NODE_TYPE), Some(1));
        assert_eq!(a_str(&tb, RDMA_NLDEV_ATTR_DEV_PROTOCOL), Some(&b"ib"[..]));

        // Unknown index, no index: EINVAL (upstream nldev_get_doit()).
        let n = request(&mut rb, RDMA_NLDEV_CMD_GET, Some(idx + 1000), &[]);
        let mut w = MsgWriter::new(&mut out);
        assert_eq!(get_doit(&NlDev, &req(&rb[..n]), &mut w), Err(EINVAL));
        let n = request(&mut rb, RDMA_NLDEV_CMD_GET, None, &[]);
        assert_eq!(get_doit(&NlDev, &req(&rb[..n]), &mut w), Err(EINVAL));

        let n = request(
            &mut rb,
            RDMA_NLDEV_CMD_PORT_GET,
            Some(idx),
            &[(RDMA_NLDEV_ATTR_PORT_INDEX, 1)],
        );
        let mut w = MsgWriter::new(&mut out);
        port_get_doit(&NlDev, &req(&rb[..n]), &mut w)?;
        let (_, tb) = single(w.bytes())?;
        assert_eq!(a_u32(&tb, RDMA_NLDEV_ATTR_PORT_INDEX), Some(1));
        assert_eq!(a_u8(&tb, RDMA_NLDEV_ATTR_PORT_STATE), Some(4));
        assert_eq!(a_u8(&tb, RDMA_NLDEV_ATTR_PORT_PHYS_STATE), Some(5));
        assert_eq!(a_u32(&tb, RDMA_NLDEV_ATTR_LID), Some(0x12));
        assert_eq!(
            a_u64(&tb, RDMA_NLDEV_ATTR_SUBNET_PREFIX),
            Some(0xfe80_0000_0000_0000)
        );
        let n = request(
            &mut rb,
            RDMA_NLDEV_CMD_PORT_GET,
            Some(idx),
            &[(RDMA_NLDEV_ATTR_PORT_INDEX, 2)],
        );
        let mut w = MsgWriter::new(&mut out);
        assert_eq!(port_get_doit(&NlDev, &req(&rb[..n]), &mut w), Err(EINVAL));
        Device::dealloc(dev);
        Ok(())
    }

    #[test]
    fn res_pd_dump_lists_the_kernel_owner() -> Result {
        let dev = device()?;
        let pd = Pd::alloc(&dev, crate::kernel_owner!())?;
        let mut out = [0u8; 512];
        let mut w = MsgWriter::new(&mut out);
        let ty_pd = ty(RDMA_NLDEV_CMD_RES_PD_GET);
        let next = res_dump_step(&mut w, ty_pd, 5, 77, &dev, ResType::Pd, 0, true)?;
        assert_eq!(next, Some(1));
        let (t, tb) = single(w.bytes())?;
        assert_eq!(t, ty_pd);
        let table = tb[RDMA_NLDEV_ATTR_RES_PD as usize].ok_or(EINVAL)?;
        let mut entries = 0;
        for e in table.nested() {
            let e = e.map_err(|_| EINVAL)?;
            assert_eq!(e.ty, RDMA_NLDEV_ATTR_RES_PD_ENTRY);
            let mut etb = [None; NATTR];
            codec::parse_attrs(e.payload, &mut etb).map_err(|_| EINVAL)?;
            assert_eq!(a_u32(&etb, RDMA_NLDEV_ATTR_RES_PDN), Some(pd.res_id()));
            assert_eq!(a_u64(&etb, RDMA_NLDEV_ATTR_RES_USECNT), Some(0));
            assert_eq!(
                a_str(&etb, RDMA_NLDEV_ATTR_RES_KERN_NAME),
                Some(&b"ib_core_rs"[..])
            );
            assert!(etb[RDMA_NLDEV_ATTR_RES_PID as usize].is_none());
            entries += 1;
        }
        assert_eq!(entries, 1);
        // Nothing left from 1 on: the dump ends.
        let mut w = MsgWriter::new(&mut out);
        assert_eq!(
            res_dump_step(&mut w, ty_pd, 5, 77, &dev, ResType::Pd, 1, true)?,
            None
        );
        assert_eq!(w.len(), 0);
        // The summary counts it.
        let mut w = MsgWriter::new(&mut out);
        w.begin(ty(RDMA_NLDEV_CMD_RES_GET), 0, 5, 77)
            .map_err(Error::from)?;
        fill_res_info(&mut w, &*dev)?;
        w.end().map_err(Error::from)?;
        let (_, tb) = single(w.bytes())?;
        let summary = tb[RDMA_NLDEV_ATTR_RES_SUMMARY as usize].ok_or(EINVAL)?;
        let mut pd_curr = None;
        for e in summary.nested() {
            let e = e.map_err(|_| EINVAL)?;
            let mut etb = [None; NATTR];
            codec::parse_attrs(e.payload, &mut etb).map_err(|_| EINVAL)?;
            if a_str(&etb, RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME) == Some(&b"pd"[..]) {
                pd_curr = a_u64(&etb, RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR);
                assert_eq!(a_u64(&etb, RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_MAX), Some(9));
            }
        }
        assert_eq!(pd_curr, Some(1));
        drop(pd);
        Device::dealloc(dev);
        Ok(())
    }

    /// The `(CTXN, PDN)` attributes of each entry of a one-message `RES_*_GET` dump of `kind`.
    fn res_links(
        dev: &Device<T>,
        kind: ResType,
        table: u16,
    ) -> Result<KVec<(Option<u32>, Option<u32>)>> {
        let mut out = [0u8; 1024];
        let mut w = MsgWriter::new(&mut out);
        res_dump_step(
            &mut w,
            ty(RDMA_NLDEV_CMD_RES_PD_GET),
            5,
            77,
            dev,
            kind,
            0,
            true,
        )?;
        let (_, tb) = single(w.bytes())?;
        let mut v = KVec::new();
        for e in tb[table as usize].ok_or(EINVAL)?.nested() {
            let e = e.map_err(|_| EINVAL)?;
            let mut etb = [None; NATTR];
            codec::parse_attrs(e.payload, &mut etb).map_err(|_| EINVAL)?;
            let links = (
                a_u32(&etb, RDMA_NLDEV_ATTR_RES_CTXN),
                a_u32(&etb, RDMA_NLDEV_ATTR_RES_PDN),
            );
            v.push(links, GFP_KERNEL)?;
        }
        Ok(v)
    }

    #[test]
    fn res_dump_names_the_context_and_pd_of_user_objects() -> Result {
        let dev = device()?;
        let user = Owner::User {
            pid: 42,
            comm: [0; crate::task::TASK_COMM_LEN],
        };
        let kern = crate::kernel_owner!();
        let rt = dev.restrack();
        let ctx = rt.add(ResType::Ctx, user)?;
        let kctx = rt.add(ResType::Ctx, kern)?;
        let to_ctx = ResLinks {
            ctxn: Some(ctx),
            pdn: None,
        };
        let on_pd = |pdn| ResLinks {
            ctxn: None,
            pdn: Some(pdn),
        };
        // A kernel PD (PD 0) and a user PD (PD 1) of context `ctx`; a kernel object never
        // names a context or PD, even if it was made with one (upstream
        // `rdma_is_kernel_res()`).
        let kpd = rt.add_linked(ResType::Pd, kern, ResDetails::None, to_ctx)?;
        let upd = rt.add_linked(ResType::Pd, user, ResDetails::None, to_ctx)?;
        let ucq = rt.add_linked(ResType::Cq, user, ResDetails::Cq { cqe: 4 }, to_ctx)?;
        let kcq = rt.add_linked(ResType::Cq, kern, ResDetails::Cq { cqe: 4 }, to_ctx)?;
        let qp = ResDetails::Qp { qp_type: 2, srq: 0 };
        let uqp = rt.add_linked(ResType::Qp, user, qp, on_pd(upd.id))?;
        uqp.num.store(0x101, Relaxed);
        let kqp = rt.add_linked(ResType::Qp, kern, qp, on_pd(kpd.id))?;
        kqp.num.store(0x102, Relaxed);
        // A user QP without a PD (an XRC target QP) names none.
        let tqp = ResDetails::Qp {
            qp_type: 10,
            srq: 0,
        };
        let xqp = rt.add_linked(ResType::Qp, user, tqp, ResLinks::default())?;
        xqp.num.store(0x103, Relaxed);
        let mr = ResDetails::Mr { length: 4096 };
        let umr = rt.add_linked(ResType::Mr, user, mr, on_pd(upd.id))?;
        let kmr = rt.add_linked(ResType::Mr, kern, mr, on_pd(kpd.id))?;
        let u = |c, p| (c, p);
        let pds = res_links(&dev, ResType::Pd, RDMA_NLDEV_ATTR_RES_PD)?;
        assert_eq!(
            &pds[..],
            &[u(None, Some(kpd.id)), u(Some(ctx), Some(upd.id))]
        );
        let cqs = res_links(&dev, ResType::Cq, RDMA_NLDEV_ATTR_RES_CQ)?;
        assert_eq!(&cqs[..], &[u(Some(ctx), None), u(None, None)]);
        let qps = res_links(&dev, ResType::Qp, RDMA_NLDEV_ATTR_RES_QP)?;
        assert_eq!(
            &qps[..],
            &[u(None, Some(upd.id)), u(None, None), u(None, None)]
        );
        let mrs = res_links(&dev, ResType::Mr, RDMA_NLDEV_ATTR_RES_MR)?;
        assert_eq!(&mrs[..], &[u(None, Some(upd.id)), u(None, None)]);
        // The contexts: the user one by its number, the kernel one as an empty entry.
        let ctxs = res_links(&dev, ResType::Ctx, RDMA_NLDEV_ATTR_RES_CTX)?;
        assert_eq!(&ctxs[..], &[u(Some(ctx), None), u(None, None)]);
        for (k, id) in [
            (ResType::Mr, kmr.id),
            (ResType::Mr, umr.id),
            (ResType::Qp, xqp.id),
            (ResType::Qp, kqp.id),
            (ResType::Qp, uqp.id),
            (ResType::Cq, kcq.id),
            (ResType::Cq, ucq.id),
            (ResType::Pd, upd.id),
            (ResType::Pd, kpd.id),
            (ResType::Ctx, kctx),
            (ResType::Ctx, ctx),
        ] {
            rt.del(k, id);
        }
        assert_eq!(rt.total(), 0);
        Device::dealloc(dev);
        Ok(())
    }

    struct CdevClient;

    impl Client for CdevClient {
        fn name(&self) -> &'static CStr {
            c"kunit_cdev"
        }
        fn add(&self, _: &DeviceCore) -> Result {
            Ok(())
        }
        fn remove(&self, _: &DeviceCore) {}
        fn get_nl_info(&self, _: &DeviceCore, port: Option<u32>) -> Result<ClientNlInfo> {
            if port.is_some() {
                return Err(EINVAL);
            }
            Ok(ClientNlInfo {
                devt: (231 << 20) | 192,
                abi: 1,
                name: DevName::new(b"uverbs0")?,
                driver_id: Some(1),
            })
        }
    }

    fn chardev_req(buf: &mut [u8], name: &[u8], index: u32) -> usize {
        let mut w = MsgWriter::new(buf);
        w.begin(ty(RDMA_NLDEV_CMD_GET_CHARDEV), NLM_F_REQUEST, 5, 0)
            .unwrap();
        w.put_u32(RDMA_NLDEV_ATTR_DEV_INDEX, index).unwrap();
        w.put_str(RDMA_NLDEV_ATTR_CHARDEV_TYPE, name).unwrap();
        w.end().unwrap();
        w.len()
    }

    #[test]
    fn get_chardev_asks_the_named_client() -> Result {
        let reg = register_client(Arc::new(CdevClient, GFP_KERNEL)?)?;
        let dev = device()?;
        let mut rb = [0u8; 64];
        let mut out = [0u8; 256];
        let n = chardev_req(&mut rb, b"kunit_cdev", dev.index());
        let mut w = MsgWriter::new(&mut out);
        get_chardev_doit(&NlDev, &req(&rb[..n]), &mut w)?;
        let (t, tb) = single(w.bytes())?;
        assert_eq!(t, ty(RDMA_NLDEV_CMD_GET_CHARDEV));
        // huge_encode_dev(MKDEV(231, 192)) = 0xe7c0.
        assert_eq!(a_u64(&tb, RDMA_NLDEV_ATTR_CHARDEV), Some(0xe7c0));
        assert_eq!(a_u64(&tb, RDMA_NLDEV_ATTR_CHARDEV_ABI), Some(1));
        assert_eq!(
            a_str(&tb, RDMA_NLDEV_ATTR_CHARDEV_NAME),
            Some(&b"uverbs0"[..])
        );
        assert_eq!(a_u32(&tb, RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID), Some(1));
        // No client of that name: EOPNOTSUPP (upstream ib_get_client_nl_info()).
        let n = chardev_req(&mut rb, b"nosuch", dev.index());
        let mut w = MsgWriter::new(&mut out);
        assert_eq!(
            get_chardev_doit(&NlDev, &req(&rb[..n]), &mut w),
            Err(EOPNOTSUPP)
        );
        Device::dealloc(dev);
        drop(reg);
        Ok(())
    }

    fn shown(f: impl FnOnce(&mut SysfsBuf<'_>) -> Result) -> Result<KVec<u8>> {
        let mut page = [0u8; 128];
        let mut b = SysfsBuf::new(&mut page);
        f(&mut b)?;
        let mut v = KVec::new();
        v.extend_from_slice(b.as_bytes(), GFP_KERNEL)?;
        Ok(v)
    }

    #[test]
    fn sysfs_show_functions_use_upstream_formats() -> Result {
        let dev = device()?;
        let s = IbSysfs::new(dev.clone());
        let d = |n: &str| shown(|b| show::dev(&s, n, b));
        let p = |n: &str| shown(|b| show::port(&s, 1, n, b));
        assert_eq!(&*d("node_type")?, b"1: CA\n");
        assert_eq!(&*d("node_guid")?, b"1122:3344:5566:7788\n");
        assert_eq!(&*d("sys_image_guid")?, b"0102:0304:0506:0708\n");
        assert_eq!(&*d("fw_ver")?, b"20.1.42\n");
        assert_eq!(&*p("state")?, b"4: ACTIVE\n");
        assert_eq!(&*p("phys_state")?, b"5: LinkUp\n");
        assert_eq!(&*p("lid")?, b"0x12\n");
        assert_eq!(&*p("cap_mask")?, b"0x00000000\n");
        assert_eq!(&*p("rate")?, b"56 Gb/sec (4X FDR)\n");
        assert_eq!(&*p("link_layer")?, b"InfiniBand\n");
        assert_eq!(&*p("gids/0")?, b"fe80:0000:0000:0000:0000:0000:0000:abcd\n");
        assert_eq!(&*p("gids/1")?, b"0000:0000:0000:0000:0000:0000:0000:0000\n");
        assert_eq!(&*p("pkeys/0")?, b"0xffff\n");
        assert_eq!(&*p("gid_attrs/types/0")?, b"IB/RoCE v1\n");
        assert_eq!(p("gid_attrs/types/1").err(), Some(EINVAL));
        assert_eq!(p("gid_attrs/ndevs/0").err(), Some(EINVAL));
        assert_eq!(p("pkeys/1").err(), Some(EINVAL));
        drop(s);
        Device::dealloc(dev);
        Ok(())
    }

    /// A device with port statistics and, for `COps`, the counter ops (ids from 7 on; a
    /// counter's rx value is 10 times its id); `ROps` has the statistics only (rdma_rxe's
    /// shape: no `counter_bind_qp`).
    static NEXT_COUNTER: kernel::sync::atomic::Atomic<u32> = kernel::sync::atomic::Atomic::new(7);
    static STAT_NAMES: [&CStr; 2] = [c"rx_write_requests", c"out_of_buffer"];

    macro_rules! stat_ops {
        ($name:ident { $($extra:tt)* }) => {
            struct $name;
            #[vtable]
            impl DeviceOps for $name {
                type Driver = T;
                fn query_device(d: &Device<T>) -> Result<DeviceAttr> {
                    TOps::query_device(d)
                }
                fn get_port_immutable(d: &Device<T>, p: u32) -> Result<PortImmutable> {
                    TOps::get_port_immutable(d, p)
                }
                fn query_port(d: &Device<T>, p: u32) -> Result<PortAttr> {
                    TOps::query_port(d, p)
                }
                fn query_gid(d: &Device<T>, p: u32, i: u32) -> Result<Gid> {
                    TOps::query_gid(d, p, i)
                }
                fn query_pkey(d: &Device<T>, p: u32, i: u32) -> Result<u16> {
                    TOps::query_pkey(d, p, i)
                }
                fn hw_port_stat_names(_: &Device<T>, _: u32) -> Option<&'static [&'static CStr]> {
                    Some(&STAT_NAMES[..])
                }
                fn get_hw_stats(_: &Device<T>, _: u32, out: &mut [u64]) -> Result<usize> {
                    for (o, x) in out.iter_mut().zip([100, 0]) {
                        *o = x;
                    }
                    Ok(2)
                }
                $($extra)*
            }
        };
    }

    stat_ops!(COps {
        fn counter_bind_qp(_: &Device<T>, id: u32, qpn: u32, _: u32) -> Result<u32> {
            if qpn == 0x666 {
                return Err(EIO);
            }
            Ok(if id == 0 {
                NEXT_COUNTER.fetch_add(1, kernel::sync::atomic::Relaxed)
            } else {
                id
            })
        }
        fn counter_unbind_qp(_: &Device<T>, _: u32, _: u32) -> Result {
            Ok(())
        }
        fn counter_dealloc(_: &Device<T>, _: u32) -> Result {
            Ok(())
        }
        fn counter_update_stats(_: &Device<T>, id: u32, _: u32, out: &mut [u64]) -> Result<usize> {
            for (o, x) in out.iter_mut().zip([u64::from(id) * 10, 0]) {
                *o = x;
            }
            Ok(2)
        }
    });
    stat_ops!(ROps {});

    const C_OPS: Ops<T> = Ops::of::<COps>();
    const R_OPS: Ops<T> = Ops::of::<ROps>();

    /// A user QP `qpn` on port 1 in restrack (what `Qp::create_user` and a modify to INIT
    /// leave there), without a driver QP.
    fn fake_qp(dev: &Device<T>, qpn: u32, pid: i32) -> Result<u32> {
        let e = dev.restrack().add_entry(
            ResType::Qp,
            Owner::User {
                pid,
                comm: [0; crate::task::TASK_COMM_LEN],
            },
            ResDetails::Qp { qp_type: 2, srq: 0 },
        )?;
        e.num.store(qpn, kernel::sync::atomic::Relaxed);
        e.qp_port.store(1, kernel::sync::atomic::Relaxed);
        Ok(e.id)
    }

    /// Runs `f` (a doit) on a request of `op` with `extra` u32 attributes: the reply's
    /// attributes or the errno.
    fn stat_req(
        f: crate::netlink::DoitFn<NlDev>,
        op: u16,
        idx: u32,
        extra: &[(u16, u32)],
        out: &mut [u8],
    ) -> Result<KVec<(u16, u32)>> {
        let mut rb = [0u8; 256];
        let n = request(&mut rb, op, Some(idx), extra);
        let mut w = MsgWriter::new(out);
        f(&NlDev, &req(&rb[..n]), &mut w)?;
        let (_, tb) = single(w.bytes())?;
        let mut v = KVec::new();
        for t in [
            RDMA_NLDEV_ATTR_STAT_COUNTER_ID,
            RDMA_NLDEV_ATTR_RES_LQPN,
            RDMA_NLDEV_ATTR_STAT_MODE,
        ] {
            if let Some(x) = a_u32(&tb, t) {
                v.push((t, x), GFP_KERNEL)?;
            }
        }
        Ok(v)
    }

    /// upstream counters.c through nldev: manual bind (new counter, named counter), the
    /// errnos of bind/unbind/mode, the port totals with bound and released counters, auto
    /// binding by type; a device with statistics but no counter ops answers ENOMEM to a bind
    /// (rdma_rxe), one without statistics EOPNOTSUPP.
    #[test]
    fn stat_counters_follow_upstream() -> Result {
        use RDMA_NLDEV_ATTR_PORT_INDEX as PORT;
        use RDMA_NLDEV_ATTR_RES_LQPN as LQPN;
        use RDMA_NLDEV_ATTR_STAT_COUNTER_ID as CNTN;
        use RDMA_NLDEV_ATTR_STAT_MODE as MODE;
        use RDMA_NLDEV_ATTR_STAT_RES as RES;
        const QP: u32 = RDMA_NLDEV_ATTR_RES_QP as u32;
        let dev = Device::alloc(&C_OPS, 1, Ok(()))?;
        Device::register(&dev, c"nlstat_%d")?;
        let idx = dev.index();
        let mut out = [0u8; 1024];
        let q1 = fake_qp(&dev, 0x41, 1000)?;
        let q2 = fake_qp(&dev, 0x42, 1000)?;
        let set = |e: &[(u16, u32)], out: &mut [u8]| {
            stat_req(stat_set_doit, RDMA_NLDEV_CMD_STAT_SET, idx, e, out)
        };
        let del = |e: &[(u16, u32)], out: &mut [u8]| {
            stat_req(stat_del_doit, RDMA_NLDEV_CMD_STAT_DEL, idx, e, out)
        };
        let manual = counters::MODE_MANUAL;
        // Bind to a new counter: its id (the driver's) and the QP answered.
        let r = set(
            &[(PORT, 1), (RES, QP), (MODE, manual), (LQPN, 0x42)],
            &mut out,
        )?;
        let id = r.iter().find(|x| x.0 == CNTN).map(|x| x.1).ok_or(EINVAL)?;
        assert!(id >= 7);
        assert!(r.contains(&(LQPN, 0x42)));
        // Errnos: unknown QP ENOENT, unknown counter ENOENT, a bound QP EINVAL to a named
        // counter and ENOMEM to a new one, a driver failure ENOMEM (alloc_and_bind()), no
        // STAT_RES QP EINVAL, no LQPN EINVAL, a bad port EINVAL.
        let b = |e: &[(u16, u32)]| {
            let mut o = [0u8; 512];
            set(e, &mut o).map(|_| ())
        };
        assert_eq!(
            b(&[(PORT, 1), (RES, QP), (MODE, manual), (LQPN, 0x99)]),
            Err(ENOENT)
        );
        assert_eq!(
            b(&[
                (PORT, 1),
                (RES, QP),
                (MODE, manual),
                (LQPN, 0x41),
                (CNTN, id + 50)
            ]),
            Err(ENOENT)
        );
        assert_eq!(
            b(&[
                (PORT, 1),
                (RES, QP),
                (MODE, manual),
                (LQPN, 0x42),
                (CNTN, id)
            ]),
            Err(EINVAL)
        );
        assert_eq!(
            b(&[(PORT, 1), (RES, QP), (MODE, manual), (LQPN, 0x42)]),
            Err(ENOMEM)
        );
        let q3 = fake_qp(&dev, 0x666, 1000)?;
        assert_eq!(
            b(&[(PORT, 1), (RES, QP), (MODE, manual), (LQPN, 0x666)]),
            Err(ENOMEM)
        );
        assert_eq!(b(&[(PORT, 1), (MODE, manual), (LQPN, 0x41)]), Err(EINVAL));
        assert_eq!(b(&[(PORT, 1), (RES, QP), (MODE, manual)]), Err(EINVAL));
        assert_eq!(
            b(&[(PORT, 2), (RES, QP), (MODE, manual), (LQPN, 0x41)]),
            Err(EINVAL)
        );
        assert_eq!(b(&[(PORT, 1)]), Err(EINVAL));
        // A mode that is neither auto nor manual is a manual bind (upstream), so without
        // RES_LQPN EINVAL.
        assert_eq!(b(&[(PORT, 1), (RES, QP), (MODE, 3)]), Err(EINVAL));
        // Auto mode while a counter exists: EBUSY; a mask beyond type|pid is checked after.
        let auto = counters::MODE_AUTO;
        let mask = RDMA_NLDEV_ATTR_STAT_AUTO_MODE_MASK;
        assert_eq!(
            b(&[(PORT, 1), (RES, QP), (MODE, auto), (mask, 1)]),
            Err(EBUSY)
        );
        // The second QP to the counter; the port totals: 100 + the counter's 10 * id.
        set(
            &[
                (PORT, 1),
                (RES, QP),
                (MODE, manual),
                (LQPN, 0x41),
                (CNTN, id),
            ],
            &mut out,
        )?;
        let mut v = [0u64; 4];
        assert_eq!(dev.hw_stats(1, &mut v)?, 2);
        assert_eq!(v[0], 100 + u64::from(id) * 10);
        let list = dev.counter_dump(Some(1), None)?;
        assert_eq!(list.len(), 1);
        assert_eq!(&list[0].qps[..], &[0x41, 0x42]);
        assert_eq!(list[0].mode, manual);
        // Unbind: another counter EINVAL, unknown QP ENOENT; then both, the counter goes and
        // its values stay in the port's totals (history).
        let u = |e: &[(u16, u32)]| {
            let mut o = [0u8; 512];
            del(e, &mut o).map(|_| ())
        };
        assert_eq!(
            u(&[(PORT, 1), (RES, QP), (CNTN, id + 1), (LQPN, 0x41)]),
            Err(EINVAL)
        );
        assert_eq!(
            u(&[(PORT, 1), (RES, QP), (CNTN, id), (LQPN, 0x99)]),
            Err(ENOENT)
        );
        assert_eq!(u(&[(PORT, 1), (RES, QP), (LQPN, 0x41)]), Err(EINVAL));
        u(&[(PORT, 1), (RES, QP), (CNTN, id), (LQPN, 0x41)])?;
        u(&[(PORT, 1), (RES, QP), (CNTN, id), (LQPN, 0x42)])?;
        assert_eq!(dev.counter_dump(None, None)?.len(), 0);
        assert_eq!(
            u(&[(PORT, 1), (RES, QP), (CNTN, id), (LQPN, 0x42)]),
            Err(EINVAL)
        );
        assert_eq!(dev.hw_stats(1, &mut v)?, 2);
        assert_eq!(v[0], 100 + u64::from(id) * 10);
        assert_eq!(dev.counter_get_mode(1)?.0, counters::MODE_NONE);
        // Not in auto mode, RESET->INIT's bind answers before it looks the QP up (0x777 is no
        // QP: the lookup would say ENOENT).
        assert_eq!(dev.counter_bind_qp_auto(0x777, 1), Ok(()));
        // Auto by type: two QPs of one type share a counter, a mask bit beyond type|pid is
        // EINVAL; the mode query answers the mask.
        assert_eq!(
            b(&[(PORT, 1), (RES, QP), (MODE, auto), (mask, 4)]),
            Err(EINVAL)
        );
        set(&[(PORT, 1), (RES, QP), (MODE, auto), (mask, 1)], &mut out)?;
        let mut rb = [0u8; 128];
        let n = request(
            &mut rb,
            RDMA_NLDEV_CMD_STAT_GET,
            Some(idx),
            &[(PORT, 1), (RES, QP), (MODE, 0)],
        );
        let mut w = MsgWriter::new(&mut out);
        stat_get_doit(&NlDev, &req(&rb[..n]), &mut w)?;
        let (_, tb) = single(w.bytes())?;
        assert_eq!(a_u32(&tb, MODE), Some(auto));
        assert_eq!(a_u32(&tb, mask), Some(1));
        dev.counter_bind_qp_auto(0x41, 1)?;
        dev.counter_bind_qp_auto(0x42, 1)?;
        let list = dev.counter_dump(None, None)?;
        assert_eq!(list.len(), 1);
        assert_eq!(&list[0].qps[..], &[0x41, 0x42]);
        assert_eq!((list[0].mode, list[0].qp_type), (auto, 2));
        assert_eq!(
            b(&[(PORT, 1), (RES, QP), (MODE, manual), (LQPN, 0x666)]),
            Err(EINVAL)
        );
        dev.counter_unbind_qp_destroy(0x41, 1);
        dev.counter_unbind_qp_destroy(0x42, 1);
        assert_eq!(dev.counter_dump(None, None)?.len(), 0);
        for q in [q1, q2, q3] {
            dev.restrack().del(ResType::Qp, q);
        }
        Device::dealloc(dev);

        // rdma_rxe's shape: statistics, no counter ops. Auto mode is accepted, a bind ENOMEM.
        let dev = Device::alloc(&R_OPS, 1, Ok(()))?;
        Device::register(&dev, c"nlstat_%d")?;
        let idx = dev.index();
        let q = fake_qp(&dev, 0x41, 1000)?;
        let mut o = [0u8; 512];
        stat_req(
            stat_set_doit,
            RDMA_NLDEV_CMD_STAT_SET,
            idx,
            &[(PORT, 1), (RES, QP), (MODE, auto), (mask, 1)],
            &mut o,
        )?;
        assert_eq!(dev.counter_bind_qp_auto(0x41, 1), Err(ENOMEM));
        assert_eq!(dev.counter_dump(None, None)?.len(), 0);
        stat_req(
            stat_set_doit,
            RDMA_NLDEV_CMD_STAT_SET,
            idx,
            &[(PORT, 1), (RES, QP), (MODE, auto), (mask, 0)],
            &mut o,
        )?;
        assert_eq!(
            stat_req(
                stat_set_doit,
                RDMA_NLDEV_CMD_STAT_SET,
                idx,
                &[(PORT, 1), (RES, QP), (MODE, manual), (LQPN, 0x41)],
                &mut o
            )
            .map(|_| ()),
            Err(ENOMEM)
        );
        dev.restrack().del(ResType::Qp, q);
        Device::dealloc(dev);

        // No statistics (TOps): auto mode and a new counter are EOPNOTSUPP.
        let dev = device()?;
        let idx = dev.index();
        let q = fake_qp(&dev, 0x41, 1000)?;
        assert_eq!(
            stat_req(
                stat_set_doit,
                RDMA_NLDEV_CMD_STAT_SET,
                idx,
                &[(PORT, 1), (RES, QP), (MODE, auto), (mask, 1)],
                &mut o
            )
            .map(|_| ()),
            Err(EOPNOTSUPP)
        );
        assert_eq!(
            stat_req(
                stat_set_doit,
                RDMA_NLDEV_CMD_STAT_SET,
                idx,
                &[(PORT, 1), (RES, QP), (MODE, manual), (LQPN, 0x41)],
                &mut o
            )
            .map(|_| ()),
            Err(EOPNOTSUPP)
        );
        dev.restrack().del(ResType::Qp, q);
        Device::dealloc(dev);
        Ok(())
    }
}
