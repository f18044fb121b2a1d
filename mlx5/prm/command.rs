// SPDX-License-Identifier: GPL-2.0

//! The command table: every firmware command this project sends or simulates, declared once.
//!
//! One row of [`prm_commands!`] names a command's type, its `MLX5_CMD_OP_*` opcode and value,
//! its `*_in`/`*_out` layouts (from [`crate::prm::cmd`]), its `op_mod` rule and the simulator
//! method that executes it. Everything else is generated from that row:
//!
//! * the opcode constant in [`crate::prm::opcode`] and the name in log lines;
//! * a type implementing [`PrmCommand`] (here), whose `In`/`Out` layouts type the driver's
//!   mailboxes (`crate::cmd::Command::Prm`): filling a member of another layout does not
//!   compile;
//! * the simulator's [`spec`] lookup (mailbox lengths, `op_mod` rule) and its dispatch
//!   (`Fw::dispatch` in `fwsim.rs`), which hands the method a `Cmd` typed by the same layouts;
//! * the list `tools/prm-check` diffs against mlx5_ifc.h ([`ALL`]).
//!
//! Adding a command is one row here plus its simulator method (and a driver `Command` impl if
//! the driver sends it).

use crate::prm::layout::{Layout, Member, PrmLayout};

/// The table. `prm_commands!(m)` invokes the macro `m` with every row:
///
/// `Type: OPCODE = value, in_layout => out_layout, op_mod_rule, simulator_method;`
///
/// `op_mod_rule` is `zero` (the decoder refuses any other value with `BAD_PARAM_ERR`, as the
/// firmware does for a reserved field) or `any` (the method reads it: capability type, register
/// direction, resize).
macro_rules! prm_commands {
    ($m:ident) => {
        $m! {
            // The function's life cycle (`fwsim/hca.rs`; sent by mlx5_core to cxfn).
            QueryHcaCap: QUERY_HCA_CAP = 0x100, query_hca_cap_in => query_hca_cap_out, any, query_hca_cap;
            QueryAdapter: QUERY_ADAPTER = 0x101, query_adapter_in => query_adapter_out, zero, query_adapter;
            InitHca: INIT_HCA = 0x102, init_hca_in => init_hca_out, zero, init_hca;
            TeardownHca: TEARDOWN_HCA = 0x103, teardown_hca_in => teardown_hca_out, zero, teardown_hca;
            EnableHca: ENABLE_HCA = 0x104, enable_hca_in => enable_hca_out, zero, enable_hca;
            DisableHca: DISABLE_HCA = 0x105, disable_hca_in => disable_hca_out, zero, disable_hca;
            QueryPages: QUERY_PAGES = 0x107, query_pages_in => query_pages_out, any, query_pages;
            SetHcaCap: SET_HCA_CAP = 0x109, set_hca_cap_in => set_hca_cap_out, any, set_hca_cap;
            QueryIssi: QUERY_ISSI = 0x10a, query_issi_in => query_issi_out, zero, query_issi;
            SetIssi: SET_ISSI = 0x10b, set_issi_in => set_issi_out, zero, set_issi;
            SetDriverVersion: SET_DRIVER_VERSION = 0x10d, set_driver_version_in => set_driver_version_out, zero, set_driver_version;
            // Memory keys.
            CreateMkey: CREATE_MKEY = 0x200, create_mkey_in => create_mkey_out, zero, create_mkey;
            QueryMkey: QUERY_MKEY = 0x201, query_mkey_in => query_mkey_out, zero, query_mkey;
            DestroyMkey: DESTROY_MKEY = 0x202, destroy_mkey_in => destroy_mkey_out, zero, destroy_mkey;
            QuerySpecialContexts: QUERY_SPECIAL_CONTEXTS = 0x203, query_special_contexts_in => query_special_contexts_out, zero, query_special_contexts;
            // On-chip device memory (`fwsim/memic.rs`).
            AllocMemic: ALLOC_MEMIC = 0x205, alloc_memic_in => alloc_memic_out, zero, alloc_memic;
            DeallocMemic: DEALLOC_MEMIC = 0x206, dealloc_memic_in => dealloc_memic_out, zero, dealloc_memic;
            // Event queues.
            CreateEq: CREATE_EQ = 0x301, create_eq_in => create_eq_out, zero, create_eq;
            DestroyEq: DESTROY_EQ = 0x302, destroy_eq_in => destroy_eq_out, zero, destroy_eq;
            // Completion queues.
            CreateCq: CREATE_CQ = 0x400, create_cq_in => create_cq_out, zero, create_cq;
            DestroyCq: DESTROY_CQ = 0x401, destroy_cq_in => destroy_cq_out, zero, destroy_cq;
            QueryCq: QUERY_CQ = 0x402, query_cq_in => query_cq_out, zero, query_cq;
            ModifyCq: MODIFY_CQ = 0x403, modify_cq_in => modify_cq_out, any, modify_cq;
            // Queue pairs; the transitions share one method (`fwsim/qp.rs`, `QpTransition`).
            CreateQp: CREATE_QP = 0x500, create_qp_in => create_qp_out, zero, create_qp;
            DestroyQp: DESTROY_QP = 0x501, destroy_qp_in => destroy_qp_out, zero, destroy_qp;
            Rst2InitQp: RST2INIT_QP = 0x502, rst2init_qp_in => rst2init_qp_out, zero, modify_qp;
            Init2RtrQp: INIT2RTR_QP = 0x503, init2rtr_qp_in => init2rtr_qp_out, zero, modify_qp;
            Rtr2RtsQp: RTR2RTS_QP = 0x504, rtr2rts_qp_in => rtr2rts_qp_out, zero, modify_qp;
            Rts2RtsQp: RTS2RTS_QP = 0x505, rts2rts_qp_in => rts2rts_qp_out, zero, modify_qp;
            Qp2Err: _2ERR_QP = 0x507, qp_2err_in => qp_2err_out, zero, modify_qp;
            Qp2Rst: _2RST_QP = 0x50a, qp_2rst_in => qp_2rst_out, zero, modify_qp;
            QueryQp: QUERY_QP = 0x50b, query_qp_in => query_qp_out, zero, query_qp;
            // Management datagrams to the subnet management agent (`fwsim/mad.rs`).
            MadIfc: MAD_IFC = 0x50d, mad_ifc_in => mad_ifc_out, any, mad_ifc;
            Init2InitQp: INIT2INIT_QP = 0x50e, init2init_qp_in => init2init_qp_out, zero, modify_qp;
            // Vports, RoCE addresses, counters.
            // XRC SRQs and domains (`fwsim/xrc.rs`): upstream mlx5_ib creates two XRCDs and an
            // XRC SRQ for its device resources at probe.
            CreateXrcSrq: CREATE_XRC_SRQ = 0x705, create_xrc_srq_in => create_xrc_srq_out, zero, create_xrc_srq;
            DestroyXrcSrq: DESTROY_XRC_SRQ = 0x706, destroy_xrc_srq_in => destroy_xrc_srq_out, zero, destroy_xrc_srq;
            // DC targets (`fwsim/dct.rs`).
            CreateDct: CREATE_DCT = 0x710, create_dct_in => create_dct_out, zero, create_dct;
            DestroyDct: DESTROY_DCT = 0x711, destroy_dct_in => destroy_dct_out, zero, destroy_dct;
            DrainDct: DRAIN_DCT = 0x712, drain_dct_in => drain_dct_out, zero, drain_dct;
            QueryDct: QUERY_DCT = 0x713, query_dct_in => query_dct_out, zero, query_dct;
            QueryNicVportContext: QUERY_NIC_VPORT_CONTEXT = 0x754, query_nic_vport_context_in => query_nic_vport_context_out, zero, query_nic_vport_context;
            SetRoceAddress: SET_ROCE_ADDRESS = 0x761, set_roce_address_in => set_roce_address_out, zero, set_roce_address;
            QueryHcaVportContext: QUERY_HCA_VPORT_CONTEXT = 0x762, query_hca_vport_context_in => query_hca_vport_context_out, zero, query_hca_vport_context;
            ModifyHcaVportContext: MODIFY_HCA_VPORT_CONTEXT = 0x763, modify_hca_vport_context_in => modify_hca_vport_context_out, zero, modify_hca_vport_context;
            QueryHcaVportGid: QUERY_HCA_VPORT_GID = 0x764, query_hca_vport_gid_in => query_hca_vport_gid_out, zero, query_hca_vport_gid;
            QueryHcaVportPkey: QUERY_HCA_VPORT_PKEY = 0x765, query_hca_vport_pkey_in => query_hca_vport_pkey_out, zero, query_hca_vport_pkey;
            AllocQCounter: ALLOC_Q_COUNTER = 0x771, alloc_q_counter_in => alloc_q_counter_out, zero, alloc_q_counter;
            DeallocQCounter: DEALLOC_Q_COUNTER = 0x772, dealloc_q_counter_in => dealloc_q_counter_out, zero, dealloc_q_counter;
            QueryQCounter: QUERY_Q_COUNTER = 0x773, query_q_counter_in => query_q_counter_out, zero, query_q_counter;
            // Simple objects and registers.
            AllocPd: ALLOC_PD = 0x800, alloc_pd_in => alloc_pd_out, zero, alloc_pd;
            DeallocPd: DEALLOC_PD = 0x801, dealloc_pd_in => dealloc_pd_out, zero, dealloc_pd;
            AllocUar: ALLOC_UAR = 0x802, alloc_uar_in => alloc_uar_out, zero, alloc_uar;
            DeallocUar: DEALLOC_UAR = 0x803, dealloc_uar_in => dealloc_uar_out, zero, dealloc_uar;
            AccessReg: ACCESS_REG = 0x805, access_register_in => access_register_out, any, access_reg;
            // Multicast groups (`fwsim/mcg.rs`).
            AttachToMcg: ATTACH_TO_MCG = 0x806, attach_to_mcg_in => attach_to_mcg_out, zero, attach_to_mcg;
            DetachFromMcg: DETACH_FROM_MCG = 0x807, detach_from_mcg_in => detach_from_mcg_out, zero, detach_from_mcg;
            AllocXrcd: ALLOC_XRCD = 0x80e, alloc_xrcd_in => alloc_xrcd_out, zero, alloc_xrcd;
            DeallocXrcd: DEALLOC_XRCD = 0x80f, dealloc_xrcd_in => dealloc_xrcd_out, zero, dealloc_xrcd;
            AllocTransportDomain: ALLOC_TRANSPORT_DOMAIN = 0x816, alloc_transport_domain_in => alloc_transport_domain_out, zero, alloc_td;
            DeallocTransportDomain: DEALLOC_TRANSPORT_DOMAIN = 0x817, dealloc_transport_domain_in => dealloc_transport_domain_out, zero, dealloc_td;
            // Shared receive queues (RMPs).
            CreateRmp: CREATE_RMP = 0x90c, create_rmp_in => create_rmp_out, zero, create_rmp;
            ModifyRmp: MODIFY_RMP = 0x90d, modify_rmp_in => modify_rmp_out, zero, modify_rmp;
            DestroyRmp: DESTROY_RMP = 0x90e, destroy_rmp_in => destroy_rmp_out, zero, destroy_rmp;
            QueryRmp: QUERY_RMP = 0x90f, query_rmp_in => query_rmp_out, zero, query_rmp;
            // DEVX user contexts.
            CreateUctx: CREATE_UCTX = 0xa04, create_uctx_in => create_uctx_out, zero, create_uctx;
            DestroyUctx: DESTROY_UCTX = 0xa06, destroy_uctx_in => destroy_uctx_out, zero, destroy_uctx;
            // DEVX user memory (`fwsim/umem.rs`).
            CreateUmem: CREATE_UMEM = 0xa08, create_umem_in => create_umem_out, zero, create_umem;
            DestroyUmem: DESTROY_UMEM = 0xa0a, destroy_umem_in => destroy_umem_out, zero, destroy_umem;
        }
    };
}
pub(crate) use prm_commands;

/// What the decoder does with `mbox_in.op_mod`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OpMod {
    /// Reserved: anything but 0 is `BAD_PARAM_ERR`.
    Zero,
    /// The command's method reads it.
    Any,
}

/// One row of the table, as data.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CmdSpec {
    /// The `MLX5_CMD_OP_*` name without the prefix.
    pub(crate) name: &'static str,
    /// The opcode.
    pub(crate) opcode: u16,
    /// The inbox layout; its size is the shortest inbox the firmware accepts.
    pub(crate) input: Layout,
    /// The outbox layout; its size is the shortest outbox the firmware accepts.
    pub(crate) output: Layout,
    /// The `op_mod` rule.
    pub(crate) op_mod: OpMod,
}

impl CmdSpec {
    /// `MLX5_ST_SZ_BYTES` of the inbox layout.
    pub(crate) const fn in_bytes(&self) -> usize {
        (self.input.size_bits / 8) as usize
    }

    /// `MLX5_ST_SZ_BYTES` of the outbox layout.
    pub(crate) const fn out_bytes(&self) -> usize {
        (self.output.size_bits / 8) as usize
    }
}

/// A firmware command: its opcode and the layouts of its mailboxes (nova-core's
/// `CommandToGsp::FUNCTION` + `Command`/`Reply` types are the model).
pub(crate) trait PrmCommand {
    /// The row, as data (name, opcode, layouts, `op_mod` rule).
    const SPEC: CmdSpec;
    /// `MLX5_CMD_OP_*`.
    const OPCODE: u16 = Self::SPEC.opcode;
    /// `struct mlx5_ifc_<cmd>_in_bits`.
    type In: PrmLayout;
    /// `struct mlx5_ifc_<cmd>_out_bits`.
    type Out: PrmLayout;
}

/// A QP state transition command (`MLX5_CMD_OP_*2*_QP`): where its inbox keeps `qpn` and, for
/// those that carry them, `opt_param_mask` and `qpc`. The driver fills these members, the
/// simulator reads them, so both go through this one declaration.
pub(crate) trait QpTransition: PrmCommand {
    /// `qpn` of the inbox.
    const QPN: Member<Self::In>;
    /// `opt_param_mask` and `qpc` of the inbox; `None` for 2ERR and 2RST, which carry neither.
    const CTX: Option<TransitionCtx<Self::In>>;
}

/// Where a transition's inbox `L` keeps its optional parameters and its context.
pub(crate) struct TransitionCtx<L> {
    /// `opt_param_mask` (`MLX5_QP_OPTPAR_*`): the optional members the command sets (the
    /// simulator applies only those, `fwsim/qp.rs` `optional_taken()`).
    #[cfg_attr(not(MODULE), allow(dead_code))]
    pub(crate) opt_param_mask: Member<L>,
    /// `qpc`.
    pub(crate) qpc: Member<L>,
}

macro_rules! qp_transitions {
    ($($ty:ident: $in:ident $(, $ctx:ident)?;)*) => {
        $(
            impl QpTransition for $ty {
                const QPN: Member<Self::In> = crate::prm::cmd::$in::qpn;
                const CTX: Option<TransitionCtx<Self::In>> =
                    qp_transitions!(@ctx $in $(, $ctx)?);
            }
        )*
    };
    (@ctx $in:ident, ctx) => {
        Some(TransitionCtx {
            opt_param_mask: crate::prm::cmd::$in::opt_param_mask,
            qpc: crate::prm::cmd::$in::qpc,
        })
    };
    (@ctx $in:ident) => {
        None
    };
}

qp_transitions! {
    Rst2InitQp: rst2init_qp_in, ctx;
    Init2InitQp: init2init_qp_in, ctx;
    Init2RtrQp: init2rtr_qp_in, ctx;
    Rtr2RtsQp: rtr2rts_qp_in, ctx;
    Rts2RtsQp: rts2rts_qp_in, ctx;
    Qp2Err: qp_2err_in;
    Qp2Rst: qp_2rst_in;
}

macro_rules! declare_commands {
    ($($ty:ident: $op:ident = $val:literal, $in:ident => $out:ident, $rule:ident, $method:ident;)*) => {
        $(
            #[doc = concat!("`MLX5_CMD_OP_", stringify!($op), "`: `", stringify!($in), "` => `",
                stringify!($out), "`, executed by the simulator's `Fw::", stringify!($method), "`.")]
            #[derive(Clone, Copy, Debug)]
            pub(crate) enum $ty {}

            impl PrmCommand for $ty {
                const SPEC: CmdSpec = CmdSpec {
                    name: stringify!($op),
                    opcode: $val,
                    input: crate::prm::cmd::$in::LAYOUT,
                    output: crate::prm::cmd::$out::LAYOUT,
                    op_mod: declare_commands!(@rule $rule),
                };
                type In = crate::prm::cmd::$in::Bits;
                type Out = crate::prm::cmd::$out::Bits;
            }
        )*

        /// Every row, in opcode order.
        #[cfg_attr(MODULE, expect(dead_code, reason = "host callers only"))]
        pub(crate) const ALL: &[CmdSpec] = &[$(<$ty as PrmCommand>::SPEC),*];

        /// The row of `opcode`, if the project knows the command.
        pub(crate) fn spec(opcode: u16) -> Option<&'static CmdSpec> {
            match opcode {
                $($val => Some(&<$ty as PrmCommand>::SPEC),)*
                _ => None,
            }
        }
    };
    (@rule zero) => { OpMod::Zero };
    (@rule any) => { OpMod::Any };
}

prm_commands!(declare_commands);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_consistent() {
        let mut prev = 0;
        for c in ALL {
            assert!(c.opcode > prev, "{} out of opcode order", c.name);
            prev = c.opcode;
            assert_eq!(spec(c.opcode).map(|s| s.name), Some(c.name));
            // Every inbox holds the header (`enable_hca_out` is 12 bytes in mlx5_ifc.h: the
            // firmware still writes a 16-byte outbox header, the decoder checks that first).
            assert!(c.in_bytes() >= 16 && c.out_bytes() >= 12, "{}", c.name);
            // The layouts are this command's (`<cmd>_in`/`<cmd>_out`, mlx5_ifc.h's names).
            let stem = c.input.name.trim_end_matches("_in");
            assert_eq!(c.output.name.trim_end_matches("_out"), stem, "{}", c.name);
        }
        assert!(spec(0x108).is_none(), "MANAGE_PAGES is not modeled");
    }
}
