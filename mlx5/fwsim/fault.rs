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

    /// The armed one-shot fault: commands still to pass before it fires, and its action.
    pub(crate) fn nth(&self) -> Option<(u64, FaultAction)> {
        self.nth
    }

    /// The armed per-opcode fault.
    pub(crate) fn opcode(&self) -> Option<(u16, FaultAction)> {
        self.opcode
    }

    /// Disarms the per-opcode fault only.
    pub(crate) fn clear_opcode(&mut self) {
        self.opcode = None;
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

/// Why a fault-knob string was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KnobError {
    /// Not ASCII, empty, too many words, or a number that does not parse or fit.
    Syntax,
}

/// A parsed fault-knob write: `<n> [<status>|timeout] [<syndrome>]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Knob {
    /// The first number: N of "fail the N-th command", or the opcode (0 disarms either).
    pub(crate) n: u64,
    /// What the fault does.
    pub(crate) action: FaultAction,
}

/// Status used when a knob write names none: `INT_ERR`, which every command can return and
/// upstream maps to `-EIO`.
pub(crate) const DEFAULT_STATUS: Status = Status::INT_ERR;

/// Parses a number the way the kernel's `kstrtou64(s, 0)` does for the forms a shell user types:
/// decimal, or hexadecimal with `0x`.
pub(crate) fn parse_number(s: &str) -> Result<u64, KnobError> {
    let (digits, radix) = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => (h, 16),
        None => (s, 10),
    };
    if digits.is_empty() {
        return Err(KnobError::Syntax);
    }
    u64::from_str_radix(digits, radix).map_err(|_| KnobError::Syntax)
}

/// Parses what a test writes to a debugfs fault knob (`fail_nth`, `fail_opcode`):
/// `<n> [<status>|timeout] [<syndrome>]`, numbers decimal or `0x` hex. The status defaults to
/// [`DEFAULT_STATUS`], the syndrome to [`super::syndrome::INJECTED`].
pub(crate) fn parse_knob(input: &[u8]) -> Result<Knob, KnobError> {
    let s = core::str::from_utf8(input).map_err(|_| KnobError::Syntax)?;
    let mut words = s.split_ascii_whitespace();
    let n = parse_number(words.next().ok_or(KnobError::Syntax)?)?;
    let mut status = DEFAULT_STATUS;
    let mut timeout = false;
    if let Some(w) = words.next() {
        if w == "timeout" {
            timeout = true;
        } else {
            status = Status(u8::try_from(parse_number(w)?).map_err(|_| KnobError::Syntax)?);
        }
    }
    let syndrome = match words.next() {
        Some(w) => u32::try_from(parse_number(w)?).map_err(|_| KnobError::Syntax)?,
        None => super::syndrome::INJECTED,
    };
    if words.next().is_some() || (timeout && syndrome != super::syndrome::INJECTED) {
        return Err(KnobError::Syntax);
    }
    // Status 0 (OK) would make the "fault" a success that executed nothing.
    if !timeout && status == Status::OK {
        return Err(KnobError::Syntax);
    }
    let action = if timeout {
        FaultAction::Timeout
    } else {
        FaultAction::Fail { status, syndrome }
    };
    Ok(Knob { n, action })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_reads_back() {
        let a = FaultAction::Timeout;
        let mut p = FaultPlan::new();
        p.fail_nth(2, a);
        p.fail_opcode(0x800, a);
        assert_eq!(p.nth(), Some((2, a)));
        assert_eq!(p.opcode(), Some((0x800, a)));
        assert_eq!(p.check(0x801), None);
        assert_eq!(p.nth(), Some((1, a)));
        p.clear_opcode();
        assert_eq!(p.opcode(), None);
        assert_eq!(p.nth(), Some((1, a)));
    }

    #[test]
    fn knob_grammar() {
        let inj = crate::fwsim::syndrome::INJECTED;
        assert_eq!(
            parse_knob(b"3\n"),
            Ok(Knob {
                n: 3,
                action: FaultAction::Fail {
                    status: Status::INT_ERR,
                    syndrome: inj
                }
            })
        );
        assert_eq!(
            parse_knob(b"0x800 0x8 0x1234"),
            Ok(Knob {
                n: 0x800,
                action: FaultAction::Fail {
                    status: Status::LIM_ERR,
                    syndrome: 0x1234
                }
            })
        );
        assert_eq!(
            parse_knob(b" 2 timeout "),
            Ok(Knob {
                n: 2,
                action: FaultAction::Timeout
            })
        );
        for bad in [
            &b""[..],
            b"x",
            b"1 0",
            b"1 0x100",
            b"1 2 3 4",
            b"1 timeout 5",
            b"0x",
            b"\xff",
            b"99999999999999999999999",
        ] {
            assert_eq!(parse_knob(bad), Err(KnobError::Syntax), "{bad:?}");
        }
    }
}
