// SPDX-License-Identifier: GPL-2.0

//! MAD_IFC: a MAD to the firmware's management agents (upstream hw/mlx5/cmd.c
//! `mlx5_cmd_mad_ifc()`).

use super::{Command, InBox, OutBox};
use crate::prm::cmd::{mad_ifc_in, mad_ifc_out};
use crate::prm::command as pc;
use crate::prm::layout::PrmError;
use ib_core_rs::mad::{Mad, MAD_SIZE};
use kernel::prelude::*;

/// MAD_IFC of `mad` at `port` (1-based); `op_mod` bit 0 skips the M_Key check, bit 1 the
/// B_Key check (upstream `mlx5_MAD_IFC()`).
pub(crate) struct MadIfc<'a> {
    /// The MAD.
    pub(crate) mad: &'a Mad,
    /// The port it arrived at.
    pub(crate) port: u8,
    /// The key-check bits.
    pub(crate) op_mod: u32,
}

impl Command for MadIfc<'_> {
    type Prm = pc::MadIfc;
    /// The response MAD.
    type Reply = [u8; MAD_SIZE];

    fn op_mod(&self) -> u32 {
        self.op_mod
    }

    fn fill(&self, inbox: &mut InBox<'_, Self>) -> Result<(), PrmError> {
        inbox.set(mad_ifc_in::port, u32::from(self.port))?;
        inbox.set_bytes(mad_ifc_in::mad, &self.mad.0)
    }

    fn reply(&self, out: OutBox<'_, Self>) -> Result<[u8; MAD_SIZE]> {
        Ok(out.array(mad_ifc_out::response_mad_packet))
    }
}
