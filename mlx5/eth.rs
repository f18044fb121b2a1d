// SPDX-License-Identifier: GPL-2.0

//! The Ethernet interface of a function's RoCE port: upstream mlx5_core registers it (mlx5e's
//! netdev) and mlx5_ib binds the RoCE port to it; a simulated function has no mlx5e, so this
//! driver registers a minimal one itself ([`EthNetdev`], over [`crate::netdev`]) on the port's
//! Ethernet side ([`Mlx5Hw::eth_port`]: the function's port on its fabric's segment).
//!
//! Like mlx5e, opening the interface sets the port's hardware MTU and PAOS admin status up and
//! takes the carrier from the port's operational status (`mlx5e_open()` →
//! `mlx5_set_port_admin_status()`, `mlx5e_update_carrier()`); closing it sets the port down
//! (`mlx5e_close()`), which also stops the port's RoCE traffic; an MTU change of an open
//! interface sets the port's (`mlx5e_change_mtu()`). The RoCE port's state follows the interface, as upstream mlx5_ib's
//! (`mlx5_query_port_roce()`; `mlx5_netdev_event()` raises `IB_EVENT_PORT_ACTIVE` and
//! `IB_EVENT_PORT_ERR`: [`EventTable::netdev_changed`]).
//!
//! The interface takes the function's MAC (the NIC vport context's `permanent_address`, which
//! the default RoCE GIDs are built from), mlx5e's default MTU of 1500 and the port's MTU range
//! (PMTU `max_mtu` less the Ethernet overhead, `MLX5E_HW2SW_MTU()`).

use crate::attrs::ETH_HW_MTU_OVERHEAD;
use crate::cmd::exec;
use crate::cmd::query::QueryNicVportContext;
use crate::cmd::reg::{AccessReg, Paos, Pmtu, PortStatus};
use crate::hw::{EthPort, Mlx5Hw};
use crate::ib::events::EventTable;
use crate::netdev::{Link, NetDev, NetDevConfig, NetDevOps, NetDevice, ETH_MIN_MTU};
use kernel::prelude::*;
use kernel::sync::Arc;

/// `ETH_DATA_LEN`: mlx5e's default MTU.
const ETH_DATA_LEN: u32 = 1500;

/// The driver side of a port's interface.
pub(crate) struct EthNetdev {
    hw: Arc<dyn Mlx5Hw>,
    /// The port (1-based).
    port: u8,
    /// Where its frames go and come from.
    wire: Arc<dyn EthPort>,
    /// The device's events: the RoCE port's state follows the interface.
    events: Arc<EventTable>,
}

impl EthNetdev {
    /// upstream `mlx5e_set_mtu()`: the port's hardware MTU (PMTU `admin_mtu`, which the NIC
    /// vport context and the data path's UD MTU follow) is the interface's plus the Ethernet
    /// overhead.
    fn set_port_mtu(&self, mtu: u32) -> Result {
        let hw_mtu = u16::try_from(mtu.saturating_add(ETH_HW_MTU_OVERHEAD)).map_err(|_| EINVAL)?;
        exec(
            &*self.hw,
            &AccessReg::write(Pmtu {
                port: self.port,
                admin_mtu: Some(hw_mtu),
            }),
        )
        .map(|_| ())
    }

    /// The port (1-based).
    pub(crate) fn port(&self) -> u8 {
        self.port
    }

    /// Sets the port's PAOS admin status (upstream `mlx5_set_port_admin_status()`).
    fn set_admin(&self, status: PortStatus) -> Result {
        exec(
            &*self.hw,
            &AccessReg::write(Paos {
                port: self.port,
                admin_status: Some(status),
            }),
        )
        .map(|_| ())
    }
}

impl NetDevOps for EthNetdev {
    /// upstream `mlx5e_open()`: the port's hardware MTU from the interface's, the port up, the
    /// carrier from its operational status.
    fn open(&self, dev: &NetDevice) -> Result {
        self.set_port_mtu(dev.mtu())?;
        self.set_admin(PortStatus::Up)?;
        let paos = exec(
            &*self.hw,
            &AccessReg::read(Paos {
                port: self.port,
                admin_status: None,
            }),
        );
        let paos = match paos {
            Ok(p) => p,
            Err(e) => {
                let _ = self.set_admin(PortStatus::Down);
                return Err(e);
            }
        };
        self.wire.set_open(true);
        dev.set_carrier(paos.oper == 1);
        self.events.netdev_changed(self.port);
        Ok(())
    }

    fn stop(&self, dev: &NetDevice) {
        self.wire.set_open(false);
        dev.set_carrier(false);
        // A failure is logged by exec; the interface is down either way.
        let _ = self.set_admin(PortStatus::Down);
        self.events.netdev_changed(self.port);
    }

    fn start_xmit(&self, _dev: &NetDevice, frame: &[u8]) -> bool {
        self.wire.transmit(frame)
    }

    /// upstream `mlx5e_change_mtu()`: on an open interface the port's hardware MTU at once
    /// ([`EthNetdev::set_port_mtu`]), on a closed one at the next open. The RoCE port's active
    /// MTU follows the interface's.
    fn change_mtu(&self, dev: &NetDevice, mtu: u32) -> Result {
        if dev.running() {
            self.set_port_mtu(mtu)?;
        }
        Ok(())
    }
}

/// A registered interface of a port, connected to its wire and bound to the RoCE port.
/// Dropping it unbinds and disconnects it, then unregisters it (closing it first if up).
pub(crate) struct PortNetdev {
    netdev: NetDev<EthNetdev>,
}

impl PortNetdev {
    /// The interface of port `port` of `hw`, if the port has an Ethernet side this driver
    /// drives (`None` otherwise), registered under `parent` and brought up.
    ///
    /// # Errors
    ///
    /// The errno of QUERY_NIC_VPORT_CONTEXT, PMTU or PAOS, `ENOMEM`, or the registration's.
    pub(crate) fn new(
        hw: &Arc<dyn Mlx5Hw>,
        port: u8,
        events: &Arc<EventTable>,
        parent: Option<&kernel::device::Device>,
    ) -> Result<Option<Self>> {
        let Some(wire) = hw.eth_port(port)? else {
            return Ok(None);
        };
        let nic = exec(&**hw, &QueryNicVportContext)?;
        let pmtu = exec(
            &**hw,
            &AccessReg::read(Pmtu {
                port,
                admin_mtu: None,
            }),
        )?;
        let max_mtu = u32::from(pmtu.max_mtu)
            .saturating_sub(ETH_HW_MTU_OVERHEAD)
            .max(ETH_MIN_MTU);
        let cfg = NetDevConfig {
            link: Link::Ether(nic.mac),
            mtu: ETH_DATA_LEN.min(max_mtu),
            min_mtu: ETH_MIN_MTU,
            max_mtu,
        };
        let data = Arc::new(
            EthNetdev {
                hw: hw.clone(),
                port,
                wire: wire.clone(),
                events: events.clone(),
            },
            GFP_KERNEL,
        )?;
        let netdev = NetDev::new(data, parent, &cfg)?;
        let this = Self { netdev };
        wire.connect(Some(this.netdev.get()));
        events.bind_netdev(port, this.netdev.get())?;
        // The interface comes up at once, as a host's network configuration brings up its
        // Ethernet ports: the RoCE port is ACTIVE after probe, as before the port had an
        // interface. `ip link set dev X down` takes it down.
        this.netdev.open()?;
        Ok(Some(this))
    }

    /// The interface.
    pub(crate) fn netdev(&self) -> &NetDev<EthNetdev> {
        &self.netdev
    }
}

impl Drop for PortNetdev {
    fn drop(&mut self) {
        let d = self.netdev.data();
        // Both references are put before unregistering, which waits for them.
        d.events.unbind_netdev(d.port);
        d.wire.connect(None);
    }
}
