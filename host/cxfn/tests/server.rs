// SPDX-License-Identifier: GPL-2.0

//! `cxfn-server` over its UNIX socket: framing of requests and replies (VERSION, GET_INFO,
//! a config read), and a clean exit when the client goes away.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use rdma_rs_cxfn::vfio_user::{cmd, Header, HDR, REGION_CONFIG};

fn request(s: &mut UnixStream, id: u16, command: u16, body: &[u8]) -> (Header, Vec<u8>) {
    let h = Header {
        id,
        command,
        size: (HDR + body.len()) as u32,
        flags: 0,
        error: 0,
    };
    s.write_all(&h.bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut rh = [0u8; HDR];
    s.read_exact(&mut rh).unwrap();
    let r = Header::parse(&rh).unwrap();
    let mut p = vec![0u8; r.size as usize - HDR];
    s.read_exact(&mut p).unwrap();
    (r, p)
}

#[test]
fn serves_one_client_over_the_socket() {
    let dir = std::env::temp_dir().join(format!("cxfn-server-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("s");
    let mut child = Command::new(env!("CARGO_BIN_EXE_cxfn-server"))
        .arg(&sock)
        .arg("ib")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut s = None;
    for _ in 0..100 {
        if let Ok(c) = UnixStream::connect(&sock) {
            s = Some(c);
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut s = s.expect("server listening");
    let (h, p) = request(&mut s, 1, cmd::VERSION, &[0, 0, 0, 0]);
    assert_eq!((h.id, h.command, h.flags, h.error), (1, cmd::VERSION, 1, 0));
    assert!(p.len() > 4 && p.ends_with(&[0]));
    let (h, p) = request(
        &mut s,
        2,
        cmd::DEVICE_GET_INFO,
        &[16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    );
    assert_eq!((h.id, h.error, p.len()), (2, 0, 16));
    let mut rd = Vec::new();
    rd.extend_from_slice(&0u64.to_le_bytes());
    rd.extend_from_slice(&REGION_CONFIG.to_le_bytes());
    rd.extend_from_slice(&4u32.to_le_bytes());
    let (h, p) = request(&mut s, 3, cmd::REGION_READ, &rd);
    assert_eq!(h.error, 0);
    assert_eq!(&p[16..], &[0xb3, 0x15, 0x21, 0x10]);
    drop(s);
    let status = child.wait().unwrap();
    assert!(status.success());
    let _ = std::fs::remove_dir_all(&dir);
}
