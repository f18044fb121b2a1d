// SPDX-License-Identifier: GPL-2.0

//! Hardware counters (upstream counters.c): the port's Q counter set read by `get_hw_stats`,
//! and the counters the core binds QPs to (`mlx5_ib_counter_bind_qp()` and the rest).

use crate::cmd::exec;
use crate::cmd::res::{AllocQCounter, DeallocQCounter, QueryQCounter};
use crate::ib::device::Mlx5Ib;
use crate::ib::qp::modify::qp_set_counter;
use ib_core_rs::device::Device;
use kernel::prelude::*;

/// The names of [`crate::cmd::res::Q_COUNTERS`] (upstream `cnts->descs`).
static Q_COUNTER_NAMES: [&CStr; 10] = {
    let q = &crate::cmd::res::Q_COUNTERS;
    [
        q[0].0, q[1].0, q[2].0, q[3].0, q[4].0, q[5].0, q[6].0, q[7].0, q[8].0, q[9].0,
    ]
};

/// upstream `mlx5_ib_alloc_hw_port_stats()`: the names of the port's counters, none without a
/// Q counter set.
pub(crate) fn hw_port_stat_names(dev: &Device<Mlx5Ib>) -> Option<&'static [&'static CStr]> {
    (dev.data().qcnt_set() != 0).then_some(&Q_COUNTER_NAMES[..])
}

/// upstream `mlx5_ib_get_hw_stats()` → `do_get_hw_stats()` → `mlx5_ib_query_q_counters()` for
/// a port: QUERY_Q_COUNTER of the port's set, the [`crate::cmd::res::Q_COUNTERS`] in order
/// (the device has no congestion or PPCNT counters to add).
///
/// # Errors
///
/// `EINVAL` without a counter set; QUERY_Q_COUNTER's errno.
pub(crate) fn get_hw_stats(dev: &Device<Mlx5Ib>, out: &mut [u64]) -> Result<usize> {
    let d = dev.data();
    if d.qcnt_set() == 0 {
        return Err(EINVAL);
    }
    counter_update_stats(dev, d.qcnt_set(), out)
}

/// upstream `mlx5_ib_counter_bind_qp()`: a new counter (`id` 0) is a Q counter set of its own
/// (ALLOC_Q_COUNTER, shared-resource uid), freed again when the QP cannot take it.
///
/// # Errors
///
/// ALLOC_Q_COUNTER's errno (the device's sets are `max_qp_cnt`), `EINVAL` for an unknown QP,
/// `EOPNOTSUPP` or the RTS2RTS errno from the QP.
pub(crate) fn counter_bind_qp(dev: &Device<Mlx5Ib>, id: u32, qpn: u32) -> Result<u32> {
    let d = dev.data();
    let (set, new) = if id == 0 {
        let set = exec(&*d.hw, &AllocQCounter { uid: 0 })?;
        (set, true)
    } else {
        (id, false)
    };
    if let Err(e) = qp_set_counter(dev, qpn, set) {
        if new {
            let _ = exec(&*d.hw, &DeallocQCounter { id: set, uid: 0 });
        }
        return Err(e);
    }
    Ok(set)
}

/// upstream `mlx5_ib_counter_unbind_qp()`: the QP back to the port's set.
///
/// # Errors
///
/// As [`counter_bind_qp`]'s move.
pub(crate) fn counter_unbind_qp(dev: &Device<Mlx5Ib>, qpn: u32) -> Result {
    qp_set_counter(dev, qpn, 0)
}

/// upstream `mlx5_ib_counter_dealloc()`: DEALLOC_Q_COUNTER.
///
/// # Errors
///
/// DEALLOC_Q_COUNTER's errno.
pub(crate) fn counter_dealloc(dev: &Device<Mlx5Ib>, id: u32) -> Result {
    if id == 0 {
        return Ok(());
    }
    exec(&*dev.data().hw, &DeallocQCounter { id, uid: 0 })
}

/// upstream `mlx5_ib_counter_update_stats()` → `mlx5_ib_query_q_counters()` of the counter's
/// set.
///
/// # Errors
///
/// QUERY_Q_COUNTER's errno.
pub(crate) fn counter_update_stats(
    dev: &Device<Mlx5Ib>,
    id: u32,
    out: &mut [u64],
) -> Result<usize> {
    let v = exec(&*dev.data().hw, &QueryQCounter { id })?;
    let mut n = 0;
    for (o, x) in out.iter_mut().zip(v.iter()) {
        *o = u64::from(*x);
        n += 1;
    }
    Ok(n)
}
