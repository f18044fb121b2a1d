// SPDX-License-Identifier: GPL-2.0

//! The sequence: one step at a time, a random operation on the uverbs
//! files (ioctl, write, mmap, munmap, close and reopen, dup, fork, threads),
//! every call recorded in the statistics, the recent-call ring and, for the
//! main sequence, the trace that the differential mode compares.

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;

use crate::rng::Rng;
use crate::state::{FileSlot, Handle, Pool};
use crate::stats::Stats;
use crate::sys;

/// Uverbs file slots per sequence.
pub(crate) const NFILES: usize = 3;
/// Calls kept for the report of a kernel finding.
pub(crate) const RING: usize = 64;
/// Steps a forked child runs; steps each of the two threads runs.
const CHILD_STEPS: u32 = 24;
const THREAD_STEPS: u32 = 48;
/// Handles a child reports back (its pool's size bound).
const USERS_MAX: usize = crate::state::MAX_HANDLES;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    Main,
    Child,
    Thread,
}

/// Memory the calls point at: a buffer that MRs register, and an address
/// whose first page is mapped and the next one is not (for pointers that
/// start valid and run off the end). The second page is a PROT_NONE guard,
/// not a hole: an unmapped hole would be reused by the next mmap of a
/// uverbs file, and then "unmapped" would point into a driver page on one
/// stack and nowhere on the other.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Memory {
    pub(crate) mr_buf: u64,
    pub(crate) edge: u64,
}

impl Memory {
    pub(crate) fn new() -> Self {
        let mr_len = 16 * 4096;
        let mr_buf = sys::mmap_anon(mr_len, false);
        let two = sys::mmap_anon(2 * 4096, false);
        sys::protect_none(two + 4096, 4096);
        Self {
            mr_buf,
            edge: two + 4096,
        }
    }

    /// A bad pointer of one of the kinds the kernel must refuse with
    /// EFAULT (or treat as the spec says): one draw.
    pub(crate) fn bad_ptr(&self, rng: &mut Rng, len: usize) -> (u64, &'static str) {
        // What the kernel wrote into the page before the guard through an
        // earlier straddling pointer differs by stack: a straddling
        // request must read the same bytes on both.
        sys::zero(self.edge - 4096, 4096);
        match rng.below(5) {
            0 => (0, "null"),
            1 => (1, "unaligned-low"),
            2 => (0xffff_8880_0000_0000, "kernel"),
            3 => (self.edge, "unmapped"),
            _ => (self.edge - (len as u64 / 2).max(1), "straddle"),
        }
    }
}

pub(crate) struct Fuzzer {
    pub(crate) rng: Rng,
    pub(crate) role: Role,
    pub(crate) dev: String,
    pub(crate) driver_id: u32,
    pub(crate) files: [Option<FileSlot>; NFILES],
    pub(crate) next_file: u32,
    pub(crate) pool: Pool,
    pub(crate) maps: Vec<(u64, usize)>,
    pub(crate) mem: Memory,
    pub(crate) stats: Stats,
    pub(crate) ring: VecDeque<String>,
    pub(crate) trace: Option<File>,
    pub(crate) verbose: bool,
    pub(crate) step_no: u64,
    sub: u32,
    /// Calls of forked children (they report through their exit status).
    pub(crate) child_calls: u64,
    pub(crate) threads_enabled: bool,
    /// `-u`: never send the GET_CONTEXT ioctl (upstream 7.3 leaks a task
    /// reference when it fails on a file that has a context; see
    /// tests/userspace/uverbs_abi.c). Contexts come from the write command.
    pub(crate) no_ioctl_get_context: bool,
    /// The driver's GET_CONTEXT request (udata in), by driver id.
    pub(crate) ctx_udata: Vec<u8>,
    /// Write responses land here (see `write_one()`).
    pub(crate) out: Vec<u8>,
    /// ioctl attributes point here (see `ioctl_step()`).
    pub(crate) scratch: Vec<u8>,
    /// Where a forked child reports its users of the parent's handles.
    pub(crate) shared: Option<sys::Shared>,
    /// `-g`: destination GIDs for CREATE_AH (IP addresses as RoCE GIDs), which also widen
    /// the source GID indexes and GID queries to the IP GIDs' entries; empty: link-local
    /// destinations from index 0 only.
    pub(crate) gids: Vec<[u8; 16]>,
}

/// upstream `RDMA_DRIVER_MLX5`.
const DRIVER_MLX5: u32 = 1;

/// The GET_CONTEXT request a driver needs to give a context: mlx5's
/// `struct mlx5_ib_alloc_ucontext_req_v2` as libmlx5 sends it (CQE version
/// 1, 4K and dynamic UARs); none for the others.
fn ctx_request(driver_id: u32) -> Vec<u8> {
    if driver_id != DRIVER_MLX5 {
        return Vec::new();
    }
    let mut r = vec![0u8; 32];
    r[16] = 1;
    r[24] = 3;
    r
}

/// One call's outcome, as `record()` takes it.
pub(crate) struct Call<'a> {
    pub(crate) key: &'a str,
    pub(crate) desc: String,
    pub(crate) errno: i32,
    /// Compared in the differential mode (see `Documentation/testing.md`,
    /// "What the differential mode compares").
    pub(crate) compare: bool,
}

impl Fuzzer {
    pub(crate) fn new(seed: u64, dev: &str, driver_id: u32, mem: Memory) -> Self {
        Self {
            rng: Rng::new(seed),
            role: Role::Main,
            dev: dev.to_string(),
            driver_id,
            files: [None; NFILES],
            next_file: 1,
            pool: Pool::default(),
            maps: Vec::new(),
            mem,
            stats: Stats::default(),
            ring: VecDeque::with_capacity(RING),
            trace: None,
            verbose: false,
            step_no: 0,
            sub: 0,
            child_calls: 0,
            threads_enabled: true,
            no_ioctl_get_context: false,
            ctx_udata: ctx_request(driver_id),
            out: vec![0u8; 1 << 20],
            scratch: vec![0u8; crate::ioctl::SCRATCH],
            shared: None,
            gids: Vec::new(),
        }
    }

    /// Prints a call before it is made (`-v`: a sequence that panics the
    /// kernel is then on the console up to its last call).
    pub(crate) fn announce(&self, what: &str) {
        if self.verbose {
            println!("fuzz| {} {what}", self.step_no);
        }
    }

    pub(crate) fn record(&mut self, c: Call<'_>) {
        self.stats.record(c.key, c.errno);
        let line = format!(
            "{}.{}\t{}\t{}",
            self.step_no,
            self.sub,
            crate::names::errno(c.errno),
            c.desc
        );
        self.sub += 1;
        if self.ring.len() == RING {
            self.ring.pop_front();
        }
        if self.verbose {
            println!("fuzz| = {line}");
        }
        if c.compare && self.role == Role::Main {
            if let Some(t) = self.trace.as_mut() {
                let _ = writeln!(t, "{line}");
            }
        }
        self.ring.push_back(line);
    }

    /// The fd of slot `i` and its file identity, if the slot is open.
    pub(crate) fn slot(&self, i: usize) -> Option<FileSlot> {
        self.files[i]
    }

    /// A slot to act on: one draw.
    pub(crate) fn any_slot(&mut self) -> (usize, Option<FileSlot>) {
        let i = self.rng.below(NFILES);
        (i, self.files[i])
    }

    /// Opens the files the sequence starts with, each with a context.
    pub(crate) fn start(&mut self) {
        for i in 0..NFILES {
            self.reopen(i, true);
        }
    }

    fn reopen(&mut self, i: usize, with_ctx: bool) {
        self.announce("open");
        match sys::open_rdwr(&self.dev) {
            Ok(fd) => {
                let file = self.next_file;
                self.next_file += 1;
                self.files[i] = Some(FileSlot {
                    fd,
                    file,
                    has_ctx: false,
                    owned: true,
                });
                self.record(Call {
                    key: "open",
                    desc: "open".into(),
                    errno: 0,
                    compare: true,
                });
                if with_ctx {
                    self.get_context(i);
                }
            }
            Err(e) => {
                self.files[i] = None;
                self.record(Call {
                    key: "open",
                    desc: "open".into(),
                    errno: e,
                    compare: true,
                });
            }
        }
    }

    /// One step of the sequence. The choice of operation is one draw;
    /// every operation draws a fixed number of values for its decisions.
    pub(crate) fn step(&mut self) {
        self.step_no += 1;
        self.sub = 0;
        let op = self.rng.below(1000);
        match op {
            0..=479 => self.ioctl_step(),
            480..=819 => self.write_step(),
            820..=869 => self.mmap_step(),
            870..=899 => self.munmap_step(),
            900..=939 => self.close_step(),
            940..=969 => self.dup_step(),
            970..=984 => self.raw_bad_step(),
            985..=994 => self.fork_step(),
            _ => self.threads_step(),
        }
    }

    fn mmap_step(&mut self) {
        let (_, s) = self.any_slot();
        let pgoff = match self.rng.below(6) {
            0 | 1 => 0,
            2 => 1,
            3 => 2,
            4 => 0x100 + self.rng.below(4) as u64,
            _ => self.rng.next() & 0xf_ffff,
        };
        let pages = 1 + self.rng.below(2);
        let private = self.rng.chance(1, 8);
        let Some(s) = s else { return };
        self.announce("mmap");
        let r = sys::mmap_file(s.fd, pages * 4096, pgoff, private);
        let e = match r {
            Ok(a) => {
                self.maps.push((a, pages * 4096));
                0
            }
            Err(e) => e,
        };
        // Offsets are the driver's: not compared.
        self.record(Call {
            key: "mmap",
            desc: format!("mmap pgoff {pgoff:#x} pages {pages} private {private}"),
            errno: e,
            compare: false,
        });
    }

    fn munmap_step(&mut self) {
        let i = self.rng.below(self.maps.len());
        if self.maps.is_empty() {
            return;
        }
        let (a, l) = self.maps.swap_remove(i);
        self.announce("munmap");
        let e = sys::munmap_addr(a, l);
        self.record(Call {
            key: "munmap",
            desc: "munmap".into(),
            errno: e,
            compare: false,
        });
    }

    /// Close a slot (its objects go when the file's last fd does) and open
    /// a new file in it, most often with a context.
    fn close_step(&mut self) {
        let (i, s) = self.any_slot();
        let with_ctx = !self.rng.chance(1, 10);
        if self.role == Role::Thread {
            // A thread shares the main's fd table: it never closes.
            return;
        }
        if let Some(s) = s {
            self.announce("close");
            let e = sys::close_fd(s.fd);
            self.files[i] = None;
            self.record(Call {
                key: "close",
                desc: "close".into(),
                errno: e,
                compare: true,
            });
            if !self.files.iter().flatten().any(|o| o.file == s.file) {
                for fd in self.pool.file_closed(s.file) {
                    sys::close_fd(fd);
                }
            }
        }
        self.reopen(i, with_ctx);
    }

    /// dup() one slot's fd into another: two fds, one file.
    fn dup_step(&mut self) {
        let (_, src) = self.any_slot();
        let (j, dst) = self.any_slot();
        if self.role == Role::Thread {
            return;
        }
        let Some(src) = src else { return };
        if let Some(d) = dst {
            if d.fd == src.fd {
                return;
            }
        }
        self.announce("dup");
        match sys::dup_fd(src.fd) {
            Ok(fd) => {
                if let Some(d) = dst {
                    sys::close_fd(d.fd);
                    self.files[j] = None;
                    if !self.files.iter().flatten().any(|o| o.file == d.file) && d.file != src.file
                    {
                        for fd in self.pool.file_closed(d.file) {
                            sys::close_fd(fd);
                        }
                    }
                }
                self.files[j] = Some(FileSlot {
                    fd,
                    owned: true,
                    ..src
                });
                self.record(Call {
                    key: "dup",
                    desc: "dup".into(),
                    errno: 0,
                    compare: true,
                });
            }
            Err(e) => self.record(Call {
                key: "dup",
                desc: "dup".into(),
                errno: e,
                compare: true,
            }),
        }
    }

    /// A forked child continues the sequence on the inherited fds (its own
    /// generator, forked from ours) and exits; the parent waits.
    fn fork_step(&mut self) {
        let rng = self.rng.fork();
        if self.role != Role::Main {
            return;
        }
        let _ = std::io::stdout().flush();
        self.announce("fork");
        let before = self.pool.users_of();
        let shared = self
            .shared
            .get_or_insert_with(|| sys::Shared::new(1 + 2 * USERS_MAX));
        shared.set(0, 0);
        match sys::fork_process() {
            Ok(0) => {
                self.role = Role::Child;
                self.rng = rng;
                self.pool = self.pool.borrowed(self.step_no * 4 + 3);
                self.trace = None;
                self.maps.clear();
                for _ in 0..CHILD_STEPS {
                    self.step();
                }
                // What the child's objects made of the parent's handles
                // (they live on in the shared files).
                let after = self.pool.users_of();
                let n = after.len().min(USERS_MAX);
                if let Some(sh) = &self.shared {
                    sh.set(0, n as u64);
                    for (k, &(uid, users)) in after.iter().take(n).enumerate() {
                        sh.set(1 + 2 * k, uid);
                        sh.set(2 + 2 * k, u64::from(users));
                    }
                }
                sys::exit_now(self.stats.calls.min(200) as i32);
            }
            Ok(pid) => {
                let st = sys::wait_child(pid);
                let after: Vec<(u64, u32)> = match &self.shared {
                    Some(sh) => (0..(sh.get(0) as usize).min(USERS_MAX))
                        .map(|k| (sh.get(1 + 2 * k), sh.get(2 + 2 * k) as u32))
                        .collect(),
                    None => Vec::new(),
                };
                self.pool.apply_users(&before, &after);
                self.probe_ctx();
                if (0..=200).contains(&st) {
                    self.child_calls += st as u64;
                }
                self.record(Call {
                    key: "fork",
                    desc: "fork".into(),
                    errno: if (0..=200).contains(&st) { 0 } else { st },
                    compare: false,
                });
            }
            Err(e) => self.record(Call {
                key: "fork",
                desc: "fork".into(),
                errno: e,
                compare: false,
            }),
        }
    }

    /// Two threads run steps concurrently on the same files (their own
    /// objects only: the main sequence's handles are read, never
    /// destroyed, so the main sequence stays deterministic).
    fn threads_step(&mut self) {
        let seeds = [self.rng.fork(), self.rng.fork()];
        if self.role != Role::Main || !self.threads_enabled {
            return;
        }
        self.announce("threads");
        let before = self.pool.users_of();
        let mut kids: Vec<Fuzzer> = seeds
            .into_iter()
            .enumerate()
            .map(|(k, rng)| {
                let mut f = Fuzzer::new(0, &self.dev, self.driver_id, self.mem);
                f.rng = rng;
                f.role = Role::Thread;
                f.no_ioctl_get_context = self.no_ioctl_get_context;
                f.files = self.files;
                for s in f.files.iter_mut().flatten() {
                    s.owned = false;
                }
                f.next_file = self.next_file;
                f.pool = self.pool.borrowed(self.step_no * 4 + 1 + k as u64);
                f
            })
            .collect();
        std::thread::scope(|sc| {
            for k in kids.iter_mut() {
                sc.spawn(move || {
                    for _ in 0..THREAD_STEPS {
                        k.step();
                    }
                    for (a, l) in k.maps.drain(..) {
                        sys::munmap_addr(a, l);
                    }
                });
            }
        });
        for k in &kids {
            self.stats.merge(&k.stats);
            self.pool.apply_users(&before, &k.pool.users_of());
        }
        self.probe_ctx();
        self.record(Call {
            key: "threads",
            desc: "threads".into(),
            errno: 0,
            compare: false,
        });
    }

    /// The whole argument is a bad pointer: ioctl and write.
    fn raw_bad_step(&mut self) {
        let (_, s) = self.any_slot();
        let is_write = self.rng.chance(1, 2);
        let (p, what) = self.mem.bad_ptr(&mut self.rng, 24);
        let len = [8usize, 24, 4096][self.rng.below(3)];
        let Some(s) = s else { return };
        self.announce("bad pointer");
        let (key, e) = if is_write {
            ("write badptr", sys::write_addr(s.fd, p, len))
        } else {
            (
                "ioctl badptr",
                sys::ioctl_addr(s.fd, crate::abi::ioctl::RDMA_VERBS_IOCTL, p),
            )
        };
        self.record(Call {
            key,
            desc: format!("{key} {what} len {len}{}", Self::ctx_tag(&s)),
            errno: e,
            compare: true,
        });
        self.probe_ctx();
    }

    /// Adds a handle a successful create returned.
    /// `parents`: pool indices of the live handles the create was made
    /// with (they gain a user).
    pub(crate) fn add_handle(&mut self, file: u32, obj: u16, value: u32, parents: &[usize]) {
        self.pool.add(
            Handle {
                file,
                obj,
                value,
                live: true,
                owned: true,
                uid: 0,
                users: 0,
                parents: [0; 3],
            },
            parents,
        );
    }

    /// Records whether the open file `file` has a context, in every slot
    /// that holds it.
    pub(crate) fn set_ctx(&mut self, file: u32, v: bool) {
        for s in self.files.iter_mut().flatten().filter(|s| s.file == file) {
            s.has_ctx = v;
        }
    }

    /// Asks the kernel whether each open file has a context (a QUERY_DEVICE
    /// write, which only fails without one): after calls that may have
    /// made one outside what the sequence knows (threads, children, a
    /// GET_CONTEXT that failed, a command the mutation changed). Not a
    /// call of the sequence: not recorded.
    pub(crate) fn probe_ctx(&mut self) {
        let Some(w) = crate::abi::std_types::WRITE_OBJECTS
            .iter()
            .flat_map(|o| o.writes.iter())
            .find(|w| w.cmd == crate::abi::ids::cmd::QUERY_DEVICE && !w.is_ex)
        else {
            return;
        };
        let hsz = crate::abi::write::CmdHdr::SIZE;
        let req = usize::from(w.req_size);
        let out_addr = self.out.as_mut_ptr() as u64;
        let mut buf = vec![0u8; hsz + req];
        let hdr = crate::abi::write::CmdHdr {
            command: w.cmd,
            in_words: ((hsz + req) / 4) as u16,
            out_words: (usize::from(w.resp_size) / 4) as u16,
        };
        buf[..hsz].copy_from_slice(&hdr.to_bytes());
        buf[hsz..hsz + 8].copy_from_slice(&out_addr.to_ne_bytes());
        for i in 0..NFILES {
            if let Some(s) = self.files[i] {
                let e = sys::write_buf(s.fd, &buf);
                self.set_ctx(s.file, e == 0);
            }
        }
    }

    /// The description's suffix for a call on slot `s`: ` noctx` when its
    /// file has no context (most calls then fail alike on both stacks, and
    /// a call is compared only if both stacks agree on the context).
    pub(crate) fn ctx_tag(s: &FileSlot) -> &'static str {
        if s.has_ctx {
            ""
        } else {
            " noctx"
        }
    }

    /// Closes what is left (the kernel must clean up whatever the sequence
    /// left behind) and unmaps the mappings.
    pub(crate) fn finish(&mut self) {
        for (a, l) in self.maps.drain(..) {
            sys::munmap_addr(a, l);
        }
        for s in self.files.iter_mut() {
            if let Some(f) = s.take() {
                sys::close_fd(f.fd);
            }
        }
        for h in &self.pool.handles {
            if h.live && h.owned && crate::state::is_fd_object(h.obj) {
                sys::close_fd(h.value as i32);
            }
        }
    }
}
