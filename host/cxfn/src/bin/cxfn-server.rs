// SPDX-License-Identifier: GPL-2.0

//! `cxfn-server SOCKET [ib|eth|cx6dx]`: serves one emulated ConnectX PCI function to one
//! vfio-user client (QEMU's `-device vfio-user-pci,socket=...`) on a UNIX socket, until the
//! client disconnects. Messages are handled one at a time, in order
//! ([`rdma_rs_cxfn::vfio_user::Session`]); this file only moves bytes and file descriptors.

#![deny(warnings, rust_2018_idioms)]

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::process::ExitCode;

use rdma_rs_cxfn::vfio_user::{Header, Session, HDR, MAX_FDS, MAX_MSG};
use rdma_rs_cxfn::{CxFunction, Model};

/// Receives the 16-byte header with any `SCM_RIGHTS` descriptors attached to it (the client
/// sends a message's descriptors with its first bytes). `Ok(None)` at end of stream.
fn recv_header(sock: &UnixStream) -> std::io::Result<Option<([u8; HDR], Vec<OwnedFd>)>> {
    let mut hdr = [0u8; HDR];
    let mut iov = libc::iovec {
        iov_base: hdr.as_mut_ptr().cast(),
        iov_len: HDR,
    };
    // Room for MAX_FDS descriptors: CMSG_SPACE(MAX_FDS * sizeof(int)), aligned for cmsghdr.
    let mut cbuf = [0u64; 16];
    // SAFETY: CMSG_SPACE only computes a size from its argument.
    let cspace = unsafe { libc::CMSG_SPACE((MAX_FDS * std::mem::size_of::<i32>()) as u32) };
    assert!(cspace as usize <= std::mem::size_of_val(&cbuf));
    // SAFETY: an all-zero msghdr is a valid (empty) value; the fields are set below.
    let mut mh: libc::msghdr = unsafe { std::mem::zeroed() };
    mh.msg_iov = &mut iov;
    mh.msg_iovlen = 1;
    mh.msg_control = cbuf.as_mut_ptr().cast();
    mh.msg_controllen = cspace as usize;
    // SAFETY: `mh` points to `iov` (describing `hdr`, 16 writable bytes) and to `cbuf`
    // (`cspace` writable bytes), all alive for the call; MSG_WAITALL fills the header or
    // reports EOF/short read.
    let n = unsafe {
        libc::recvmsg(
            sock.as_raw_fd(),
            &mut mh,
            libc::MSG_WAITALL | libc::MSG_CMSG_CLOEXEC,
        )
    };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut fds = Vec::new();
    // SAFETY: CMSG_FIRSTHDR/CMSG_NXTHDR walk the control buffer the kernel filled, bounded by
    // `msg_controllen`; each SCM_RIGHTS payload holds `(cmsg_len - CMSG_LEN(0)) / 4` ints,
    // each a new descriptor owned by this process (received, so closing it is ours).
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&mh);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c).cast::<i32>();
                let n = ((*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize) / 4;
                for i in 0..n {
                    let fd = data.add(i).read_unaligned();
                    if fd >= 0 {
                        fds.push(OwnedFd::from_raw_fd(fd));
                    }
                }
            }
            c = libc::CMSG_NXTHDR(&mh, c);
        }
    }
    if n == 0 {
        return Ok(None);
    }
    if (n as usize) < HDR {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "short header",
        ));
    }
    Ok(Some((hdr, fds)))
}

/// Waits until `sock` has input, running the function's data path whenever it comes due
/// (retry deadlines, the periodic look at doorbell records while QPs exist) in between.
fn wait_input(sock: &UnixStream, session: &mut Session) -> std::io::Result<()> {
    while let Some(t) = session.datapath_timeout() {
        let ms = i32::try_from(t.as_micros().div_ceil(1000)).unwrap_or(i32::MAX);
        let mut pfd = libc::pollfd {
            fd: sock.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: `pfd` is one valid pollfd for the call; poll() only writes its `revents`.
        let n = unsafe { libc::poll(&mut pfd, 1, ms) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n > 0 {
            return Ok(());
        }
        session.poll_datapath();
    }
    Ok(())
}

fn serve(mut sock: UnixStream, session: &mut Session) -> std::io::Result<()> {
    let trace = std::env::var_os("CXFN_TRACE").is_some();
    loop {
        wait_input(&sock, session)?;
        let Some((hdr, fds)) = recv_header(&sock)? else {
            return Ok(());
        };
        let Some(h) = Header::parse(&hdr) else {
            return Ok(());
        };
        let size = h.size as usize;
        if !(HDR..=MAX_MSG).contains(&size) {
            eprintln!("cxfn-server: message of {size} bytes, closing");
            return Ok(());
        }
        let mut msg = hdr.to_vec();
        msg.resize(size, 0);
        sock.read_exact(&mut msg[HDR..])?;
        let nfds = fds.len();
        let reply = session.handle(&msg, fds);
        if trace {
            let err = reply
                .as_ref()
                .and_then(|r| Header::parse(&r.bytes))
                .map_or(0, |r| r.error);
            eprintln!(
                "cxfn-server: id {} cmd {} size {} fds {} -> error {}",
                h.id, h.command, size, nfds, err
            );
        }
        if let Some(r) = reply {
            sock.write_all(&r.bytes)?;
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), model) = (args.get(1), args.get(2).map(String::as_str)) else {
        eprintln!("usage: cxfn-server SOCKET [ib|eth|cx6dx]");
        return ExitCode::from(2);
    };
    let model = match model.unwrap_or("ib") {
        "ib" => Model::Cx7Ib,
        "eth" => Model::Cx7Eth,
        "cx6dx" => Model::Cx6DxEth,
        m => {
            eprintln!("cxfn-server: unknown model {m}");
            return ExitCode::from(2);
        }
    };
    let _ = std::fs::remove_file(path);
    let listener = match UnixListener::bind(path) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("cxfn-server: {path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!("cxfn-server: {model:?} on {path}");
    let sock = match listener.accept() {
        Ok((s, _)) => s,
        Err(e) => {
            eprintln!("cxfn-server: accept: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut session = Session::new(CxFunction::new(model, 1));
    let result = serve(sock, &mut session);
    // The firmware commands the guest's driver ran, in order.
    for c in session.device().command_log() {
        eprintln!(
            "cxfn-server: fw opcode {:#06x} op_mod {:#x} status {:#x} syndrome {:#x}",
            c.opcode, c.op_mod, c.status, c.syndrome
        );
    }
    eprintln!(
        "cxfn-server: firmware state {}, {} commands",
        session.device().lifecycle(),
        session.device().command_log().len()
    );
    let st = session.device().stats();
    eprintln!(
        "cxfn-server: data path: {} doorbells, {} WQEs, {} EQEs, {} EQE errors, {} interrupts",
        st.doorbells, st.wqes, st.eqes, st.eqe_errors, session.irqs_signalled
    );
    match result {
        Ok(()) => {
            eprintln!("cxfn-server: client gone");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("cxfn-server: {e}");
            ExitCode::FAILURE
        }
    }
}
