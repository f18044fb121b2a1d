// SPDX-License-Identifier: GPL-2.0

//! The auxiliary driver that binds mlx5 RDMA functions (upstream `mlx5r_driver`, main.c).
//!
//! Its id table holds both `mlx5_core.rdma` (functions of real adapters, created by the in-tree
//! C mlx5_core: backend [`crate::corehw`]) and `mlx5_ib_rs.rdma` (functions of the firmware
//! simulator: backend [`crate::simdev`]), so both come through the same probe: the profile
//! stages of [`crate::dev`] run on whichever [`crate::hw::Mlx5Hw`] the device has, and unbind
//! drops the state, which runs the stages' cleanups in reverse.

use crate::corehw::CoreFunction;
use crate::dev::Mlx5Dev;
use crate::dev_attr::DevTextFiles;
use crate::hw::Mlx5Hw;
use crate::simdev::{SimRegData, AUX_NAME};
use ib_core_rs::attr::LinkLayer;
use kernel::{auxiliary, device, prelude::*, sync::Arc};

/// Which backend an auxiliary device belongs to (the id table's per-entry data).
pub(crate) enum Backend {
    /// `mlx5_core.rdma.N`: a real adapter function.
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

/// A bound function: the driver state. Dropping it (unbind) runs the stages' cleanups; an
/// mlx5_core function's handle is revoked afterwards by its devres action
/// ([`crate::mlx5_core::CoreDev`]), so whatever still holds it (an open user context) gets
/// `ENODEV` from then on.
pub(crate) struct Mlx5Function {
    _dev: Mlx5Dev,
    /// A simulated function's PCI identity files, removed after the RDMA device (fields drop
    /// in order).
    _pci_files: Option<DevTextFiles>,
}

#[cfg(CONFIG_KUNIT)]
impl Drop for Mlx5Function {
    // Before the stages' cleanups (the fields drop after this).
    fn drop(&mut self) {
        if let Some(ib) = self._dev.ib() {
            crate::mlx5_bound::remove(ib);
        }
    }
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
                let bound: &auxiliary::Device<device::Bound> = adev;
                CoreFunction::new(bound)?
            }
        };
        // upstream: the PCI function (`mdev->device`); a simulated function has no PCI device,
        // its auxiliary device stands in.
        let parent: &device::Device = match info {
            Backend::Fwsim => adev.as_ref(),
            Backend::Mlx5Core => adev.parent(),
        };
        // A ConnectX function's PCI device has `vendor` and `device` files, which user space
        // finds two levels above `/sys/class/infiniband/mlx5_N` (UCX reads them to pick its
        // mlx5 transports); the simulated function's stand-in gets the same files, with the ids
        // its identity reports, before the RDMA device appears.
        let pci_files = match info {
            Backend::Fwsim => Some(pci_id_files(parent, hw.identity())?),
            Backend::Mlx5Core => None,
        };
        let d = Mlx5Dev::probe_under(hw, Some(parent))?;
        log_probed(adev.as_ref(), &d);
        #[cfg(CONFIG_KUNIT)]
        if let Some(ib) = d.ib() {
            crate::mlx5_bound::add(ib, matches!(info, Backend::Mlx5Core))?;
        }
        Ok(Mlx5Function {
            _dev: d,
            _pci_files: pci_files,
        })
    }
}

/// The PCI `vendor` and `device` files (`0x%04x` as the PCI core prints them) of `id`.
fn pci_id_files(dev: &device::Device, id: &crate::hw::Identity) -> Result<DevTextFiles> {
    let mut files = DevTextFiles::new(dev);
    files.add(c"vendor", format_args!("0x{:04x}\n", id.pci_vendor))?;
    files.add(c"device", format_args!("0x{:04x}\n", id.pci_device))?;
    Ok(files)
}

/// One line with what probe learned and the RDMA device's name.
fn log_probed(dev: &device::Device, probed: &Mlx5Dev) {
    let Ok(d) = probed.data() else { return };
    let id = d.hw.identity();
    let board = core::str::from_utf8(&d.board_id).unwrap_or("?");
    let (a, p) = (&d.attrs, d.ports.first());
    dev_info!(
        dev,
        "{} (PCI {:04x}:{:04x} rev {:x}) fw {}.{}.{:04} board_id {} {}: max_qp {} max_cq {} max_mr {} max_pd {}; port 1 state {} gids {} pkeys {}; kernel PD 0x{:x} UAR 0x{:x}; probe stages done; registered as {}\n",
        id.model,
        id.pci_vendor,
        id.pci_device,
        id.pci_revision,
        id.fw_rev.0,
        id.fw_rev.1,
        id.fw_rev.2,
        board,
        match id.link_layer {
            LinkLayer::Infiniband => "InfiniBand",
            LinkLayer::Ethernet => "Ethernet",
        },
        a.max_qp,
        a.max_cq,
        a.max_mr,
        a.max_pd,
        p.map_or(0, |p| p.attrs.state),
        p.map_or(0, |p| p.attrs.gid_tbl_len),
        p.map_or(0, |p| p.attrs.pkey_tbl_len),
        d.pdn.unwrap_or(0),
        d.uar,
        probed
            .ib()
            .map_or(ib_core_rs::device::DevName::EMPTY, |ib| ib.name())
    );
}
