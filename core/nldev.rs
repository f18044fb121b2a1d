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
//!
//! This file is the command table; each command family is a file of `nldev/`:
//! `request.rs` (what every command shares), `dev.rs` (device, port, char device, system),
//! `res.rs` (resource dumps), `stat.rs` (statistics), `set.rs` (`SET` and notifications).

mod dev;
mod request;
mod res;
mod set;
mod stat;

pub(crate) use dev::sys_get_reply;
pub(crate) use request::NlDev;
pub(crate) use set::{notify, NotifyEvent};

use self::dev::{get_chardev_doit, port_get_doit, port_get_dump, sys_get_doit, DevInfo};
use self::request::{device_doit, dump_devices};
use self::res::{res_dump, ResSel, ResSummary};
use self::set::set_doit;
use self::stat::{stat_del_doit, stat_get_doit, stat_get_dump, stat_set_doit};
use crate::netlink::codec::MsgWriter;
use crate::netlink::nldev_uapi::*;
use crate::netlink::DumpCursor;
use crate::netlink::NlHandler;
use crate::netlink::NlOp;
use crate::netlink::Request;
use crate::restrack::ResType;
use kernel::prelude::*;

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
    ($kind:ident) => {
        res_type_dump!(@ ResSel::Type(ResType::$kind))
    };
    (@ $sel:expr) => {{
        fn dump(
            _: &NlDev,
            r: &Request<'_>,
            c: &mut DumpCursor<'_>,
            wr: &mut MsgWriter<'_>,
        ) -> Result {
            res_dump(r, c, wr, $sel)
        }
        dump
    }};
}

impl NlHandler for NlDev {
    const OPS: &'static [NlOp<Self>] = &[
        op(
            RDMA_NLDEV_CMD_GET,
            Some(device_doit::<DevInfo>),
            Some(dump_devices::<DevInfo>),
        ),
        op(
            RDMA_NLDEV_CMD_PORT_GET,
            Some(port_get_doit),
            Some(port_get_dump),
        ),
        op(RDMA_NLDEV_CMD_GET_CHARDEV, Some(get_chardev_doit), None),
        op(
            RDMA_NLDEV_CMD_RES_GET,
            Some(device_doit::<ResSummary>),
            Some(dump_devices::<ResSummary>),
        ),
        op(RDMA_NLDEV_CMD_RES_PD_GET, None, Some(res_type_dump!(Pd))),
        op(RDMA_NLDEV_CMD_RES_CQ_GET, None, Some(res_type_dump!(Cq))),
        op(RDMA_NLDEV_CMD_RES_QP_GET, None, Some(res_type_dump!(Qp))),
        op(RDMA_NLDEV_CMD_RES_MR_GET, None, Some(res_type_dump!(Mr))),
        op(RDMA_NLDEV_CMD_RES_SRQ_GET, None, Some(res_type_dump!(Srq))),
        op(RDMA_NLDEV_CMD_RES_CTX_GET, None, Some(res_type_dump!(Ctx))),
        op(
            RDMA_NLDEV_CMD_RES_CM_ID_GET,
            None,
            Some(res_type_dump!(@ ResSel::CmId)),
        ),
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

#[kunit_tests(ib_core_rs_nldev)]
mod tests {
    use super::dev::*;
    use super::request::*;
    use super::res::*;
    use super::stat::*;
    use super::*;
    use crate::attr::{DeviceAttr, Gid, PortAttr, PortImmutable, PortState};
    use crate::client::ClientNlInfo;
    use crate::client::{register_client, Client};
    use crate::counters;
    use crate::device::{DevName, Device};
    use crate::driver::Driver;
    use crate::ib_device::{DeviceCore, IbDevice};
    use crate::netlink::codec::{self, Attr, NlMsg, NlMsgIter, NLM_F_REQUEST};
    use crate::ops::{DeviceOps, Ops};
    use crate::restrack::{Owner, ResDetails, ResLinks};
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
        device_doit::<DevInfo>(&NlDev, &req(&rb[..n]), &mut w)?;
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
        assert_eq!(
            device_doit::<DevInfo>(&NlDev, &req(&rb[..n]), &mut w),
            Err(EINVAL)
        );
        let n = request(&mut rb, RDMA_NLDEV_CMD_GET, None, &[]);
        assert_eq!(
            device_doit::<DevInfo>(&NlDev, &req(&rb[..n]), &mut w),
            Err(EINVAL)
        );

        // PORT_GET of `port`: the length of the reply in `out`.
        let port_get = |port, out: &mut [u8]| -> Result<usize> {
            let mut rb = [0u8; 64];
            let extra = [(RDMA_NLDEV_ATTR_PORT_INDEX, port)];
            let n = request(&mut rb, RDMA_NLDEV_CMD_PORT_GET, Some(idx), &extra);
            let mut w = MsgWriter::new(out);
            port_get_doit(&NlDev, &req(&rb[..n]), &mut w)?;
            Ok(w.bytes().len())
        };
        let len = port_get(1, &mut out)?;
        let (_, tb) = single(&out[..len])?;
        assert_eq!(a_u32(&tb, RDMA_NLDEV_ATTR_PORT_INDEX), Some(1));
        assert_eq!(a_u8(&tb, RDMA_NLDEV_ATTR_PORT_STATE), Some(4));
        assert_eq!(a_u8(&tb, RDMA_NLDEV_ATTR_PORT_PHYS_STATE), Some(5));
        assert_eq!(a_u32(&tb, RDMA_NLDEV_ATTR_LID), Some(0x12));
        assert_eq!(
            a_u64(&tb, RDMA_NLDEV_ATTR_SUBNET_PREFIX),
            Some(0xfe80_0000_0000_0000)
        );
        assert_eq!(port_get(2, &mut out), Err(EINVAL));
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
        let bind_to = |lqpn, cntn| {
            b(&[
                (PORT, 1),
                (RES, QP),
                (MODE, manual),
                (LQPN, lqpn),
                (CNTN, cntn),
            ])
        };
        assert_eq!(bind_to(0x41, id + 50), Err(ENOENT));
        assert_eq!(bind_to(0x42, id), Err(EINVAL));
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

        // A STAT_SET on device `idx`, its errno.
        let set_on = |idx, e: &[(u16, u32)]| {
            let mut o = [0u8; 512];
            stat_req(stat_set_doit, RDMA_NLDEV_CMD_STAT_SET, idx, e, &mut o).map(|_| ())
        };
        // rdma_rxe's shape: statistics, no counter ops. Auto mode is accepted, a bind ENOMEM.
        let dev = Device::alloc(&R_OPS, 1, Ok(()))?;
        Device::register(&dev, c"nlstat_%d")?;
        let idx = dev.index();
        let q = fake_qp(&dev, 0x41, 1000)?;
        set_on(idx, &[(PORT, 1), (RES, QP), (MODE, auto), (mask, 1)])?;
        assert_eq!(dev.counter_bind_qp_auto(0x41, 1), Err(ENOMEM));
        assert_eq!(dev.counter_dump(None, None)?.len(), 0);
        set_on(idx, &[(PORT, 1), (RES, QP), (MODE, auto), (mask, 0)])?;
        let bind = [(PORT, 1), (RES, QP), (MODE, manual), (LQPN, 0x41)];
        assert_eq!(set_on(idx, &bind), Err(ENOMEM));
        dev.restrack().del(ResType::Qp, q);
        Device::dealloc(dev);

        // No statistics (TOps): auto mode and a new counter are EOPNOTSUPP.
        let dev = device()?;
        let idx = dev.index();
        let q = fake_qp(&dev, 0x41, 1000)?;
        assert_eq!(
            set_on(idx, &[(PORT, 1), (RES, QP), (MODE, auto), (mask, 1)]),
            Err(EOPNOTSUPP)
        );
        assert_eq!(set_on(idx, &bind), Err(EOPNOTSUPP));
        dev.restrack().del(ResType::Qp, q);
        Device::dealloc(dev);
        Ok(())
    }
}
