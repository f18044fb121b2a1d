// SPDX-License-Identifier: GPL-2.0

//! A benchmark, not a test: the cost of a kernel-verbs data-path dispatch
//! through the core (`Qp::post_send`, `Cq::poll`) into a no-op driver op,
//! next to a call of the same op through a function pointer (what upstream's inline
//! `ib_post_send()` is: `qp->device->ops.post_send(...)`, an indirect call) and a static call
//! of it, in one run.
//!
//! Run with `insmod ib_core_rs_test.ko bench=N` (N calls per figure), or
//! `make bench`. Prints one line per verb:
//! `ib_core_rs bench: post_send: core X.XX ns/call, direct Y.YY ns/call, delta Z.ZZ ns, static S.SS ns`
//! (`direct` is the indirect call, upstream's equivalent; `static` the call a compiler can see).
//! Under QEMU TCG the absolute figures are those of an emulated CPU; the
//! delta between the two is the dispatch overhead (seed §3.3: no extra
//! layer on the data path — the goal is within 1 ns of the direct call).

use super::*;
use ib_core_rs::verbs::{QpCap, QpType, Sge, WrOpcode};
use kernel::time::{Instant, Monotonic};

/// No-op data-path ops; the rest of the table comes from the mock.
struct BenchOps;

#[vtable]
impl DeviceOps for BenchOps {
    type Driver = Mock;

    fn query_device(_dev: &Device<Mock>) -> Result<DeviceAttr> {
        Ok(DeviceAttr::default())
    }

    fn query_port(_dev: &Device<Mock>, _port: u32) -> Result<PortAttr> {
        Ok(PortAttr::default())
    }

    #[inline(never)]
    fn post_send(qp: &Qp<Mock>, wr: &[SendWr<'_>]) -> Result {
        core::hint::black_box((qp, wr));
        Ok(())
    }

    #[inline(never)]
    fn poll_cq(cq: &Cq<Mock>, wc: &mut [Wc]) -> Result<usize> {
        core::hint::black_box((cq, &wc));
        Ok(0)
    }
}

/// Nanoseconds per call, in hundredths, of `iters` calls of `f`.
fn time(iters: u32, mut f: impl FnMut() -> Result) -> Result<i64> {
    let t0 = Instant::<Monotonic>::now();
    for _ in 0..iters {
        f()?;
    }
    Ok(t0.elapsed().as_nanos() * 100 / i64::from(iters.max(1)))
}

fn report(verb: &str, iters: u32, core: i64, direct: i64, fixed: i64) {
    let d = core - direct;
    pr_info!(
        "ib_core_rs bench: {}: core {}.{:02} ns/call, direct {}.{:02} ns/call, delta {}{}.{:02} ns, static {}.{:02} ns ({} calls each)\n",
        verb,
        core / 100,
        core % 100,
        direct / 100,
        direct % 100,
        if d < 0 { "-" } else { "" },
        d.abs() / 100,
        d.abs() % 100,
        fixed / 100,
        fixed % 100,
        iters
    );
}

/// Runs the benchmark: `iters` calls per figure, each figure the best of 3
/// rounds (the least disturbed by the host).
pub(crate) fn run(iters: u32) -> Result {
    let ops = Ops::assemble(&[&Ops::of::<BenchOps>(), &MOCK_OPS])?;
    let dev = Device::alloc(&ops, 1, Ok(MockDev::new(Step::None)))?;
    Device::register(&dev, c"bench_%d")?;
    let owner = ib_core_rs::kernel_owner!();
    let pd = Pd::alloc(&dev, owner)?;
    let attr = CqInitAttr {
        cqe: 16,
        comp_vector: 0,
        flags: 0,
    };
    let cq = Cq::create(&dev, &attr, None, owner)?;
    let qp = Qp::create(
        &pd,
        &QpInitAttr {
            send_cq: &cq,
            recv_cq: &cq,
            srq: None,
            qp_type: QpType::Rc,
            cap: QpCap {
                max_send_wr: 8,
                max_recv_wr: 8,
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data: 0,
            },
            sq_sig_all: true,
            event_handler: None,
        },
        owner,
    )?;
    let sge = [Sge {
        addr: 0x1000,
        length: 64,
        lkey: 1,
    }];
    let wr = [SendWr {
        wr_id: 1,
        opcode: WrOpcode::Send,
        send_flags: 0,
        sg_list: &sge,
        ..Default::default()
    }];
    let mut wc = [Wc::default(); 4];

    // The op through a pointer the compiler cannot see through, as upstream calls it.
    let send: fn(&Qp<Mock>, &[SendWr<'_>]) -> Result =
        core::hint::black_box(<BenchOps as DeviceOps>::post_send);
    let poll: fn(&Cq<Mock>, &mut [Wc]) -> Result<usize> =
        core::hint::black_box(<BenchOps as DeviceOps>::poll_cq);

    let (mut via_core, mut direct, mut fixed) = (i64::MAX, i64::MAX, i64::MAX);
    for _ in 0..3 {
        via_core = via_core.min(time(iters, || qp.post_send(core::hint::black_box(&wr)))?);
        direct = direct.min(time(iters, || send(&qp, core::hint::black_box(&wr)))?);
        fixed = fixed.min(time(iters, || {
            <BenchOps as DeviceOps>::post_send(&qp, core::hint::black_box(&wr))
        })?);
    }
    report("post_send", iters, via_core, direct, fixed);

    let (mut via_core, mut direct, mut fixed) = (i64::MAX, i64::MAX, i64::MAX);
    for _ in 0..3 {
        via_core = via_core.min(time(iters, || cq.poll(&mut wc).map(|_| ()))?);
        direct = direct.min(time(iters, || poll(&cq, &mut wc).map(|_| ()))?);
        fixed = fixed.min(time(iters, || {
            <BenchOps as DeviceOps>::poll_cq(&cq, &mut wc).map(|_| ())
        })?);
    }
    report("poll_cq", iters, via_core, direct, fixed);

    let _ = Qp::destroy(qp);
    let _ = Cq::destroy(cq);
    let _ = Pd::dealloc(pd);
    let leftover = Device::dealloc(dev);
    if leftover != 0 {
        pr_err!("ib_core_rs bench: {} objects left tracked\n", leftover);
        return Err(EINVAL);
    }
    Ok(())
}
