// SPDX-License-Identifier: GPL-2.0

//! Typed firmware commands.
//!
//! Each PRM command the driver sends is a type implementing [`Command`]: its row of the command
//! table (`Command::Prm`, which gives the opcode and the `*_in`/`*_out` layouts), a method that
//! fills the inbox and one that turns the outbox into a typed reply (`nova-core`'s
//! `CommandToGsp` is the model). The mailboxes are typed by the row's layouts ([`InBox`],
//! [`OutBox`]): filling a member of another command's layout does not compile, and reading a
//! member of the length-checked reply cannot fail.
//! [`exec`] runs one through [`Mlx5Hw::exec`], which maps a status that is not OK to an errno and
//! logs one line naming the command, the status and the syndrome (upstream `mlx5_cmd_exec()` +
//! `mlx5_cmd_check()`). Nothing here panics on what firmware returns: an outbox shorter than its
//! layout is `EIO`, values are converted with `TryFrom`.

#[path = "cmd/cq.rs"]
pub(crate) mod cq;
#[path = "cmd/mad.rs"]
pub(crate) mod mad;
#[path = "cmd/qp.rs"]
pub(crate) mod qp;
#[path = "cmd/query.rs"]
pub(crate) mod query;
#[path = "cmd/reg.rs"]
pub(crate) mod reg;
#[path = "cmd/res.rs"]
pub(crate) mod res;
#[path = "cmd/srq.rs"]
pub(crate) mod srq;
#[path = "cmd/tests.rs"]
mod tests;

use crate::hw::{opcode_name, Mlx5Hw};
use crate::prm::cmd::mbox_in;
use crate::prm::command::PrmCommand;
use crate::prm::layout::{Buf, BufMut, PrmError, PrmLayout};
use kernel::prelude::*;

/// The inbox of command `C`: typed by its row's `*_in` layout.
pub(crate) type InBox<'a, C> = BufMut<'a, <<C as Command>::Prm as PrmCommand>::In>;
/// The outbox of command `C`: typed by its row's `*_out` layout, length-checked, so reading a
/// member of the reply needs no `?`.
pub(crate) type OutBox<'a, C> = Buf<'a, <<C as Command>::Prm as PrmCommand>::Out>;

/// A PRM command the driver sends.
pub(crate) trait Command {
    /// Its row in the command table (`crate::prm::command`): opcode and mailbox layouts.
    type Prm: PrmCommand;
    /// What a successful command returns.
    type Reply;
    /// `MLX5_ST_SZ_BYTES` of the inbox layout: the fixed part.
    const IN_SIZE: usize = <<Self::Prm as PrmCommand>::In as PrmLayout>::SIZE_BYTES;
    /// `MLX5_ST_SZ_BYTES` of the outbox layout: the fixed part.
    const OUT_SIZE: usize = <<Self::Prm as PrmCommand>::Out as PrmLayout>::SIZE_BYTES;

    /// `mbox_in.op_mod`.
    fn op_mod(&self) -> u32 {
        0
    }

    /// The queue a create command hands the device, if it is one (CREATE_CQ, CREATE_QP,
    /// CREATE_RMP, CREATE_XRC_SRQ): its owner is the command's uid, its page list the inbox's
    /// trailing array.
    fn queue_buf(&self) -> Option<QueueBuf<'_>> {
        None
    }

    /// `mbox_in.uid`: 0 for the kernel, a user context's uid for DEVX-owned objects.
    fn uid(&self) -> u16 {
        self.queue_buf().map_or(0, |b| b.uid)
    }

    /// Inbox length: the fixed part plus any trailing array (`pas[]`, `register_data[]`).
    fn in_len(&self) -> usize {
        Self::in_len_with_addrs(self.queue_buf().map_or(0, |b| b.pas.len()))
    }

    /// The inbox length of a command with `n` 64-bit addresses after the fixed part (a
    /// `pas[]` or MTT array, written by [`set_addrs`]): its [`Command::in_len`].
    fn in_len_with_addrs(n: usize) -> usize {
        Self::IN_SIZE.saturating_add(n.saturating_mul(8))
    }

    /// Outbox length: the fixed part plus any trailing array the reply carries.
    fn out_len(&self) -> usize {
        Self::OUT_SIZE
    }

    /// Writes the command's fields (the header is already set); nothing for a command whose
    /// inbox is the header alone.
    fn fill(&self, _inbox: &mut InBox<'_, Self>) -> Result<(), PrmError> {
        Ok(())
    }

    /// Reads the reply from a successful command's outbox.
    fn reply(&self, outbox: OutBox<'_, Self>) -> Result<Self::Reply>;
}

/// The owner and the memory of a queue as its create command gives them to the device (upstream
/// `mlx5_ib_create_cq()`, `create_qp_common()`, `create_srq_user()` set the same four members
/// of each context: `log_page_size`, `page_offset`, `dbr_addr` and `pas[]`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct QueueBuf<'a> {
    /// Owner: 0 for the kernel, a user context's uid.
    pub(crate) uid: u16,
    /// log2 of the buffer page size minus 12 (`MLX5_ADAPTER_PAGE_SHIFT`).
    pub(crate) log_page_size: u8,
    /// Offset of the buffer in its first page, in 64-byte units of a 4 KiB page.
    pub(crate) page_offset: u8,
    /// Doorbell record DMA address.
    pub(crate) dbr_addr: u64,
    /// DMA addresses of the buffer's pages (`pas[]`, written by [`set_addrs`]).
    pub(crate) pas: &'a [u64],
}

/// Writes `addrs` as the array of 64-bit addresses after the inbox's fixed part: the page list
/// of CREATE_CQ, MODIFY_CQ, CREATE_QP and CREATE_RMP (`pas[]`), the MTT entries of CREATE_MKEY.
/// The caller's [`Command::in_len`] counts them.
///
/// # Errors
///
/// [`PrmError::OutOfBounds`] when the inbox is too short for them.
pub(crate) fn set_addrs<L: PrmLayout>(
    inbox: &mut BufMut<'_, L>,
    addrs: &[u64],
) -> Result<(), PrmError> {
    for (i, a) in addrs.iter().enumerate() {
        inbox.set_tail64(i, *a)?;
    }
    Ok(())
}

/// Mailboxes up to this size live on the stack: every destroy and dealloc command (16-byte
/// inbox and outbox) then runs without a heap allocation, so a teardown that cannot fail back
/// (a context's close, a UAR page's last unmap) is never defeated by a failed allocation (the
/// fault sweep, `tests/vm/faults.sh`, found a transport domain left in the device that way).
const MBOX_ON_STACK: usize = 64;

/// Inboxes up to this size live on the stack too: the QP state transitions' (272 bytes,
/// `rst2init_qp_in` .. `rts2rts_qp_in`), so a connection's setup allocates nothing per
/// transition (`Documentation/performance.md`). Outboxes of that size are rare.
const INBOX_ON_STACK: usize = 272;

/// Executes `cmd` on `hw`. A larger inbox is `kvmalloc()`ed, as upstream's `reg_create()`
/// `kvzalloc()`s a CREATE_MKEY with its whole translation (2 MiB per GiB of 4 KiB pages).
///
/// # Errors
///
/// The errno of the firmware status (logged by [`Mlx5Hw::exec`]), a delivery error (`ETIMEDOUT`,
/// ...), `ENOMEM` for an inbox larger than [`INBOX_ON_STACK`] or an outbox larger than
/// [`MBOX_ON_STACK`] without memory, `EINVAL` if the inbox cannot be built (a value too wide
/// for its field: a driver bug, logged), `EIO` if the reply cannot be read.
pub(crate) fn exec<C: Command>(hw: &dyn Mlx5Hw, cmd: &C) -> Result<C::Reply> {
    let opcode = C::Prm::OPCODE;
    let in_len = cmd.in_len().max(C::IN_SIZE);
    let out_len = cmd.out_len().max(C::OUT_SIZE);
    let mut in_stack = [0u8; INBOX_ON_STACK];
    let mut out_stack = [0u8; MBOX_ON_STACK];
    let mut in_heap;
    let mut out_heap;
    let inbox: &mut [u8] = match in_stack.get_mut(..in_len) {
        Some(b) => b,
        None => {
            in_heap = KVVec::from_elem(0u8, in_len, GFP_KERNEL)?;
            &mut in_heap
        }
    };
    let built = mbox_in::opcode
        .set(inbox, u32::from(opcode))
        .and_then(|()| mbox_in::uid.set(inbox, u32::from(cmd.uid())))
        .and_then(|()| mbox_in::op_mod.set(inbox, cmd.op_mod()))
        .and_then(|()| BufMut::new(&mut *inbox))
        .and_then(|mut b| cmd.fill(&mut b));
    if let Err(e) = built {
        pr_err!(
            "{}: {}(0x{:x}): cannot build the inbox: {:?}\n",
            hw.name(),
            opcode_name(opcode),
            opcode,
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
    cmd.reply(Buf::new(outbox).map_err(|_| EIO)?)
}

/// Declares an enum whose variants stand for PRM encodings (`Variant = ENCODING`, the
/// discriminant: `v as u32` is the encoding) and its `TryFrom<u32>`, which reads a field the
/// device wrote: an encoding the enum does not list is `EIO`.
macro_rules! prm_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[$vmeta:meta])* $variant:ident = $value:expr,)*
        }
    ) => {
        $(#[$meta])*
        #[repr(u32)]
        $vis enum $name {
            $($(#[$vmeta])* $variant = $value,)*
        }

        impl TryFrom<u32> for $name {
            type Error = kernel::error::Error;

            fn try_from(v: u32) -> kernel::error::Result<Self> {
                $(
                    if v == $value {
                        return Ok(Self::$variant);
                    }
                )*
                Err(kernel::error::code::EIO)
            }
        }
    };
}
pub(crate) use prm_enum;

/// Declares a command that allocates a numbered object with no parameters but the uid, whose
/// reply is the number in `$out` (ALLOC_PD and the like).
macro_rules! alloc_cmd {
    ($(#[$doc:meta])* $name:ident, $out:expr) => {
        $(#[$doc])*
        pub(crate) struct $name {
            /// Owner: 0 for the kernel, a user context's uid.
            pub(crate) uid: u16,
        }

        impl crate::cmd::Command for $name {
            type Prm = crate::prm::command::$name;
            /// The object's number.
            type Reply = u32;

            fn uid(&self) -> u16 {
                self.uid
            }

            fn reply(&self, out: crate::cmd::OutBox<'_, Self>) -> Result<u32> {
                Ok(out.get($out))
            }
        }
    };
}
pub(crate) use alloc_cmd;

/// Declares a command that frees (destroys) numbered object `$id` of owner `uid`, the number
/// written to `$field` of the inbox, and answers nothing but its status (DEALLOC_PD,
/// DESTROY_CQ and the like).
macro_rules! free_cmd {
    ($(#[$doc:meta])* $name:ident, $id:ident: $field:expr) => {
        $(#[$doc])*
        pub(crate) struct $name {
            /// The object's number.
            pub(crate) $id: u32,
            /// The uid it was created with.
            pub(crate) uid: u16,
        }

        impl crate::cmd::Command for $name {
            type Prm = crate::prm::command::$name;
            type Reply = ();

            fn uid(&self) -> u16 {
                self.uid
            }

            fn fill(
                &self,
                inbox: &mut crate::cmd::InBox<'_, Self>,
            ) -> Result<(), crate::prm::layout::PrmError> {
                inbox.set($field, self.$id)
            }

            fn reply(&self, _out: crate::cmd::OutBox<'_, Self>) -> Result<()> {
                Ok(())
            }
        }
    };
}
pub(crate) use free_cmd;
