// SPDX-License-Identifier: GPL-2.0

//! Typed firmware commands.
//!
//! Each PRM command the driver sends is a type implementing [`Command`]: its opcode, the
//! `*_in`/`*_out` layouts from [`crate::prm`], a method that fills the inbox from typed fields and
//! one that turns the outbox into a typed reply (`nova-core`'s `CommandToGsp` is the model).
//! [`exec`] runs one through [`Mlx5Hw::exec`], which maps a status that is not OK to an errno and
//! logs one line naming the command, the status and the syndrome (upstream `mlx5_cmd_exec()` +
//! `mlx5_cmd_check()`). Nothing here panics on what firmware returns: values are read with the
//! checked PRM accessors and converted with `TryFrom`, and a reply that cannot be read is `EIO`.

// Probe uses the queries, registers, PD and UAR; the CQ, QP, mkey, transport domain and RoCE
// address commands are there for the verbs ops (mlx5 driver issue) and are exercised by the
// KUnit suite `mlx5_ib_rs_cmd` meanwhile, so some variants and fields have no reader yet.
#[allow(dead_code)]
#[path = "cmd/cq.rs"]
pub(crate) mod cq;
#[allow(dead_code)]
#[path = "cmd/qp.rs"]
pub(crate) mod qp;
#[allow(dead_code)]
#[path = "cmd/query.rs"]
pub(crate) mod query;
#[allow(dead_code)]
#[path = "cmd/reg.rs"]
pub(crate) mod reg;
#[allow(dead_code)]
#[path = "cmd/res.rs"]
pub(crate) mod res;
#[path = "cmd/srq.rs"]
pub(crate) mod srq;
#[path = "cmd/tests.rs"]
mod tests;

use crate::hw::{opcode_name, Mlx5Hw};
use crate::prm::cmd::mbox_in;
use crate::prm::layout::{Field, PrmError};
use kernel::prelude::*;

/// A PRM command.
pub(crate) trait Command {
    /// `MLX5_CMD_OP_*`.
    const OPCODE: u16;
    /// `MLX5_ST_SZ_BYTES(<cmd>_in)`: the fixed part of the inbox.
    const IN_SIZE: usize;
    /// `MLX5_ST_SZ_BYTES(<cmd>_out)`: the fixed part of the outbox.
    const OUT_SIZE: usize;
    /// What a successful command returns.
    type Reply;

    /// `mbox_in.op_mod`.
    fn op_mod(&self) -> u32 {
        0
    }

    /// `mbox_in.uid`: 0 for the kernel, a user context's uid for DEVX-owned objects.
    fn uid(&self) -> u16 {
        0
    }

    /// Inbox length: the fixed part plus any trailing array (`pas[]`, `register_data[]`).
    fn in_len(&self) -> usize {
        Self::IN_SIZE
    }

    /// Outbox length: the fixed part plus any trailing array the reply carries.
    fn out_len(&self) -> usize {
        Self::OUT_SIZE
    }

    /// Writes the command's fields (the header is already set).
    fn fill(&self, inbox: &mut [u8]) -> Result<(), PrmError>;

    /// Reads the reply from a successful command's outbox.
    fn reply(&self, outbox: &[u8]) -> Result<Self::Reply>;
}

/// Writes `addrs` as the array of 64-bit addresses named `name` that starts at bit `start` of
/// the inbox: the page list after a command's fixed part (`pas[]` of CREATE_CQ, MODIFY_CQ,
/// CREATE_QP and CREATE_RMP; the MTT entries of CREATE_MKEY). The caller's
/// [`Command::in_len`] counts them.
///
/// # Errors
///
/// [`PrmError::OutOfBounds`] when the inbox is too short for them.
pub(crate) fn set_addrs(
    inbox: &mut [u8],
    name: &'static str,
    start: u32,
    addrs: &[u64],
) -> Result<(), PrmError> {
    let first = Field::new(name, start, 64);
    for (i, a) in addrs.iter().enumerate() {
        let i = u32::try_from(i).map_err(|_| PrmError::OutOfBounds)?;
        first.nth(i).set64(inbox, *a)?;
    }
    Ok(())
}

/// Mailboxes up to this size live on the stack: every destroy and dealloc command (16-byte
/// inbox and outbox) then runs without a heap allocation, so a teardown that cannot fail back
/// (a context's close, a UAR page's last unmap) is never defeated by a failed allocation (the
/// fault sweep, `tests/vm/faults.sh`, found a transport domain left in the device that way).
const MBOX_ON_STACK: usize = 64;

/// Executes `cmd` on `hw`.
///
/// # Errors
///
/// The errno of the firmware status (logged by [`Mlx5Hw::exec`]), a delivery error (`ETIMEDOUT`,
/// ...), `ENOMEM` for mailboxes larger than [`MBOX_ON_STACK`], `EINVAL` if the inbox cannot be
/// built (a value too wide for its field: a driver bug, logged), `EIO` if the reply cannot be
/// read.
pub(crate) fn exec<C: Command>(hw: &dyn Mlx5Hw, cmd: &C) -> Result<C::Reply> {
    let in_len = cmd.in_len().max(C::IN_SIZE);
    let out_len = cmd.out_len().max(C::OUT_SIZE);
    let mut in_stack = [0u8; MBOX_ON_STACK];
    let mut out_stack = [0u8; MBOX_ON_STACK];
    let mut in_heap;
    let mut out_heap;
    let inbox: &mut [u8] = match in_stack.get_mut(..in_len) {
        Some(b) => b,
        None => {
            in_heap = KVec::from_elem(0u8, in_len, GFP_KERNEL)?;
            &mut in_heap
        }
    };
    let built = mbox_in::opcode
        .set(inbox, u32::from(C::OPCODE))
        .and_then(|()| mbox_in::uid.set(inbox, u32::from(cmd.uid())))
        .and_then(|()| mbox_in::op_mod.set(inbox, cmd.op_mod()))
        .and_then(|()| cmd.fill(inbox));
    if let Err(e) = built {
        pr_err!(
            "{}: {}(0x{:x}): cannot build the inbox: {:?}\n",
            hw.name(),
            opcode_name(C::OPCODE),
            C::OPCODE,
            e
        );
        return Err(EINVAL);
    }
    let outbox: &mut [u8] = match out_stack.get_mut(..out_len) {
        Some(b) => b,
        None => {
            out_heap = KVec::from_elem(0u8, out_len, GFP_KERNEL)?;
            &mut out_heap
        }
    };
    hw.exec(inbox, outbox)?;
    cmd.reply(outbox)
}

/// A read of a reply field: a layout error means the outbox is not what the layout says, which
/// is `EIO` (never a panic).
pub(crate) fn rd(f: Field, out: &[u8]) -> Result<u32> {
    f.get(out).map_err(|_| EIO)
}

/// [`rd`] for 64-bit fields.
pub(crate) fn rd64(f: Field, out: &[u8]) -> Result<u64> {
    f.get64(out).map_err(|_| EIO)
}

/// [`rd`] for byte arrays.
pub(crate) fn rd_bytes<const N: usize>(f: Field, out: &[u8]) -> Result<[u8; N]> {
    let b = f.bytes(out).map_err(|_| EIO)?;
    b.try_into().map_err(|_| EIO)
}

/// Commands that create an object answer with its 24-bit number; this is the common reply.
macro_rules! number_reply {
    ($field:expr) => {
        fn reply(&self, out: &[u8]) -> Result<u32> {
            crate::cmd::rd($field, out)
        }
    };
}
pub(crate) use number_reply;

/// Commands that answer nothing but their status.
macro_rules! empty_reply {
    () => {
        fn reply(&self, _out: &[u8]) -> Result<()> {
            Ok(())
        }
    };
}
pub(crate) use empty_reply;
