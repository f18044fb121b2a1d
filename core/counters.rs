// SPDX-License-Identifier: GPL-2.0

//! Per-QP hardware counters (upstream `drivers/infiniband/core/counters.c`): a port's counter
//! mode (none, auto by QP type and/or pid, manual), the counters (upstream `struct
//! rdma_counter`) each with the QPs bound to it, auto binding at RESET->INIT
//! (`rdma_counter_bind_qp_auto()`), manual bind/unbind by QP number, the release of a counter
//! with its last QP (its values go to the port's history, `counter_history_stat_update()`) and
//! the port totals that add the running counters and the history
//! (`rdma_counter_get_hwstat_value()`).
//!
//! One mutex per device guards every port's mode and every counter; the driver's counter ops
//! run under it (upstream takes `port_counter->lock` and `counter->lock` around them). A
//! counter's id is the one the driver's `counter_bind_qp` gives it (mlx5: the Q counter set),
//! as upstream's `rdma_restrack_add()` special case keeps `counter->id`.
//!
//! This file holds the state a device keeps ([`Counters`], in `DeviceCore`); the binding
//! rules, which call the driver, are `Device<D>` methods in `counters/binding.rs`.

use crate::restrack::Owner;
use kernel::prelude::*;
use kernel::sync::Mutex;

mod binding;

/// `RDMA_COUNTER_MODE_NONE`.
pub const MODE_NONE: u32 = 0;
/// `RDMA_COUNTER_MODE_AUTO`.
pub const MODE_AUTO: u32 = 1;
/// `RDMA_COUNTER_MODE_MANUAL`.
pub const MODE_MANUAL: u32 = 2;
/// `RDMA_COUNTER_MASK_QP_TYPE`.
pub const MASK_QP_TYPE: u32 = 1;
/// `RDMA_COUNTER_MASK_PID`.
pub const MASK_PID: u32 = 2;
/// upstream `ALL_AUTO_MODE_MASKS`.
const ALL_AUTO_MODE_MASKS: u32 = MASK_QP_TYPE | MASK_PID;

/// Most counters a port's statistics have (the port's `hw_counters` files).
pub const MAX_STATS: usize = 64;

/// A port's counter state (upstream `struct rdma_port_counter`).
struct PortCounter {
    port: u32,
    mode: u32,
    mask: u32,
    opcnt: bool,
    num_counters: u32,
    /// The values of released counters (upstream `port_counter->hstats`).
    hist: [u64; MAX_STATS],
}

/// A counter (upstream `struct rdma_counter`).
struct Counter {
    id: u32,
    port: u32,
    mode: u32,
    mask: u32,
    /// Auto mode by type: the type (upstream `mode.param.qp_type`).
    qp_type: u8,
    /// The owner of the QP it was made for (upstream `rdma_restrack_parent_name()`).
    owner: Owner,
    /// The QP numbers bound to it; the counter goes with the last one (upstream `kref`).
    qps: KVec<u32>,
}

/// What a dump shows of a counter (upstream `fill_res_counter_entry()`).
pub struct CounterInfo {
    /// The counter id (`STAT_COUNTER_ID`).
    pub id: u32,
    /// The port.
    pub port: u32,
    /// `RDMA_COUNTER_MODE_*`.
    pub mode: u32,
    /// The auto mode mask it was made under.
    pub mask: u32,
    /// The QP type of an auto counter by type.
    pub qp_type: u8,
    /// The owner.
    pub owner: Owner,
    /// The bound QPs, ascending.
    pub qps: KVec<u32>,
    /// The values, in the order of the port's counter names.
    pub values: KVec<u64>,
}

struct Inner {
    ports: KVec<PortCounter>,
    counters: KVec<Counter>,
}

impl Inner {
    fn port(&mut self, port: u32) -> Result<&mut PortCounter> {
        if let Some(i) = self.ports.iter().position(|p| p.port == port) {
            return self.ports.get_mut(i).ok_or(EINVAL);
        }
        self.ports.push(
            PortCounter {
                port,
                mode: MODE_NONE,
                mask: 0,
                opcnt: false,
                num_counters: 0,
                hist: [0; MAX_STATS],
            },
            GFP_KERNEL,
        )?;
        self.ports.last_mut().ok_or(ENOMEM)
    }

    /// The mode of `port` (`MODE_NONE` for a port never configured), without adding its entry.
    fn mode_of(&self, port: u32) -> u32 {
        self.ports
            .iter()
            .find(|p| p.port == port)
            .map_or(MODE_NONE, |p| p.mode)
    }

    fn bound(&self, qpn: u32) -> Option<usize> {
        self.counters.iter().position(|c| c.qps.contains(&qpn))
    }

    /// upstream `rdma_counter_free()`'s mode rule: a manual port without counters is none.
    fn counter_gone(&mut self, port: u32) {
        if let Ok(p) = self.port(port) {
            p.num_counters = p.num_counters.saturating_sub(1);
            if p.num_counters == 0 && p.mode == MODE_MANUAL {
                p.mode = MODE_NONE;
                p.mask = 0;
                p.opcnt = false;
            }
        }
    }
}

/// The counter state of a device (in `DeviceCore`).
#[pin_data]
pub struct Counters {
    #[pin]
    inner: Mutex<Inner>,
}

impl Counters {
    /// No counters, every port in mode none (upstream `rdma_counter_init()`).
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Counters {
            inner <- core_mutex!(
                Inner {
                    ports: KVec::new(),
                    counters: KVec::new(),
                },
                c"rdma_port_counter.lock"
            ),
        })
    }

    /// How many counters exist (all ports).
    pub fn count(&self) -> usize {
        self.inner.lock().counters.len()
    }
}
