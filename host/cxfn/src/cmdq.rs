// SPDX-License-Identifier: GPL-2.0

//! The command queue: one page of [`ENTRY_BYTES`]-byte entries (`struct mlx5_cmd_layout`,
//! include/linux/mlx5/device.h) in guest memory, each naming its input and output messages.
//! The first 16 bytes of each message are inline in the entry; the rest is a chain of
//! mailboxes (`struct mlx5_cmd_prot_block`: 512 data bytes, then `next`, `block_num`, `token`,
//! signatures), as `mlx5_alloc_cmd_msg()` in cmd.c builds them.
//!
//! The device checks what a ConnectX checks before executing: the transport type, lengths,
//! mailbox alignment, block numbers and tokens; a failure is a delivery status in
//! `status_own` (cmd.c `MLX5_CMD_DELIVERY_STAT_*`) and the command is not executed. Signatures
//! are not checked: mlx5_core runs with `checksum_disabled` and this device does not advertise
//! `cmdif_checksum`.

use crate::mem::GuestMemory;

/// Bytes of a queue entry (`sizeof(struct mlx5_cmd_layout)`).
pub const ENTRY_BYTES: usize = 64;
/// Data bytes of a mailbox (`MLX5_CMD_DATA_BLOCK_SIZE`).
pub const BLOCK_DATA: usize = 512;
/// Bytes of a mailbox (`sizeof(struct mlx5_cmd_prot_block)`).
pub const BLOCK_BYTES: usize = 576;
/// Mailbox alignment: cmd.c's DMA pool aligns mailboxes to the power of two above their size.
pub const BLOCK_ALIGN: u64 = 1024;
/// Inline bytes of each message.
pub const INLINE: usize = 16;
/// `MLX5_PCI_CMD_XPORT`: the entry's `type`.
pub const PCI_CMD_XPORT: u8 = 7;
/// `CMD_OWNER_HW`: bit 0 of `status_own`.
pub const OWNER_HW: u8 = 1;
/// Largest message the device accepts: 64 MiB. A ConnectX chains mailboxes with no such
/// limit of its own, and a driver that puts a user MR's whole translation in CREATE_MKEY
/// (upstream `reg_create(populate)`, ours for every user MR) sends 2 MiB of `pas` per GiB of
/// scattered 4 KiB pages. The bound only guards the model, which gathers a message into one
/// buffer, against an absurd `inlen`: it is the `pas` of a 32 GiB MR, ten times the test VM's
/// memory.
pub const MAX_MSG: usize = 64 << 20;

/// Entry offsets.
mod lay {
    pub(super) const TYPE: usize = 0x00;
    pub(super) const INLEN: usize = 0x04;
    pub(super) const IN_PTR: usize = 0x08;
    pub(super) const IN: usize = 0x10;
    pub(super) const OUT: usize = 0x20;
    pub(super) const OUT_PTR: usize = 0x30;
    pub(super) const OUTLEN: usize = 0x38;
    pub(super) const TOKEN: usize = 0x3c;
    pub(super) const STATUS_OWN: usize = 0x3f;
}

/// Mailbox offsets.
mod blk {
    pub(super) const NEXT: usize = 0x230;
    pub(super) const BLOCK_NUM: usize = 0x238;
    pub(super) const TOKEN: usize = 0x23d;
}

/// A delivery status (cmd.c `MLX5_CMD_DELIVERY_STAT_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// `MLX5_CMD_DELIVERY_STAT_OK`.
    Ok = 0x0,
    /// `MLX5_CMD_DELIVERY_STAT_TOK_ERR`: a mailbox token differs from the entry's.
    TokenErr = 0x2,
    /// `MLX5_CMD_DELIVERY_STAT_BAD_BLK_NUM_ERR`.
    BadBlockNum = 0x3,
    /// `MLX5_CMD_DELIVERY_STAT_OUT_PTR_ALIGN_ERR`.
    OutPtrAlign = 0x4,
    /// `MLX5_CMD_DELIVERY_STAT_IN_PTR_ALIGN_ERR`.
    InPtrAlign = 0x5,
    /// `MLX5_CMD_DELIVERY_STAT_FW_ERR`: the model produced no completion (an injected
    /// timeout is instead reported by never completing).
    FwErr = 0x6,
    /// `MLX5_CMD_DELIVERY_STAT_IN_LENGTH_ERR`.
    InLength = 0x7,
    /// `MLX5_CMD_DELIVERY_STAT_OUT_LENGTH_ERR`.
    OutLength = 0x8,
    /// `MLX5_CMD_DELIVERY_STAT_CMD_DESCR_ERR`: bad transport type, or the entry or a
    /// mailbox could not be read.
    CmdDescr = 0x10,
}

/// A decoded queue entry.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// The entry's bytes.
    pub raw: [u8; ENTRY_BYTES],
}

fn be32(b: &[u8], off: usize) -> u32 {
    let mut a = [0u8; 4];
    if let Some(s) = b.get(off..off + 4) {
        a.copy_from_slice(s);
    }
    u32::from_be_bytes(a)
}

fn be64(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    if let Some(s) = b.get(off..off + 8) {
        a.copy_from_slice(s);
    }
    u64::from_be_bytes(a)
}

impl Entry {
    /// Reads the entry at `addr`.
    pub fn read(mem: &dyn GuestMemory, addr: u64) -> Option<Entry> {
        let mut raw = [0u8; ENTRY_BYTES];
        mem.read(addr, &mut raw).ok()?;
        Some(Entry { raw })
    }

    /// Whether the hardware owns it (the driver posted it).
    pub fn hw_owned(&self) -> bool {
        self.raw[lay::STATUS_OWN] & OWNER_HW != 0
    }

    fn token(&self) -> u8 {
        self.raw[lay::TOKEN]
    }

    /// `inlen`.
    pub fn inlen(&self) -> usize {
        be32(&self.raw, lay::INLEN) as usize
    }

    /// `outlen`.
    pub fn outlen(&self) -> usize {
        be32(&self.raw, lay::OUTLEN) as usize
    }

    /// The input message: inline bytes, then the mailbox chain.
    ///
    /// # Errors
    ///
    /// The delivery status the device reports instead of executing.
    pub fn gather_input(&self, mem: &dyn GuestMemory) -> Result<Vec<u8>, Delivery> {
        if self.raw[lay::TYPE] != PCI_CMD_XPORT {
            return Err(Delivery::CmdDescr);
        }
        let len = self.inlen();
        if !(INLINE..=MAX_MSG).contains(&len) {
            return Err(Delivery::InLength);
        }
        let mut msg = vec![0u8; len];
        msg[..INLINE].copy_from_slice(&self.raw[lay::IN..lay::IN + INLINE]);
        let ptr = be64(&self.raw, lay::IN_PTR);
        self.walk(mem, ptr, len - INLINE, Delivery::InPtrAlign, |i, block| {
            let off = INLINE + i * BLOCK_DATA;
            let n = (len - off).min(BLOCK_DATA);
            msg[off..off + n].copy_from_slice(&block[..n]);
            None
        })?;
        Ok(msg)
    }

    /// Checks the output chain can take `outlen - 16` bytes; returns its mailbox addresses.
    ///
    /// # Errors
    ///
    /// The delivery status the device reports instead of executing.
    pub fn output_blocks(&self, mem: &dyn GuestMemory) -> Result<Vec<u64>, Delivery> {
        let len = self.outlen();
        if len > MAX_MSG {
            return Err(Delivery::OutLength);
        }
        let extra = len.saturating_sub(INLINE);
        let mut addrs = Vec::new();
        let ptr = be64(&self.raw, lay::OUT_PTR);
        let mut cur = ptr;
        self.walk(mem, ptr, extra, Delivery::OutPtrAlign, |_, block| {
            addrs.push(cur);
            cur = be64(block, blk::NEXT);
            None
        })?;
        Ok(addrs)
    }

    /// Walks the chain of `bytes` data bytes from `ptr`, checking alignment, block numbers and
    /// tokens, calling `f(index, block)` for each block.
    fn walk(
        &self,
        mem: &dyn GuestMemory,
        ptr: u64,
        bytes: usize,
        align_err: Delivery,
        mut f: impl FnMut(usize, &[u8; BLOCK_BYTES]) -> Option<Delivery>,
    ) -> Result<(), Delivery> {
        let blocks = bytes.div_ceil(BLOCK_DATA);
        let mut addr = ptr;
        for i in 0..blocks {
            if addr == 0 || !addr.is_multiple_of(BLOCK_ALIGN) {
                return Err(align_err);
            }
            let mut block = [0u8; BLOCK_BYTES];
            mem.read(addr, &mut block).map_err(|_| Delivery::CmdDescr)?;
            if be32(&block, blk::BLOCK_NUM) as usize != i {
                return Err(Delivery::BadBlockNum);
            }
            if block[blk::TOKEN] != self.token() {
                return Err(Delivery::TokenErr);
            }
            if let Some(e) = f(i, &block) {
                return Err(e);
            }
            addr = be64(&block, blk::NEXT);
        }
        Ok(())
    }

    /// Writes the output message (`out.len()` >= 16): inline part into the entry, the rest
    /// into the mailboxes' data, then `status_own` with the owner bit cleared. The entry's
    /// last byte is written last, as the driver polls it.
    pub fn complete(
        &mut self,
        mem: &dyn GuestMemory,
        addr: u64,
        out: &[u8],
        blocks: &[u64],
        status: Delivery,
    ) -> bool {
        let mut ok = true;
        if status == Delivery::Ok {
            let n = out.len().min(INLINE);
            self.raw[lay::OUT..lay::OUT + n].copy_from_slice(&out[..n]);
            let rest = out.get(INLINE..).unwrap_or(&[]);
            for (chunk, &b) in rest.chunks(BLOCK_DATA).zip(blocks) {
                ok &= mem.write(b, chunk).is_ok();
            }
        }
        self.raw[lay::STATUS_OWN] = (status as u8) << 1;
        ok &= mem
            .write(
                addr + lay::OUT as u64,
                &self.raw[lay::OUT..lay::OUT + INLINE],
            )
            .is_ok();
        ok &= mem
            .write(
                addr + lay::STATUS_OWN as u64,
                &self.raw[lay::STATUS_OWN..=lay::STATUS_OWN],
            )
            .is_ok();
        ok
    }
}
