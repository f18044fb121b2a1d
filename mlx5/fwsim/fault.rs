// SPDX-License-Identifier: GPL-2.0

//! Fault injection: make the device fail or hang commands on purpose, so error paths of the
//! driver (probe unwind, destroy failures, timeouts) can be exercised without broken hardware.

use crate::prm::status::Status;

/// What an armed fault does to the command it takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FaultAction {
    /// Complete the command, without executing it, with this status and syndrome.
    Fail {
        /// `mbox_out.status`.
        status: Status,
        /// `mbox_out.syndrome`.
        syndrome: u32,
    },
    /// Never complete it: [`super::Fw::exec`] returns [`super::ExecError::Timeout`].
    Timeout,
}

/// The knobs. A command taken by a fault is not executed: no object is created or destroyed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FaultPlan {
    /// Commands still to pass before the one-shot fault fires, and its action.
    nth: Option<(u64, FaultAction)>,
    /// Persistent fault on every command with this opcode.
    opcode: Option<(u16, FaultAction)>,
    /// Reported in every [`super::Completion`]; the kernel side sleeps this long before
    /// completing, to widen race windows (the simulator itself never waits).
    pub(crate) delay_us: u32,
}

impl FaultPlan {
    /// No faults, no delay.
    pub(crate) const fn new() -> Self {
        Self {
            nth: None,
            opcode: None,
            delay_us: 0,
        }
    }

    /// Fails the `n`-th command from now (`n` = 1: the next one), once. Only commands with a
    /// complete 16-byte header count. `n` = 0 disarms.
    pub(crate) fn fail_nth(&mut self, n: u64, action: FaultAction) {
        self.nth = (n != 0).then_some((n, action));
    }

    /// Fails every command with `opcode` until [`FaultPlan::clear`].
    pub(crate) fn fail_opcode(&mut self, opcode: u16, action: FaultAction) {
        self.opcode = Some((opcode, action));
    }

    /// Disarms every fault and the delay.
    pub(crate) fn clear(&mut self) {
        *self = Self::new();
    }

    /// Called once per command with a complete header; returns the fault that takes it.
    pub(crate) fn check(&mut self, opcode: u16) -> Option<FaultAction> {
        let mut hit = None;
        if let Some((n, action)) = self.nth {
            if n <= 1 {
                self.nth = None;
                hit = Some(action);
            } else {
                self.nth = Some((n - 1, action));
            }
        }
        if hit.is_none() {
            if let Some((o, action)) = self.opcode {
                if o == opcode {
                    hit = Some(action);
                }
            }
        }
        hit
    }
}
