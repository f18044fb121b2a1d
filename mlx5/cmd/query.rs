// SPDX-License-Identifier: GPL-2.0

//! Query commands: capabilities, adapter, NIC and HCA vport contexts, GID and P_Key tables
//! (upstream `mlx5_core_get_caps_mode()`, `mlx5_query_board_id()`/`mlx5_query_vendor_id()`,
//! vport.c `mlx5_query_nic_vport_context()`, `mlx5_query_hca_vport_context()`,
//! `mlx5_query_hca_vport_gid()`, `mlx5_query_hca_vport_pkey()`).

use super::{Command, InBox, OutBox};
use crate::hw::{CapType, CAP_BYTES};
use crate::prm::cmd::{
    modify_hca_vport_context_in, query_adapter_out, query_hca_cap_out, query_hca_vport_context_in,
    query_hca_vport_context_out, query_hca_vport_gid_in, query_hca_vport_gid_out,
    query_hca_vport_pkey_in, query_nic_vport_context_out,
};
use crate::prm::command as pc;
use crate::prm::ctx::{
    hca_vport_context, mac_address_layout, nic_vport_context, pkey, query_adapter_param_block,
};
use crate::prm::layout::{Member, PrmError, PrmLayout};
use kernel::prelude::*;

/// QUERY_HCA_CAP of the current values of one capability type.
pub(crate) struct QueryHcaCap(pub(crate) CapType);

impl Command for QueryHcaCap {
    type Prm = pc::QueryHcaCap;
    /// The 4 KiB capability page.
    type Reply = KVec<u8>;

    fn op_mod(&self) -> u32 {
        self.0.op_mod_cur()
    }

    fn reply(&self, out: OutBox<'_, Self>) -> Result<KVec<u8>> {
        let page = out.bytes(query_hca_cap_out::capability);
        let mut v = KVec::with_capacity(CAP_BYTES, GFP_KERNEL)?;
        v.extend_from_slice(page, GFP_KERNEL)?;
        Ok(v)
    }
}

/// QUERY_ADAPTER.
pub(crate) struct QueryAdapter;

/// What QUERY_ADAPTER tells the RDMA driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AdapterInfo {
    /// `ieee_vendor_id` (`ib_device_attr.vendor_id`, upstream `mlx5_query_vendor_id()`).
    pub(crate) ieee_vendor_id: u32,
    /// `vsd_contd_psid`: the board id (PSID), NUL padded.
    pub(crate) psid: [u8; 16],
}

impl AdapterInfo {
    /// The board id without its NUL padding (sysfs `board_id`).
    pub(crate) fn board_id(&self) -> &[u8] {
        let n = self
            .psid
            .iter()
            .position(|&c| c == 0)
            .unwrap_or(self.psid.len());
        self.psid.get(..n).unwrap_or(&[])
    }
}

impl Command for QueryAdapter {
    type Prm = pc::QueryAdapter;
    type Reply = AdapterInfo;

    fn reply(&self, out: OutBox<'_, Self>) -> Result<AdapterInfo> {
        let b = |f| query_adapter_out::query_adapter_struct.inner(f);
        Ok(AdapterInfo {
            ieee_vendor_id: out.get(b(query_adapter_param_block::ieee_vendor_id)),
            psid: out.array(b(query_adapter_param_block::vsd_contd_psid)),
        })
    }
}

/// QUERY_NIC_VPORT_CONTEXT of the function's own vport.
pub(crate) struct QueryNicVportContext;

/// The NIC vport context members mlx5_ib reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NicVport {
    /// `roce_en`.
    pub(crate) roce_en: bool,
    /// `mtu` (bytes, including the Ethernet header).
    pub(crate) mtu: u32,
    /// `system_image_guid`.
    pub(crate) system_image_guid: u64,
    /// `node_guid`.
    pub(crate) node_guid: u64,
    /// `port_guid`.
    pub(crate) port_guid: u64,
    /// `permanent_address`: the MAC.
    pub(crate) mac: [u8; 6],
    /// `qkey_violation_counter`.
    pub(crate) qkey_violation_counter: u16,
    /// `min_wqe_inline_mode` (`MLX5_INLINE_MODE_*`).
    pub(crate) min_wqe_inline_mode: u8,
}

impl Command for QueryNicVportContext {
    type Prm = pc::QueryNicVportContext;
    type Reply = NicVport;

    fn reply(&self, out: OutBox<'_, Self>) -> Result<NicVport> {
        let v = |f| query_nic_vport_context_out::nic_vport_context.inner(f);
        let m = |f| v(nic_vport_context::permanent_address).inner(f);
        let hi = out.get(m(mac_address_layout::mac_addr_47_32));
        let lo = out.get(m(mac_address_layout::mac_addr_31_0));
        let mut mac = [0u8; 6];
        mac[..2].copy_from_slice(&hi.to_be_bytes()[2..]);
        mac[2..].copy_from_slice(&lo.to_be_bytes());
        Ok(NicVport {
            roce_en: out.get(v(nic_vport_context::roce_en)) != 0,
            mtu: out.get(v(nic_vport_context::mtu)),
            system_image_guid: out.get64(v(nic_vport_context::system_image_guid)),
            node_guid: out.get64(v(nic_vport_context::node_guid)),
            port_guid: out.get64(v(nic_vport_context::port_guid)),
            mac,
            qkey_violation_counter: out.get(v(nic_vport_context::qkey_violation_counter)) as u16,
            min_wqe_inline_mode: out.get(v(nic_vport_context::min_wqe_inline_mode)) as u8,
        })
    }
}

/// QUERY_HCA_VPORT_CONTEXT of the function's own vport on one port.
pub(crate) struct QueryHcaVportContext {
    /// Port number, 1-based.
    pub(crate) port: u8,
}

/// `struct mlx5_hca_vport_context` (driver.h): what upstream's query fills.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct HcaVport {
    /// `has_smi`.
    pub(crate) has_smi: bool,
    /// `grh_required`.
    pub(crate) grh_required: bool,
    /// `port_physical_state` (IB encoding: 5 LinkUp).
    pub(crate) port_physical_state: u8,
    /// `port_state`.
    pub(crate) port_state: u8,
    /// `vport_state` (IB port state: 4 Active).
    pub(crate) vport_state: u8,
    /// `system_image_guid`.
    pub(crate) sys_image_guid: u64,
    /// `node_guid`.
    pub(crate) node_guid: u64,
    /// `port_guid`.
    pub(crate) port_guid: u64,
    /// `cap_mask1`.
    pub(crate) cap_mask1: u32,
    /// `cap_mask1_perm` (the context's `cap_mask1_field_select`: the bits the host may change).
    pub(crate) cap_mask1_perm: u32,
    /// `cap_mask2`.
    pub(crate) cap_mask2: u32,
    /// `lid`.
    pub(crate) lid: u16,
    /// `init_type_reply`.
    pub(crate) init_type_reply: u8,
    /// `lmc`.
    pub(crate) lmc: u8,
    /// `subnet_timeout`.
    pub(crate) subnet_timeout: u8,
    /// `sm_lid`.
    pub(crate) sm_lid: u16,
    /// `sm_sl`.
    pub(crate) sm_sl: u8,
    /// `qkey_violation_counter`.
    pub(crate) qkey_violation_counter: u16,
    /// `pkey_violation_counter`.
    pub(crate) pkey_violation_counter: u16,
}

impl Command for QueryHcaVportContext {
    type Prm = pc::QueryHcaVportContext;
    type Reply = HcaVport;

    fn fill(&self, inbox: &mut InBox<'_, Self>) -> Result<(), PrmError> {
        // upstream: port_num is set only when the device has more than one port
        // (`MLX5_CAP_GEN(dev, num_ports) == 2`); setting it always is equivalent for port 1.
        inbox.set(query_hca_vport_context_in::port_num, u32::from(self.port))
    }

    fn reply(&self, out: OutBox<'_, Self>) -> Result<HcaVport> {
        let v = |f| query_hca_vport_context_out::hca_vport_context.inner(f);
        let g = |f| out.get(v(f));
        // Every value is at most as wide as its target type (the field widths are 1..16 bits).
        Ok(HcaVport {
            has_smi: g(hca_vport_context::has_smi) != 0,
            grh_required: g(hca_vport_context::grh_required) != 0,
            port_physical_state: g(hca_vport_context::port_physical_state) as u8,
            port_state: g(hca_vport_context::port_state) as u8,
            vport_state: g(hca_vport_context::vport_state) as u8,
            sys_image_guid: out.get64(v(hca_vport_context::system_image_guid)),
            node_guid: out.get64(v(hca_vport_context::node_guid)),
            port_guid: out.get64(v(hca_vport_context::port_guid)),
            cap_mask1: g(hca_vport_context::cap_mask1),
            cap_mask1_perm: g(hca_vport_context::cap_mask1_field_select),
            cap_mask2: g(hca_vport_context::cap_mask2),
            lid: g(hca_vport_context::lid) as u16,
            init_type_reply: g(hca_vport_context::init_type_reply) as u8,
            lmc: g(hca_vport_context::lmc) as u8,
            subnet_timeout: g(hca_vport_context::subnet_timeout) as u8,
            sm_lid: g(hca_vport_context::sm_lid) as u16,
            sm_sl: g(hca_vport_context::sm_sl) as u8,
            qkey_violation_counter: g(hca_vport_context::qkey_violation_counter) as u16,
            pkey_violation_counter: g(hca_vport_context::pkey_violation_counter) as u16,
        })
    }
}

/// MODIFY_HCA_VPORT_CONTEXT of the function's own vport on one port, changing capability bits
/// only (upstream `mlx5_core_modify_hca_vport_context()` as `set_port_caps_atomic()` calls it:
/// `field_select` 0, `cap_mask1` and `cap_mask1_field_select`).
pub(crate) struct ModifyHcaVportContext {
    /// Port number, 1-based.
    pub(crate) port: u8,
    /// The new values of the selected bits.
    pub(crate) cap_mask1: u32,
    /// The bits to change (`cap_mask1_field_select`).
    pub(crate) cap_mask1_select: u32,
}

impl Command for ModifyHcaVportContext {
    type Prm = pc::ModifyHcaVportContext;
    type Reply = ();

    fn fill(&self, inbox: &mut InBox<'_, Self>) -> Result<(), PrmError> {
        let v = |f| modify_hca_vport_context_in::hca_vport_context.inner(f);
        inbox.set(modify_hca_vport_context_in::port_num, u32::from(self.port))?;
        inbox.set(v(hca_vport_context::cap_mask1), self.cap_mask1)?;
        inbox.set(
            v(hca_vport_context::cap_mask1_field_select),
            self.cap_mask1_select,
        )
    }

    fn reply(&self, _out: OutBox<'_, Self>) -> Result<()> {
        Ok(())
    }
}

/// The "every entry" index of the GID and P_Key queries.
const ALL_ENTRIES: u32 = 0xffff;

/// Which entries of a GID or P_Key table to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TableIndex {
    /// One entry.
    One(u16),
    /// The whole table, of the given length (index 0xffff).
    All(u16),
}

impl TableIndex {
    fn raw(self) -> u32 {
        match self {
            TableIndex::One(i) => u32::from(i),
            TableIndex::All(_) => ALL_ENTRIES,
        }
    }

    fn count(self) -> usize {
        match self {
            TableIndex::One(_) => 1,
            TableIndex::All(n) => usize::from(n),
        }
    }
}

/// The first `n` entries of `bits` bits each of the table that follows an outbox of layout
/// `L` as its flexible array member (`gid[]`, `pkey[]`), each read by `read` from its member.
fn read_table<L: PrmLayout, T>(
    n: usize,
    name: &'static str,
    bits: u32,
    read: impl Fn(Member<L>) -> T,
) -> Result<KVec<T>> {
    let fixed = L::SIZE_BYTES
        .checked_mul(8)
        .and_then(|b| u32::try_from(b).ok())
        .ok_or(EIO)?;
    let slot0 = Member::<L>::new(name, fixed, bits);
    let mut v = KVec::with_capacity(n, GFP_KERNEL)?;
    for i in 0..n {
        v.push(
            read(slot0.nth(u32::try_from(i).map_err(|_| EIO)?)),
            GFP_KERNEL,
        )?;
    }
    Ok(v)
}

/// QUERY_HCA_VPORT_GID.
pub(crate) struct QueryHcaVportGid {
    /// Port number, 1-based.
    pub(crate) port: u8,
    /// The entries.
    pub(crate) index: TableIndex,
}

impl Command for QueryHcaVportGid {
    type Prm = pc::QueryHcaVportGid;
    /// The GIDs, in table order.
    type Reply = KVec<[u8; 16]>;

    fn out_len(&self) -> usize {
        Self::OUT_SIZE.saturating_add(self.index.count().saturating_mul(16))
    }

    fn fill(&self, inbox: &mut InBox<'_, Self>) -> Result<(), PrmError> {
        inbox.set(query_hca_vport_gid_in::port_num, u32::from(self.port))?;
        inbox.set(query_hca_vport_gid_in::gid_index, self.index.raw())
    }

    fn reply(&self, out: OutBox<'_, Self>) -> Result<KVec<[u8; 16]>> {
        // `gids_num` says how many entries firmware wrote; never read past what was asked.
        let n = (out.get(query_hca_vport_gid_out::gids_num) as usize).min(self.index.count());
        read_table(n, "gid", 128, |f| out.array(f))
    }
}

/// QUERY_HCA_VPORT_PKEY.
pub(crate) struct QueryHcaVportPkey {
    /// Port number, 1-based.
    pub(crate) port: u8,
    /// The entries.
    pub(crate) index: TableIndex,
}

impl Command for QueryHcaVportPkey {
    type Prm = pc::QueryHcaVportPkey;
    /// The P_Keys, in table order.
    type Reply = KVec<u16>;

    fn out_len(&self) -> usize {
        Self::OUT_SIZE.saturating_add(self.index.count().saturating_mul(4))
    }

    fn fill(&self, inbox: &mut InBox<'_, Self>) -> Result<(), PrmError> {
        inbox.set(query_hca_vport_pkey_in::port_num, u32::from(self.port))?;
        inbox.set(query_hca_vport_pkey_in::pkey_index, self.index.raw())
    }

    fn reply(&self, out: OutBox<'_, Self>) -> Result<KVec<u16>> {
        read_table(self.index.count(), "pkey", 32, |f| {
            out.get(f.inner(pkey::pkey)) as u16
        })
    }
}
