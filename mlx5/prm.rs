// SPDX-License-Identifier: GPL-2.0

//! The PRM (Programmer's Reference Manual) layer: firmware command layouts as data.
//!
//! Pure `core` code with no kernel API, shared by the mlx5 driver (which builds commands) and the
//! firmware simulator (which decodes them), and compiled on the host for unit tests and for
//! `tools/prm-check`, which diffs every declared offset and width against the kernel's own
//! `include/linux/mlx5/mlx5_ifc.h`.

#[macro_use]
#[path = "prm/layout.rs"]
pub(crate) mod layout;

// The tables mirror mlx5_ifc.h member for member so they can be diffed against it; not every
// member has a reader in every build (the driver and the simulator read different halves).
#[allow(dead_code)]
#[path = "prm/cmd.rs"]
pub(crate) mod cmd;
#[allow(dead_code)]
#[path = "prm/consts.rs"]
pub(crate) mod consts;
#[allow(dead_code)]
#[path = "prm/ctx.rs"]
pub(crate) mod ctx;
#[allow(dead_code)]
#[path = "prm/opcode.rs"]
pub(crate) mod opcode;
#[allow(dead_code)]
#[path = "prm/status.rs"]
pub(crate) mod status;

use layout::Layout;

/// Every declared layout, in mlx5_ifc.h names, for `tools/prm-check` and the table tests.
#[allow(dead_code)]
pub(crate) const ALL_LAYOUTS: &[Layout] = &[
    cmd::mbox_in::LAYOUT,
    cmd::mbox_out::LAYOUT,
    cmd::query_hca_cap_in::LAYOUT,
    cmd::query_hca_cap_out::LAYOUT,
    cmd::query_adapter_in::LAYOUT,
    cmd::query_adapter_out::LAYOUT,
    cmd::query_special_contexts_in::LAYOUT,
    cmd::query_special_contexts_out::LAYOUT,
    cmd::query_nic_vport_context_in::LAYOUT,
    cmd::query_nic_vport_context_out::LAYOUT,
    cmd::query_hca_vport_context_in::LAYOUT,
    cmd::query_hca_vport_context_out::LAYOUT,
    cmd::query_hca_vport_gid_in::LAYOUT,
    cmd::query_hca_vport_gid_out::LAYOUT,
    cmd::query_hca_vport_pkey_in::LAYOUT,
    cmd::query_hca_vport_pkey_out::LAYOUT,
    cmd::access_register_in::LAYOUT,
    cmd::access_register_out::LAYOUT,
    cmd::alloc_pd_in::LAYOUT,
    cmd::alloc_pd_out::LAYOUT,
    cmd::dealloc_pd_in::LAYOUT,
    cmd::dealloc_pd_out::LAYOUT,
    cmd::alloc_uar_in::LAYOUT,
    cmd::alloc_uar_out::LAYOUT,
    cmd::dealloc_uar_in::LAYOUT,
    cmd::dealloc_uar_out::LAYOUT,
    cmd::alloc_transport_domain_in::LAYOUT,
    cmd::alloc_transport_domain_out::LAYOUT,
    cmd::dealloc_transport_domain_in::LAYOUT,
    cmd::dealloc_transport_domain_out::LAYOUT,
    cmd::create_cq_in::LAYOUT,
    cmd::create_cq_out::LAYOUT,
    cmd::destroy_cq_in::LAYOUT,
    cmd::destroy_cq_out::LAYOUT,
    cmd::query_cq_in::LAYOUT,
    cmd::query_cq_out::LAYOUT,
    cmd::modify_cq_in::LAYOUT,
    cmd::modify_cq_out::LAYOUT,
    cmd::create_qp_in::LAYOUT,
    cmd::create_qp_out::LAYOUT,
    cmd::destroy_qp_in::LAYOUT,
    cmd::destroy_qp_out::LAYOUT,
    cmd::query_qp_in::LAYOUT,
    cmd::query_qp_out::LAYOUT,
    cmd::rst2init_qp_in::LAYOUT,
    cmd::rst2init_qp_out::LAYOUT,
    cmd::init2init_qp_in::LAYOUT,
    cmd::init2init_qp_out::LAYOUT,
    cmd::init2rtr_qp_in::LAYOUT,
    cmd::init2rtr_qp_out::LAYOUT,
    cmd::rtr2rts_qp_in::LAYOUT,
    cmd::rtr2rts_qp_out::LAYOUT,
    cmd::rts2rts_qp_in::LAYOUT,
    cmd::rts2rts_qp_out::LAYOUT,
    cmd::qp_2err_in::LAYOUT,
    cmd::qp_2err_out::LAYOUT,
    cmd::qp_2rst_in::LAYOUT,
    cmd::qp_2rst_out::LAYOUT,
    cmd::create_mkey_in::LAYOUT,
    cmd::create_mkey_out::LAYOUT,
    cmd::destroy_mkey_in::LAYOUT,
    cmd::destroy_mkey_out::LAYOUT,
    cmd::query_mkey_in::LAYOUT,
    cmd::query_mkey_out::LAYOUT,
    cmd::set_roce_address_in::LAYOUT,
    cmd::set_roce_address_out::LAYOUT,
    cmd::create_uctx_in::LAYOUT,
    cmd::create_uctx_out::LAYOUT,
    cmd::destroy_uctx_in::LAYOUT,
    cmd::destroy_uctx_out::LAYOUT,
    ctx::cmd_hca_cap::LAYOUT,
    ctx::roce_cap::LAYOUT,
    ctx::atomic_caps::LAYOUT,
    ctx::query_adapter_param_block::LAYOUT,
    ctx::nic_vport_context::LAYOUT,
    ctx::hca_vport_context::LAYOUT,
    ctx::ptys_reg::LAYOUT,
    ctx::pmtu_reg::LAYOUT,
    ctx::pvlc_reg::LAYOUT,
    ctx::paos_reg::LAYOUT,
    ctx::cqc::LAYOUT,
    ctx::qpc::LAYOUT,
    ctx::ads::LAYOUT,
    ctx::mkc::LAYOUT,
    ctx::roce_addr_layout::LAYOUT,
    ctx::uctx::LAYOUT,
    ctx::mac_address_layout::LAYOUT,
    ctx::pkey::LAYOUT,
    cmd::enable_hca_in::LAYOUT,
    cmd::enable_hca_out::LAYOUT,
    cmd::disable_hca_in::LAYOUT,
    cmd::disable_hca_out::LAYOUT,
    cmd::query_issi_in::LAYOUT,
    cmd::query_issi_out::LAYOUT,
    cmd::set_issi_in::LAYOUT,
    cmd::set_issi_out::LAYOUT,
    cmd::query_pages_in::LAYOUT,
    cmd::query_pages_out::LAYOUT,
    cmd::set_hca_cap_out::LAYOUT,
    cmd::init_hca_in::LAYOUT,
    cmd::init_hca_out::LAYOUT,
    cmd::teardown_hca_in::LAYOUT,
    cmd::teardown_hca_out::LAYOUT,
    cmd::create_eq_in::LAYOUT,
    cmd::create_eq_out::LAYOUT,
    cmd::destroy_eq_in::LAYOUT,
    cmd::destroy_eq_out::LAYOUT,
    cmd::set_driver_version_in::LAYOUT,
    cmd::set_driver_version_out::LAYOUT,
    cmd::set_hca_cap_in::LAYOUT,
    ctx::eqc::LAYOUT,
    ctx::wq::LAYOUT,
    ctx::rmpc::LAYOUT,
    ctx::xrc_srqc::LAYOUT,
    cmd::alloc_xrcd_in::LAYOUT,
    cmd::alloc_xrcd_out::LAYOUT,
    cmd::dealloc_xrcd_in::LAYOUT,
    cmd::dealloc_xrcd_out::LAYOUT,
    cmd::create_xrc_srq_in::LAYOUT,
    cmd::create_xrc_srq_out::LAYOUT,
    cmd::destroy_xrc_srq_in::LAYOUT,
    cmd::destroy_xrc_srq_out::LAYOUT,
    ctx::rmp_bitmask::LAYOUT,
    cmd::create_rmp_in::LAYOUT,
    cmd::create_rmp_out::LAYOUT,
    cmd::modify_rmp_in::LAYOUT,
    cmd::modify_rmp_out::LAYOUT,
    cmd::query_rmp_in::LAYOUT,
    cmd::query_rmp_out::LAYOUT,
    cmd::destroy_rmp_in::LAYOUT,
    cmd::destroy_rmp_out::LAYOUT,
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Catches typos the C check would also catch, but without needing a kernel tree: fields
    /// inside their layout, no two members overlapping, and the dword rule every sub-dword
    /// member of mlx5_ifc.h follows.
    #[test]
    fn table_is_self_consistent() {
        for l in ALL_LAYOUTS {
            assert_eq!(l.size_bits % 32, 0, "{}", l.name);
            let mut prev_end = 0;
            for f in l.fields {
                assert!(f.bit_width > 0, "{}.{}", l.name, f.name);
                assert!(f.bit_off >= prev_end, "{}.{} overlaps", l.name, f.name);
                prev_end = f.bit_off + f.bit_width;
                assert!(prev_end <= l.size_bits, "{}.{} outside", l.name, f.name);
                if f.bit_width < 32 {
                    assert!(f.bit_off % 32 + f.bit_width <= 32, "{}.{}", l.name, f.name);
                }
            }
        }
    }
}
