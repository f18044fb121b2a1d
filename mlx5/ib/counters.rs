// SPDX-License-Identifier: GPL-2.0

//! Hardware counters (upstream counters.c): the port's Q counter set read by `get_hw_stats`,
//! and the counters the core binds QPs to (`mlx5_ib_counter_bind_qp()` and the rest).

use crate::cmd::exec;
use crate::cmd::res::{AllocQCounter, DeallocQCounter, QCntGroup, QueryQCounter, Q_COUNTERS};
use crate::ib::device::{gen, Mlx5Ib};
use crate::ib::qp::modify::qp_set_counter;
use crate::prm::ctx::cmd_hca_cap;
use ib_core_rs::device::Device;
use kernel::prelude::*;

/// Bit 0: the device has `out_of_seq_cnt`; bit 1: `retransmission_q_counters`.
type Groups = u8;

/// Whether counters of `g` are shown on a device with `groups` (upstream
/// `mlx5_ib_fill_counters()`).
const fn shown(g: QCntGroup, groups: Groups) -> bool {
    match g {
        QCntGroup::Basic | QCntGroup::Accl => true,
        QCntGroup::OutOfSeq => groups & 1 != 0,
        QCntGroup::Retrans => groups & 2 != 0,
    }
}

/// The names of the [`Q_COUNTERS`] shown with `groups`, in order (upstream `cnts->descs`).
const fn names<const N: usize>(groups: Groups) -> [&'static CStr; N] {
    let mut out = [c""; N];
    let (mut i, mut j) = (0, 0);
    while i < Q_COUNTERS.len() {
        if shown(Q_COUNTERS[i].2, groups) {
            out[j] = Q_COUNTERS[i].0;
            j += 1;
        }
        i += 1;
    }
    assert!(j == N);
    out
}

static NAMES_NONE: [&CStr; 10] = names(0);
static NAMES_OOS: [&CStr; 11] = names(1);
static NAMES_RETRANS: [&CStr; 15] = names(2);
static NAMES_ALL: [&CStr; 16] = names(3);

/// The optional Q counter groups of the device's general capabilities.
fn groups(dev: &Device<Mlx5Ib>) -> Groups {
    gen(dev.data()).map_or(0, |c| {
        let oos = u8::from(c.get(cmd_hca_cap::out_of_seq_cnt) != 0);
        let re = u8::from(c.get(cmd_hca_cap::retransmission_q_counters) != 0);
        oos | re << 1
    })
}

/// upstream `mlx5_ib_alloc_hw_port_stats()`: the names of the port's counters, none without a
/// Q counter set.
pub(crate) fn hw_port_stat_names(dev: &Device<Mlx5Ib>) -> Option<&'static [&'static CStr]> {
    if dev.data().qcnt_set() == 0 {
        return None;
    }
    Some(match groups(dev) {
        0 => &NAMES_NONE[..],
        1 => &NAMES_OOS[..],
        2 => &NAMES_RETRANS[..],
        _ => &NAMES_ALL[..],
    })
}

/// upstream `mlx5_ib_get_hw_stats()` → `do_get_hw_stats()` → `mlx5_ib_query_q_counters()` for
/// a port: QUERY_Q_COUNTER of the port's set, the [`Q_COUNTERS`] the device shows, in order
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
    let g = groups(dev);
    let vals = v
        .iter()
        .zip(Q_COUNTERS.iter())
        .filter(|(_, (_, _, k))| shown(*k, g));
    let mut n = 0;
    for (o, (x, _)) in out.iter_mut().zip(vals) {
        *o = u64::from(*x);
        n += 1;
    }
    Ok(n)
}
