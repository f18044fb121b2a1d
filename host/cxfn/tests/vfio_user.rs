// SPDX-License-Identifier: GPL-2.0

//! The vfio-user session as QEMU's client drives it: negotiation, device/region/IRQ info,
//! DMA_MAP of a file as guest RAM, config and BAR accesses, a command executed in guest memory
//! reached through the mapped file, an MSI-X eventfd, and malformed input.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileExt;

use rdma_rs_cxfn::vfio_user::{cmd, Header, Session, HDR, IRQ_MSIX, REGION_BAR0, REGION_CONFIG};
use rdma_rs_cxfn::{regs, CxFunction, Model};

const RAM: u64 = 0x1_0000_0000;
const RAM_LEN: u64 = 1 << 20;

fn tmpfile(name: &str, len: u64) -> File {
    let p = std::env::temp_dir().join(format!("cxfn-{}-{name}", std::process::id()));
    let f = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&p)
        .unwrap();
    std::fs::remove_file(&p).unwrap();
    f.set_len(len).unwrap();
    f
}

fn msg(id: u16, command: u16, flags: u32, body: &[u8]) -> Vec<u8> {
    let h = Header {
        id,
        command,
        size: (HDR + body.len()) as u32,
        flags,
        error: 0,
    };
    let mut m = h.bytes().to_vec();
    m.extend_from_slice(body);
    m
}

/// Sends and returns (reply header, payload).
fn call(s: &mut Session, command: u16, body: &[u8], fds: Vec<OwnedFd>) -> (Header, Vec<u8>) {
    let r = s.handle(&msg(7, command, 0, body), fds).expect("a reply");
    let h = Header::parse(&r.bytes).unwrap();
    assert_eq!((h.id, h.command, h.flags & 1), (7, command, 1));
    assert_eq!(h.size as usize, r.bytes.len());
    (h, r.bytes[HDR..].to_vec())
}

fn ok(s: &mut Session, command: u16, body: &[u8], fds: Vec<OwnedFd>) -> Vec<u8> {
    let (h, p) = call(s, command, body, fds);
    assert_eq!(
        h.flags & 0x20,
        0,
        "command {command} failed: errno {}",
        h.error
    );
    p
}

fn region_rw(region: u32, offset: u64, data: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&offset.to_le_bytes());
    b.extend_from_slice(&region.to_le_bytes());
    b.extend_from_slice(&(data.len() as u32).to_le_bytes());
    b.extend_from_slice(data);
    b
}

fn read_region(s: &mut Session, region: u32, offset: u64, n: u32) -> Vec<u8> {
    let mut b = region_rw(region, offset, &[]);
    b[12..16].copy_from_slice(&n.to_le_bytes());
    let p = ok(s, cmd::REGION_READ, &b, vec![]);
    p[16..].to_vec()
}

fn version(s: &mut Session) {
    let mut v = vec![0, 0, 1, 0];
    v.extend_from_slice(b"{\"capabilities\":{\"max_msg_fds\":16}}\0");
    let p = ok(s, cmd::VERSION, &v, vec![]);
    assert_eq!(&p[..4], &[0, 0, 0, 0]);
    let json = std::str::from_utf8(&p[4..p.len() - 1]).unwrap();
    assert!(json.contains("\"max_data_xfer_size\":1048576"), "{json}");
}

#[test]
fn qemu_style_session() {
    let mut s = Session::new(CxFunction::new(Model::Cx7Ib, 1));
    // Nothing before VERSION.
    let (h, _) = call(&mut s, cmd::DEVICE_GET_INFO, &[0; 16], vec![]);
    assert_eq!((h.flags & 0x20, h.error), (0x20, 22));
    version(&mut s);

    // Guest RAM: a file mapped at RAM (the VM's memfd in real use), at file offset 0x1000.
    let ram = tmpfile("ram", RAM_LEN + 0x1000);
    let mut map = Vec::new();
    map.extend_from_slice(&32u32.to_le_bytes());
    map.extend_from_slice(&3u32.to_le_bytes());
    map.extend_from_slice(&0x1000u64.to_le_bytes());
    map.extend_from_slice(&RAM.to_le_bytes());
    map.extend_from_slice(&RAM_LEN.to_le_bytes());
    ok(
        &mut s,
        cmd::DMA_MAP,
        &map,
        vec![OwnedFd::from(ram.try_clone().unwrap())],
    );
    // Overlapping map: EEXIST.
    let (h, _) = call(&mut s, cmd::DMA_MAP, &map, vec![]);
    assert_eq!(h.error, 17);

    let info = ok(
        &mut s,
        cmd::DEVICE_GET_INFO,
        &[16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        vec![],
    );
    assert_eq!(
        u32::from_le_bytes(info[4..8].try_into().unwrap()) & 2,
        2,
        "PCI"
    );
    assert_eq!(u32::from_le_bytes(info[8..12].try_into().unwrap()), 9);
    let mut ri = vec![0u8; 32];
    ri[0] = 32;
    let p = ok(&mut s, cmd::DEVICE_GET_REGION_INFO, &ri, vec![]);
    assert_eq!(
        u64::from_le_bytes(p[16..24].try_into().unwrap()),
        regs::BAR0_SIZE
    );
    ri[8] = REGION_CONFIG as u8;
    let p = ok(&mut s, cmd::DEVICE_GET_REGION_INFO, &ri, vec![]);
    assert_eq!(u64::from_le_bytes(p[16..24].try_into().unwrap()), 4096);
    let mut ii = vec![0u8; 16];
    ii[8] = IRQ_MSIX as u8;
    let p = ok(&mut s, cmd::DEVICE_GET_IRQ_INFO, &ii, vec![]);
    assert_eq!(
        u32::from_le_bytes(p[12..16].try_into().unwrap()),
        u32::from(regs::MSIX_VECTORS)
    );

    // Config space: the ids.
    assert_eq!(
        read_region(&mut s, REGION_CONFIG, 0, 4),
        vec![0xb3, 0x15, 0x21, 0x10]
    );
    // QEMU enables MSI-X first with vector 0's eventfd at -1 (no descriptor travels): accepted,
    // the vector has no eventfd yet.
    let mut none = Vec::new();
    for v in [20u32, 0x4 | 0x20, IRQ_MSIX, 0, 1] {
        none.extend_from_slice(&v.to_le_bytes());
    }
    ok(&mut s, cmd::DEVICE_SET_IRQS, &none, vec![]);
    // MSI-X vector 0 to an "eventfd" (a file here: the signal is an 8-byte write).
    let mut ev = tmpfile("ev", 0);
    let mut set = Vec::new();
    for v in [20u32, 0x4 | 0x20, IRQ_MSIX, 0, 1] {
        set.extend_from_slice(&v.to_le_bytes());
    }
    ok(
        &mut s,
        cmd::DEVICE_SET_IRQS,
        &set,
        vec![OwnedFd::from(ev.try_clone().unwrap())],
    );

    // BAR 0: firmware version, then a command in guest RAM (ENABLE_HCA, inline only).
    let fw = read_region(&mut s, REGION_BAR0, regs::FW_REV, 4);
    assert_eq!(u32::from_be_bytes(fw.try_into().unwrap()) & 0xffff, 28);
    let cmdq = RAM;
    ok(
        &mut s,
        cmd::REGION_WRITE,
        &region_rw(
            REGION_BAR0,
            regs::CMDQ_ADDR_H,
            &((cmdq >> 32) as u32).to_be_bytes(),
        ),
        vec![],
    );
    ok(
        &mut s,
        cmd::REGION_WRITE,
        &region_rw(
            REGION_BAR0,
            regs::CMDQ_ADDR_L_SZ,
            &(cmdq as u32).to_be_bytes(),
        ),
        vec![],
    );
    let mut lay = [0u8; 64];
    lay[0] = 7;
    lay[4..8].copy_from_slice(&16u32.to_be_bytes());
    lay[16..18].copy_from_slice(&0x104u16.to_be_bytes());
    lay[0x38..0x3c].copy_from_slice(&12u32.to_be_bytes());
    lay[0x3c] = 1;
    lay[0x3f] = 1;
    ram.write_all_at(&lay, 0x1000).unwrap();
    // Posted (no reply wanted), as QEMU sends BAR writes.
    let m = msg(
        9,
        cmd::REGION_WRITE,
        0x10,
        &region_rw(REGION_BAR0, regs::CMD_DBELL, &1u32.to_be_bytes()),
    );
    assert!(s.handle(&m, vec![]).is_none());
    let mut out = [0u8; 64];
    ram.read_exact_at(&mut out, 0x1000).unwrap();
    assert_eq!(out[0x3f], 0, "owner returned, delivery OK");
    assert_eq!(out[0x20], 0, "status OK");
    assert_eq!(s.device().lifecycle(), "enabled");
    // No command EQ yet: no interrupt.
    ev.seek(SeekFrom::Start(0)).unwrap();
    let mut b = Vec::new();
    ev.read_to_end(&mut b).unwrap();
    assert!(b.is_empty());
    // A client-triggered vector (DATA_NONE | TRIGGER) goes to the eventfd.
    let mut trig = Vec::new();
    for v in [20u32, 0x1 | 0x20, IRQ_MSIX, 0, 1] {
        trig.extend_from_slice(&v.to_le_bytes());
    }
    ok(&mut s, cmd::DEVICE_SET_IRQS, &trig, vec![]);
    assert_eq!(s.irqs_signalled, 1);

    // DMA_UNMAP must match exactly; then the RAM is unreachable for the device.
    let mut un = Vec::new();
    un.extend_from_slice(&24u32.to_le_bytes());
    un.extend_from_slice(&0u32.to_le_bytes());
    un.extend_from_slice(&RAM.to_le_bytes());
    un.extend_from_slice(&(RAM_LEN / 2).to_le_bytes());
    assert_eq!(call(&mut s, cmd::DMA_UNMAP, &un, vec![]).0.error, 2);
    un[16..24].copy_from_slice(&RAM_LEN.to_le_bytes());
    ok(&mut s, cmd::DMA_UNMAP, &un, vec![]);
}

#[test]
fn malformed_messages_get_errors() {
    let mut s = Session::new(CxFunction::new(Model::Cx7Ib, 1));
    // Too short for a header: dropped.
    assert!(s.handle(&[1, 2, 3], vec![]).is_none());
    // Major version 1 is refused.
    assert_eq!(
        call(&mut s, cmd::VERSION, &[1, 0, 0, 0], vec![]).0.error,
        22
    );
    version(&mut s);
    for (c, body) in [
        (cmd::DMA_MAP, vec![0u8; 8]),
        (cmd::DEVICE_GET_REGION_INFO, vec![0u8; 4]),
        (cmd::DEVICE_GET_IRQ_INFO, {
            let mut b = vec![0u8; 16];
            b[8] = 99;
            b
        }),
        (cmd::REGION_READ, region_rw(3, 0, &[])),
        (cmd::REGION_WRITE, {
            let mut b = region_rw(REGION_BAR0, 0, &[0; 4]);
            b[12..16].copy_from_slice(&1000u32.to_le_bytes());
            b
        }),
        (99, vec![]),
    ] {
        let (h, p) = call(&mut s, c, &body, vec![]);
        assert_eq!(h.flags & 0x20, 0x20, "command {c}");
        assert!(p.is_empty());
    }
    // A huge read count is refused, not allocated.
    let mut b = region_rw(REGION_BAR0, 0, &[]);
    b[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(call(&mut s, cmd::REGION_READ, &b, vec![]).0.error, 22);
    // SET_IRQS past the vectors.
    let mut set = Vec::new();
    for v in [20u32, 0x4 | 0x20, IRQ_MSIX, 15, 2] {
        set.extend_from_slice(&v.to_le_bytes());
    }
    assert_eq!(call(&mut s, cmd::DEVICE_SET_IRQS, &set, vec![]).0.error, 22);
}
