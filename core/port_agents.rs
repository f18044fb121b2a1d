// SPDX-License-Identifier: GPL-2.0

//! The QP1 agents of a MAD client that keeps one agent per port (the SA client `sa.rs`,
//! upstream `struct ib_sa_port`; the IB CM `cm/service.rs`, upstream `struct cm_port`): the
//! agents registered at the device's `add`, found by device and port or by the agent (its
//! `hi_tid`, what the MAD layer hands its handler), and unregistered at `remove` outside the
//! client's lock (unregistering waits for a handler in progress, which may take it).

use crate::ib_device::DeviceCore;
use crate::mad_agent::{self, MadAgent, MadAgentHandler, MadRegReq, SpecialQp};
use kernel::prelude::*;
use kernel::sync::Arc;

/// One port's agent.
struct PortAgent {
    dev_index: u32,
    port: u32,
    agent: Arc<MadAgent>,
}

/// The agents of one client.
pub(crate) struct PortAgents(KVec<PortAgent>);

impl PortAgents {
    /// No agent.
    pub(crate) const fn new() -> Self {
        PortAgents(KVec::new())
    }

    /// Registers a QP1 agent (`reg`, the handler `handler` makes for the port) on each port
    /// of `dev` that `want` takes: the agents, to be [`PortAgents::extend`]ed into the
    /// client's table. A port without QP1 is passed over.
    ///
    /// # Errors
    ///
    /// `ENOMEM`, or the handler's error.
    pub(crate) fn register(
        dev: &DeviceCore,
        reg: Option<&MadRegReq>,
        want: impl Fn(u32) -> bool,
        handler: impl Fn(u32) -> Result<Arc<dyn MadAgentHandler>>,
    ) -> Result<PortAgents> {
        let mut out = PortAgents::new();
        for port in (1..=dev.phys_port_cnt()).filter(|p| want(*p)) {
            // upstream: rdma_cap_ib_cm()/rdma_cap_ib_sa(); EPROTONOSUPPORT without QP1.
            let Ok(agent) =
                mad_agent::register_agent(dev, port, SpecialQp::Gsi, reg, 0, handler(port)?, 0)
            else {
                continue;
            };
            out.0.push(
                PortAgent {
                    dev_index: dev.index(),
                    port,
                    agent: Arc::new(agent, GFP_KERNEL)?,
                },
                GFP_KERNEL,
            )?;
        }
        Ok(out)
    }

    /// Takes the agents of `more`.
    ///
    /// # Errors
    ///
    /// `ENOMEM` (the agents of `more` are dropped: unregistered).
    pub(crate) fn extend(&mut self, more: PortAgents) -> Result {
        self.0.reserve(more.0.len(), GFP_KERNEL)?;
        for a in more.0 {
            self.0.push(a, GFP_KERNEL)?;
        }
        Ok(())
    }

    /// The agent of `dev_index`'s `port`.
    pub(crate) fn find(&self, dev_index: u32, port: u32) -> Option<Arc<MadAgent>> {
        self.0
            .iter()
            .find(|p| p.dev_index == dev_index && p.port == port)
            .map(|p| p.agent.clone())
    }

    /// The device and port of the agent whose `hi_tid` is `agent`.
    pub(crate) fn port_of(&self, agent: u32) -> Option<(u32, u32)> {
        self.0
            .iter()
            .find(|p| p.agent.hi_tid() == agent)
            .map(|p| (p.dev_index, p.port))
    }

    /// Takes out the agents of device `dev_index` (all: `None`), for the caller to drop
    /// outside its lock. An entry that cannot be moved out (no memory) stays: its port closes
    /// with the device.
    pub(crate) fn take(&mut self, dev_index: Option<u32>) -> KVec<Arc<MadAgent>> {
        let mut gone = KVec::new();
        self.0.retain(|p| {
            dev_index.is_some_and(|d| d != p.dev_index)
                || gone.push(p.agent.clone(), GFP_KERNEL).is_err()
        });
        if self.0.is_empty() {
            // Its storage too (module exit).
            self.0 = KVec::new();
        }
        gone
    }
}
