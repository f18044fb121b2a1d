// SPDX-License-Identifier: GPL-2.0

//! The worker's calls into the data-path engine (`fwsim/engine.rs`, branch `engine`).
//!
//! Not merged yet: until it is, a pass executes nothing, doorbells are dropped and no event
//! is raised. The fabric, the worker, the IOMMU and the driver's data path are complete
//! around these four calls.

use super::iommu::Iommu;
use crate::fwsim::Fw;
use crate::hw::{Doorbell, HwEvent};
use kernel::prelude::*;
use kernel::sync::Arc;

/// What a pass did.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct RunOutcome {
    /// The budget ran out: pass again.
    pub(super) more: bool,
    /// The earliest retry deadline (RNR, ACK timeout).
    pub(super) next_deadline_ns: Option<u64>,
}

/// A UAR doorbell store of function `fw`.
pub(super) fn doorbell(fw: &mut Fw, uar: u32, db: Doorbell, value: u64) {
    let _ = (fw, uar, db, value);
}

/// One engine pass over every function of a fabric.
pub(super) fn run(
    fws: &mut KVec<KVBox<Fw>>,
    iommus: &[Arc<Iommu>],
    now_ns: u64,
    budget: u32,
) -> RunOutcome {
    let _ = (fws, iommus, now_ns, budget);
    RunOutcome::default()
}

/// The next queued event of `fw`.
pub(super) fn next_event(fw: &mut Fw) -> Option<HwEvent> {
    let _ = fw;
    None
}
