// SPDX-License-Identifier: GPL-2.0

//! KUnit suite `mlx5_ib_rs_user`: the objects of user contexts against the simulator — UAR
//! objects and their mmap entries, user PDs, CQs, QPs and MRs with libmlx5's udata — and the
//! unwinding of every create path when its firmware command fails. User memory is kernel
//! memory posing as pinned user pages ([`UserBuf::kernel`]): a KUnit thread has none.

use crate::cmd::exec;
use crate::cmd::qp::DestroyQp;
use crate::cmd::res::DestroyMkey;
use crate::dev::Mlx5Dev;
use crate::fwsim::fault::FaultAction;
use crate::hw::UarMem;
use crate::ib::cq::{self, CqMem};
use crate::ib::device::Mlx5Ib;
use crate::ib::mr;
use crate::ib::qp::{self, QpMem};
use crate::ib::uar::{mmap_lookup, uar_obj_alloc, uar_obj_destroy, UarPage};
use crate::ib::ucontext::Mlx5Ucontext;
use crate::ib::user_mem::{UserBuf, PAGE};
use crate::prm::opcode;
use crate::prm::status::Status;
use crate::simdev::SimFunction;
use crate::uabi::{self, qp_flag};
use ib_core_rs::device::Device;
use ib_core_rs::verbs::{
    AccessFlags, Cq, CqInitAttr, Mw, MwType, Pd, QpCap, QpInitAttr, QpType, Ucontext, Udata,
    UserCtx, UserMrReq,
};
use kernel::{prelude::*, sync::Arc};

fn sim(eth: bool) -> Result<Arc<SimFunction>> {
    SimFunction::one_port(fmt!("kunit.user"), eth, 8)
}

/// A context as libmlx5 44 opens it: v2 request, `DYN_UAR | 4K_UAR`, CQE version 1.
fn ucontext(ib: &Arc<Device<Mlx5Ib>>) -> Result<Arc<Ucontext<Mlx5Ib>>> {
    let mut req = [0u8; 32];
    req[16] = 1;
    req[24..32].copy_from_slice(&3u64.to_ne_bytes());
    let mut resp = [0u8; 72];
    let mut u = Udata::new(&req, &mut resp);
    Ucontext::alloc(ib, ib_core_rs::kernel_owner!(), &mut u)
}

fn db_pages(ctx: &Ucontext<Mlx5Ib>) -> usize {
    ctx.data::<Mlx5Ucontext>()
        .map_or(99, |c| c.db_pages.count())
}

fn fail(f: &SimFunction, op: u16) {
    f.with_faults(|p| {
        p.fail_opcode(
            op,
            FaultAction::Fail {
                status: Status::LIM_ERR,
                syndrome: 0x5f0000ff,
            },
        )
    })
}

fn cq_req(page_id: u32, cqe_size: u32) -> [u8; 32] {
    let mut b = [0u8; 32];
    b[16..20].copy_from_slice(&cqe_size.to_ne_bytes());
    b[22..24].copy_from_slice(&uabi::CQ_FLAGS_UAR_PAGE_INDEX.to_ne_bytes());
    b[24..26].copy_from_slice(&(page_id as u16).to_ne_bytes());
    b
}

fn qp_req(page_id: u32, sq: u32, rq: u32, rq_shift: u32, uidx: u32) -> [u8; 56] {
    let mut b = [0u8; 56];
    b[16..20].copy_from_slice(&sq.to_ne_bytes());
    b[20..24].copy_from_slice(&rq.to_ne_bytes());
    b[24..28].copy_from_slice(&rq_shift.to_ne_bytes());
    b[28..32].copy_from_slice(&qp_flag::UAR_PAGE_INDEX.to_ne_bytes());
    b[32..36].copy_from_slice(&uidx.to_ne_bytes());
    b[36..40].copy_from_slice(&page_id.to_ne_bytes());
    b
}

#[kunit_tests(mlx5_ib_rs_user)]
mod tests {
    use super::*;

    #[test]
    fn uar_objects_and_their_mappings() -> Result {
        let f = sim(false)?;
        let d = Mlx5Dev::probe(f.clone())?;
        let ib = d.ib().ok_or(ENODEV)?;
        let ctx = ucontext(ib)?;
        let base = f.counts();
        // Types: BF needs write-combining (the simulator has none), unknown types.
        assert_eq!(
            uar_obj_alloc(&ctx, uabi::UAR_ALLOC_TYPE_BF).err(),
            Some(EOPNOTSUPP)
        );
        assert_eq!(uar_obj_alloc(&ctx, 2).err(), Some(EOPNOTSUPP));
        // ALLOC_UAR refused: nothing allocated.
        fail(&f, opcode::ALLOC_UAR);
        assert_eq!(
            uar_obj_alloc(&ctx, uabi::UAR_ALLOC_TYPE_NC).err(),
            Some(ENOMEM)
        );
        f.with_faults(|p| p.clear());
        assert_eq!(f.counts().uar, base.uar);
        let a = uar_obj_alloc(&ctx, uabi::UAR_ALLOC_TYPE_NC)?;
        let b = uar_obj_alloc(&ctx, uabi::UAR_ALLOC_TYPE_NC)?;
        assert_eq!(f.counts().uar, base.uar + 2);
        assert_eq!(f.uar_pages(), 2);
        let entries = || ctx.mmap_entries().count();
        assert_eq!(entries(), 2);
        assert_ne!(a.page_id, b.page_id);
        assert_eq!(a.mmap_length as usize, kernel::page::PAGE_SIZE);
        // The first entry-based offsets: command 9, indexes 0 and 1 (libmlx5 mmaps these).
        let shift = kernel::page::PAGE_SHIFT;
        assert_eq!(a.mmap_offset, (9 << 8) << shift);
        assert_eq!(b.mmap_offset, ((9 << 8) | 1) << shift);
        // mmap: the entry's page, uncached; other offsets EINVAL, command 1 ENOSYS.
        let m = mmap_lookup(&ctx, a.mmap_offset >> shift)?;
        let p = m.data::<UarPage>().ok_or(EINVAL)?;
        assert_eq!(p.index(), a.page_id);
        assert!(!p.write_combining());
        assert!(matches!(p.mem(), UarMem::Trap(_)));
        assert_eq!(
            mmap_lookup(&ctx, (b.mmap_offset >> shift) + 1).err(),
            Some(EINVAL)
        );
        assert_eq!(mmap_lookup(&ctx, 1 << 8).err(), Some(ENOSYS));
        assert_eq!(mmap_lookup(&ctx, 3 << 8).err(), Some(EINVAL));
        // Destroying the object removes the entry; the UAR stays while "mapped" (m).
        uar_obj_destroy(a);
        assert_eq!(mmap_lookup(&ctx, (9 << 8) as u64).err(), Some(EINVAL));
        assert_eq!(f.counts().uar, base.uar + 2);
        // The removed entry keeps its offset while mapped.
        assert_eq!(entries(), 2);
        drop(m);
        assert_eq!(f.counts().uar, base.uar + 1);
        assert_eq!(f.uar_pages(), 1);
        // The freed offset is handed out again (lowest free).
        let c = uar_obj_alloc(&ctx, uabi::UAR_ALLOC_TYPE_NC)?;
        assert_eq!(c.mmap_offset, (9 << 8) << shift);
        drop(c);
        drop(b);
        assert_eq!(entries(), 0);
        assert_eq!(f.counts().uar, base.uar);
        assert_eq!(f.uar_pages(), 0);
        drop(ctx);
        drop(d);
        assert!(f.counts().is_zero());
        Ok(())
    }

    #[test]
    fn user_pd_cq_qp_mr() -> Result {
        for eth in [false, true] {
            let f = sim(eth)?;
            let d = Mlx5Dev::probe(f.clone())?;
            let ib = d.ib().ok_or(ENODEV)?;
            let hw = &*f;
            let ctx = ucontext(ib)?;
            let owner = || ib_core_rs::kernel_owner!();
            let uar = uar_obj_alloc(&ctx, uabi::UAR_ALLOC_TYPE_NC)?;
            // A user PD answers its pdn.
            let mut pd_resp = [0xffu8; 4];
            let pd = {
                let mut ud = Udata::new(&[], &mut pd_resp);
                Pd::alloc_user(ib, owner(), &mut UserCtx::new(&ctx, &mut ud))?
            };
            assert_eq!(u32::from_ne_bytes(pd_resp), pd.data().pdn);
            let base = f.counts();
            let rt = ib.restrack().total();

            // CQ through the core: a bad request fails before any memory is touched
            // (EINVAL, not the pin's error), and a good one stops at the pin (EFAULT: a KUnit
            // thread has no address space); the core
            // is left as it was.
            let attr = CqInitAttr {
                cqe: 15,
                comp_vector: 0,
                flags: 0,
            };
            for (size, err) in [(32u32, EINVAL), (64, EFAULT)] {
                let req = cq_req(uar.page_id, size);
                let mut resp = [0u8; 8];
                let mut ud = Udata::new(&req, &mut resp);
                let r = Cq::create_user(ib, &attr, None, owner(), &mut UserCtx::new(&ctx, &mut ud));
                assert_eq!(r.err(), Some(err));
            }
            assert_eq!(ib.restrack().total(), rt);

            // CQ in the driver with kernel memory posing as user memory.
            let mk_cq = |fault: bool| -> Result<cq::Mlx5Cq> {
                let req = cq_req(uar.page_id, 64);
                let mut resp = [0u8; 8];
                let mut ud = Udata::new(&req, &mut resp);
                let buf = UserBuf::kernel(&*f, 16 * 64, 0)?;
                let dbp = UserBuf::kernel(&*f, 8, 0)?;
                let m = ctx.data::<Mlx5Ucontext>().ok_or(EINVAL)?;
                let db = m.db_pages.map_kernel(dbp.addr() + 64, Some(dbp))?;
                if fault {
                    fail(&f, opcode::CREATE_CQ);
                }
                let r = cq::create_user_cq(
                    ib,
                    &attr,
                    None,
                    &mut UserCtx::new(&ctx, &mut ud),
                    CqMem::Given(buf, db),
                );
                f.with_faults(|p| p.clear());
                let cq = r?;
                assert_eq!(
                    u32::from_ne_bytes([resp[0], resp[1], resp[2], resp[3]]),
                    cq.cqn
                );
                Ok(cq)
            };
            assert_eq!(mk_cq(true).err(), Some(ENOMEM));
            assert_eq!((f.counts().cq, db_pages(&ctx)), (base.cq, 0));
            let ucq = mk_cq(false)?;
            assert_eq!(ucq.log_size, 4);
            assert_eq!((f.counts().cq, db_pages(&ctx)), (base.cq + 1, 1));
            // The CQ rings doorbells through the context's UAR: it cannot go first.
            exec(
                hw,
                &crate::cmd::cq::DestroyCq {
                    cqn: ucq.cqn,
                    uid: 0,
                },
            )?;
            drop(ucq);
            assert_eq!((f.counts().cq, db_pages(&ctx)), (base.cq, 0));

            // QPs use kernel CQs of the core (their CQ numbers are all CREATE_QP needs).
            let kcq = Cq::create(ib, &attr, None, owner())?;
            let qp_type = if eth { QpType::Ud } else { QpType::Rc };
            let init = QpInitAttr {
                send_cq: &kcq,
                recv_cq: &kcq,
                srq: None,
                qp_type,
                cap: QpCap {
                    max_send_wr: 16,
                    max_recv_wr: 16,
                    max_send_sge: 1,
                    max_recv_sge: 1,
                    max_inline_data: 0,
                },
                sq_sig_all: false,
                event_handler: None,
            };
            let mk_qp = |req: &[u8], fault: bool| -> Result<u32> {
                let mut resp = [0xffu8; 40];
                let mut ud = Udata::new(req, &mut resp);
                let buf = UserBuf::kernel(&*f, 16 * 32 + 64 * 64, 0)?;
                let dbp = UserBuf::kernel(&*f, 8, 0)?;
                let m = ctx.data::<Mlx5Ucontext>().ok_or(EINVAL)?;
                let db = m.db_pages.map_kernel(dbp.addr(), Some(dbp))?;
                if fault {
                    fail(&f, opcode::CREATE_QP);
                }
                let r = qp::create_user_qp(
                    &pd,
                    &init,
                    &mut UserCtx::new(&ctx, &mut ud),
                    QpMem::Given(Some(buf), db),
                );
                f.with_faults(|p| p.clear());
                let q = r?;
                // bfreg_index: MLX5_IB_INVALID_BFREG; no ECE on this profile.
                assert_eq!(&resp[..4], &uabi::INVALID_BFREG.to_ne_bytes());
                assert!(resp[4..].iter().all(|b| *b == 0));
                assert_eq!((q.data.log_sq_size, q.data.log_rq_size), (6, 4));
                Ok(q.qp_num)
            };
            let good = qp_req(uar.page_id, 64, 16, 5, 1);
            assert_eq!(mk_qp(&good, true).err(), Some(ENOMEM));
            assert_eq!((f.counts().qp, db_pages(&ctx)), (base.qp, 0));
            // libmlx5 rules: CQE version 1 needs a user index; the UAR page flag is needed.
            let no_uidx = qp_req(uar.page_id, 64, 16, 5, uabi::DEFAULT_UIDX);
            assert_eq!(mk_qp(&no_uidx, false).err(), Some(EINVAL));
            let mut no_flag = good;
            no_flag[28..32].fill(0);
            assert_eq!(mk_qp(&no_flag, false).err(), Some(EINVAL));
            // The RQ stride must fit an int (check_shl_overflow()); the SQ count a power of 2.
            let wrong_rq = qp_req(uar.page_id, 64, 16, 31, 1);
            assert_eq!(mk_qp(&wrong_rq, false).err(), Some(EINVAL));
            let wrong_sq = qp_req(uar.page_id, 48, 16, 5, 1);
            assert_eq!(mk_qp(&wrong_sq, false).err(), Some(EINVAL));
            assert_eq!((f.counts().qp, db_pages(&ctx)), (base.qp, 0));
            let qpn = mk_qp(&good, false)?;
            assert_eq!(f.counts().qp, base.qp + 1);
            exec(hw, &DestroyQp { qpn, uid: 0 })?;
            assert_eq!((f.counts().qp, db_pages(&ctx)), (base.qp, 0));

            // MR: an MTT mkey over the pages; CREATE_MKEY refused leaves nothing.
            let len = 3 * PAGE;
            let mk_mr = |iova_delta: u64, fault: bool| -> Result<u32> {
                let buf = UserBuf::kernel(&*f, len, 0x100)?;
                let req = UserMrReq {
                    start: buf.addr(),
                    length: len,
                    iova: buf.addr() + iova_delta,
                    access: AccessFlags::LOCAL_WRITE,
                };
                let mut ud = Udata::new(&[], &mut []);
                if fault {
                    fail(&f, opcode::CREATE_MKEY);
                }
                let r = mr::reg_user_mr(&pd, &req, &mut UserCtx::new(&ctx, &mut ud), Some(buf));
                f.with_faults(|p| p.clear());
                let m = r?;
                assert_eq!(m.lkey, m.rkey);
                assert_eq!(m.lkey >> 8, m.data.index);
                Ok(m.data.index)
            };
            assert_eq!(mk_mr(0, true).err(), Some(ENOMEM));
            assert_eq!(mk_mr(8, false).err(), Some(EINVAL));
            assert_eq!(f.counts().mkey, base.mkey);
            let idx = mk_mr(PAGE * 16, false)?;
            assert_eq!(f.counts().mkey, base.mkey + 1);
            exec(hw, &DestroyMkey { id: idx, uid: 0 })?;
            assert_eq!(f.counts().mkey, base.mkey);

            assert!(Cq::destroy(kcq).is_ok());
            assert!(Pd::dealloc(pd).is_ok());
            drop(uar);
            assert_eq!(ib.restrack().total(), rt - 1);
            drop(ctx);
            drop(d);
            assert!(f.counts().is_zero());
            assert_eq!(f.uar_pages(), 0);
        }
        Ok(())
    }

    #[test]
    fn doorbell_pages_are_shared_per_page() -> Result {
        let f = sim(false)?;
        let d = Mlx5Dev::probe(f.clone())?;
        let ib = d.ib().ok_or(ENODEV)?;
        let ctx = ucontext(ib)?;
        let m = ctx.data::<Mlx5Ucontext>().ok_or(EINVAL)?;
        let page = UserBuf::kernel(&*f, 8, 0)?;
        let addr = page.addr();
        // A CQ's and a QP's records in one page share it; another page is pinned apart.
        let a = m.db_pages.map_kernel(addr, Some(page))?;
        let b = m.db_pages.map_kernel(addr + 8, None)?;
        let other = UserBuf::kernel(&*f, 8, 0)?;
        let c = m.db_pages.map_kernel(other.addr(), Some(other))?;
        assert_eq!(m.db_pages.count(), 2);
        assert_eq!((a.dma, b.dma), (addr, addr + 8));
        drop(c);
        drop(a);
        assert_eq!(m.db_pages.count(), 1);
        // A record that would straddle the page end: EINVAL before anything is pinned.
        assert_eq!(m.db_pages.map(&ctx, PAGE - 4).err(), Some(EINVAL));
        // A KUnit thread has no user memory to pin.
        assert_eq!(m.db_pages.map(&ctx, 0x1000).err(), Some(EFAULT));
        drop(b);
        assert_eq!(m.db_pages.count(), 0);
        Ok(())
    }

    #[test]
    fn memory_windows_alloc_and_dealloc() -> Result {
        let f = sim(false)?;
        let d = Mlx5Dev::probe(f.clone())?;
        let ib = d.ib().ok_or(ENODEV)?;
        // imaicl: mlx5_ib_dev_mw_ops are installed.
        use ib_core_rs::ops::Op;
        assert!(ib.ops().has(Op::AllocMw) && ib.ops().has(Op::DeallocMw));
        let ctx = ucontext(ib)?;
        let owner = || ib_core_rs::kernel_owner!();
        let pd = {
            let mut resp = [0u8; 4];
            let mut ud = Udata::new(&[], &mut resp);
            Pd::alloc_user(ib, owner(), &mut UserCtx::new(&ctx, &mut ud))?
        };
        let base = f.counts();
        let alloc = |t: MwType, req: &[u8]| {
            let mut resp = [0u8; 0];
            let mut ud = Udata::new(req, &mut resp);
            Mw::alloc_user(&pd, t, &mut UserCtx::new(&ctx, &mut ud))
        };
        // mlx5_ib_alloc_mw()'s request: short EINVAL, comp_mask or reserved EOPNOTSUPP.
        assert_eq!(alloc(MwType::Type1, &[0u8; 4]).err(), Some(EINVAL));
        assert_eq!(
            alloc(MwType::Type1, &[1, 0, 0, 0, 0, 0, 0, 0]).err(),
            Some(EOPNOTSUPP)
        );
        assert_eq!(
            alloc(MwType::Type1, &[0, 0, 0, 0, 0, 1, 0, 0]).err(),
            Some(EOPNOTSUPP)
        );
        // The command's failure leaves nothing.
        fail(&f, opcode::CREATE_MKEY);
        assert!(alloc(MwType::Type2, &[]).is_err());
        f.with_faults(|p| p.clear());
        assert_eq!(f.counts().mkey, base.mkey);
        let w1 = alloc(MwType::Type1, &[])?;
        let w2 = alloc(MwType::Type2, &[0, 0, 0, 0, 5, 0, 0, 0])?;
        assert_eq!(f.counts().mkey, base.mkey + 2);
        assert_ne!(w1.rkey() >> 8, w2.rkey() >> 8);
        assert_eq!((w1.mw_type(), w2.mw_type()), (MwType::Type1, MwType::Type2));
        // The PD is in use while a window is.
        let pd = match Pd::dealloc(pd) {
            Err(e) => {
                assert_eq!(e.err, EBUSY);
                e.obj
            }
            Ok(()) => return Err(EINVAL),
        };
        assert!(Mw::dealloc(w1).is_ok());
        assert!(Mw::dealloc(w2).is_ok());
        assert_eq!(f.counts().mkey, base.mkey);
        assert!(Pd::dealloc(pd).is_ok());
        Ok(())
    }
}
