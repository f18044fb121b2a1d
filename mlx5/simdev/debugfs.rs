// SPDX-License-Identifier: GPL-2.0

//! `/sys/kernel/debug/mlx5_fwsim/<function>/`: what tests read and poke.
//!
//! * `resources` — live objects by type, one `kind count` per line (all zero when the driver
//!   has released everything);
//! * `identity` — model, PCI ids, firmware, link layer, ports, and what the firmware answers
//!   about itself: node and system image GUID, IEEE vendor id, PSID (board id), PCI revision;
//! * `caps` — the profile's capability logarithms (`log_max_qp`, ...), port LID and MTU, and
//!   per port RoCE address 0 as SET_ROCE_ADDRESS last programmed it (`-` when empty);
//! * `roce` — every programmed RoCE address table entry, one a line: `portP INDEX GID vVERSION
//!   ipv4|ipv6 MAC vlan ID|-`, as SET_ROCE_ADDRESS left it (nothing on InfiniBand);
//! * `stats` — commands executed, failed, and taken by fault injection, the nanoseconds
//!   spent executing them (`exec_ns`, the simulator's share of a benchmark), those they
//!   waited for the fabric lock first (`cmd_wait_ns`, the longest wait `cmd_wait_max_ns`:
//!   the engine passes hold it), `uar_traps`, the user doorbell stores that reached the
//!   device as UAR write traps, how the fabric's engine passes ran (`fabric_*`), and on an
//!   Ethernet fabric the frames its segment delivered and dropped at a down port
//!   (`ether_delivered`, `ether_dropped`) and the RoCE v2 packets the function's data path
//!   could not queue for the wire (`wire_overflow`, `engine/wire.rs`), the QPs' multicast group
//!   attachments (`mcg_attached`, `fwsim/mcg.rs`), and RC in packets'
//!   request packets sent again, requests past and before the expected PSN
//!   (`wire_rc_retransmits`, `wire_rc_out_of_sequence`, `wire_rc_duplicates`,
//!   `engine/rc.rs`) and the RoCE v2 frames dropped for a bad ICRC (`wire_bad_icrc`);
//! * `iommu` — the simulated IOMMU's live mappings and the device accesses it refused
//!   (`mappings N`, `faults N`; mappings are 0 when the driver has released everything);
//! * `switch` — the InfiniBand fabric's switch (`fwsim/switch.rs`): `lid`, `sm_lid`,
//!   `link` (the switch port this function's port 1 is linked to), `port N STATE` for ports
//!   0..N (the IBA logical state number), `lft_top`, and `lft LID PORT` per programmed
//!   forwarding entry (LID in hex); `none` on an Ethernet fabric;
//! * `fail_nth` — write `<n> [<status>|timeout] [<syndrome>]`: fail the n-th command from now,
//!   once (`0` disarms); reads back what is armed;
//! * `fail_opcode` — write `<opcode> [<status>|timeout] [<syndrome>]`: fail every command with
//!   that opcode (`0` disarms);
//! * `delay_us` — microseconds each command's completion is delayed (0: none);
//! * `clear_faults` — any write disarms every fault and the delay.
//!
//! Numbers are decimal or `0x` hex; the status defaults to `INT_ERR` (0x1, `-EIO`) and the
//! syndrome to `INJECTED` (0x5f0000ff). The grammar is `fwsim::fault::parse_knob`.

use super::SimFunction;
use crate::fwsim::fault::{parse_knob, parse_number, FaultAction};
use crate::fwsim::profile::LinkLayer as SimLinkLayer;
use core::fmt;
use kernel::{
    debugfs::{Dir, Scope},
    prelude::*,
    sync::Arc,
    uaccess::UserSliceReader,
};

type F = Arc<SimFunction>;

/// The directory `name` of one function, removed when the returned scope is dropped.
pub(super) fn function_dir<'a>(root: &'a Dir, name: &'a CStr, f: F) -> impl PinInit<Scope<F>> + 'a {
    root.scope(f, name, |f, d| {
        d.read_callback_file(c"resources", f, &show_resources);
        d.read_callback_file(c"identity", f, &show_identity);
        d.read_callback_file(c"caps", f, &show_caps);
        d.read_callback_file(c"roce", f, &show_roce);
        d.read_callback_file(c"stats", f, &show_stats);
        d.read_callback_file(c"iommu", f, &show_iommu);
        d.read_callback_file(c"qcounters", f, &show_qcounters);
        d.read_callback_file(c"switch", f, &show_switch);
        d.read_write_callback_file(c"fail_nth", f, &show_fail_nth, &write_fail_nth);
        d.read_write_callback_file(c"fail_opcode", f, &show_fail_opcode, &write_fail_opcode);
        d.read_write_callback_file(c"delay_us", f, &show_delay, &write_delay);
        d.write_only_callback_file(c"clear_faults", f, &write_clear);
    })
}

fn show_switch(f: &F, out: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.fabric().fabric().with_switch(f.index(), |sw| {
        let Some((sw, link)) = sw else {
            return writeln!(out, "none");
        };
        writeln!(out, "lid {}", sw.port0_lid())?;
        writeln!(out, "sm_lid {}", sw.sm_lid())?;
        writeln!(out, "link {}", link)?;
        for p in 0..=sw.nports() {
            writeln!(out, "port {} {}", p, sw.port_state(p))?;
        }
        writeln!(out, "lft_top {}", sw.lft_top())?;
        for (lid, port) in sw.lft_entries() {
            writeln!(out, "lft {:#x} {}", lid, port)?;
        }
        Ok(())
    })
}

fn show_resources(f: &F, out: &mut fmt::Formatter<'_>) -> fmt::Result {
    let c = f.counts();
    write_rows(
        out,
        &[
            ("pd", &c.pd),
            ("uar", &c.uar),
            ("td", &c.td),
            ("cq", &c.cq),
            ("qp", &c.qp),
            ("mkey", &c.mkey),
            ("srq", &c.srq),
            ("xrc", &c.xrc),
            ("uctx", &c.uctx),
            ("umem", &c.umem),
            ("memic", &c.memic),
        ],
    )
}

/// One `name value` line per row.
fn write_rows(out: &mut fmt::Formatter<'_>, rows: &[(&str, &dyn fmt::Display)]) -> fmt::Result {
    for (name, value) in rows {
        writeln!(out, "{} {}", name, value)?;
    }
    Ok(())
}

/// Q counter sets allocated (ALLOC_Q_COUNTER, `max_qp_cnt` of them at most).
fn show_qcounters(f: &F, out: &mut fmt::Formatter<'_>) -> fmt::Result {
    writeln!(out, "sets {}", f.with_fw(|fw| fw.q_counter_sets()))
}

fn show_iommu(f: &F, out: &mut fmt::Formatter<'_>) -> fmt::Result {
    writeln!(out, "mappings {}", f.iommu().mappings())?;
    writeln!(out, "faults {}", f.iommu().faults())
}

fn show_identity(f: &F, out: &mut fmt::Formatter<'_>) -> fmt::Result {
    let id = &f.identity;
    writeln!(out, "model {}", id.model)?;
    writeln!(out, "pci {:04x}:{:04x}", id.pci_vendor, id.pci_device)?;
    writeln!(out, "fw {}.{}.{:04}", id.fw_rev.0, id.fw_rev.1, id.fw_rev.2)?;
    let ll = match id.link_layer {
        ib_core_rs::attr::LinkLayer::Infiniband => "InfiniBand",
        ib_core_rs::attr::LinkLayer::Ethernet => "Ethernet",
    };
    writeln!(out, "link_layer {}", ll)?;
    writeln!(out, "ports {}", id.num_ports)?;
    let (cfg, guid) = f.with_fw(|fw| (*fw.config(), fw.node_guid()));
    // QUERY_ADAPTER's ieee_vendor_id (fwsim/query.rs).
    writeln!(out, "vendor_id 0x02c9")?;
    writeln!(out, "pci_revision {}", id.pci_revision)?;
    let psid = &cfg.profile.psid;
    let n = psid.iter().position(|b| *b == 0).unwrap_or(psid.len());
    let psid = core::str::from_utf8(psid.get(..n).unwrap_or(&[])).unwrap_or("?");
    writeln!(out, "board_id {}", psid)?;
    writeln!(out, "node_guid {:016x}", guid)?;
    writeln!(out, "sys_image_guid {:016x}", guid)
}

fn show_caps(f: &F, out: &mut fmt::Formatter<'_>) -> fmt::Result {
    let (cfg, lids) = f.with_fw(|fw| (*fw.config(), [fw.port_lid(0), fw.port_lid(1)]));
    let p = &cfg.profile;
    writeln!(out, "log_max_qp {}", p.log_max_qp)?;
    writeln!(out, "log_max_qp_sz {}", p.log_max_qp_sz)?;
    writeln!(out, "log_max_cq {}", p.log_max_cq)?;
    writeln!(out, "log_max_cq_sz {}", p.log_max_cq_sz)?;
    writeln!(out, "log_max_mkey {}", p.log_max_mkey)?;
    writeln!(out, "log_max_pd {}", p.log_max_pd)?;
    for port in 1..=cfg.num_ports {
        // `Fw::port_lid`: what the subnet manager set through the SMA (0 before); PMTU max_mtu
        // is 4096 on IB.
        let lid = lids.get(usize::from(port) - 1).copied().unwrap_or(0);
        match cfg.link_layer {
            SimLinkLayer::Ib => writeln!(out, "port{} lid {} max_mtu 4096", port, lid)?,
            SimLinkLayer::Ethernet => writeln!(out, "port{} lid 0", port)?,
        }
        match f.roce_addr(port, 0) {
            Some(a) => {
                write!(out, "port{} roce_gid0 ", port)?;
                write_gid(out, &a.gid)?;
                writeln!(out, " v{}", a.version)?;
            }
            None => writeln!(out, "port{} roce_gid0 -", port)?,
        }
    }
    Ok(())
}

/// Writes a GID as sysfs prints one (eight groups of four hex digits).
fn write_gid(out: &mut fmt::Formatter<'_>, gid: &[u8; 16]) -> fmt::Result {
    for (i, c) in gid.chunks(2).enumerate() {
        let sep = if i == 0 { "" } else { ":" };
        write!(
            out,
            "{}{:02x}{:02x}",
            sep,
            c[0],
            c.get(1).copied().unwrap_or(0)
        )?;
    }
    Ok(())
}

fn show_roce(f: &F, out: &mut fmt::Formatter<'_>) -> fmt::Result {
    let cfg = f.with_fw(|fw| *fw.config());
    if cfg.link_layer != SimLinkLayer::Ethernet {
        return Ok(());
    }
    for port in 1..=cfg.num_ports {
        for i in 0..256 {
            let Some(a) = f.roce_addr(port, i) else {
                continue;
            };
            write!(out, "port{} {} ", port, i)?;
            write_gid(out, &a.gid)?;
            let m = a.mac;
            write!(
                out,
                " v{} {} {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x} vlan ",
                a.version,
                if a.l3_type == 0 { "ipv4" } else { "ipv6" },
                m[0],
                m[1],
                m[2],
                m[3],
                m[4],
                m[5]
            )?;
            match a.vlan {
                Some(v) => writeln!(out, "{}", v)?,
                None => writeln!(out, "-")?,
            }
        }
    }
    Ok(())
}

fn show_stats(f: &F, out: &mut fmt::Formatter<'_>) -> fmt::Result {
    let s = f.stats();
    writeln!(out, "commands {}", s.commands)?;
    writeln!(out, "failed {}", s.failed)?;
    writeln!(out, "injected {}", s.injected)?;
    writeln!(out, "exec_ns {}", f.exec_ns())?;
    let (wait, wait_max) = f.cmd_wait_ns();
    writeln!(out, "cmd_wait_ns {}", wait)?;
    writeln!(out, "cmd_wait_max_ns {}", wait_max)?;
    writeln!(out, "uar_traps {}", f.uar_traps())?;
    let v = f.served();
    for (name, a) in [
        ("fabric_worker_passes", &v.worker_passes),
        ("fabric_worker_ns", &v.worker_ns),
        ("fabric_inline_passes", &v.inline_passes),
        ("fabric_inline_ns", &v.inline_ns),
        ("fabric_inline_busy", &v.inline_busy),
        ("fabric_rearms_deferred", &v.rearms_deferred),
        ("fabric_land_waits", &v.land_waits),
        ("fabric_land_timeouts", &v.land_timeouts),
        ("fabric_worker_moves", &v.worker_moves),
        ("fabric_land_spin_ns", &v.land_spin_ns),
        ("fabric_rearm_ns", &v.rearm_ns),
        ("fabric_wqes_inline", &v.wqes_inline),
        ("fabric_wqes_trap", &v.wqes_trap),
        ("fabric_wqes_kick", &v.wqes_kick),
        ("fabric_wqes_rescan", &v.wqes_rescan),
        ("fabric_rearms_peer", &v.rearms_peer),
        ("fabric_peer_land_timeouts", &v.peer_land_timeouts),
        ("fabric_traps_quiet", &v.traps_quiet),
        ("fabric_polls", &v.polls),
        ("fabric_poll_ns", &v.poll_ns),
        ("fabric_wqes_poll", &v.wqes_poll),
        ("fabric_stores_emulated", &v.stores_emulated),
    ] {
        writeln!(out, "{} {}", name, a.load(kernel::sync::atomic::Relaxed))?;
    }
    if let Some(seg) = f.fabric().fabric().ether() {
        let e = seg.stats();
        writeln!(out, "ether_delivered {}", e.delivered)?;
        writeln!(out, "ether_dropped {}", e.dropped)?;
        writeln!(out, "wire_overflow {}", f.with_fw(|fw| fw.wire_overflow()))?;
        writeln!(out, "mcg_attached {}", f.with_fw(|fw| fw.mcg_attached()))?;
        let rc = f.with_fw(|fw| fw.wire_rc_stats());
        writeln!(out, "wire_rc_retransmits {}", rc.retransmits)?;
        writeln!(out, "wire_rc_out_of_sequence {}", rc.out_of_sequence)?;
        writeln!(out, "wire_rc_duplicates {}", rc.duplicates)?;
        writeln!(out, "wire_bad_icrc {}", rc.bad_icrc)?;
    }
    Ok(())
}

/// Prints an armed fault as it would be written: `<n> <status> <syndrome>` or `<n> timeout`.
fn show_fault(n: Option<(u64, FaultAction)>, out: &mut fmt::Formatter<'_>) -> fmt::Result {
    match n {
        None => writeln!(out, "0"),
        Some((n, FaultAction::Timeout)) => writeln!(out, "0x{:x} timeout", n),
        Some((n, FaultAction::Fail { status, syndrome })) => {
            writeln!(out, "0x{:x} 0x{:x} 0x{:x}", n, status.0, syndrome)
        }
    }
}

fn show_fail_nth(f: &F, out: &mut fmt::Formatter<'_>) -> fmt::Result {
    show_fault(f.with_faults(|p| p.nth()), out)
}

fn show_fail_opcode(f: &F, out: &mut fmt::Formatter<'_>) -> fmt::Result {
    show_fault(
        f.with_faults(|p| p.opcode())
            .map(|(o, a)| (u64::from(o), a)),
        out,
    )
}

fn show_delay(f: &F, out: &mut fmt::Formatter<'_>) -> fmt::Result {
    writeln!(out, "{}", f.with_faults(|p| p.delay_us))
}

/// Reads a short write from user space.
fn read_input<'b>(r: &mut UserSliceReader, buf: &'b mut [u8; 64]) -> Result<&'b [u8]> {
    let n = r.len();
    let dst = buf.get_mut(..n).ok_or(EINVAL)?;
    r.read_slice(dst)?;
    Ok(dst)
}

fn write_fail_nth(f: &F, r: &mut UserSliceReader) -> Result {
    let mut buf = [0u8; 64];
    let k = parse_knob(read_input(r, &mut buf)?).map_err(|_| EINVAL)?;
    f.with_faults(|p| p.fail_nth(k.n, k.action));
    Ok(())
}

fn write_fail_opcode(f: &F, r: &mut UserSliceReader) -> Result {
    let mut buf = [0u8; 64];
    let k = parse_knob(read_input(r, &mut buf)?).map_err(|_| EINVAL)?;
    if k.n == 0 {
        f.with_faults(|p| p.clear_opcode());
        return Ok(());
    }
    let op = u16::try_from(k.n).map_err(|_| EINVAL)?;
    f.with_faults(|p| p.fail_opcode(op, k.action));
    Ok(())
}

fn write_delay(f: &F, r: &mut UserSliceReader) -> Result {
    let mut buf = [0u8; 64];
    let s = core::str::from_utf8(read_input(r, &mut buf)?).map_err(|_| EINVAL)?;
    let us = parse_number(s.trim()).map_err(|_| EINVAL)?;
    // fsleep() caps at i32::MAX microseconds; refuse what it would silently shorten.
    let us = u32::try_from(us)
        .ok()
        .filter(|&v| i32::try_from(v).is_ok())
        .ok_or(EINVAL)?;
    f.with_faults(|p| p.delay_us = us);
    Ok(())
}

fn write_clear(f: &F, r: &mut UserSliceReader) -> Result {
    let mut buf = [0u8; 64];
    read_input(r, &mut buf)?;
    f.with_faults(|p| p.clear());
    Ok(())
}
