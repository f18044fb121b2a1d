// SPDX-License-Identifier: GPL-2.0

//! A user's DEVX command mailbox: its header fields, the allow-lists of each method, the
//! object a command names (upstream `devx_get_obj_id()`), the destroy command of a created
//! object and the `*_umem_valid` bits the kernel sets.

use crate::prm::cmd::{create_mkey_in, general_obj_in_cmd_hdr as hdr, mbox_in};
use crate::prm::ctx::{cqc, mkc, qpc};
use crate::prm::devx_ops as op;
use crate::prm::layout::Field;
use kernel::prelude::*;

/// A member of a user's command; 0 past its end (the spec guarantees the 16-byte header).
pub(super) fn get(cmd: &[u8], f: Field) -> u32 {
    f.get(cmd).unwrap_or(0)
}

pub(super) fn set(cmd: &mut [u8], f: Field, v: u32) -> Result {
    f.set(cmd, v).map_err(|_| EINVAL)
}

/// A member at bit `off`, `width` bits wide (the id fields of the many commands DEVX names
/// that the PRM table does not declare: mlx5_ifc.h's offsets, see `devx_ops.rs`).
const fn at(off: u32, width: u32) -> Field {
    Field::new("devx", off, width)
}

/// The 24-bit object number most `*_in`/`*_out` layouts keep at bit 0x48.
const ID24: Field = at(0x48, 0x18);
/// The 32-bit id of general objects, flow counters, reformat and modify-header contexts.
const ID32: Field = at(0x40, 0x20);

pub(super) fn opcode(cmd: &[u8]) -> u16 {
    get(cmd, hdr::opcode.field()) as u16
}

/// upstream `devx_is_general_cmd()` (`vhca_tunnel_commands` is not a capability here).
pub(crate) fn is_general_cmd(cmd: &[u8]) -> bool {
    let o = opcode(cmd);
    (op::GENERAL_START..op::GENERAL_END).contains(&o)
        || matches!(
            o,
            op::QUERY_HCA_CAP
                | op::QUERY_HCA_VPORT_CONTEXT
                | op::QUERY_ESW_VPORT_CONTEXT
                | op::QUERY_VPORT_STATE
                | op::QUERY_ADAPTER
                | op::QUERY_ISSI
                | op::QUERY_NIC_VPORT_CONTEXT
                | op::QUERY_ROCE_ADDRESS
                | op::QUERY_VNIC_ENV
                | op::QUERY_VPORT_COUNTER
                | op::GET_DROPPED_PACKET_LOG
                | op::NOP
                | op::QUERY_CONG_STATUS
                | op::QUERY_CONG_PARAMS
                | op::QUERY_CONG_STATISTICS
                | op::QUERY_LAG
                | op::QUERY_ESW_FUNCTIONS
        )
}

/// upstream `devx_is_obj_create_cmd()`.
pub(crate) fn is_obj_create_cmd(cmd: &[u8]) -> bool {
    match opcode(cmd) {
        op::CREATE_GENERAL_OBJECT
        | op::CREATE_MKEY
        | op::CREATE_CQ
        | op::ALLOC_PD
        | op::ALLOC_TRANSPORT_DOMAIN
        | op::CREATE_RMP
        | op::CREATE_SQ
        | op::CREATE_RQ
        | op::CREATE_RQT
        | op::CREATE_TIR
        | op::CREATE_TIS
        | op::ALLOC_Q_COUNTER
        | op::CREATE_FLOW_TABLE
        | op::CREATE_FLOW_GROUP
        | op::ALLOC_FLOW_COUNTER
        | op::ALLOC_PACKET_REFORMAT_CONTEXT
        | op::ALLOC_MODIFY_HEADER_CONTEXT
        | op::CREATE_SCHEDULING_ELEMENT
        | op::ADD_VXLAN_UDP_DPORT
        | op::SET_L2_TABLE_ENTRY
        | op::CREATE_QP
        | op::CREATE_SRQ
        | op::CREATE_XRC_SRQ
        | op::CREATE_DCT
        | op::CREATE_XRQ
        | op::ATTACH_TO_MCG
        | op::ALLOC_XRCD => true,
        // set_fte_in.op_mod 0 (create), create_psv_in.num_psv 1.
        op::SET_FLOW_TABLE_ENTRY => get(cmd, mbox_in::op_mod.field()) == 0,
        op::CREATE_PSV => get(cmd, at(0x40, 0x4)) == 1,
        _ => false,
    }
}

/// upstream `devx_is_obj_modify_cmd()`.
pub(crate) fn is_obj_modify_cmd(cmd: &[u8]) -> bool {
    match opcode(cmd) {
        op::MODIFY_GENERAL_OBJECT
        | op::MODIFY_CQ
        | op::MODIFY_RMP
        | op::MODIFY_SQ
        | op::MODIFY_RQ
        | op::MODIFY_RQT
        | op::MODIFY_TIR
        | op::MODIFY_TIS
        | op::MODIFY_FLOW_TABLE
        | op::MODIFY_SCHEDULING_ELEMENT
        | op::ADD_VXLAN_UDP_DPORT
        | op::SET_L2_TABLE_ENTRY
        | op::RST2INIT_QP
        | op::INIT2RTR_QP
        | op::INIT2INIT_QP
        | op::RTR2RTS_QP
        | op::RTS2RTS_QP
        | op::SQERR2RTS_QP
        | op::_2ERR_QP
        | op::_2RST_QP
        | op::ARM_XRC_SRQ
        | op::ARM_RQ
        | op::ARM_DCT_FOR_KEY_VIOLATION
        | op::ARM_XRQ
        | op::SET_XRQ_DC_PARAMS_ENTRY
        | op::RELEASE_XRQ_ERROR
        | op::MODIFY_XRQ => true,
        // set_fte_in.op_mod 1 (modify).
        op::SET_FLOW_TABLE_ENTRY => get(cmd, mbox_in::op_mod.field()) == 1,
        _ => false,
    }
}

/// upstream `devx_is_obj_query_cmd()`.
pub(crate) fn is_obj_query_cmd(cmd: &[u8]) -> bool {
    matches!(
        opcode(cmd),
        op::QUERY_GENERAL_OBJECT
            | op::QUERY_MKEY
            | op::QUERY_CQ
            | op::QUERY_RMP
            | op::QUERY_SQ
            | op::QUERY_RQ
            | op::QUERY_RQT
            | op::QUERY_TIR
            | op::QUERY_TIS
            | op::QUERY_Q_COUNTER
            | op::QUERY_FLOW_TABLE
            | op::QUERY_FLOW_GROUP
            | op::QUERY_FLOW_TABLE_ENTRY
            | op::QUERY_FLOW_COUNTER
            | op::QUERY_MODIFY_HEADER_CONTEXT
            | op::QUERY_SCHEDULING_ELEMENT
            | op::QUERY_L2_TABLE_ENTRY
            | op::QUERY_QP
            | op::QUERY_SRQ
            | op::QUERY_XRC_SRQ
            | op::QUERY_DCT
            | op::QUERY_XRQ
            | op::QUERY_XRQ_DC_PARAMS_ENTRY
            | op::QUERY_XRQ_ERROR_PARAMS
            | op::QUERY_PACKET_REFORMAT_CONTEXT
    )
}

/// upstream `devx_is_whitelist_cmd()`: queries upstream also runs with the device's whitelist
/// uid for contexts without DEVX.
pub(super) fn is_whitelist_cmd(cmd: &[u8]) -> bool {
    matches!(
        opcode(cmd),
        op::QUERY_HCA_CAP
            | op::QUERY_HCA_VPORT_CONTEXT
            | op::QUERY_ESW_VPORT_CONTEXT
            | op::QUERY_ESW_FUNCTIONS
    )
}

/// upstream `get_enc_obj_id()`: the creator's opcode (with a general object's type) in the
/// upper half, because object numbers are unique only per kind.
pub(super) const fn enc(opcode: u32, id: u32) -> u64 {
    ((opcode as u64) << 32) | id as u64
}

/// upstream `devx_get_obj_id()`: the object a modify or query command names; 0 for a command
/// that names none this driver can check (it is refused).
pub(crate) fn obj_id_of(cmd: &[u8]) -> u64 {
    let o = opcode(cmd);
    let (creator, f) = match o {
        op::MODIFY_GENERAL_OBJECT | op::QUERY_GENERAL_OBJECT => {
            let t = get(cmd, hdr::obj_type.field());
            let creator = u32::from(op::CREATE_GENERAL_OBJECT) | (t << 16);
            return enc(creator, get(cmd, hdr::obj_id.field()));
        }
        op::QUERY_MKEY => (op::CREATE_MKEY, ID24),
        op::QUERY_CQ | op::MODIFY_CQ => (op::CREATE_CQ, ID24),
        op::QUERY_SQ | op::MODIFY_SQ => (op::CREATE_SQ, ID24),
        op::QUERY_RQ | op::MODIFY_RQ | op::ARM_RQ => (op::CREATE_RQ, ID24),
        op::QUERY_RMP | op::MODIFY_RMP => (op::CREATE_RMP, ID24),
        op::QUERY_RQT | op::MODIFY_RQT => (op::CREATE_RQT, ID24),
        op::QUERY_TIR | op::MODIFY_TIR => (op::CREATE_TIR, ID24),
        op::QUERY_TIS | op::MODIFY_TIS => (op::CREATE_TIS, ID24),
        op::QUERY_Q_COUNTER => (op::ALLOC_Q_COUNTER, at(0xf8, 0x8)),
        op::QUERY_FLOW_COUNTER => (op::ALLOC_FLOW_COUNTER, at(0xe0, 0x20)),
        op::QUERY_MODIFY_HEADER_CONTEXT => (op::ALLOC_MODIFY_HEADER_CONTEXT, ID32),
        op::QUERY_PACKET_REFORMAT_CONTEXT => (op::ALLOC_PACKET_REFORMAT_CONTEXT, ID32),
        op::QUERY_QP
        | op::RST2INIT_QP
        | op::INIT2INIT_QP
        | op::INIT2RTR_QP
        | op::RTR2RTS_QP
        | op::RTS2RTS_QP
        | op::SQERR2RTS_QP
        | op::_2ERR_QP
        | op::_2RST_QP => (op::CREATE_QP, ID24),
        op::QUERY_DCT | op::ARM_DCT_FOR_KEY_VIOLATION => (op::CREATE_DCT, ID24),
        op::QUERY_XRQ
        | op::QUERY_XRQ_DC_PARAMS_ENTRY
        | op::QUERY_XRQ_ERROR_PARAMS
        | op::ARM_XRQ
        | op::SET_XRQ_DC_PARAMS_ENTRY
        | op::RELEASE_XRQ_ERROR
        | op::MODIFY_XRQ => (op::CREATE_XRQ, ID24),
        op::QUERY_XRC_SRQ | op::ARM_XRC_SRQ => (op::CREATE_XRC_SRQ, ID24),
        op::QUERY_SRQ => (op::CREATE_SRQ, ID24),
        op::QUERY_FLOW_TABLE | op::MODIFY_FLOW_TABLE => (op::CREATE_FLOW_TABLE, at(0xa8, 0x18)),
        op::QUERY_FLOW_GROUP => (op::CREATE_FLOW_GROUP, at(0xc0, 0x20)),
        // A flow entry is named by its index (set_fte_in with op_mod 1 modifies it).
        op::QUERY_FLOW_TABLE_ENTRY | op::SET_FLOW_TABLE_ENTRY => {
            (op::SET_FLOW_TABLE_ENTRY, at(0x100, 0x20))
        }
        // Scheduling elements, VXLAN ports and L2 entries: their objects cannot be created
        // here (see the module doc).
        _ => return 0,
    };
    enc(u32::from(creator), get(cmd, f))
}

/// The created object's id and its destroy command (upstream `devx_get_created_obj_id()` +
/// `devx_obj_build_destroy_cmd()`): `(destroy opcode, where the id goes, where it is in the
/// create outbox)`; `None` for creates whose destroy needs more than the id.
pub(super) fn destroy_rule(opcode: u16) -> Option<(u16, Field, Field)> {
    Some(match opcode {
        op::CREATE_GENERAL_OBJECT => (op::DESTROY_GENERAL_OBJECT, ID32, ID32),
        op::CREATE_UMEM => (op::DESTROY_UMEM, ID24, ID24),
        op::CREATE_MKEY => (op::DESTROY_MKEY, ID24, ID24),
        op::CREATE_CQ => (op::DESTROY_CQ, ID24, ID24),
        op::ALLOC_PD => (op::DEALLOC_PD, ID24, ID24),
        op::ALLOC_TRANSPORT_DOMAIN => (op::DEALLOC_TRANSPORT_DOMAIN, ID24, ID24),
        op::CREATE_RMP => (op::DESTROY_RMP, ID24, ID24),
        op::CREATE_SQ => (op::DESTROY_SQ, ID24, ID24),
        op::CREATE_RQ => (op::DESTROY_RQ, ID24, ID24),
        op::CREATE_RQT => (op::DESTROY_RQT, ID24, ID24),
        op::CREATE_TIR => (op::DESTROY_TIR, ID24, ID24),
        op::CREATE_TIS => (op::DESTROY_TIS, ID24, ID24),
        op::ALLOC_Q_COUNTER => (op::DEALLOC_Q_COUNTER, at(0x58, 0x8), at(0x58, 0x8)),
        op::ALLOC_FLOW_COUNTER => (op::DEALLOC_FLOW_COUNTER, ID32, ID32),
        op::ALLOC_PACKET_REFORMAT_CONTEXT => (op::DEALLOC_PACKET_REFORMAT_CONTEXT, ID32, ID32),
        op::ALLOC_MODIFY_HEADER_CONTEXT => (op::DEALLOC_MODIFY_HEADER_CONTEXT, ID32, ID32),
        op::CREATE_QP => (op::DESTROY_QP, ID24, ID24),
        op::CREATE_SRQ => (op::DESTROY_SRQ, ID24, ID24),
        op::CREATE_XRC_SRQ => (op::DESTROY_XRC_SRQ, ID24, ID24),
        op::CREATE_DCT => (op::DESTROY_DCT, ID24, ID24),
        op::CREATE_XRQ => (op::DESTROY_XRQ, ID24, ID24),
        op::ALLOC_XRCD => (op::DEALLOC_XRCD, ID24, ID24),
        // create_psv_out.psv0_index.
        op::CREATE_PSV => (op::DESTROY_PSV, ID24, at(0x88, 0x18)),
        _ => return None,
    })
}

/// The flow steering objects' destroy commands (upstream `devx_obj_build_destroy_cmd()`):
/// `(destroy opcode, where the id is in the create inbox (`Some`) or outbox (`None`), where it
/// goes)`; each also copies the vport, eswitch and table members of the create inbox
/// ([`FLOW_COPIED`]) into its 64-byte `destroy_flow_table_in`, `destroy_flow_group_in` or
/// `delete_fte_in`.
fn flow_destroy_rule(opcode: u16) -> Option<(u16, Option<Field>, Field)> {
    Some(match opcode {
        // create_flow_table_out.table_id -> destroy_flow_table_in.table_id.
        op::CREATE_FLOW_TABLE => (op::DESTROY_FLOW_TABLE, None, at(0xa8, 0x18)),
        // create_flow_group_out.group_id -> destroy_flow_group_in.group_id.
        op::CREATE_FLOW_GROUP => (op::DESTROY_FLOW_GROUP, None, at(0xc0, 0x20)),
        // set_fte_in.flow_index -> delete_fte_in.flow_index.
        op::SET_FLOW_TABLE_ENTRY => (
            op::DELETE_FLOW_TABLE_ENTRY,
            Some(at(0x100, 0x20)),
            at(0x100, 0x20),
        ),
        _ => return None,
    })
}

/// The members the flow objects' create and destroy inboxes share at the same offsets:
/// `other_vport`, `other_eswitch`, `vport_number`, `table_type`, `eswitch_owner_vhca_id`, and
/// (a group's and an entry's) `table_id`.
const FLOW_COPIED: [Field; 6] = [
    at(0x40, 1),
    at(0x41, 1),
    at(0x50, 0x10),
    at(0x80, 8),
    at(0x90, 0x10),
    at(0xa8, 0x18),
];

/// The longest destroy inbox (the flow objects', 0x200 bits).
pub(crate) const DESTROY_IN_MAX: usize = 64;

/// A created object's destroy inbox (upstream `obj->dinbox`, `obj->dinlen`).
#[derive(Clone, Copy)]
pub(crate) struct DestroyCmd {
    buf: [u8; DESTROY_IN_MAX],
    len: usize,
}

impl DestroyCmd {
    /// The inbox.
    pub(crate) fn bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&self.buf)
    }
}

/// Whether this driver builds the destroy command of a create (every create of
/// [`is_obj_create_cmd`] but scheduling elements, VXLAN ports, L2 entries and multicast
/// attaches).
pub(super) fn can_destroy(opcode: u16) -> bool {
    destroy_rule(opcode).is_some() || flow_destroy_rule(opcode).is_some()
}

/// The destroy inbox of an object and its encoded id.
pub(crate) fn build_destroy_cmd(cmd: &[u8], out: &[u8]) -> Result<(DestroyCmd, u64)> {
    let o = opcode(cmd);
    let mut din = DestroyCmd {
        buf: [0; DESTROY_IN_MAX],
        len: 16,
    };
    let b = &mut din.buf;
    let mut creator = u32::from(o);
    let id = if let Some((dop, in_id, din_id)) = flow_destroy_rule(o) {
        din.len = DESTROY_IN_MAX;
        set(b, hdr::opcode.field(), dop.into())?;
        for f in FLOW_COPIED {
            set(b, f, get(cmd, f))?;
        }
        let id = match in_id {
            Some(f) => get(cmd, f),
            None => get(out, ID24),
        };
        set(b, din_id, id)?;
        id
    } else {
        let (dop, din_id, out_id) = destroy_rule(o).ok_or(EOPNOTSUPP)?;
        let id = get(out, out_id);
        set(b, hdr::opcode.field(), dop.into())?;
        set(b, din_id, id)?;
        if o == op::CREATE_GENERAL_OBJECT {
            let t = get(cmd, hdr::obj_type.field());
            set(b, hdr::obj_type.field(), t)?;
            creator |= t << 16;
        }
        id
    };
    set(b, hdr::uid.field(), get(cmd, hdr::uid.field()))?;
    Ok((din, enc(creator, id)))
}

/// upstream `devx_set_umem_valid()`: a DEVX CQ, QP, RMP, XRC SRQ (and SQ, RQ, XRQ) takes its
/// buffer and doorbell from umems; the kernel sets the `*_umem_valid` bits.
pub(super) fn set_umem_valid(cmd: &mut [u8]) -> Result {
    use crate::prm::cmd::{
        create_cq_in, create_qp_in, create_rmp_in, create_xrc_srq_in, modify_cq_in,
    };
    match opcode(cmd) {
        op::CREATE_CQ => {
            set(cmd, create_cq_in::cq_umem_valid.field(), 1)?;
            set(
                cmd,
                create_cq_in::cq_context.inner(cqc::dbr_umem_valid).field(),
                1,
            )
        }
        op::CREATE_QP => {
            set(cmd, create_qp_in::qpc.inner(qpc::dbr_umem_valid).field(), 1)?;
            set(cmd, create_qp_in::wq_umem_valid.field(), 1)
        }
        op::MODIFY_CQ => set(cmd, modify_cq_in::cq_umem_valid.field(), 1),
        op::CREATE_RMP => {
            use crate::prm::ctx::{rmpc, wq};
            let w = |f| create_rmp_in::ctx.inner(rmpc::wq.inner(f)).field();
            set(cmd, w(wq::dbr_umem_valid), 1)?;
            set(cmd, w(wq::wq_umem_valid), 1)
        }
        op::CREATE_XRC_SRQ => {
            use crate::prm::ctx::xrc_srqc;
            set(cmd, create_xrc_srq_in::xrc_srq_umem_valid.field(), 1)?;
            let x = create_xrc_srq_in::xrc_srq_context_entry.inner(xrc_srqc::dbr_umem_valid);
            set(cmd, x.field(), 1)
        }
        // SQ, RQ: `wq.dbr_umem_valid`/`wq_umem_valid` (mlx5_ifc.h: `ctx` at 0x100 of the
        // inbox, `wq` at 0x180 of sqc/rqc). XRQs are not created here (no layout).
        op::CREATE_SQ | op::CREATE_RQ => {
            set(cmd, at(0x100 + 0x180 + 0x120, 1), 1)?;
            set(cmd, at(0x100 + 0x180 + 0x121, 1), 1)
        }
        _ => Ok(()),
    }
}

/// upstream `devx_handle_mkey_create()`: the inbox must hold the whole `mkc`; a direct mkey
/// over a umem gets `mkey_umem_valid` (indirect KLM/KSM mkeys do not).
pub(super) fn handle_mkey_create(cmd: &mut [u8]) -> Result {
    let end = create_mkey_in::memory_key_mkey_entry;
    if cmd.len() < ((end.bit_off + end.bit_width) / 8) as usize {
        return Err(EINVAL);
    }
    let m = |f| create_mkey_in::memory_key_mkey_entry.inner(f).field();
    let mode = (get(cmd, m(mkc::access_mode_4_2)) << 2) | get(cmd, m(mkc::access_mode_1_0));
    if mode == crate::prm::consts::MKC_ACCESS_MODE_KLMS
        || mode == crate::prm::consts::MKC_ACCESS_MODE_KSM
    {
        return Ok(());
    }
    set(cmd, create_mkey_in::mkey_umem_valid.field(), 1)
}

#[kunit_tests(mlx5_ib_rs_devx)]
mod tests {
    use super::*;

    fn cmd(opcode: u16) -> [u8; 64] {
        let mut c = [0u8; 64];
        c[..2].copy_from_slice(&opcode.to_be_bytes());
        c
    }

    #[test]
    fn allow_lists() {
        assert!(is_general_cmd(&cmd(op::QUERY_HCA_CAP)));
        assert!(is_general_cmd(&cmd(0xb00)));
        assert!(!is_general_cmd(&cmd(op::CREATE_CQ)));
        assert!(is_obj_create_cmd(&cmd(op::CREATE_CQ)));
        assert!(!is_obj_create_cmd(&cmd(op::QUERY_HCA_CAP)));
        assert!(!is_obj_create_cmd(&cmd(op::DESTROY_CQ)));
        assert!(is_obj_modify_cmd(&cmd(op::RST2INIT_QP)));
        assert!(!is_obj_modify_cmd(&cmd(op::QUERY_QP)));
        assert!(is_obj_query_cmd(&cmd(op::QUERY_QP)));
        assert!(!is_obj_query_cmd(&cmd(op::DESTROY_QP)));
    }

    #[test]
    fn destroy_commands() -> Result {
        let c = {
            let mut c = cmd(op::CREATE_QP);
            c[2..4].copy_from_slice(&7u16.to_be_bytes());
            c
        };
        let mut out = [0u8; 16];
        out[9..12].copy_from_slice(&[0, 1, 0x23]);
        let (din, id) = build_destroy_cmd(&c, &out)?;
        let din = din.bytes();
        assert_eq!(din.len(), 16);
        assert_eq!(&din[..4], &[0x05, 0x01, 0, 7]);
        assert_eq!(&din[8..12], &[0, 0, 1, 0x23]);
        assert_eq!(id, enc(op::CREATE_QP.into(), 0x123));
        // The modify command of that QP names the same id.
        let mut m = cmd(op::RTR2RTS_QP);
        m[9..12].copy_from_slice(&[0, 1, 0x23]);
        assert_eq!(obj_id_of(&m), id);
        // A flow table (table_type 1, uid 7): DESTROY_FLOW_TABLE of 64 bytes with the table
        // type and the table id of the outbox; a flow entry: DELETE_FLOW_TABLE_ENTRY with its
        // table and flow index from the create inbox.
        let mut ft = cmd(op::CREATE_FLOW_TABLE);
        ft[2..4].copy_from_slice(&7u16.to_be_bytes());
        ft[16] = 1;
        let (din, id) = build_destroy_cmd(&ft, &out)?;
        let din = din.bytes();
        assert_eq!(din.len(), 64);
        assert_eq!(&din[..4], &[0x09, 0x31, 0, 7]);
        assert_eq!(din[16], 1);
        assert_eq!(&din[21..24], &[0, 1, 0x23]);
        assert_eq!(id, enc(op::CREATE_FLOW_TABLE.into(), 0x123));
        let mut fte = cmd(op::SET_FLOW_TABLE_ENTRY);
        fte[21..24].copy_from_slice(&[0, 0, 5]);
        fte[35] = 9;
        let (din, id) = build_destroy_cmd(&fte, &out)?;
        let din = din.bytes();
        assert_eq!(&din[..2], &[0x09, 0x38]);
        assert_eq!(&din[21..24], &[0, 0, 5]);
        assert_eq!(&din[32..36], &[0, 0, 0, 9]);
        assert_eq!(id, enc(op::SET_FLOW_TABLE_ENTRY.into(), 9));
        assert_eq!(
            build_destroy_cmd(&cmd(op::SET_L2_TABLE_ENTRY), &out).map(|_| ()),
            Err(EOPNOTSUPP)
        );
        Ok(())
    }
}
