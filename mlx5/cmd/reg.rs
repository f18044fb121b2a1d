// SPDX-License-Identifier: GPL-2.0

//! ACCESS_REG and the port registers mlx5_ib reads (upstream `mlx5_core_access_reg()`,
//! port.c `mlx5_query_port_ptys()`, `mlx5_query_port_max_mtu()`/`oper_mtu()`,
//! `mlx5_query_port_vl_hw_cap()`, `mlx5_query_port_admin_status()`/`set_port_admin_status()`).

use super::{Command, InBox, OutBox};
use crate::prm::cmd::access_register_in;
use crate::prm::command as pc;
use crate::prm::consts::{
    ACCESS_REG_READ, ACCESS_REG_WRITE, PTYS_EN, PTYS_IB, REG_NODE_DESC, REG_PAOS, REG_PMTU,
    REG_PTYS, REG_PVLC,
};
use crate::prm::ctx::{paos_reg, pmtu_reg, ptys_reg, pvlc_reg};
use crate::prm::layout::{Buf, BufMut, Member, PrmError, PrmLayout};
use kernel::prelude::*;

/// A register behind ACCESS_REG: its `register_data[]` is typed by the register's layout.
pub(crate) trait Register {
    /// `MLX5_REG_*`.
    const ID: u32;
    /// `struct mlx5_ifc_<reg>_bits`.
    type Layout: PrmLayout;
    /// `MLX5_ST_SZ_BYTES(<reg>)`.
    const SIZE: usize = <Self::Layout as PrmLayout>::SIZE_BYTES;
    /// The register's decoded value.
    type Value;
    /// Fills the register data of the request (`local_port`, selectors, values to write).
    fn fill(&self, r: &mut BufMut<'_, Self::Layout>) -> Result<(), PrmError>;
    /// Decodes the register data of the reply.
    fn value(&self, r: Buf<'_, Self::Layout>) -> Result<Self::Value>;
}

/// ACCESS_REG: read or write one register.
pub(crate) struct AccessReg<R: Register> {
    /// The register and its selectors.
    pub(crate) reg: R,
    /// A write (`op_mod` 0) instead of a read.
    pub(crate) write: bool,
}

impl<R: Register> AccessReg<R> {
    /// Reads `reg`.
    pub(crate) fn read(reg: R) -> Self {
        Self { reg, write: false }
    }

    /// Writes `reg`.
    pub(crate) fn write(reg: R) -> Self {
        Self { reg, write: true }
    }
}

impl<R: Register> Command for AccessReg<R> {
    type Prm = pc::AccessReg;
    type Reply = R::Value;

    fn op_mod(&self) -> u32 {
        if self.write {
            ACCESS_REG_WRITE
        } else {
            ACCESS_REG_READ
        }
    }

    fn in_len(&self) -> usize {
        Self::IN_SIZE + R::SIZE
    }

    fn out_len(&self) -> usize {
        Self::OUT_SIZE + R::SIZE
    }

    fn fill(&self, inbox: &mut InBox<'_, Self>) -> Result<(), PrmError> {
        inbox.set(access_register_in::register_id, R::ID)?;
        // `register_data[]` starts right after the 16-byte header of both mailboxes.
        self.reg.fill(&mut BufMut::new(inbox.tail_mut())?)
    }

    fn reply(&self, out: OutBox<'_, Self>) -> Result<R::Value> {
        self.reg.value(Buf::new(out.tail()).map_err(|_| EIO)?)
    }
}

/// Which protocol half of PTYS to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PtysProto {
    /// `MLX5_PTYS_IB`.
    Ib,
    /// `MLX5_PTYS_EN`.
    Eth,
}

/// PTYS: port type and speed.
pub(crate) struct Ptys {
    /// Local port, 1-based.
    pub(crate) port: u8,
    /// The protocol half.
    pub(crate) proto: PtysProto,
}

/// The PTYS members mlx5_ib reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PtysValue {
    /// `ib_link_width_oper` (`MLX5_PTYS_WIDTH_*` bits).
    pub(crate) ib_link_width_oper: u16,
    /// `ib_proto_oper` (one `MLX5_IB_*` speed bit, the `ib_port_speed` value).
    pub(crate) ib_proto_oper: u16,
    /// `eth_proto_capability`.
    pub(crate) eth_proto_capability: u32,
    /// `ext_eth_proto_capability`.
    pub(crate) ext_eth_proto_capability: u32,
    /// `eth_proto_oper`.
    pub(crate) eth_proto_oper: u32,
    /// `ext_eth_proto_oper`.
    pub(crate) ext_eth_proto_oper: u32,
}

impl Register for Ptys {
    const ID: u32 = REG_PTYS;
    type Layout = ptys_reg::Bits;
    type Value = PtysValue;

    fn fill(&self, r: &mut BufMut<'_, Self::Layout>) -> Result<(), PrmError> {
        r.set(ptys_reg::local_port, u32::from(self.port))?;
        r.set(
            ptys_reg::proto_mask,
            match self.proto {
                PtysProto::Ib => PTYS_IB,
                PtysProto::Eth => PTYS_EN,
            },
        )
    }

    fn value(&self, r: Buf<'_, Self::Layout>) -> Result<PtysValue> {
        Ok(PtysValue {
            ib_link_width_oper: r.get(ptys_reg::ib_link_width_oper) as u16,
            ib_proto_oper: r.get(ptys_reg::ib_proto_oper) as u16,
            eth_proto_capability: r.get(ptys_reg::eth_proto_capability),
            ext_eth_proto_capability: r.get(ptys_reg::ext_eth_proto_capability),
            eth_proto_oper: r.get(ptys_reg::eth_proto_oper),
            ext_eth_proto_oper: r.get(ptys_reg::ext_eth_proto_oper),
        })
    }
}

/// PMTU: port MTUs (read; a write sets the admin MTU, upstream `mlx5_set_port_mtu()`).
pub(crate) struct Pmtu {
    /// Local port, 1-based.
    pub(crate) port: u8,
    /// For a write: the new admin (hardware) MTU in bytes. Ignored by reads.
    pub(crate) admin_mtu: Option<u16>,
}

/// PMTU values, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PmtuValue {
    /// `max_mtu`.
    pub(crate) max_mtu: u16,
    /// `admin_mtu`.
    pub(crate) admin_mtu: u16,
    /// `oper_mtu`.
    pub(crate) oper_mtu: u16,
}

impl Register for Pmtu {
    const ID: u32 = REG_PMTU;
    type Layout = pmtu_reg::Bits;
    type Value = PmtuValue;

    fn fill(&self, r: &mut BufMut<'_, Self::Layout>) -> Result<(), PrmError> {
        r.set(pmtu_reg::local_port, u32::from(self.port))?;
        if let Some(mtu) = self.admin_mtu {
            r.set(pmtu_reg::admin_mtu, u32::from(mtu))?;
        }
        Ok(())
    }

    fn value(&self, r: Buf<'_, Self::Layout>) -> Result<PmtuValue> {
        Ok(PmtuValue {
            max_mtu: r.get(pmtu_reg::max_mtu) as u16,
            admin_mtu: r.get(pmtu_reg::admin_mtu) as u16,
            oper_mtu: r.get(pmtu_reg::oper_mtu) as u16,
        })
    }
}

/// PVLC: virtual lanes (read).
pub(crate) struct Pvlc {
    /// Local port, 1-based.
    pub(crate) port: u8,
}

impl Register for Pvlc {
    const ID: u32 = REG_PVLC;
    type Layout = pvlc_reg::Bits;
    /// `vl_hw_cap` (`MLX5_VL_HW_*` encoding).
    type Value = u8;

    fn fill(&self, r: &mut BufMut<'_, Self::Layout>) -> Result<(), PrmError> {
        r.set(pvlc_reg::local_port, u32::from(self.port))
    }

    fn value(&self, r: Buf<'_, Self::Layout>) -> Result<u8> {
        Ok(r.get(pvlc_reg::vl_hw_cap) as u8)
    }
}

/// PAOS: port administrative and operational status.
pub(crate) struct Paos {
    /// Local port, 1-based.
    pub(crate) port: u8,
    /// For a write: the new admin status (`MLX5_PORT_UP` 1, `MLX5_PORT_DOWN` 2), with the
    /// admin-status-enable bit set. Ignored by reads.
    pub(crate) admin_status: Option<PortStatus>,
}

super::prm_enum! {
    /// `enum mlx5_port_status` (port.h).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) enum PortStatus {
        /// `MLX5_PORT_UP`.
        Up = 1,
        /// `MLX5_PORT_DOWN`.
        Down = 2,
    }
}

/// PAOS values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PaosValue {
    /// `admin_status`.
    pub(crate) admin: PortStatus,
    /// `oper_status` (1 up, 2 down, 3 up once; raw).
    pub(crate) oper: u8,
}

impl Register for Paos {
    const ID: u32 = REG_PAOS;
    type Layout = paos_reg::Bits;
    type Value = PaosValue;

    fn fill(&self, r: &mut BufMut<'_, Self::Layout>) -> Result<(), PrmError> {
        r.set(paos_reg::local_port, u32::from(self.port))?;
        if let Some(s) = self.admin_status {
            r.set(paos_reg::admin_status, s as u32)?;
            r.set(paos_reg::ase, 1)?;
        }
        Ok(())
    }

    fn value(&self, r: Buf<'_, Self::Layout>) -> Result<PaosValue> {
        Ok(PaosValue {
            admin: PortStatus::try_from(r.get(paos_reg::admin_status))?,
            oper: r.get(paos_reg::oper_status) as u8,
        })
    }
}

/// NODE_DESC: the node description (upstream `mlx5_query_node_desc()` on a function that does
/// not use MAD_IFC: `struct mlx5_reg_node_desc`, 64 bytes of text, NUL padded).
pub(crate) struct NodeDesc;

/// `IB_DEVICE_NODE_DESC_MAX`.
pub(crate) const NODE_DESC_BYTES: usize = 64;

/// `struct mlx5_reg_node_desc` (driver.h, not mlx5_ifc.h: outside the PRM check's tables):
/// 64 bytes of text.
#[derive(Clone, Copy, Debug)]
pub(crate) enum NodeDescBits {}

impl PrmLayout for NodeDescBits {
    const SIZE_BYTES: usize = NODE_DESC_BYTES;
}

impl Register for NodeDesc {
    const ID: u32 = REG_NODE_DESC;
    type Layout = NodeDescBits;
    type Value = [u8; NODE_DESC_BYTES];

    fn fill(&self, _r: &mut BufMut<'_, Self::Layout>) -> Result<(), PrmError> {
        Ok(())
    }

    fn value(&self, r: Buf<'_, Self::Layout>) -> Result<[u8; NODE_DESC_BYTES]> {
        const DESC: Member<NodeDescBits> =
            Member::new("node_desc", 0, (NODE_DESC_BYTES * 8) as u32);
        Ok(r.array(DESC))
    }
}
