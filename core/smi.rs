// SPDX-License-Identifier: GPL-2.0

//! Directed-route SMPs on their way out of an HCA port (upstream `smi.c`,
//! `smi_handle_dr_smp_send()`, and `smi.h`, `smi_check_local_smp()`,
//! `smi_check_local_returning_smp()`; IBA Vol 1 14.2.2). Pure: the SMP's bytes in, the hop
//! pointer updated, the verdict out.

use crate::mad::{LID_PERMISSIVE, SMP_MAX_PATH_HOPS};
use kernel::prelude::*;

// Offsets of `struct ib_smp`.
const STATUS: usize = 4;
const HOP_PTR: usize = 6;
const HOP_CNT: usize = 7;
const DR_SLID: usize = 32;
const DR_DLID: usize = 34;
const INITIAL_PATH: usize = 128;
const RETURN_PATH: usize = 192;

/// Where an outgoing directed-route SMP goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DrRoute {
    /// To this port's own SMA/SM: `process_mad` (upstream `IB_SMI_HANDLE` of
    /// `smi_check_local_smp()` or `smi_check_local_returning_smp()`).
    Local,
    /// Out of the port, onto the wire.
    Wire,
}

fn get(smp: &[u8], i: usize) -> u8 {
    smp.get(i).copied().unwrap_or(0)
}

fn be16(smp: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([get(smp, i), get(smp, i + 1)])
}

/// The direction bit (upstream `ib_get_smp_direction()`: `IB_SMP_DIRECTION` of `status`).
fn returning(smp: &[u8]) -> bool {
    get(smp, STATUS) & 0x80 != 0
}

/// upstream `__smi_handle_dr_smp_send()` for an HCA (`is_switch` false): whether the SMP may
/// be sent from `port`; updates the hop pointer.
fn dr_smp_send(smp: &mut [u8], port: u32) -> bool {
    let hop_cnt = get(smp, HOP_CNT);
    let mut hop_ptr = get(smp, HOP_PTR);
    // C14-6: valid hop counts are 0..63.
    if hop_cnt >= SMP_MAX_PATH_HOPS {
        return false;
    }
    let ok = if !returning(smp) {
        if hop_cnt != 0 && hop_ptr == 0 {
            // C14-9:1
            hop_ptr += 1;
            u32::from(get(smp, INITIAL_PATH + usize::from(hop_ptr))) == port
        } else if hop_ptr != 0 && hop_ptr < hop_cnt {
            // C14-9:2: only a switch forwards.
            false
        } else if hop_ptr == hop_cnt {
            // C14-9:3: the end of the directed part.
            hop_ptr += 1;
            be16(smp, DR_DLID) == LID_PERMISSIVE
        } else {
            // C14-9:4, C14-9:5
            u16::from(hop_ptr) == u16::from(hop_cnt) + 1
        }
    } else if hop_cnt != 0 && u16::from(hop_ptr) == u16::from(hop_cnt) + 1 {
        // C14-13:1
        hop_ptr -= 1;
        u32::from(get(smp, RETURN_PATH + usize::from(hop_ptr))) == port
    } else if (2..=hop_cnt).contains(&hop_ptr) {
        // C14-13:2
        false
    } else if hop_ptr == 1 {
        // C14-13:3
        hop_ptr -= 1;
        be16(smp, DR_SLID) == LID_PERMISSIVE
    } else {
        // C14-13:4, C14-13:5
        hop_ptr == 0
    };
    if let Some(b) = smp.get_mut(HOP_PTR) {
        *b = hop_ptr;
    }
    ok
}

/// upstream `handle_outgoing_dr_smp()`'s routing of an SMP of the directed-route class sent
/// from `port` of an HCA: the directed-route checks when the LID-routed part before it is
/// empty (the permissive `DrSLID` of a request, `DrDLID` of a response), then whether the
/// SMP ends here. `has_process_mad`: upstream hands an SMP to the local SMA only through the
/// driver's `process_mad`.
///
/// Returns `None` for a route upstream rejects with `EINVAL` ("Invalid directed route").
pub fn route_outgoing_dr_smp(smp: &mut [u8], port: u32, has_process_mad: bool) -> Option<DrRoute> {
    let lid = if returning(smp) {
        be16(smp, DR_DLID)
    } else {
        be16(smp, DR_SLID)
    };
    if lid == LID_PERMISSIVE && !dr_smp_send(smp, port) {
        return None;
    }
    let hop_ptr = u16::from(get(smp, HOP_PTR));
    let hop_cnt = u16::from(get(smp, HOP_CNT));
    let local = has_process_mad
        && ((!returning(smp) && hop_ptr == hop_cnt + 1) || (returning(smp) && hop_ptr == 0));
    Some(if local { DrRoute::Local } else { DrRoute::Wire })
}

/// upstream `handle_ib_smi()` for a directed-route SMP received at `port` of an HCA:
/// `smi_handle_dr_smp_recv()` (the return path noted, the hop pointer checked),
/// `smi_check_forward_dr_smp()`, and for an SMP that ends here `smi_handle_dr_smp_send()` and
/// `smi_check_local_smp()`. Whether the SMP goes to `process_mad` (else it is discarded: an
/// HCA forwards nothing).
pub fn handle_dr_smp_recv(smp: &mut [u8], port: u32, has_process_mad: bool) -> bool {
    let hop_cnt = get(smp, HOP_CNT);
    let mut hop_ptr = get(smp, HOP_PTR);
    // C14-6
    if hop_cnt >= SMP_MAX_PATH_HOPS {
        return false;
    }
    let dlid_permissive = be16(smp, DR_DLID) == LID_PERMISSIVE;
    let slid_permissive = be16(smp, DR_SLID) == LID_PERMISSIVE;
    let ok = if !returning(smp) {
        if hop_cnt != 0 && hop_ptr == 0 {
            // C14-9:1
            false
        } else if hop_ptr != 0 && hop_ptr < hop_cnt {
            // C14-9:2: only a switch is an intermediate hop.
            false
        } else if hop_ptr == hop_cnt {
            // C14-9:3
            if hop_cnt != 0 {
                if let Some(b) = smp.get_mut(RETURN_PATH + usize::from(hop_ptr)) {
                    *b = u8::try_from(port).unwrap_or(0);
                }
            }
            dlid_permissive
        } else {
            // C14-9:4, C14-9:5
            u16::from(hop_ptr) == u16::from(hop_cnt) + 1
        }
    } else if hop_cnt != 0 && u16::from(hop_ptr) == u16::from(hop_cnt) + 1 {
        // C14-13:1
        hop_ptr -= 1;
        u32::from(get(smp, RETURN_PATH + usize::from(hop_ptr))) == port
    } else if (2..=hop_cnt).contains(&hop_ptr) {
        // C14-13:2
        false
    } else if hop_ptr == 1 {
        // C14-13:3
        if slid_permissive {
            hop_ptr -= 1;
        }
        slid_permissive
    } else {
        // C14-13:4, C14-13:5
        hop_ptr == 0
    };
    if let Some(b) = smp.get_mut(HOP_PTR) {
        *b = hop_ptr;
    }
    if !ok {
        return false;
    }
    // smi_check_forward_dr_smp(): IB_SMI_SEND where the SMP is to be handed on, else
    // IB_SMI_LOCAL (handled here as it is).
    let send = if !returning(smp) {
        (hop_ptr == hop_cnt && dlid_permissive) || u16::from(hop_ptr) == u16::from(hop_cnt) + 1
    } else {
        hop_ptr == 1 && !slid_permissive
    };
    if !send {
        return true;
    }
    if !dr_smp_send(smp, port) {
        return false;
    }
    // smi_check_local_smp()
    let hop_ptr = u16::from(get(smp, HOP_PTR));
    has_process_mad && !returning(smp) && hop_ptr == u16::from(hop_cnt) + 1
}

/// The `DrSLID` of an SMP (what upstream's local completion reports as the source LID).
pub fn dr_slid(smp: &[u8]) -> u16 {
    be16(smp, DR_SLID)
}

#[kunit_tests(ib_core_rs_smi)]
mod tests {
    use super::*;

    fn smp(hop_cnt: u8, path1: u8) -> [u8; 256] {
        let mut m = [0u8; 256];
        m[1] = 0x81;
        m[HOP_CNT] = hop_cnt;
        m[DR_SLID..DR_SLID + 2].copy_from_slice(&[0xff, 0xff]);
        m[DR_DLID..DR_DLID + 2].copy_from_slice(&[0xff, 0xff]);
        m[INITIAL_PATH + 1] = path1;
        m
    }

    #[test]
    fn received_request_at_the_end_of_its_path() {
        // Two hops: the switch handed it on with the hop pointer at the hop count.
        let mut m = smp(2, 1);
        m[HOP_PTR] = 2;
        assert!(handle_dr_smp_recv(&mut m, 1, true));
        assert_eq!(m[HOP_PTR], 3);
        assert_eq!(m[RETURN_PATH + 2], 1);
        // The reply goes back along the return path.
        m[STATUS] |= 0x80;
        assert_eq!(route_outgoing_dr_smp(&mut m, 1, true), Some(DrRoute::Wire));
        assert_eq!(m[HOP_PTR], 2);
        // An HCA is no intermediate hop.
        let mut m = smp(3, 1);
        m[HOP_PTR] = 1;
        assert!(!handle_dr_smp_recv(&mut m, 1, true));
    }

    #[test]
    fn hop_count_zero_ends_at_this_port() {
        let mut m = smp(0, 0);
        assert_eq!(route_outgoing_dr_smp(&mut m, 1, true), Some(DrRoute::Local));
        assert_eq!(m[HOP_PTR], 1);
        // Without process_mad nothing is handled locally.
        let mut m = smp(0, 0);
        assert_eq!(route_outgoing_dr_smp(&mut m, 1, false), Some(DrRoute::Wire));
    }

    #[test]
    fn one_hop_leaves_through_the_path_port() {
        let mut m = smp(1, 1);
        assert_eq!(route_outgoing_dr_smp(&mut m, 1, true), Some(DrRoute::Wire));
        assert_eq!(m[HOP_PTR], 1);
        // The first hop names another port: discarded, upstream's EINVAL.
        let mut m = smp(1, 2);
        assert_eq!(route_outgoing_dr_smp(&mut m, 1, true), None);
    }

    #[test]
    fn bad_hop_counts_are_rejected() {
        let mut m = smp(SMP_MAX_PATH_HOPS, 1);
        assert_eq!(route_outgoing_dr_smp(&mut m, 1, true), None);
        // Not permissive at the end of the directed part (C14-9:3).
        let mut m = smp(0, 0);
        m[DR_DLID..DR_DLID + 2].copy_from_slice(&[0, 5]);
        assert_eq!(route_outgoing_dr_smp(&mut m, 1, true), None);
    }
}
