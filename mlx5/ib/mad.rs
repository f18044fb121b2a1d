// SPDX-License-Identifier: GPL-2.0

//! MADs to the device (upstream hw/mlx5/mad.c `mlx5_ib_process_mad()`): the SMPs and the
//! management classes the firmware's agents answer go through MAD_IFC; the result bits are
//! upstream's.
//!
//! The PMA: upstream answers a PerfMgt Get from QUERY_VPORT_COUNTER / PPCNT
//! (`process_pma_cmd()`) only when the device has the `vport_counters` capability; without
//! it the MAD goes to the firmware's PMA through MAD_IFC like the others. The device model
//! does not advertise `vport_counters` (its PMA counts the port's traffic itself,
//! `fwsim/pma.rs`), so both drivers take the MAD_IFC path there.

use crate::cmd::exec;
use crate::cmd::mad::MadIfc;
use crate::ib::device::Mlx5Ib;
use ib_core_rs::attr::LinkLayer;
use ib_core_rs::device::Device;
use ib_core_rs::mad::{
    Mad, MadRecvInfo, MAD_IGNORE_BKEY, MAD_IGNORE_MKEY, MAD_RESULT_CONSUMED, MAD_RESULT_REPLY,
    MAD_RESULT_SUCCESS,
};
use kernel::prelude::*;

/// `IB_MGMT_CLASS_SUBN_LID_ROUTED`.
const CLASS_SUBN_LID_ROUTED: u8 = 0x01;
/// `IB_MGMT_CLASS_PERF_MGMT`.
const CLASS_PERF_MGMT: u8 = 0x04;
/// `IB_MGMT_CLASS_CONG_MGMT`.
const CLASS_CONG_MGMT: u8 = 0x21;
/// `IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE`.
const CLASS_SUBN_DIRECTED_ROUTE: u8 = 0x81;
/// `MLX5_IB_VENDOR_CLASS1` and `MLX5_IB_VENDOR_CLASS2`.
const VENDOR_CLASS1: u8 = 0x09;
const VENDOR_CLASS2: u8 = 0x0a;
/// `IB_MGMT_METHOD_GET`, `_SET`, `_TRAP`, `_TRAP_REPRESS`.
const METHOD_GET: u8 = 0x01;
const METHOD_SET: u8 = 0x02;
const METHOD_TRAP: u8 = 0x05;
const METHOD_TRAP_REPRESS: u8 = 0x07;
/// `IB_SMP_ATTR_SM_INFO`.
const ATTR_SM_INFO: u16 = 0x0020;
/// The D bit of a directed-route SMP's status (`IB_SMP_DIRECTION`).
const SMP_DIRECTION: u8 = 0x80;

/// upstream `mlx5_ib_process_mad()`: which MADs go to the firmware, the MAD_IFC call and
/// the result bits. A MAD the device need not see gets `MAD_RESULT_SUCCESS` alone (the MAD
/// layer handles it); a failed MAD_IFC is upstream's `IB_MAD_RESULT_FAILURE` (0: nothing
/// to send).
///
/// # Errors
///
/// `EINVAL` for a port the device does not have.
pub(crate) fn process_mad(
    dev: &Device<Mlx5Ib>,
    port: u32,
    flags: u32,
    recv: Option<&MadRecvInfo>,
    in_mad: &Mad,
    out: &mut Mad,
) -> Result<u32> {
    let d = dev.data();
    let p = d.port(port)?;
    let class = in_mad.mgmt_class();
    let method = in_mad.method();
    // upstream: a trap from the permissive LID (no receive completion) is consumed.
    let slid = recv.map_or(0xffff, |r| r.slid);
    if method == METHOD_TRAP && slid == 0 {
        return Ok(MAD_RESULT_SUCCESS | MAD_RESULT_CONSUMED);
    }
    match class {
        CLASS_SUBN_LID_ROUTED | CLASS_SUBN_DIRECTED_ROUTE => {
            if !matches!(method, METHOD_GET | METHOD_SET | METHOD_TRAP_REPRESS) {
                return Ok(MAD_RESULT_SUCCESS);
            }
            // The SMA does not handle SMInfo: the SM (if any) on this host answers it.
            if in_mad.attr_id() == ATTR_SM_INFO {
                return Ok(MAD_RESULT_SUCCESS);
            }
            // upstream can_do_mad_ifc(): SMPs only on a port with an SMI.
            if p.link_layer != LinkLayer::Infiniband {
                return Ok(0);
            }
        }
        CLASS_PERF_MGMT | VENDOR_CLASS1 | VENDOR_CLASS2 | CLASS_CONG_MGMT => {
            if !matches!(method, METHOD_GET | METHOD_SET) {
                return Ok(MAD_RESULT_SUCCESS);
            }
        }
        _ => return Ok(MAD_RESULT_SUCCESS),
    }
    // upstream mlx5_MAD_IFC(): key check traps need a receive completion to be generated.
    let mut op_mod = 0;
    if flags & MAD_IGNORE_MKEY != 0 || recv.is_none() {
        op_mod |= 0x1;
    }
    if flags & MAD_IGNORE_BKEY != 0 || recv.is_none() {
        op_mod |= 0x2;
    }
    let cmd = MadIfc {
        mad: in_mad,
        port: u8::try_from(port).map_err(|_| EINVAL)?,
        op_mod,
    };
    let Ok(resp) = exec(&*d.hw, &cmd) else {
        return Ok(0);
    };
    out.0 = resp;
    // upstream: the return bit in the status of directed-route responses.
    if class == CLASS_SUBN_DIRECTED_ROUTE {
        out.0[4] |= SMP_DIRECTION;
    }
    if method == METHOD_TRAP_REPRESS {
        // No response to a TrapRepress.
        return Ok(MAD_RESULT_SUCCESS | MAD_RESULT_CONSUMED);
    }
    Ok(MAD_RESULT_SUCCESS | MAD_RESULT_REPLY)
}
