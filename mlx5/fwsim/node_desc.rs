// SPDX-License-Identifier: GPL-2.0

//! The NODE_DESC access register (`MLX5_REG_NODE_DESC`, 0x6001): the node description the
//! firmware answers SubnGet(NodeDescription) with. Upstream mlx5_ib reads it at probe
//! (`init_node_data()` -> `mlx5_query_node_desc()`, when it does not use MAD_IFC) into
//! `ib_device.node_desc`, and writes it from `ib_modify_device(IB_DEVICE_MODIFY_NODE_DESC)`
//! (sysfs `node_desc`, rdma-ndd). The register is `struct mlx5_reg_node_desc` (driver.h): 64
//! bytes of text, NUL padded, after the 16-byte ACCESS_REG header in both mailboxes.

use super::syndrome as syn;
use super::{fail, Cmd, Done, Fw};
use crate::prm::cmd::{access_register_in, access_register_out};
use crate::prm::command::AccessReg;
use crate::prm::consts::{ACCESS_REG_READ, ACCESS_REG_WRITE};
use crate::prm::status::Status;

/// `IB_DEVICE_NODE_DESC_MAX`: the register's size.
pub(crate) const NODE_DESC_BYTES: usize = 64;

impl Fw {
    /// The node description the firmware boots with: "MT<PCI device id> <model> rdma-rs"
    /// (the form of a ConnectX's default, "MT4129 ...", marked as simulated like the board id).
    pub(crate) fn default_node_desc(&self) -> [u8; NODE_DESC_BYTES] {
        let mut d = [0u8; NODE_DESC_BYTES];
        let mut n = 0;
        let mut push = |b: u8| {
            if let Some(slot) = d.get_mut(n) {
                *slot = b;
                n += 1;
            }
        };
        push(b'M');
        push(b'T');
        let id = self.cfg.profile.device_id;
        let mut digits = [0u8; 5];
        let mut len = 0;
        let mut v = id;
        loop {
            if let Some(slot) = digits.get_mut(len) {
                *slot = b'0' + (v % 10) as u8;
            }
            len += 1;
            v /= 10;
            if v == 0 || len == digits.len() {
                break;
            }
        }
        for i in (0..len).rev() {
            push(digits.get(i).copied().unwrap_or(b'0'));
        }
        push(b' ');
        for &b in self.cfg.profile.name.as_bytes() {
            push(b);
        }
        for &b in b" rdma-rs" {
            push(b);
        }
        d
    }

    /// The node description now: the last one written since the firmware booted, else the
    /// default.
    pub(crate) fn node_desc(&self) -> [u8; NODE_DESC_BYTES] {
        self.hca
            .st
            .node_desc
            .unwrap_or_else(|| self.default_node_desc())
    }

    /// ACCESS_REG NODE_DESC: a read returns the description, a write replaces it (64 bytes as
    /// given; the firmware does not interpret the text).
    pub(super) fn node_desc_reg(&mut self, c: &mut Cmd<'_, AccessReg>) -> Done {
        let off = access_register_in::SIZE_BYTES;
        let Some(data) = c.inbox_raw().get(off..off + NODE_DESC_BYTES) else {
            return fail(Status::BAD_INP_LEN_ERR, syn::INBOX_SHORT);
        };
        let mut given = [0u8; NODE_DESC_BYTES];
        given.copy_from_slice(data);
        let out_off = access_register_out::SIZE_BYTES;
        if c.out_len() < out_off + NODE_DESC_BYTES {
            return fail(Status::BAD_OUTP_LEN_ERR, syn::OUTBOX_SHORT);
        }
        match c.op_mod {
            ACCESS_REG_READ => {}
            ACCESS_REG_WRITE => self.hca.st.node_desc = Some(given),
            _ => return fail(Status::BAD_PARAM_ERR, syn::BAD_OP_MOD),
        }
        let desc = self.node_desc();
        if let Some(dst) = c.out.raw_mut().get_mut(out_off..out_off + NODE_DESC_BYTES) {
            dst.copy_from_slice(&desc);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::profile::{LinkLayer, CONNECTX6_DX, CONNECTX7};
    use super::super::tests::{err, fw, inbox, ok};
    use super::*;
    use crate::prm::consts::REG_NODE_DESC;
    use crate::prm::opcode as op;
    use std::vec::Vec;

    fn reg_in(op_mod: u32, text: &[u8]) -> Vec<u8> {
        let mut b = inbox(
            op::ACCESS_REG,
            0,
            op_mod,
            access_register_in::SIZE_BYTES + NODE_DESC_BYTES,
        );
        access_register_in::register_id
            .set(&mut b, REG_NODE_DESC)
            .unwrap();
        b[access_register_in::SIZE_BYTES..][..text.len()].copy_from_slice(text);
        b
    }

    const OUT: usize = access_register_out::SIZE_BYTES + NODE_DESC_BYTES;

    fn text(out: &[u8]) -> &[u8] {
        let d = &out[access_register_out::SIZE_BYTES..][..NODE_DESC_BYTES];
        let n = d.iter().position(|&b| b == 0).unwrap_or(d.len());
        &d[..n]
    }

    #[test]
    fn node_desc_register_reads_writes_and_resets() {
        let mut f = fw(CONNECTX7, LinkLayer::Ib);
        // mlx5_query_node_desc(): a read with a zeroed register.
        let out = ok(&mut f, &reg_in(ACCESS_REG_READ, &[]), OUT);
        assert_eq!(text(&out), b"MT4129 ConnectX-7 rdma-rs");
        // The rest of the 64 bytes is NUL padding.
        assert!(out[access_register_out::SIZE_BYTES + 25..OUT]
            .iter()
            .all(|&b| b == 0));
        let mut e = fw(CONNECTX6_DX, LinkLayer::Ethernet);
        let out = ok(&mut e, &reg_in(ACCESS_REG_READ, &[]), OUT);
        assert_eq!(text(&out), b"MT4125 ConnectX-6 Dx rdma-rs");
        // mlx5_ib_modify_device(IB_DEVICE_MODIFY_NODE_DESC): a write, echoed, then read back.
        let out = ok(&mut f, &reg_in(ACCESS_REG_WRITE, b"vm mlx5_0"), OUT);
        assert_eq!(text(&out), b"vm mlx5_0");
        let out = ok(&mut f, &reg_in(ACCESS_REG_READ, &[]), OUT);
        assert_eq!(text(&out), b"vm mlx5_0");
        // A full 64-byte description without a NUL is kept as given.
        let full = [b'x'; NODE_DESC_BYTES];
        ok(&mut f, &reg_in(ACCESS_REG_WRITE, &full), OUT);
        assert_eq!(f.node_desc(), full);
        // Bad op_mod, short mailboxes: refused, nothing changed.
        assert_eq!(
            err(&mut f, &reg_in(2, &[]), OUT),
            (Status::BAD_PARAM_ERR, syn::BAD_OP_MOD)
        );
        let short = reg_in(ACCESS_REG_WRITE, b"short");
        assert_eq!(
            err(&mut f, &short[..access_register_in::SIZE_BYTES + 8], OUT),
            (Status::BAD_INP_LEN_ERR, syn::INBOX_SHORT)
        );
        assert_eq!(
            err(&mut f, &reg_in(ACCESS_REG_READ, &[]), OUT - 1),
            (Status::BAD_OUTP_LEN_ERR, syn::OUTBOX_SHORT)
        );
        assert_eq!(f.node_desc(), full);
        // A power cycle restores the default.
        f.cold_boot();
        assert_eq!(&f.node_desc()[..25], b"MT4129 ConnectX-7 rdma-rs");
    }
}
