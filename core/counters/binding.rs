// SPDX-License-Identifier: GPL-2.0

//! The counter binding rules of a device (upstream `rdma_counter_bind_qp_auto()`,
//! `rdma_counter_bind_qpn()`, `rdma_counter_unbind_qpn()`, `rdma_counter_set_auto_mode()`,
//! ... in `drivers/infiniband/core/counters.c`): `Device<D>` methods over the device's
//! [`Counters`] that call the driver's counter ops.

use super::{
    Counter, CounterInfo, Counters, Inner, ALL_AUTO_MODE_MASKS, MASK_PID, MASK_QP_TYPE, MAX_STATS,
    MODE_AUTO, MODE_MANUAL, MODE_NONE,
};
use crate::device::Device;
use crate::driver::Driver;
use crate::ib_device::{DeviceCore, IbDevice};
use crate::restrack::{Owner, ResDetails, ResInfo, ResType};
use kernel::prelude::*;

fn qp_type_of(e: &ResInfo) -> u8 {
    match e.details {
        ResDetails::Qp { qp_type, .. } => qp_type,
        _ => 0,
    }
}

fn is_kernel(o: &Owner) -> bool {
    matches!(o, Owner::Kernel(_))
}
impl<D: Driver> Device<D> {
    fn dc(&self) -> &DeviceCore {
        self
    }

    fn counters(&self) -> &Counters {
        self.dc().counters()
    }

    fn port_ok(&self, port: u32) -> bool {
        port != 0 && port <= self.dc().phys_port_cnt()
    }

    /// Whether the port has statistics (upstream `port_counter->hstats`).
    fn has_hstats(&self, port: u32) -> bool {
        IbDevice::hw_stat_names(self, port).is_some()
    }

    /// The QP with number `qpn` (upstream `rdma_counter_get_qp()`, restrack by QP number).
    fn counter_qp(&self, qpn: u32) -> Result<ResInfo> {
        self.dc()
            .restrack()
            .find_num(ResType::Qp, qpn)?
            .ok_or(ENOENT)
    }

    /// upstream `__rdma_counter_bind_qp()`: the driver binds `qpn` to counter `id` (0: a new
    /// one, whose id it returns).
    fn drv_bind(&self, id: u32, qpn: u32, port: u32) -> Result<u32> {
        let f = self.ops().counter_bind_qp.ok_or(EOPNOTSUPP)?;
        f(self, id, qpn, port)
    }

    /// Binds `qpn` to the existing counter `i` of `g`: room in its QP list first (so that
    /// nothing can fail once the driver bound), then the driver, then the list. `missing` if
    /// there is no counter `i`.
    fn bind_into(&self, g: &mut Inner, i: usize, qpn: u32, port: u32, missing: Error) -> Result {
        let c = g.counters.get_mut(i).ok_or(missing)?;
        c.qps.reserve(1, GFP_KERNEL)?;
        self.drv_bind(c.id, qpn, port)?;
        c.qps.push(qpn, GFP_KERNEL)?;
        Ok(())
    }

    /// upstream `alloc_and_bind()` under the lock: a new counter for `qp` in `mode`; `None`
    /// where upstream returns `NULL` (its callers answer `ENOMEM`).
    fn alloc_and_bind(&self, g: &mut Inner, qp: &ResInfo, port: u32, mode: u32) -> Option<u32> {
        let ops = self.ops();
        if ops.counter_dealloc.is_none() || ops.counter_update_stats.is_none() {
            return None;
        }
        g.counters.reserve(1, GFP_KERNEL).ok()?;
        let mut qps = KVec::new();
        qps.push(qp.num, GFP_KERNEL).ok()?;
        let pc = g.port(port).ok()?;
        // upstream: a manual counter sets the port's mode (bind_opcnt true, as
        // rdma_counter_bind_qpn_alloc() passes); an auto one takes the port's mask.
        let mask = match mode {
            MODE_MANUAL => {
                pc.mode = MODE_MANUAL;
                pc.mask = 0;
                pc.opcnt = true;
                0
            }
            MODE_AUTO => pc.mask,
            _ => return None,
        };
        pc.num_counters += 1;
        match self.drv_bind(0, qp.num, port) {
            Ok(id) => {
                let _ = g.counters.push(
                    Counter {
                        id,
                        port,
                        mode,
                        mask,
                        qp_type: qp_type_of(qp),
                        owner: qp.owner,
                        qps,
                    },
                    GFP_KERNEL,
                );
                Some(id)
            }
            Err(_) => {
                g.counter_gone(port);
                None
            }
        }
    }

    /// upstream `counter_release()`: the values go to the port's history, then the driver
    /// frees the counter (`counter_dealloc`).
    fn release_counter(&self, g: &mut Inner, i: usize) {
        let c = g.counters.remove(i);
        let Ok(c) = c else { return };
        let mut v = [0u64; MAX_STATS];
        if let Some(f) = self.ops().counter_update_stats {
            if let Ok(n) = f(self, c.id, c.port, &mut v) {
                if let Ok(p) = g.port(c.port) {
                    for (h, x) in p.hist.iter_mut().zip(v.iter()).take(n) {
                        *h = h.wrapping_add(*x);
                    }
                }
            }
        }
        if let Some(f) = self.ops().counter_dealloc {
            if let Err(e) = f(self, c.id) {
                ibdev_err!(
                    self.dc().name(),
                    "counter {} dealloc failed ({:?})\n",
                    c.id,
                    e
                );
            }
        }
        g.counter_gone(c.port);
    }

    /// upstream `rdma_counter_unbind_qp()` under the lock.
    fn unbind_locked(&self, g: &mut Inner, qpn: u32, port: u32, force: bool) -> Result {
        let i = g.bound(qpn).ok_or(EINVAL)?;
        let r = match self.ops().counter_unbind_qp {
            Some(f) => f(self, qpn, port),
            None => Err(EOPNOTSUPP),
        };
        if r.is_err() && !force {
            return r;
        }
        let c = g.counters.get_mut(i).ok_or(EINVAL)?;
        c.qps.retain(|q| *q != qpn);
        if c.qps.is_empty() {
            self.release_counter(g, i);
        }
        Ok(())
    }

    /// upstream `rdma_counter_bind_qp_auto()`, called by `Qp::modify` for RESET->INIT with a
    /// port: a user QP on a port in auto mode joins the first counter whose rule matches
    /// (upstream `auto_mode_match()`: same type, same pid) or a new one. Errors are the
    /// caller's to ignore, as upstream's `_ib_modify_qp()` does.
    pub(crate) fn counter_bind_qp_auto(&self, qpn: u32, port: u32) -> Result {
        if !self.port_ok(port) {
            return Err(EINVAL);
        }
        // Every RESET->INIT comes here and most ports are not in auto mode: that is answered
        // before the QP's lookup, a scan of restrack's QP table (linear in the device's QPs).
        if self.counters().inner.lock().mode_of(port) != MODE_AUTO {
            return Ok(());
        }
        let qp = self.counter_qp(qpn)?;
        if is_kernel(&qp.owner) {
            return Ok(());
        }
        let mut g = self.counters().inner.lock();
        if g.bound(qpn).is_some() {
            return Ok(());
        }
        let pc = g.port(port)?;
        if pc.mode != MODE_AUTO {
            return Ok(());
        }
        let mask = pc.mask;
        let pid_of = |o: &Owner| match o {
            Owner::User { pid, .. } => *pid,
            Owner::Kernel(_) => 0,
        };
        let found = g.counters.iter().position(|c| {
            c.port == port
                && (mask & MASK_QP_TYPE == 0 || c.qp_type == qp_type_of(&qp))
                && (mask & MASK_PID == 0 || pid_of(&c.owner) == pid_of(&qp.owner))
        });
        match found {
            Some(i) => self.bind_into(&mut g, i, qpn, port, EINVAL),
            None => self
                .alloc_and_bind(&mut g, &qp, port, MODE_AUTO)
                .map(|_| ())
                .ok_or(ENOMEM),
        }
    }

    /// upstream `rdma_counter_unbind_qp(qp, qp->port, true)` at QP destroy.
    pub(crate) fn counter_unbind_qp_destroy(&self, qpn: u32, port: u32) {
        let mut g = self.counters().inner.lock();
        if g.bound(qpn).is_some() {
            let _ = self.unbind_locked(&mut g, qpn, port, true);
        }
    }

    /// upstream `rdma_counter_set_auto_mode()`.
    pub(crate) fn counter_set_auto_mode_impl(&self, port: u32, mask: u32, opcnt: bool) -> Result {
        if !self.has_hstats(port) {
            return Err(EOPNOTSUPP);
        }
        let mut g = self.counters().inner.lock();
        let pc = g.port(port)?;
        let mode = if mask != 0 {
            MODE_AUTO
        } else if pc.num_counters != 0 {
            MODE_MANUAL
        } else {
            MODE_NONE
        };
        if pc.mode == mode && pc.mask == mask && pc.opcnt == opcnt {
            return Ok(());
        }
        // upstream __counter_set_mode().
        if mode == MODE_AUTO {
            if mask & !ALL_AUTO_MODE_MASKS != 0 {
                return Err(EINVAL);
            }
            if pc.num_counters != 0 {
                return Err(EBUSY);
            }
        }
        pc.mode = mode;
        pc.mask = mask;
        pc.opcnt = opcnt;
        Ok(())
    }

    /// upstream `rdma_counter_get_mode()`: mode, mask, op counters.
    pub(crate) fn counter_get_mode_impl(&self, port: u32) -> Result<(u32, u32, bool)> {
        let mut g = self.counters().inner.lock();
        let pc = g.port(port)?;
        Ok((pc.mode, pc.mask, pc.opcnt))
    }

    /// upstream `rdma_counter_bind_qpn()`.
    pub(crate) fn counter_bind_qpn_impl(&self, port: u32, qpn: u32, id: u32) -> Result {
        let mut g = self.counters().inner.lock();
        if g.port(port)?.mode == MODE_AUTO {
            return Err(EINVAL);
        }
        let qp = self.counter_qp(qpn)?;
        let i = g.counters.iter().position(|c| c.id == id).ok_or(ENOENT)?;
        let c = g.counters.get(i).ok_or(ENOENT)?;
        if is_kernel(&c.owner) != is_kernel(&qp.owner) || c.port != qp.qp_port {
            return Err(EINVAL);
        }
        // upstream __rdma_counter_bind_qp(): a bound QP is EINVAL.
        if g.bound(qpn).is_some() {
            return Err(EINVAL);
        }
        self.bind_into(&mut g, i, qpn, port, ENOENT)
    }

    /// upstream `rdma_counter_bind_qpn_alloc()`: the new counter's id.
    pub(crate) fn counter_bind_qpn_alloc_impl(&self, port: u32, qpn: u32) -> Result<u32> {
        if !self.port_ok(port) {
            return Err(EINVAL);
        }
        if !self.has_hstats(port) {
            return Err(EOPNOTSUPP);
        }
        let mut g = self.counters().inner.lock();
        if g.port(port)?.mode == MODE_AUTO {
            return Err(EINVAL);
        }
        let qp = self.counter_qp(qpn)?;
        if self.port_ok(qp.qp_port) && qp.qp_port != port {
            return Err(EINVAL);
        }
        // upstream alloc_and_bind(): a QP already bound fails __rdma_counter_bind_qp() and
        // the whole is NULL, ENOMEM for the caller.
        if g.bound(qpn).is_some() {
            return Err(ENOMEM);
        }
        self.alloc_and_bind(&mut g, &qp, port, MODE_MANUAL)
            .ok_or(ENOMEM)
    }

    /// upstream `rdma_counter_unbind_qpn()`.
    pub(crate) fn counter_unbind_qpn_impl(&self, port: u32, qpn: u32, id: u32) -> Result {
        if !self.port_ok(port) {
            return Err(EINVAL);
        }
        let qp = self.counter_qp(qpn)?;
        if self.port_ok(qp.qp_port) && qp.qp_port != port {
            return Err(EINVAL);
        }
        let mut g = self.counters().inner.lock();
        let mode = g.port(port)?.mode;
        match g.bound(qpn).and_then(|i| g.counters.get(i)) {
            Some(c) if c.id == id && mode == MODE_MANUAL => {}
            _ => return Err(EINVAL),
        }
        self.unbind_locked(&mut g, qpn, port, false)
    }

    /// The counters of `port` (all ports for `None`) with fresh values (upstream
    /// `fill_res_counter_entry()` queries each, "dump it even query failed").
    pub(crate) fn counter_dump_impl(
        &self,
        port: Option<u32>,
        id: Option<u32>,
    ) -> Result<KVec<CounterInfo>> {
        let g = self.counters().inner.lock();
        let mut out = KVec::new();
        for c in g.counters.iter() {
            if port.is_some_and(|p| p != c.port) || id.is_some_and(|i| i != c.id) {
                continue;
            }
            let mut qps = KVec::new();
            for &q in c.qps.iter() {
                qps.push(q, GFP_KERNEL)?;
            }
            qps.sort_unstable();
            let mut v = [0u64; MAX_STATS];
            let n = match self.ops().counter_update_stats {
                Some(f) => f(self, c.id, c.port, &mut v).unwrap_or(0),
                None => 0,
            };
            let mut values = KVec::new();
            for x in v.iter().take(n) {
                values.push(*x, GFP_KERNEL)?;
            }
            out.push(
                CounterInfo {
                    id: c.id,
                    port: c.port,
                    mode: c.mode,
                    mask: c.mask,
                    qp_type: c.qp_type,
                    owner: c.owner,
                    qps,
                    values,
                },
                GFP_KERNEL,
            )?;
        }
        out.sort_unstable_by_key(|c| c.id);
        Ok(out)
    }

    /// upstream `rdma_counter_get_hwstat_value()` for every index: adds the running
    /// counters' values and the history of `port` to `out[..n]`.
    pub(crate) fn counter_add_port_sums(&self, port: u32, out: &mut [u64], n: usize) {
        let mut g = self.counters().inner.lock();
        let f = self.ops().counter_update_stats;
        let mut v = [0u64; MAX_STATS];
        for c in g.counters.iter().filter(|c| c.port == port) {
            let Some(f) = f else { break };
            if let Ok(m) = f(self, c.id, c.port, &mut v) {
                for (o, x) in out.iter_mut().zip(v.iter()).take(n.min(m)) {
                    *o = o.wrapping_add(*x);
                }
            }
        }
        if let Ok(p) = g.port(port) {
            for (o, h) in out.iter_mut().zip(p.hist.iter()).take(n) {
                *o = o.wrapping_add(*h);
            }
        }
    }
}
