// SPDX-License-Identifier: GPL-2.0

//! The ucma mode (`-U`): random command sequences on `/dev/infiniband/rdma_cm`, written as
//! upstream's `write()` ABI (`struct rdma_ucm_cmd_hdr` and a command struct of
//! `include/uapi/rdma/rdma_user_cm.h`, whose sizes and offsets are written out here from the
//! header, independently of ours in `uverbs/ucma/abi.rs`). Two rdma_cm files (`O_NONBLOCK`)
//! and a file that is not one; ids, groups and their files tracked from the kernel's answers;
//! addresses named by role (`-a LOCAL,PEER,SILENT,UNROUTABLE,GROUP`), so a trace of ours
//! (10.66.0.x) and one of upstream's rxe (10.77.0.x) compare. Asynchronous results are made
//! deterministic by waiting: after a command that starts one (resolve, connect, accept,
//! reject, disconnect, join) the files are polled until an event came and the queues stayed
//! quiet for [`QUIET_MS`]; each event is traced with its type and status in the errno column.
//! A valid non-blocking `GET_EVENT` is not traced (whether an event is there is timing).

use std::collections::VecDeque;
use std::io::Write;

use crate::names::errno as ename;
use crate::rng::Rng;
use crate::stats::Stats;
use crate::sys;

const DEV: &str = "/dev/infiniband/rdma_cm";
/// How long the queues must stay quiet after an event before the sequence goes on.
const QUIET_MS: i32 = 400;
/// How long an asynchronous command's first event is waited for.
const FIRST_MS: i32 = 2000;
/// `timeout_ms` of the resolves: a silent neighbour's `ADDR_ERROR` comes after it.
const RESOLVE_MS: u32 = 300;
/// The most events taken in one go.
const MAX_DRAIN: usize = 64;
/// The most rounds of waiting for events after a command.
const MAX_ROUNDS: usize = 16;

const CREATE_ID: u32 = 0;
const DESTROY_ID: u32 = 1;
const BIND_IP: u32 = 2;
const RESOLVE_IP: u32 = 3;
const RESOLVE_ROUTE: u32 = 4;
const QUERY_ROUTE: u32 = 5;
const CONNECT: u32 = 6;
const LISTEN: u32 = 7;
const ACCEPT: u32 = 8;
const REJECT: u32 = 9;
const DISCONNECT: u32 = 10;
const INIT_QP_ATTR: u32 = 11;
const GET_EVENT: u32 = 12;
const SET_OPTION: u32 = 14;
const NOTIFY: u32 = 15;
const JOIN_IP_MCAST: u32 = 16;
const LEAVE_MCAST: u32 = 17;
const MIGRATE_ID: u32 = 18;
const QUERY: u32 = 19;
const BIND: u32 = 20;
const RESOLVE_ADDR: u32 = 21;
const JOIN_MCAST: u32 = 22;

const CMD_NAMES: [&str; 25] = [
    "CREATE_ID",
    "DESTROY_ID",
    "BIND_IP",
    "RESOLVE_IP",
    "RESOLVE_ROUTE",
    "QUERY_ROUTE",
    "CONNECT",
    "LISTEN",
    "ACCEPT",
    "REJECT",
    "DISCONNECT",
    "INIT_QP_ATTR",
    "GET_EVENT",
    "GET_OPTION",
    "SET_OPTION",
    "NOTIFY",
    "JOIN_IP_MCAST",
    "LEAVE_MCAST",
    "MIGRATE_ID",
    "QUERY",
    "BIND",
    "RESOLVE_ADDR",
    "JOIN_MCAST",
    "RESOLVE_IB_SERVICE",
    "WRITE_CM_EVENT",
];

const EVENT_NAMES: [&str; 16] = [
    "ADDR_RESOLVED",
    "ADDR_ERROR",
    "ROUTE_RESOLVED",
    "ROUTE_ERROR",
    "CONNECT_REQUEST",
    "CONNECT_RESPONSE",
    "CONNECT_ERROR",
    "UNREACHABLE",
    "REJECTED",
    "ESTABLISHED",
    "DISCONNECTED",
    "DEVICE_REMOVAL",
    "MULTICAST_JOIN",
    "MULTICAST_ERROR",
    "ADDR_CHANGE",
    "TIMEWAIT_EXIT",
];

/// `sizeof(struct rdma_ucm_conn_param)`.
const CONN_PARAM: usize = 4 + 4 + 256 + 8;
/// `sizeof(struct rdma_ucm_event_resp)`.
const EVENT_RESP: usize = 8 + 4 + 4 + 4 + 304 + 4 + 8;
/// `sizeof(struct rdma_ucm_query_route_resp)`.
const QUERY_ROUTE_RESP: usize = 8 + 2 * 64 + 28 + 28 + 4 + 4 + 4 + 4;
/// `sizeof(struct rdma_ucm_query_addr_resp)`.
const QUERY_ADDR_RESP: usize = 8 + 1 + 1 + 2 + 2 + 2 + 128 + 128 + 4 + 4;
/// `sizeof(struct ib_uverbs_qp_attr)`.
const QP_ATTR: usize = 144;

/// `sizeof` each command's struct (what upstream copies from behind the header).
fn size(cmd: u32) -> usize {
    match cmd {
        CREATE_ID => 24,
        DESTROY_ID | LEAVE_MCAST | QUERY_ROUTE | QUERY | INIT_QP_ATTR | MIGRATE_ID => 16,
        BIND_IP => 8 + 28 + 4,
        RESOLVE_IP => 28 + 28 + 4 + 4,
        RESOLVE_ROUTE | LISTEN | NOTIFY | GET_EVENT => 8,
        CONNECT => CONN_PARAM + 4 + 4 + 8,
        ACCEPT => 8 + CONN_PARAM + 4 + 4 + 8,
        REJECT => 4 + 4 + 256,
        DISCONNECT => 4,
        SET_OPTION => 24,
        JOIN_IP_MCAST => 8 + 8 + 28 + 4,
        BIND => 4 + 2 + 2 + 128,
        RESOLVE_ADDR => 4 + 4 + 2 + 2 + 4 + 128 + 128,
        JOIN_MCAST => 8 + 8 + 4 + 2 + 2 + 128,
        _ => 320,
    }
}

/// An id the fuzzer made or was given by a connection request.
struct Id {
    ctx: u32,
    file: usize,
    live: bool,
    ps: u16,
    /// Its route resolved (a connect has a chance).
    routed: bool,
    /// A connection request's id or one with a `CONNECT_RESPONSE` (an accept has one).
    answerable: bool,
}

struct Mc {
    num: u32,
    /// The id's slot.
    id: usize,
    file: usize,
    live: bool,
}

/// A command body under construction.
struct Body(Vec<u8>);

impl Body {
    fn new(cmd: u32) -> Self {
        Body(vec![0; size(cmd)])
    }
    fn u8(&mut self, off: usize, v: u8) {
        self.0[off] = v;
    }
    fn u16(&mut self, off: usize, v: u16) {
        self.0[off..off + 2].copy_from_slice(&v.to_ne_bytes());
    }
    fn u32(&mut self, off: usize, v: u32) {
        self.0[off..off + 4].copy_from_slice(&v.to_ne_bytes());
    }
    fn u64(&mut self, off: usize, v: u64) {
        self.0[off..off + 8].copy_from_slice(&v.to_ne_bytes());
    }
    fn put(&mut self, off: usize, b: &[u8]) {
        self.0[off..off + b.len()].copy_from_slice(b);
    }
}

/// An address by role: (trace name, sockaddr bytes without the port).
#[derive(Clone, Copy)]
enum Addr {
    V4([u8; 4]),
    V6([u8; 16]),
}

/// `struct sockaddr_in` or `sockaddr_in6` of `a` with `port`.
fn sockaddr(a: Addr, port: u16) -> Vec<u8> {
    match a {
        Addr::V4(ip) => {
            let mut s = vec![0u8; 16];
            s[..2].copy_from_slice(&2u16.to_ne_bytes());
            s[2..4].copy_from_slice(&port.to_be_bytes());
            s[4..8].copy_from_slice(&ip);
            s
        }
        Addr::V6(ip) => {
            let mut s = vec![0u8; 28];
            s[..2].copy_from_slice(&10u16.to_ne_bytes());
            s[2..4].copy_from_slice(&port.to_be_bytes());
            s[8..24].copy_from_slice(&ip);
            s
        }
    }
}

/// The ucma fuzzer's state.
pub(crate) struct Ucma {
    rng: Rng,
    dev: String,
    /// Rounds of waiting for events after a command ([`MAX_ROUNDS`]).
    rounds: usize,
    files: [i32; 2],
    null_fd: i32,
    ids: Vec<Id>,
    mcs: Vec<Mc>,
    /// LOCAL, PEER, SILENT, UNROUTABLE, GROUP.
    addrs: [[u8; 4]; 5],
    resp: Vec<u8>,
    pub(crate) trace: Option<std::fs::File>,
    pub(crate) verbose: bool,
    pub(crate) stats: Stats,
    pub(crate) step_no: u64,
    call_no: u32,
    pub(crate) ring: VecDeque<String>,
}

const ADDR_NAMES: [&str; 9] = [
    "local",
    "peer",
    "silent",
    "unroutable",
    "group",
    "any",
    "loopback",
    "any6",
    "loopback6",
];

impl Ucma {
    /// `addrs`: LOCAL, PEER, SILENT, UNROUTABLE, GROUP (IPv4).
    pub(crate) fn new(seed: u64, addrs: [[u8; 4]; 5]) -> Result<Self, String> {
        Self::on(seed, addrs, DEV)
    }

    /// The fuzzer on `dev` (the tests use a file that takes every write).
    fn on(seed: u64, addrs: [[u8; 4]; 5], dev: &str) -> Result<Self, String> {
        let open = || sys::open_nonblock(dev).map_err(|e| format!("{dev}: {}", ename(e)));
        let files = [open()?, open()?];
        let null_fd = sys::open_rdwr("/dev/null").map_err(|e| format!("/dev/null: {e}"))?;
        Ok(Self {
            rng: Rng::new(seed),
            dev: dev.to_string(),
            rounds: MAX_ROUNDS,
            files,
            null_fd,
            ids: Vec::new(),
            mcs: Vec::new(),
            addrs,
            resp: vec![0; 4096],
            trace: None,
            verbose: false,
            stats: Stats::default(),
            step_no: 0,
            call_no: 0,
            ring: VecDeque::new(),
        })
    }

    fn addr(&self, i: usize) -> Addr {
        match i {
            0..=4 => Addr::V4(self.addrs[i]),
            5 => Addr::V4([0; 4]),
            6 => Addr::V4([127, 0, 0, 1]),
            7 => Addr::V6([0; 16]),
            _ => {
                let mut a = [0u8; 16];
                a[15] = 1;
                Addr::V6(a)
            }
        }
    }

    /// An address and a port: two draws.
    fn pick_addr(&mut self) -> (Vec<u8>, String) {
        let a = self.rng.below(16);
        let p = self.rng.below(4);
        // Mostly the device's own and the peer's.
        let i = match a {
            0..=4 => 0,
            5..=8 => 1,
            9 => 2,
            10 => 3,
            11 => 4,
            12 => 5,
            13 => 6,
            14 => 7,
            _ => 8,
        };
        let port = [0u16, 7471, 7472, 80][p];
        (
            sockaddr(self.addr(i), port),
            format!("{}:{port}", ADDR_NAMES[i]),
        )
    }

    /// A file: one draw.
    fn pick_file(&mut self) -> usize {
        self.rng.below(2)
    }

    /// How the fuzzer's books see context number `n` from `file`.
    fn class(&self, n: u32, file: usize) -> String {
        match self.ids.iter().position(|i| i.live && i.ctx == n) {
            Some(k) if self.ids[k].file == file => format!("id{k}"),
            Some(_) => "otherfile".into(),
            None => "none".into(),
        }
    }

    /// An id number for a command on `file`, with `pref` a filter of the ids it prefers:
    /// three draws.
    fn pick_id(&mut self, file: usize, pref: fn(&Id) -> bool) -> (u32, String) {
        let a = self.rng.below(8);
        let b = self.rng.below(1 << 20);
        let c = self.rng.below(1 << 20);
        let own: Vec<u32> = self
            .ids
            .iter()
            .filter(|i| i.live && i.file == file)
            .map(|i| i.ctx)
            .collect();
        let preferred: Vec<u32> = self
            .ids
            .iter()
            .filter(|i| i.live && i.file == file && pref(i))
            .map(|i| i.ctx)
            .collect();
        let n = if a < 3 && !preferred.is_empty() {
            preferred[b % preferred.len()]
        } else if a < 6 && !own.is_empty() {
            own[b % own.len()]
        } else {
            // Any id ever made (live, destroyed, the other file's) or a number never given.
            let k = c % (self.ids.len() + 3);
            match self.ids.get(k) {
                Some(i) => i.ctx,
                None => [4096, 0x7fff_ffff, 0xffff_ffff][k - self.ids.len()],
            }
        };
        (n, self.class(n, file))
    }

    fn record(&mut self, key: &str, e: i32, desc: &str, traced: bool) {
        self.stats.record(key, e);
        let line = format!("{}.{}\t{}\t{desc}", self.step_no, self.call_no, ename(e));
        self.call_no += 1;
        if self.ring.len() == 64 {
            self.ring.pop_front();
        }
        self.ring.push_back(line.clone());
        if traced {
            if let Some(t) = self.trace.as_mut() {
                let _ = writeln!(t, "{line}");
            }
        }
    }

    /// Header mutations: one draw. (len, in, out, description).
    fn hdr(&mut self, cmd: u32, out: usize) -> (usize, usize, usize, &'static str) {
        let n = size(cmd);
        match self.rng.below(24) {
            0 => (3, n, out, " short write 3"),
            1 => (8 + n, n + 1, out, " in past the write"),
            2 => (8 + n, n, 0, " out 0"),
            3 => (8 + n, 0, out, " in 0"),
            4 => (8 + n + 16, n + 16, out, " long write"),
            _ => (8 + n, n, out, ""),
        }
    }

    /// Writes `cmd` with `body` to file `f`; the errno.
    fn send(&mut self, f: usize, cmd: u32, body: &Body, out: usize, desc: &str) -> i32 {
        let (len, inl, outl, m) = self.hdr(cmd, out);
        let mut buf = Vec::with_capacity(8 + body.0.len() + 16);
        buf.extend_from_slice(&cmd.to_ne_bytes());
        buf.extend_from_slice(&(inl as u16).to_ne_bytes());
        buf.extend_from_slice(&(outl as u16).to_ne_bytes());
        buf.extend_from_slice(&body.0);
        buf.resize(8 + body.0.len() + 16, 0);
        let name = CMD_NAMES[cmd as usize];
        let d = format!("ucma {name} file{f} {desc}{m}");
        if self.verbose {
            println!("ucma| {}.{} {d}", self.step_no, self.call_no);
        }
        self.resp.iter_mut().for_each(|b| *b = 0);
        let e = sys::write_buf(self.files[f], &buf[..len.min(buf.len())]);
        self.record(&format!("ucma {name}"), e, &d, true);
        e
    }

    fn resp_ptr(&self) -> u64 {
        self.resp.as_ptr() as u64
    }

    fn resp_u32(&self, off: usize) -> u32 {
        u32::from_ne_bytes([
            self.resp[off],
            self.resp[off + 1],
            self.resp[off + 2],
            self.resp[off + 3],
        ])
    }

    /// A response pointer: the buffer, or (one in 16) an unmapped low address. One draw.
    fn pick_resp(&mut self) -> (u64, &'static str) {
        if self.rng.below(16) == 0 {
            (8, " response 0x8")
        } else {
            (self.resp_ptr(), "")
        }
    }

    /// Marks the ids of `file` and their groups destroyed (the file closed).
    fn file_closed(&mut self, file: usize) {
        for i in self.ids.iter_mut().filter(|i| i.file == file) {
            i.live = false;
        }
        for m in self.mcs.iter_mut().filter(|m| m.file == file) {
            m.live = false;
        }
    }

    fn id_slot(&self, ctx: u32) -> Option<usize> {
        self.ids.iter().position(|i| i.live && i.ctx == ctx)
    }

    /// Takes the events queued on file `f` (non-blocking GET_EVENT until `EAGAIN`, at most
    /// [`MAX_DRAIN`]), each traced; returns how many.
    fn drain(&mut self, f: usize) -> usize {
        let mut n = 0;
        while n < MAX_DRAIN {
            let mut b = Body::new(GET_EVENT);
            b.u64(0, self.resp_ptr());
            let mut buf = Vec::with_capacity(16);
            buf.extend_from_slice(&GET_EVENT.to_ne_bytes());
            buf.extend_from_slice(&8u16.to_ne_bytes());
            buf.extend_from_slice(&(EVENT_RESP as u16).to_ne_bytes());
            buf.extend_from_slice(&b.0);
            self.resp[..EVENT_RESP].iter_mut().for_each(|b| *b = 0);
            if sys::write_buf(self.files[f], &buf) != 0 {
                return n;
            }
            n += 1;
            self.event(f);
        }
        n
    }

    /// Books and traces the event in the response buffer, taken from file `f`.
    fn event(&mut self, f: usize) {
        let uid = u64::from(self.resp_u32(0)) | (u64::from(self.resp_u32(4)) << 32);
        let (ctx, ev, status) = (self.resp_u32(8), self.resp_u32(12), self.resp_u32(16));
        let name = EVENT_NAMES.get(ev as usize).copied().unwrap_or("EVENT?");
        let who = if (1..=self.ids.len() as u64).contains(&uid) {
            format!("id{}", uid - 1)
        } else if (0x10000..0x10000 + self.mcs.len() as u64).contains(&uid) {
            format!("mc{}", uid - 0x10000)
        } else {
            "uid?".into()
        };
        let mut d = format!("ucma event file{f} {who}");
        match ev {
            4 => {
                let ps = (uid as usize)
                    .checked_sub(1)
                    .and_then(|k| self.ids.get(k))
                    .map_or(0, |i| i.ps);
                d += &format!(" new id{}", self.ids.len());
                self.ids.push(Id {
                    ctx,
                    file: f,
                    live: true,
                    ps,
                    routed: false,
                    answerable: true,
                });
            }
            2 | 5 => {
                if let Some(k) = self.id_slot(ctx) {
                    if ev == 2 {
                        self.ids[k].routed = true;
                    } else {
                        self.ids[k].answerable = true;
                    }
                }
            }
            _ => {}
        }
        if self.verbose {
            println!(
                "ucma| {}.{} {d}: {name} {}",
                self.step_no, self.call_no, status as i32
            );
        }
        let line = format!(
            "{}.{}\t{name}/{}\t{d}",
            self.step_no, self.call_no, status as i32
        );
        self.call_no += 1;
        self.stats.record(&format!("ucma event {name}"), 0);
        if self.ring.len() == 64 {
            self.ring.pop_front();
        }
        self.ring.push_back(line.clone());
        // TIMEWAIT_EXIT comes when the CM's timewait ends: its time is each stack's.
        if ev != 15 {
            if let Some(t) = self.trace.as_mut() {
                let _ = writeln!(t, "{line}");
            }
        }
    }

    /// Waits for the events of an asynchronous command: the first within [`FIRST_MS`], then
    /// until the files stayed quiet for [`QUIET_MS`].
    fn settle(&mut self) {
        let mut wait = FIRST_MS;
        for _ in 0..self.rounds {
            let ready = sys::poll_in(&self.files, wait);
            if !ready.iter().any(|r| *r) {
                return;
            }
            for (f, r) in ready.into_iter().enumerate() {
                if r {
                    self.drain(f);
                }
            }
            wait = QUIET_MS;
        }
    }

    /// One step of the sequence.
    pub(crate) fn step(&mut self) {
        self.step_no += 1;
        self.call_no = 0;
        let w = self.rng.below(100);
        let f = self.pick_file();
        match w {
            0..=9 => self.create_id(f),
            10..=14 => self.destroy_id(f),
            15..=22 => self.bind(f),
            23..=32 => self.resolve_addr(f),
            33..=38 => self.resolve_route(f),
            39..=44 => self.query(f),
            45..=49 => self.listen(f),
            50..=54 => self.set_option(f),
            55..=56 => self.notify(f),
            57..=60 => self.get_event(f),
            61..=64 => self.init_qp_attr(f),
            65..=70 => self.join_leave(f),
            71..=74 => self.migrate(f),
            75..=80 => self.connect(f),
            81..=85 => self.accept(f),
            86..=88 => self.reject(f),
            89..=91 => self.disconnect(f),
            92..=93 => self.reopen(f),
            _ => self.malformed(f),
        }
    }

    fn create_id(&mut self, f: usize) {
        let (ps, qpt, pd) = match self.rng.below(8) {
            0..=3 => (0x106u16, 0u8, "TCP"),
            4 | 5 => (0x111, 0, "UDP"),
            6 => (0x2, 0, "IPOIB"),
            _ => (0x999, 0, "ps 0x999"),
        };
        let (resp, rd) = self.pick_resp();
        let mut b = Body::new(CREATE_ID);
        b.u64(0, self.ids.len() as u64 + 1);
        b.u64(8, resp);
        b.u16(16, ps);
        b.u8(18, qpt);
        if self.send(f, CREATE_ID, &b, 4, &format!("{pd}{rd}")) == 0 && resp == self.resp_ptr() {
            self.ids.push(Id {
                ctx: self.resp_u32(0),
                file: f,
                live: true,
                ps,
                routed: false,
                answerable: false,
            });
        }
    }

    fn destroy_id(&mut self, f: usize) {
        let (id, d) = self.pick_id(f, |_| true);
        let (resp, rd) = self.pick_resp();
        let mut b = Body::new(DESTROY_ID);
        b.u64(0, resp);
        b.u32(8, id);
        // upstream destroys the id before copying the response: it is gone either way.
        let e = self.send(f, DESTROY_ID, &b, 4, &format!("{d}{rd}"));
        if e == 0 || e == 14 {
            if let Some(k) = self.id_slot(id).filter(|k| self.ids[*k].file == f) {
                self.ids[k].live = false;
                for m in self.mcs.iter_mut().filter(|m| m.id == k) {
                    m.live = false;
                }
            }
        }
    }

    fn bind(&mut self, f: usize) {
        let (id, d) = self.pick_id(f, |_| true);
        let (sa, ad) = self.pick_addr();
        let m = self.rng.below(12);
        if self.rng.below(2) == 0 {
            let mut b = Body::new(BIND_IP);
            b.put(8, &sa);
            b.u32(36, id);
            self.send(f, BIND_IP, &b, 0, &format!("{d} {ad}"));
        } else {
            let mut b = Body::new(BIND);
            b.u32(0, id);
            let (sz, md) = match m {
                0 => (sa.len() as u16 + 1, " addr_size+1"),
                1 => (0, " addr_size 0"),
                _ => (sa.len() as u16, ""),
            };
            b.u16(4, sz);
            if m == 2 {
                b.u16(6, 1);
            }
            b.put(8, &sa);
            let md = if m == 2 { " reserved 1" } else { md };
            self.send(f, BIND, &b, 0, &format!("{d} {ad}{md}"));
        }
    }

    fn resolve_addr(&mut self, f: usize) {
        let (id, d) = self.pick_id(f, |i| !i.routed);
        let (dst, dd) = self.pick_addr();
        let s = self.rng.below(4);
        let (src, sd) = match s {
            0 | 1 => (Vec::new(), "none".to_string()),
            2 => (sockaddr(self.addr(0), 0), "local:0".to_string()),
            _ => (sockaddr(self.addr(5), 0), "any:0".to_string()),
        };
        let m = self.rng.below(12);
        let e = if self.rng.below(2) == 0 {
            let mut b = Body::new(RESOLVE_IP);
            b.put(0, &src);
            b.put(28, &dst);
            b.u32(56, id);
            b.u32(60, RESOLVE_MS);
            self.send(f, RESOLVE_IP, &b, 0, &format!("{d} {sd} -> {dd}"))
        } else {
            let mut b = Body::new(RESOLVE_ADDR);
            b.u32(0, id);
            b.u32(4, RESOLVE_MS);
            b.u16(8, src.len() as u16);
            let (dsz, md) = match m {
                0 => (dst.len() as u16 + 4, " dst_size+4"),
                1 => (0, " dst_size 0"),
                _ => (dst.len() as u16, ""),
            };
            b.u16(10, dsz);
            if m == 2 {
                b.u32(12, 1);
            }
            b.put(16, &src);
            b.put(144, &dst);
            let md = if m == 2 { " reserved 1" } else { md };
            self.send(f, RESOLVE_ADDR, &b, 0, &format!("{d} {sd} -> {dd}{md}"))
        };
        if e == 0 {
            self.settle();
        }
    }

    fn resolve_route(&mut self, f: usize) {
        let (id, d) = self.pick_id(f, |i| !i.routed);
        let mut b = Body::new(RESOLVE_ROUTE);
        b.u32(0, id);
        b.u32(4, RESOLVE_MS);
        if self.send(f, RESOLVE_ROUTE, &b, 0, &d) == 0 {
            self.settle();
        }
    }

    fn query(&mut self, f: usize) {
        let (id, d) = self.pick_id(f, |_| true);
        let (resp, rd) = self.pick_resp();
        let opt = self.rng.below(5);
        let small = self.rng.below(6) == 0;
        let mut b = Body::new(QUERY);
        b.u64(0, resp);
        b.u32(8, id);
        if opt == 4 {
            let out = if small { 4 } else { QUERY_ROUTE_RESP };
            self.send(f, QUERY_ROUTE, &b, out, &format!("{d} out {out}{rd}"));
            return;
        }
        let (o, od) = [(0u32, "ADDR"), (1, "PATH"), (2, "GID"), (7, "option 7")][opt];
        b.u32(12, o);
        let out = if small { 4 } else { QUERY_ADDR_RESP };
        self.send(f, QUERY, &b, out, &format!("{d} {od} out {out}{rd}"));
    }

    fn listen(&mut self, f: usize) {
        let (id, d) = self.pick_id(f, |_| true);
        let bl = [0u32, 1, 8, 5000][self.rng.below(4)];
        let mut b = Body::new(LISTEN);
        b.u32(0, id);
        b.u32(4, bl);
        self.send(f, LISTEN, &b, 0, &format!("{d} backlog {bl}"));
    }

    fn set_option(&mut self, f: usize) {
        let (id, d) = self.pick_id(f, |_| true);
        let (level, name, len, od) = [
            (0u32, 0u32, 1u32, "TOS"),
            (0, 1, 4, "REUSEADDR"),
            (0, 2, 4, "AFONLY"),
            (0, 3, 1, "ACK_TIMEOUT"),
            (0, 99, 4, "ID name 99"),
            (7, 0, 4, "level 7"),
        ][self.rng.below(6)];
        let wrong = self.rng.below(6) == 0;
        let v = [0u8, 1, 0xff][self.rng.below(3)];
        let len = if wrong { len + 1 } else { len };
        let mut val = [0u8; 8];
        val[0] = v;
        let mut b = Body::new(SET_OPTION);
        b.u64(0, val.as_ptr() as u64);
        b.u32(8, id);
        b.u32(12, level);
        b.u32(16, name);
        b.u32(20, len);
        self.send(
            f,
            SET_OPTION,
            &b,
            0,
            &format!("{d} {od} len {len} value {v}"),
        );
    }

    fn notify(&mut self, f: usize) {
        let (id, d) = self.pick_id(f, |i| i.answerable || i.routed);
        // IB_EVENT_CQ_ERR, IB_EVENT_COMM_EST, IB_EVENT_PATH_MIG.
        let ev = [0u32, 0, 4, 6][self.rng.below(4)];
        let mut b = Body::new(NOTIFY);
        b.u32(0, id);
        b.u32(4, ev);
        self.send(f, NOTIFY, &b, 0, &format!("{d} event {ev}"));
    }

    fn get_event(&mut self, f: usize) {
        if self.rng.below(4) == 0 {
            let mut b = Body::new(GET_EVENT);
            b.u64(0, self.resp_ptr());
            self.send(f, GET_EVENT, &b, 16, "out 16");
        } else {
            self.drain(f);
        }
    }

    fn init_qp_attr(&mut self, f: usize) {
        let (id, d) = self.pick_id(f, |i| i.routed || i.answerable);
        let st = [0u32, 1, 2, 3, 4, 6, 9][self.rng.below(7)];
        let small = self.rng.below(8) == 0;
        let out = if small { 4 } else { QP_ATTR };
        let mut b = Body::new(INIT_QP_ATTR);
        b.u64(0, self.resp_ptr());
        b.u32(8, id);
        b.u32(12, st);
        self.send(
            f,
            INIT_QP_ATTR,
            &b,
            out,
            &format!("{d} state {st} out {out}"),
        );
    }

    fn join_leave(&mut self, f: usize) {
        let (id, d) = self.pick_id(f, |i| i.ps == 0x111);
        let a = self.rng.below(8);
        let fl = self.rng.below(8);
        let k = self.rng.below(1 << 20);
        match self.rng.below(3) {
            0 => {
                // LEAVE_MCAST of a group ever joined or a number never given.
                let n = match self.mcs.get(k % (self.mcs.len() + 1)) {
                    Some(m) => m.num,
                    None => 4096,
                };
                let md = match self.mcs.iter().position(|m| m.live && m.num == n) {
                    Some(j) if self.mcs[j].file == f => format!("mc{j}"),
                    Some(_) => "otherfile".into(),
                    None => "none".into(),
                };
                let mut b = Body::new(LEAVE_MCAST);
                b.u64(0, self.resp_ptr());
                b.u32(8, n);
                if self.send(f, LEAVE_MCAST, &b, 4, &md) == 0 {
                    if let Some(j) = self.mcs.iter().position(|m| m.live && m.num == n) {
                        self.mcs[j].live = false;
                    }
                }
            }
            j => {
                let (ai, ad) = match a {
                    0..=4 => (4, "group"),
                    5 => (0, "local"),
                    6 => (5, "any"),
                    _ => (7, "any6"),
                };
                let sa = sockaddr(self.addr(ai), 0);
                let uid = 0x10000 + self.mcs.len() as u64;
                let (flags, fd) = match fl {
                    0..=5 => (0u16, ""),
                    6 => (1, " sendonly"),
                    _ => (2, " flags 2"),
                };
                let e = if j == 1 {
                    let mut b = Body::new(JOIN_IP_MCAST);
                    b.u64(0, self.resp_ptr());
                    b.u64(8, uid);
                    b.put(16, &sa);
                    b.u32(44, id);
                    self.send(f, JOIN_IP_MCAST, &b, 4, &format!("{d} {ad}"))
                } else {
                    let mut b = Body::new(JOIN_MCAST);
                    b.u64(0, self.resp_ptr());
                    b.u64(8, uid);
                    b.u32(16, id);
                    b.u16(20, sa.len() as u16);
                    b.u16(22, flags);
                    b.put(24, &sa);
                    self.send(f, JOIN_MCAST, &b, 4, &format!("{d} {ad}{fd}"))
                };
                if let (0, Some(k)) = (e, self.id_slot(id)) {
                    let num = self.resp_u32(0);
                    self.mcs.push(Mc {
                        num,
                        id: k,
                        file: f,
                        live: true,
                    });
                    self.settle();
                }
            }
        }
    }

    fn migrate(&mut self, f: usize) {
        let src = 1 - f;
        let (fd, fdd) = match self.rng.below(6) {
            0..=2 => (self.files[src], "fd other"),
            3 => (self.files[f], "fd self"),
            4 => (self.null_fd, "fd /dev/null"),
            _ => (9999, "fd 9999"),
        };
        let from = if fd == self.files[f] { f } else { src };
        let (id, d) = self.pick_id(from, |_| true);
        let mut b = Body::new(MIGRATE_ID);
        b.u64(0, self.resp_ptr());
        b.u32(8, id);
        b.u32(12, fd as u32);
        if self.send(f, MIGRATE_ID, &b, 4, &format!("{d} {fdd}")) == 0 {
            if let Some(k) = self.id_slot(id) {
                self.ids[k].file = f;
                for m in self.mcs.iter_mut().filter(|m| m.id == k) {
                    m.file = f;
                }
            }
        }
    }

    /// A `struct rdma_ucm_conn_param` at `off`: valid unless `invalid`.
    fn conn_param(&mut self, b: &mut Body, off: usize, qpn: u32, invalid: bool) {
        let pdl = [0u8, 8, 56][self.rng.below(3)];
        b.u32(off, qpn);
        b.u32(off + 4, 0x1111_1111);
        for i in 0..usize::from(pdl) {
            b.u8(off + 8 + i, i as u8);
        }
        b.u8(off + 264, pdl);
        b.u8(off + 266, 1);
        b.u8(off + 267, 1);
        b.u8(off + 269, 7);
        b.u8(off + 270, 7);
        b.u8(off + 271, u8::from(!invalid));
    }

    fn connect(&mut self, f: usize) {
        let (id, d) = self.pick_id(f, |i| i.routed);
        let invalid = self.rng.below(10) == 0;
        let mut b = Body::new(CONNECT);
        self.conn_param(&mut b, 0, 0x100 + self.step_no as u32 % 0x1000, invalid);
        b.u32(CONN_PARAM, id);
        let md = if invalid { " valid 0" } else { "" };
        if self.send(f, CONNECT, &b, 0, &format!("{d}{md}")) == 0 {
            self.settle();
        }
    }

    fn accept(&mut self, f: usize) {
        let (id, d) = self.pick_id(f, |i| i.answerable);
        let invalid = self.rng.below(10) == 0;
        let mut b = Body::new(ACCEPT);
        let uid = self.id_slot(id).map_or(0, |k| k as u64 + 1);
        b.u64(0, uid);
        self.conn_param(&mut b, 8, 0x2000 + self.step_no as u32 % 0x1000, invalid);
        b.u32(8 + CONN_PARAM, id);
        let md = if invalid { " valid 0" } else { "" };
        if self.send(f, ACCEPT, &b, 0, &format!("{d}{md}")) == 0 {
            self.settle();
        }
    }

    fn reject(&mut self, f: usize) {
        let (id, d) = self.pick_id(f, |i| i.answerable);
        let reason = [0u8, 28, 35, 5][self.rng.below(4)];
        let pdl = [0u8, 16, 255][self.rng.below(3)];
        let mut b = Body::new(REJECT);
        b.u32(0, id);
        b.u8(4, pdl);
        b.u8(5, reason);
        if self.send(f, REJECT, &b, 0, &format!("{d} reason {reason} len {pdl}")) == 0 {
            self.settle();
        }
    }

    fn disconnect(&mut self, f: usize) {
        let (id, d) = self.pick_id(f, |i| i.answerable || i.routed);
        let mut b = Body::new(DISCONNECT);
        b.u32(0, id);
        if self.send(f, DISCONNECT, &b, 0, &d) == 0 {
            self.settle();
        }
    }

    /// Closes file `f` (every id of it destroyed) and opens it again.
    fn reopen(&mut self, f: usize) {
        let e = sys::close_fd(self.files[f]);
        self.record("close", e, &format!("ucma close file{f}"), true);
        self.file_closed(f);
        match sys::open_nonblock(&self.dev) {
            Ok(fd) => {
                self.files[f] = fd;
                self.record("open", 0, &format!("ucma open file{f}"), true);
            }
            Err(e) => {
                self.record("open", e, &format!("ucma open file{f}"), true);
                // Nothing to fuzz on without the file.
                println!("ucma: reopening {} failed: {}", self.dev, ename(e));
                std::process::exit(1);
            }
        }
    }

    /// A header nobody sends: an unknown or unimplemented command, the header alone with
    /// 0xff behind it, a write from an unmapped address.
    fn malformed(&mut self, f: usize) {
        let k = self.rng.below(8);
        let c = self.rng.below(23) as u32;
        let (id, idd) = self.pick_id(f, |_| true);
        let ev = [18u32, 19, 0][self.rng.below(3)];
        let (cmd, len, d): (u32, usize, String) = match k {
            0 => (25, 8 + 64, "cmd 25".into()),
            1 => (0x7fff_ffff, 8 + 64, "cmd 0x7fffffff".into()),
            2 => (13, 8 + 24, "GET_OPTION".into()),
            3 => (23, 8 + 88, format!("RESOLVE_IB_SERVICE {idd}")),
            4 => (24, 8 + 320, format!("WRITE_CM_EVENT {idd} event {ev}")),
            5 | 6 => (
                c,
                8,
                format!("{} header alone, 0xff behind", CMD_NAMES[c as usize]),
            ),
            _ => (0, 0, "from address 0x8".into()),
        };
        let d = format!("ucma malformed file{f} {d}");
        let e = if k == 7 {
            sys::write_addr(self.files[f], 8, 32)
        } else {
            let mut buf = vec![0xffu8; 8 + 320];
            buf[..4].copy_from_slice(&cmd.to_ne_bytes());
            let inl = if len == 8 { 0 } else { len - 8 };
            buf[4..6].copy_from_slice(&(inl as u16).to_ne_bytes());
            buf[6..8].copy_from_slice(&0u16.to_ne_bytes());
            if len > 8 {
                buf[8..len].iter_mut().for_each(|b| *b = 0);
                // RESOLVE_IB_SERVICE and WRITE_CM_EVENT: the id first, the event at 8.
                buf[8..12].copy_from_slice(&id.to_ne_bytes());
                buf[16..20].copy_from_slice(&ev.to_ne_bytes());
            }
            sys::write_buf(self.files[f], &buf[..len])
        };
        if self.verbose {
            println!("ucma| {}.{} {d}", self.step_no, self.call_no);
        }
        self.record("ucma malformed", e, &d, true);
    }

    /// The end of a run: every id and group left, the files closed.
    pub(crate) fn finish(&mut self) {
        for f in 0..2 {
            sys::close_fd(self.files[f]);
            self.file_closed(f);
        }
        sys::close_fd(self.null_fd);
    }

    /// Counts by command and errno.
    pub(crate) fn report(&self) -> Vec<String> {
        let mut v = Vec::new();
        for (k, (n, ok)) in &self.stats.by_key {
            v.push(format!("cov| {k:<34} calls {n:>9} ok {ok:>8}"));
        }
        for (e, n) in &self.stats.errnos {
            v.push(format!("errno| {:<16} {n}", ename(*e)));
        }
        v
    }
}

/// `uverbs_fuzz -U -a LOCAL,PEER,SILENT,UNROUTABLE,GROUP [-s SEED] [-n STEPS] [-t TRACE] [-v]`.
pub(crate) fn run(argv: &[String]) -> ! {
    let usage = || -> ! {
        eprintln!("usage: uverbs_fuzz -U -a LOCAL,PEER,SILENT,UNROUTABLE,GROUP [-s SEED] [-n STEPS] [-t TRACE] [-v]");
        std::process::exit(1)
    };
    let (mut seed, mut steps, mut trace, mut verbose) = (1u64, 200u64, None, false);
    let mut addrs: Option<[[u8; 4]; 5]> = None;
    let mut i = 0;
    while i < argv.len() {
        let val = || argv.get(i + 1).cloned().unwrap_or_else(|| usage());
        match argv[i].as_str() {
            "-s" => seed = val().parse().unwrap_or_else(|_| usage()),
            "-n" => steps = val().parse().unwrap_or_else(|_| usage()),
            "-t" => trace = Some(val()),
            // The progress interval of the uverbs mode (fz_run passes it): no progress lines.
            "-p" => {}
            "-a" => {
                let v: Vec<[u8; 4]> = val()
                    .split(',')
                    .map(|s| {
                        s.parse::<std::net::Ipv4Addr>()
                            .unwrap_or_else(|_| usage())
                            .octets()
                    })
                    .collect();
                addrs = Some(v.try_into().unwrap_or_else(|_| usage()));
            }
            "-v" => {
                verbose = true;
                i += 1;
                continue;
            }
            _ => usage(),
        }
        i += 2;
    }
    let Some(addrs) = addrs else { usage() };
    let mut watch = crate::kmsg::Watch::open();
    let mut u = Ucma::new(seed, addrs).unwrap_or_else(|e| {
        println!("R fail ucma fuzz seed {seed}: {e}");
        std::process::exit(1)
    });
    u.verbose = verbose;
    if let Some(t) = &trace {
        u.trace = std::fs::File::create(t).ok();
    }
    println!("ucma fuzz: {DEV} seed {seed} steps {steps}");
    let t0 = std::time::Instant::now();
    let mut report = None;
    for s in 1..=steps {
        u.step();
        if s % 16 == 0 || s == steps {
            if let Some(line) = watch.as_mut().and_then(|w| w.poll()) {
                report = Some((s, line));
                break;
            }
        }
    }
    u.finish();
    for l in u.report() {
        println!("{l}");
    }
    println!(
        "ucma fuzz: seed {seed} steps {}: {} calls in {:.1} s, {} succeeded",
        u.step_no,
        u.stats.calls,
        t0.elapsed().as_secs_f64(),
        u.stats.ok
    );
    println!("R ok ucma fuzz seed {seed}: {} calls", u.stats.calls);
    if let Some((s, line)) = report {
        println!("R fail ucma fuzz seed {seed}: no kernel report: after step {s}: {line}");
        println!(
            "ucma fuzz: the last {} calls (step.call errno description):",
            u.ring.len()
        );
        for l in &u.ring {
            println!("fuzz|   {l}");
        }
        std::process::exit(2);
    }
    println!("R ok ucma fuzz seed {seed}: no kernel report");
    std::process::exit(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ADDRS: [[u8; 4]; 5] = [
        [10, 66, 0, 1],
        [10, 66, 0, 2],
        [10, 66, 0, 77],
        [10, 99, 0, 1],
        [239, 1, 2, 3],
    ];

    /// The sequence of a seed, on a file that takes every write (so every command "works"
    /// and the books fill).
    fn run(seed: u64, steps: u64) -> Vec<String> {
        let mut u = Ucma::on(seed, ADDRS, "/dev/null").expect("/dev/null");
        u.rounds = 1;
        for _ in 0..steps {
            u.step();
        }
        u.finish();
        u.ring.into_iter().collect()
    }

    #[test]
    fn a_seed_is_one_sequence() {
        assert_eq!(run(3, 200), run(3, 200));
        assert_ne!(run(3, 200), run(4, 200));
    }

    #[test]
    fn every_command_is_drawn() {
        let mut u = Ucma::on(1, ADDRS, "/dev/null").expect("/dev/null");
        u.rounds = 1;
        for _ in 0..1000 {
            u.step();
        }
        for c in CMD_NAMES.iter().filter(|c| !c.starts_with("GET_OPTION")) {
            let drawn = u.stats.by_key.contains_key(&format!("ucma {c}"))
                || u.ring.iter().any(|l| l.contains(c));
            let malformed = matches!(*c, "RESOLVE_IB_SERVICE" | "WRITE_CM_EVENT");
            assert!(drawn || malformed, "{c} never drawn");
        }
    }
}
