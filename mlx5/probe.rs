// SPDX-License-Identifier: GPL-2.0

//! The auxiliary driver that binds mlx5 RDMA functions (upstream `mlx5r_driver`, main.c).
//!
//! Its id table holds both `mlx5_core.rdma` (functions of real adapters, created by the in-tree
//! C mlx5_core) and `mlx5_ib_rs.rdma` (functions of the firmware simulator), so simulated and
//! real functions come through the same probe path. Everything after probe talks to the
//! function through [`Mlx5Hw`] only.
//!
//! So far probe is the first honest step of upstream's profile stages: it executes real
//! commands (QUERY_HCA_CAP, QUERY_ADAPTER, ALLOC_PD + DEALLOC_PD) and logs the identity.
//! Registering the RDMA device (the profile stages, `ib_register_device`) is the mlx5 driver
//! issue's job, and so is the mlx5_core backend: a `mlx5_core.rdma.N` device is refused with
//! `ENODEV` and a log line until then.

use crate::hw::{CapType, Mlx5Hw};
use crate::prm::cmd::{
    alloc_pd_in, alloc_pd_out, dealloc_pd_in, dealloc_pd_out, mbox_in, query_adapter_in,
    query_adapter_out, query_hca_cap_in, query_hca_cap_out,
};
use crate::prm::ctx::{cmd_hca_cap, query_adapter_param_block};
use crate::prm::layout::{Field, PrmError};
use crate::prm::opcode;
use crate::simdev::{SimRegData, AUX_NAME};
use kernel::{auxiliary, device, prelude::*, sync::Arc};

/// Which backend an auxiliary device belongs to (the id table's per-entry data).
pub(crate) enum Backend {
    /// `mlx5_core.rdma.N`: a real adapter function (backend not implemented yet).
    Mlx5Core,
    /// `mlx5_ib_rs.rdma.N`: a simulated function.
    Fwsim,
}

kernel::auxiliary_device_table!(
    AUX_TABLE,
    <Mlx5AuxDriver as auxiliary::Driver>::IdInfo,
    [
        // upstream: mlx5r_id_table, MLX5_ADEV_NAME ".rdma"
        (
            auxiliary::DeviceId::new(c"mlx5_core", c"rdma"),
            Backend::Mlx5Core
        ),
        (
            auxiliary::DeviceId::new(crate::MODULE_NAME, AUX_NAME),
            Backend::Fwsim
        ),
    ]
);

/// The driver.
pub(crate) struct Mlx5AuxDriver;

/// A bound function: the hardware interface the rest of the driver will use.
pub(crate) struct Mlx5Function {
    _hw: Arc<dyn Mlx5Hw>,
}

impl auxiliary::Driver for Mlx5AuxDriver {
    type IdInfo = Backend;
    type Data<'bound> = Mlx5Function;

    const ID_TABLE: auxiliary::IdTable<Self::IdInfo> = &AUX_TABLE;

    fn probe<'bound>(
        adev: &'bound auxiliary::Device<device::Core<'_>>,
        info: &'bound Self::IdInfo,
    ) -> impl PinInit<Self::Data<'bound>, Error> + 'bound {
        let hw: Arc<dyn Mlx5Hw> = match info {
            Backend::Fwsim => {
                let data = adev.registration_data::<SimRegData>()?;
                let f: Arc<crate::simdev::SimFunction> = (*data).clone();
                f
            }
            Backend::Mlx5Core => {
                dev_info!(
                    adev,
                    "mlx5_core functions are not driven yet (mlx5_core backend: driver issue)\n"
                );
                return Err(ENODEV);
            }
        };
        first_commands(adev.as_ref(), &*hw)?;
        Ok(Mlx5Function { _hw: hw })
    }
}

/// A layout access on a buffer sized for its layout cannot fail; if it does, the command
/// buffers are wrong, which is `EINVAL` rather than a panic.
fn prm<T>(r: core::result::Result<T, PrmError>) -> Result<T> {
    r.map_err(|_| EINVAL)
}

/// An inbox with the common header filled.
fn header(inbox: &mut [u8], op: u16, op_mod: u32) -> Result {
    prm(mbox_in::opcode.set(inbox, u32::from(op)))?;
    prm(mbox_in::op_mod.set(inbox, op_mod))
}

/// The board id (PSID) from a QUERY_ADAPTER outbox, NUL padding dropped.
fn psid(out: &[u8]) -> Result<&str> {
    let f: Field =
        query_adapter_out::query_adapter_struct.inner(query_adapter_param_block::vsd_contd_psid);
    let b = prm(f.bytes(out))?;
    let len = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    core::str::from_utf8(b.get(..len).ok_or(EINVAL)?).map_err(|_| EIO)
}

/// The first commands a driver sends to a new function: the capabilities (checked against the
/// backend's cache), the adapter's identity, and a PD allocated and freed again to prove the
/// object path works end to end (upstream allocates its internal PD in
/// `mlx5_ib_dev_res_init()`; this one is released before probe returns).
fn first_commands(dev: &device::Device, hw: &dyn Mlx5Hw) -> Result {
    let mut inb = [0u8; query_hca_cap_in::SIZE_BYTES];
    header(
        &mut inb,
        opcode::QUERY_HCA_CAP,
        CapType::General.op_mod_cur(),
    )?;
    let mut out = KVec::from_elem(0u8, query_hca_cap_out::SIZE_BYTES, GFP_KERNEL)?;
    hw.exec(&inb, &mut out)?;
    let cap = query_hca_cap_out::capability;
    let get = |f: Field| prm(cap.inner(f).get(&out));
    let (log_max_qp, log_max_cq, log_max_mkey, log_max_pd) = (
        get(cmd_hca_cap::log_max_qp)?,
        get(cmd_hca_cap::log_max_cq)?,
        get(cmd_hca_cap::log_max_mkey)?,
        get(cmd_hca_cap::log_max_pd)?,
    );
    let cached = hw.caps(CapType::General).ok_or(EIO)?;
    if prm(cmd_hca_cap::log_max_qp.get(cached))? != log_max_qp {
        dev_err!(dev, "cached capabilities disagree with QUERY_HCA_CAP\n");
        return Err(EIO);
    }

    let mut inb = [0u8; query_adapter_in::SIZE_BYTES];
    header(&mut inb, opcode::QUERY_ADAPTER, 0)?;
    let mut out = KVec::from_elem(0u8, query_adapter_out::SIZE_BYTES, GFP_KERNEL)?;
    hw.exec(&inb, &mut out)?;
    let board_id = psid(&out)?;

    let mut inb = [0u8; alloc_pd_in::SIZE_BYTES];
    header(&mut inb, opcode::ALLOC_PD, 0)?;
    let mut pd_out = [0u8; alloc_pd_out::SIZE_BYTES];
    hw.exec(&inb, &mut pd_out)?;
    let pdn = prm(alloc_pd_out::pd.get(&pd_out))?;
    let mut inb = [0u8; dealloc_pd_in::SIZE_BYTES];
    header(&mut inb, opcode::DEALLOC_PD, 0)?;
    prm(dealloc_pd_in::pd.set(&mut inb, pdn))?;
    let mut dout = [0u8; dealloc_pd_out::SIZE_BYTES];
    hw.exec(&inb, &mut dout)?;

    let id = hw.identity();
    dev_info!(
        dev,
        "{} (PCI {:04x}:{:04x}) fw {}.{}.{:04} board_id {} {}: log_max_qp {} log_max_cq {} log_max_mkey {} log_max_pd {}; test PD 0x{:x} allocated and freed; RDMA device registration: not implemented yet\n",
        id.model,
        id.pci_vendor,
        id.pci_device,
        id.fw_rev.0,
        id.fw_rev.1,
        id.fw_rev.2,
        board_id,
        match id.link_layer {
            crate::fwsim::profile::LinkLayer::Ib => "InfiniBand",
            crate::fwsim::profile::LinkLayer::Ethernet => "Ethernet",
        },
        log_max_qp,
        log_max_cq,
        log_max_mkey,
        log_max_pd,
        pdn
    );
    Ok(())
}
