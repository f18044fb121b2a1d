// SPDX-License-Identifier: GPL-2.0

//! The set of operations a driver provides, and the registration-time check
//! of the ones every device needs (upstream `setup_device()` and
//! `ib_device_check_mandatory()` in `drivers/infiniband/core/device.c`).

use crate::driver::Driver;
use kernel::prelude::*;

/// One driver operation (a slot of upstream `struct ib_device_ops`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Op {
    /// `query_device`.
    QueryDevice = 0,
    /// `query_port`.
    QueryPort = 1,
    /// `get_port_immutable`.
    GetPortImmutable = 2,
    /// `get_dev_fw_str`.
    GetDevFwStr = 3,
}

impl Op {
    /// The upstream name of the op, for error messages.
    pub fn name(self) -> &'static str {
        match self {
            Op::QueryDevice => "query_device",
            Op::QueryPort => "query_port",
            Op::GetPortImmutable => "get_port_immutable",
            Op::GetDevFwStr => "get_dev_fw_str",
        }
    }
}

/// Ops that registration cannot do without: the device's attributes, its
/// ports and their immutable data are read while registering.
pub const MANDATORY: [Op; 3] = [Op::QueryDevice, Op::QueryPort, Op::GetPortImmutable];

/// A set of [`Op`]s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpSet(u64);

impl OpSet {
    /// The empty set.
    pub const EMPTY: OpSet = OpSet(0);

    /// The set with `op` added.
    pub const fn with(self, op: Op) -> OpSet {
        OpSet(self.0 | (1 << op as u8))
    }

    /// Whether `op` is in the set.
    pub const fn contains(self, op: Op) -> bool {
        self.0 & (1 << op as u8) != 0
    }

    /// The ops driver `T` implements.
    pub const fn of<T: Driver>() -> OpSet {
        let mut s = OpSet::EMPTY.with(Op::QueryDevice);
        if T::HAS_QUERY_PORT {
            s = s.with(Op::QueryPort);
        }
        if T::HAS_GET_PORT_IMMUTABLE {
            s = s.with(Op::GetPortImmutable);
        }
        if T::HAS_GET_DEV_FW_STR {
            s = s.with(Op::GetDevFwStr);
        }
        s
    }
}

/// Checks that `ops` holds every mandatory op.
///
/// # Errors
///
/// Returns the first missing op, so that registration can name it.
pub fn check_mandatory(ops: OpSet) -> core::result::Result<(), Op> {
    for op in MANDATORY {
        if !ops.contains(op) {
            return Err(op);
        }
    }
    Ok(())
}

#[kunit_tests(ib_core_rs_ops)]
mod tests {
    use super::*;

    #[test]
    fn full_set_passes() {
        let ops = OpSet::EMPTY
            .with(Op::QueryDevice)
            .with(Op::QueryPort)
            .with(Op::GetPortImmutable);
        assert_eq!(check_mandatory(ops), Ok(()));
    }

    #[test]
    fn missing_op_is_named() {
        let ops = OpSet::EMPTY
            .with(Op::QueryDevice)
            .with(Op::GetPortImmutable);
        assert_eq!(check_mandatory(ops), Err(Op::QueryPort));
        assert_eq!(Op::QueryPort.name(), "query_port");
        assert_eq!(check_mandatory(OpSet::EMPTY), Err(Op::QueryDevice));
    }

    #[test]
    fn optional_op_is_not_required() {
        let ops = OpSet::EMPTY
            .with(Op::QueryDevice)
            .with(Op::QueryPort)
            .with(Op::GetPortImmutable);
        assert!(!ops.contains(Op::GetDevFwStr));
        assert_eq!(check_mandatory(ops.with(Op::GetDevFwStr)), Ok(()));
    }
}
