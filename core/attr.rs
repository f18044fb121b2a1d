// SPDX-License-Identifier: GPL-2.0

//! Device and port attributes as drivers report them (upstream
//! `struct ib_device_attr`, `struct ib_port_attr`,
//! `struct ib_port_immutable`, `union ib_gid` in `include/rdma/ib_verbs.h`).

/// The device capability flags of [`DeviceAttr::device_cap_flags`] (upstream
/// `enum ib_device_cap_flags`, include/rdma/ib_verbs.h, whose values are the uverbs ABI's
/// `IB_UVERBS_DEVICE_*`, include/uapi/rdma/ib_user_verbs.h). Drivers set them; uverbs reports
/// them in `QUERY_DEVICE` (the low 32 bits) and `EX_QUERY_DEVICE`, nldev in `CAP_FLAGS`.
pub mod device_cap {
    /// `IB_DEVICE_RESIZE_MAX_WR`.
    pub const RESIZE_MAX_WR: u64 = 1 << 0;
    /// `IB_DEVICE_BAD_PKEY_CNTR`.
    pub const BAD_PKEY_CNTR: u64 = 1 << 1;
    /// `IB_DEVICE_BAD_QKEY_CNTR`.
    pub const BAD_QKEY_CNTR: u64 = 1 << 2;
    /// `IB_DEVICE_RAW_MULTI`.
    pub const RAW_MULTI: u64 = 1 << 3;
    /// `IB_DEVICE_AUTO_PATH_MIG`.
    pub const AUTO_PATH_MIG: u64 = 1 << 4;
    /// `IB_DEVICE_CHANGE_PHY_PORT`.
    pub const CHANGE_PHY_PORT: u64 = 1 << 5;
    /// `IB_DEVICE_UD_AV_PORT_ENFORCE`.
    pub const UD_AV_PORT_ENFORCE: u64 = 1 << 6;
    /// `IB_DEVICE_CURR_QP_STATE_MOD`.
    pub const CURR_QP_STATE_MOD: u64 = 1 << 7;
    /// `IB_DEVICE_SHUTDOWN_PORT`.
    pub const SHUTDOWN_PORT: u64 = 1 << 8;
    /// `IB_DEVICE_PORT_ACTIVE_EVENT`.
    pub const PORT_ACTIVE_EVENT: u64 = 1 << 10;
    /// `IB_DEVICE_SYS_IMAGE_GUID`.
    pub const SYS_IMAGE_GUID: u64 = 1 << 11;
    /// `IB_DEVICE_RC_RNR_NAK_GEN`.
    pub const RC_RNR_NAK_GEN: u64 = 1 << 12;
    /// `IB_DEVICE_SRQ_RESIZE`.
    pub const SRQ_RESIZE: u64 = 1 << 13;
    /// `IB_DEVICE_N_NOTIFY_CQ`.
    pub const N_NOTIFY_CQ: u64 = 1 << 14;
    /// `IB_DEVICE_MEM_WINDOW`.
    pub const MEM_WINDOW: u64 = 1 << 17;
    /// `IB_DEVICE_UD_IP_CSUM`.
    pub const UD_IP_CSUM: u64 = 1 << 18;
    /// `IB_DEVICE_XRC`.
    pub const XRC: u64 = 1 << 20;
    /// `IB_DEVICE_MEM_MGT_EXTENSIONS`.
    pub const MEM_MGT_EXTENSIONS: u64 = 1 << 21;
    /// `IB_DEVICE_MEM_WINDOW_TYPE_2A`.
    pub const MEM_WINDOW_TYPE_2A: u64 = 1 << 23;
    /// `IB_DEVICE_MEM_WINDOW_TYPE_2B`.
    pub const MEM_WINDOW_TYPE_2B: u64 = 1 << 24;
    /// `IB_DEVICE_RC_IP_CSUM`.
    pub const RC_IP_CSUM: u64 = 1 << 25;
    /// `IB_DEVICE_RAW_IP_CSUM`.
    pub const RAW_IP_CSUM: u64 = 1 << 26;
    /// `IB_DEVICE_MANAGED_FLOW_STEERING`.
    pub const MANAGED_FLOW_STEERING: u64 = 1 << 29;
    /// `IB_DEVICE_RAW_SCATTER_FCS`.
    pub const RAW_SCATTER_FCS: u64 = 1 << 34;
    /// `IB_DEVICE_PCI_WRITE_END_PADDING`.
    pub const PCI_WRITE_END_PADDING: u64 = 1 << 36;
    /// `IB_DEVICE_FLUSH_GLOBAL`.
    pub const FLUSH_GLOBAL: u64 = 1 << 38;
    /// `IB_DEVICE_FLUSH_PERSISTENT`.
    pub const FLUSH_PERSISTENT: u64 = 1 << 39;
    /// `IB_DEVICE_ATOMIC_WRITE`.
    pub const ATOMIC_WRITE: u64 = 1 << 40;
}

/// Device attributes (upstream `struct ib_device_attr`, the fields used so far).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceAttr {
    /// Firmware version as the driver encodes it.
    pub fw_ver: u64,
    /// Node GUID (network byte order as a number).
    pub node_guid: u64,
    /// System image GUID.
    pub sys_image_guid: u64,
    /// IEEE vendor id (0x02c9 for Mellanox/NVIDIA).
    pub vendor_id: u32,
    /// Vendor part id (the PCI device id for mlx5).
    pub vendor_part_id: u32,
    /// Hardware revision.
    pub hw_ver: u32,
    /// Maximum number of QPs.
    pub max_qp: u32,
    /// Maximum work requests per QP.
    pub max_qp_wr: u32,
    /// Maximum number of CQs.
    pub max_cq: u32,
    /// Maximum entries per CQ.
    pub max_cqe: u32,
    /// Maximum number of MRs.
    pub max_mr: u32,
    /// Maximum number of PDs.
    pub max_pd: u32,
    /// [`device_cap`] flags (nldev `CAP_FLAGS`).
    pub device_cap_flags: u64,
    /// Largest MR in bytes; 0: not reported (uverbs answers `u64::MAX`).
    pub max_mr_size: u64,
    /// Supported page sizes; 0: not reported (uverbs answers 4 KiB and up).
    pub page_size_cap: u64,
    /// Scatter/gather entries of a send WR.
    pub max_send_sge: u32,
    /// Scatter/gather entries of a receive WR.
    pub max_recv_sge: u32,
    /// Scatter/gather entries of an RDMA read.
    pub max_sge_rd: u32,
    /// Outstanding RDMA reads/atomics per QP as target.
    pub max_qp_rd_atom: u32,
    /// Outstanding RDMA reads/atomics per QP as initiator.
    pub max_qp_init_rd_atom: u32,
    /// Outstanding RDMA reads/atomics as target, whole device.
    pub max_res_rd_atom: u32,
    /// Atomic operation support (upstream `enum ib_atomic_cap`: 0 `IB_ATOMIC_NONE`, 1
    /// `IB_ATOMIC_HCA`, 2 `IB_ATOMIC_GLOB`).
    pub atomic_cap: u32,
    /// Maximum number of SRQs.
    pub max_srq: u32,
    /// Maximum work requests per SRQ.
    pub max_srq_wr: u32,
    /// Scatter/gather entries per SRQ WR.
    pub max_srq_sge: u32,
    /// Maximum number of memory windows.
    pub max_mw: u32,
    /// Maximum multicast groups.
    pub max_mcast_grp: u32,
    /// Maximum QPs per multicast group.
    pub max_mcast_qp_attach: u32,
    /// Maximum QPs attached to multicast groups.
    pub max_total_mcast_qp_attach: u32,
    /// Maximum address handles.
    pub max_ah: u32,
    /// Local CA ack delay.
    pub local_ca_ack_delay: u8,
    /// Mask of the completion timestamp's valid bits (`timestamp_mask`).
    pub timestamp_mask: u64,
    /// The device clock in kHz (`hca_core_clock`; 0: no clock).
    pub hca_core_clock: u64,
    /// Largest CQ moderation count (`cq_caps.max_cq_moderation_count`).
    pub max_cq_moderation_count: u16,
    /// Largest CQ moderation period in microseconds (`cq_caps.max_cq_moderation_period`).
    pub max_cq_moderation_period: u16,
    /// Bytes of device memory (`max_dm_size`; 0: none).
    pub max_dm_size: u64,
}

upstream_enum! {
    /// Logical port state (upstream `enum ib_port_state`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    #[repr(u8)]
    pub enum PortState: u8 {
        #[default]
        Nop = 0 => IB_PORT_NOP,
        Down = 1 => IB_PORT_DOWN,
        Init = 2 => IB_PORT_INIT,
        Armed = 3 => IB_PORT_ARMED,
        Active = 4 => IB_PORT_ACTIVE,
        ActiveDefer = 5 => IB_PORT_ACTIVE_DEFER,
    }
}

/// Port attributes (upstream `struct ib_port_attr`, the fields used so far).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortAttr {
    /// Subnet prefix (the upper 64 bits of the port's GIDs).
    pub subnet_prefix: u64,
    /// Logical state.
    pub state: PortState,
    /// Physical state (`5` is LinkUp).
    pub phys_state: u8,
    /// Base LID.
    pub lid: u32,
    /// LID mask count.
    pub lmc: u8,
    /// Subnet manager LID.
    pub sm_lid: u32,
    /// Subnet manager service level.
    pub sm_sl: u8,
    /// Port capability mask.
    pub port_cap_flags: u32,
    /// `enum ib_port_width` (`IB_WIDTH_4X` = 2); sysfs `rate`.
    pub active_width: u8,
    /// `enum ib_port_speed` (`IB_SPEED_EDR` = 32); sysfs `rate`.
    pub active_speed: u16,
    /// `enum ib_mtu` (`IB_MTU_4096` = 5); 0: not reported (uverbs answers 4096).
    pub max_mtu: u8,
    /// `enum ib_mtu`; 0: not reported (uverbs answers 4096).
    pub active_mtu: u8,
    /// Largest message in bytes; 0: not reported (uverbs answers 2^31).
    pub max_msg_sz: u32,
    /// `max_vl_num` (`__IB_MAX_VL_*`); 0: not reported (uverbs answers 1).
    pub max_vl_num: u8,
    /// `subnet_timeout` (the SM's, 4.096 us * 2^n).
    pub subnet_timeout: u8,
}

/// A change of a port's capability mask (upstream `struct ib_port_modify`): the bits to set,
/// then the bits to clear.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortModify {
    /// `set_port_cap_mask`.
    pub set_port_cap_mask: u32,
    /// `clr_port_cap_mask`.
    pub clr_port_cap_mask: u32,
}

/// `IB_PORT_SM`: the port runs a subnet manager (`IsSM`, what opening `issmN` sets).
pub const PORT_SM: u32 = 1 << 1;
/// `IB_PORT_CM_SUP`.
pub const PORT_CM_SUP: u32 = 1 << 16;

/// `RDMA_CORE_CAP_IB_MAD`: the port has a MAD layer (umad creates `umadN` for it).
pub const CORE_CAP_IB_MAD: u32 = 0x1;
/// `RDMA_CORE_CAP_IB_SMI`: the port has QP0 (umad creates `issmN` for it).
pub const CORE_CAP_IB_SMI: u32 = 0x2;
/// `RDMA_CORE_CAP_IB_CM`: the port has QP1 for the CM and other GSI classes.
pub const CORE_CAP_IB_CM: u32 = 0x4;

/// Link layer of a port (upstream `enum rdma_link_layer`, `IB_LINK_LAYER_*`). Drivers report
/// it in [`PortImmutable`]; the mlx5 driver derives it from the function's `port_type`
/// capability on either backend. `IB_LINK_LAYER_UNSPECIFIED` is not a value a port here has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LinkLayer {
    /// `IB_LINK_LAYER_INFINIBAND`.
    #[default]
    Infiniband,
    /// `IB_LINK_LAYER_ETHERNET` (RoCE).
    Ethernet,
}

impl LinkLayer {
    /// The `enum rdma_link_layer` value, as `QUERY_PORT` reports it.
    pub const fn value(self) -> u8 {
        match self {
            LinkLayer::Infiniband => 1,
            LinkLayer::Ethernet => 2,
        }
    }
}

/// Data of a port that does not change while the device is registered
/// (upstream `struct ib_port_immutable`, filled by `get_port_immutable`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortImmutable {
    /// Number of P_Key table entries.
    pub pkey_tbl_len: u32,
    /// Number of GID table entries.
    pub gid_tbl_len: u32,
    /// `RDMA_CORE_CAP_*` flags.
    pub core_cap_flags: u32,
    /// Largest MAD the port handles.
    pub max_mad_size: u32,
    /// Link layer.
    pub link_layer: LinkLayer,
}

/// The type of a GID table entry (upstream `enum ib_gid_type`, whose values
/// are the uverbs ones, `IB_UVERBS_GID_TYPE_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GidType {
    /// `IB_GID_TYPE_IB`: an InfiniBand GID.
    #[default]
    Ib = 0,
    /// `IB_GID_TYPE_ROCE`: RoCE v1.
    RoceV1 = 1,
    /// `IB_GID_TYPE_ROCE_UDP_ENCAP`: RoCE v2.
    RoceV2 = 2,
}

impl GidType {
    /// The sysfs `gid_attrs/types/N` string (upstream `gid_type_str[]`).
    pub fn as_str(self) -> &'static str {
        match self {
            GidType::Ib | GidType::RoceV1 => "IB/RoCE v1",
            GidType::RoceV2 => "RoCE v2",
        }
    }
}

/// `RDMA_CORE_CAP_PROT_ROCE`: the port speaks RoCE v1 (`rdma_protocol_roce_eth_encap()`).
pub const RDMA_CORE_CAP_PROT_ROCE: u32 = 0x0020_0000;
/// `RDMA_CORE_CAP_PROT_ROCE_UDP_ENCAP`: the port speaks RoCE v2
/// (`rdma_protocol_roce_udp_encap()`).
pub const RDMA_CORE_CAP_PROT_ROCE_UDP_ENCAP: u32 = 0x0080_0000;

/// What a driver's `add_gid`/`del_gid` get of a RoCE GID table entry (upstream
/// `struct ib_gid_attr` with the layer-2 fields `rdma_read_gid_l2_fields()` reads from its
/// netdev).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GidAttr {
    /// The GID.
    pub gid: Gid,
    /// Its type (RoCE v1 or v2).
    pub gid_type: GidType,
    /// The table index.
    pub index: u32,
    /// The port (1-based).
    pub port: u32,
    /// The netdev's ifindex.
    pub ndev_ifindex: u32,
    /// The netdev's MAC.
    pub mac: [u8; 6],
    /// The VLAN id when the netdev is a VLAN device (upstream 0xffff: none).
    pub vlan_id: Option<u16>,
}

/// A GID (upstream `union ib_gid`): 16 bytes, network byte order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gid(pub [u8; 16]);

impl Gid {
    /// The all-zero GID, which marks an empty table entry.
    pub const ZERO: Gid = Gid([0; 16]);

    /// A GID from a subnet prefix and an interface id (both host numbers).
    pub fn new(subnet_prefix: u64, interface_id: u64) -> Gid {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&subnet_prefix.to_be_bytes());
        b[8..].copy_from_slice(&interface_id.to_be_bytes());
        Gid(b)
    }

    /// Whether this is the zero GID (an empty entry).
    pub fn is_zero(&self) -> bool {
        self.0 == [0; 16]
    }
}
