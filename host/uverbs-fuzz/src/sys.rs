// SPDX-License-Identifier: GPL-2.0

//! The system calls the fuzzer throws at uverbs files, as thin wrappers
//! that return the errno (0 for success). The C library is the one the
//! Rust standard library links anyway; no crate is needed for six calls.

use std::os::raw::{c_char, c_int, c_long, c_ulong, c_void};

extern "C" {
    fn open(path: *const c_char, flags: c_int, ...) -> c_int;
    fn close(fd: c_int) -> c_int;
    fn dup(fd: c_int) -> c_int;
    fn ioctl(fd: c_int, req: c_ulong, ...) -> c_int;
    fn write(fd: c_int, buf: *const c_void, count: usize) -> isize;
    fn mmap(
        addr: *mut c_void,
        len: usize,
        prot: c_int,
        flags: c_int,
        fd: c_int,
        off: c_long,
    ) -> *mut c_void;
    fn munmap(addr: *mut c_void, len: usize) -> c_int;
    fn mprotect(addr: *mut c_void, len: usize, prot: c_int) -> c_int;
    fn fork() -> c_int;
    fn waitpid(pid: c_int, status: *mut c_int, options: c_int) -> c_int;
    fn _exit(status: c_int) -> !;
    fn __errno_location() -> *mut c_int;
    fn poll(fds: *mut PollFd, n: c_ulong, timeout: c_int) -> c_int;
}

/// `struct pollfd`.
#[repr(C)]
struct PollFd {
    fd: c_int,
    events: i16,
    revents: i16,
}

const POLLIN: i16 = 1;
const O_NONBLOCK: c_int = 0o4000;

const O_RDWR: c_int = 2;
const O_CLOEXEC: c_int = 0o2000000;
const PROT_READ: c_int = 1;
const PROT_WRITE: c_int = 2;
const MAP_SHARED: c_int = 1;
const MAP_PRIVATE: c_int = 2;
const MAP_ANONYMOUS: c_int = 0x20;
const MAP_FAILED: usize = usize::MAX;

fn errno() -> i32 {
    // SAFETY: __errno_location() returns the calling thread's errno slot,
    // valid for the thread's lifetime.
    unsafe { *__errno_location() }
}

/// Opens a uverbs file: the fd or the negative errno.
pub(crate) fn open_rdwr(path: &str) -> Result<i32, i32> {
    let mut p = path.as_bytes().to_vec();
    p.push(0);
    // SAFETY: `p` is a NUL-terminated string that outlives the call.
    let fd = unsafe { open(p.as_ptr().cast(), O_RDWR | O_CLOEXEC) };
    if fd < 0 {
        Err(errno())
    } else {
        Ok(fd)
    }
}

/// Opens a file with `O_NONBLOCK` (`/dev/infiniband/rdma_cm`: GET_EVENT never blocks).
pub(crate) fn open_nonblock(path: &str) -> Result<i32, i32> {
    let mut p = path.as_bytes().to_vec();
    p.push(0);
    // SAFETY: `p` is a NUL-terminated string that outlives the call.
    let fd = unsafe { open(p.as_ptr().cast(), O_RDWR | O_CLOEXEC | O_NONBLOCK) };
    if fd < 0 {
        Err(errno())
    } else {
        Ok(fd)
    }
}

/// poll() for `POLLIN` on `fds` for up to `timeout_ms`: which are readable.
pub(crate) fn poll_in(fds: &[i32], timeout_ms: i32) -> Vec<bool> {
    let mut p: Vec<PollFd> = fds
        .iter()
        .map(|&fd| PollFd {
            fd,
            events: POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: `p` is an array of `p.len()` pollfds, valid for the call.
    let r = unsafe { poll(p.as_mut_ptr(), p.len() as c_ulong, timeout_ms) };
    p.iter().map(|x| r > 0 && x.revents & POLLIN != 0).collect()
}

pub(crate) fn close_fd(fd: i32) -> i32 {
    // SAFETY: closing a number is safe for memory; the fuzzer owns its fds.
    if unsafe { close(fd) } < 0 {
        errno()
    } else {
        0
    }
}

pub(crate) fn dup_fd(fd: i32) -> Result<i32, i32> {
    // SAFETY: dup() takes a number and touches no memory of ours.
    let r = unsafe { dup(fd) };
    if r < 0 {
        Err(errno())
    } else {
        Ok(r)
    }
}

/// `RDMA_VERBS_IOCTL` (or another command number) with `buf` as the
/// argument; the kernel reads the header and attributes from it and writes
/// back handles and `UVERBS_ATTR_F_VALID_OUTPUT`.
pub(crate) fn ioctl_buf(fd: i32, cmd: u32, buf: &mut [u8]) -> i32 {
    // SAFETY: `buf` is valid for reads and writes of its length for the
    // call; the kernel never accesses past the header's `length` field,
    // which the caller may set to any value (the kernel checks it).
    if unsafe { ioctl(fd, c_ulong::from(cmd), buf.as_mut_ptr()) } < 0 {
        errno()
    } else {
        0
    }
}

/// `ioctl()` with an arbitrary pointer value (bad-pointer cases).
pub(crate) fn ioctl_addr(fd: i32, cmd: u32, addr: u64) -> i32 {
    // SAFETY: the kernel validates the address; user space never
    // dereferences it.
    if unsafe { ioctl(fd, c_ulong::from(cmd), addr as usize as *mut c_void) } < 0 {
        errno()
    } else {
        0
    }
}

/// `write()` of `len` bytes from `buf` (`len` may exceed the buffer only if
/// the caller means a fault: it passes the address itself then).
pub(crate) fn write_buf(fd: i32, buf: &[u8]) -> i32 {
    // SAFETY: `buf` is valid for reads of its length.
    if unsafe { write(fd, buf.as_ptr().cast(), buf.len()) } < 0 {
        errno()
    } else {
        0
    }
}

/// `write()` from a raw address (bad-pointer cases).
pub(crate) fn write_addr(fd: i32, addr: u64, len: usize) -> i32 {
    // SAFETY: the kernel validates the address; we never read it.
    if unsafe { write(fd, addr as usize as *const c_void, len) } < 0 {
        errno()
    } else {
        0
    }
}

/// A shared mapping of a uverbs file at page offset `pgoff`.
pub(crate) fn mmap_file(fd: i32, len: usize, pgoff: u64, private: bool) -> Result<u64, i32> {
    let off = (pgoff.wrapping_mul(4096)) as c_long;
    let flags = if private { MAP_PRIVATE } else { MAP_SHARED };
    // SAFETY: a new mapping chosen by the kernel (addr NULL) aliases no
    // Rust object.
    let p = unsafe {
        mmap(
            std::ptr::null_mut(),
            len,
            PROT_READ | PROT_WRITE,
            flags,
            fd,
            off,
        )
    };
    if p as usize == MAP_FAILED {
        Err(errno())
    } else {
        Ok(p as u64)
    }
}

/// Anonymous memory the fuzzer owns for its whole life (registered as MR
/// buffers, pointed at by attributes), `prot_none` for a guard region.
pub(crate) fn mmap_anon(len: usize, prot_none: bool) -> u64 {
    let prot = if prot_none { 0 } else { PROT_READ | PROT_WRITE };
    // SAFETY: a fresh anonymous mapping aliases no Rust object.
    let p = unsafe {
        mmap(
            std::ptr::null_mut(),
            len,
            prot,
            MAP_PRIVATE | MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p as usize == MAP_FAILED {
        0
    } else {
        p as u64
    }
}

/// Makes `addr..addr + len` of a mapping from [`mmap_anon`] inaccessible
/// (a guard page: it stays reserved, so no later mapping lands there).
pub(crate) fn protect_none(addr: u64, len: usize) -> i32 {
    // SAFETY: only the fuzzer's own anonymous mappings are passed here; no
    // Rust reference points into the range.
    if unsafe { mprotect(addr as usize as *mut c_void, len, 0) } < 0 {
        errno()
    } else {
        0
    }
}

pub(crate) fn munmap_addr(addr: u64, len: usize) -> i32 {
    // SAFETY: only addresses returned by mmap_file() are passed here; no
    // Rust reference points into those mappings.
    if unsafe { munmap(addr as usize as *mut c_void, len) } < 0 {
        errno()
    } else {
        0
    }
}

/// fork(): `Ok(0)` in the child, `Ok(pid)` in the parent.
pub(crate) fn fork_process() -> Result<i32, i32> {
    // SAFETY: the child only runs the fuzzer's own single-threaded loop and
    // leaves with _exit() (the parent forks only with no thread running).
    let r = unsafe { fork() };
    if r < 0 {
        Err(errno())
    } else {
        Ok(r)
    }
}

/// Waits for a child; its exit status or the signal number + 128.
pub(crate) fn wait_child(pid: i32) -> i32 {
    let mut st: c_int = 0;
    // SAFETY: `st` is a valid out pointer for the call.
    if unsafe { waitpid(pid, &mut st, 0) } < 0 {
        return -1;
    }
    if st & 0x7f == 0 {
        (st >> 8) & 0xff
    } else {
        128 + (st & 0x7f)
    }
}

pub(crate) fn exit_now(code: i32) -> ! {
    // SAFETY: _exit() ends the process without running Rust destructors,
    // which is what a forked child of a fuzzer wants.
    unsafe { _exit(code) }
}

/// Words shared with forked children (a `MAP_SHARED` anonymous mapping,
/// made once): a child reports through them what the exit status cannot
/// carry. Used by one process at a time (the parent waits for the child).
pub(crate) struct Shared {
    addr: u64,
    words: usize,
}

impl Shared {
    pub(crate) fn new(words: usize) -> Self {
        // SAFETY: a fresh anonymous mapping aliases no Rust object.
        let p = unsafe {
            mmap(
                std::ptr::null_mut(),
                words * 8,
                PROT_READ | PROT_WRITE,
                MAP_SHARED | MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        let addr = if p as usize == MAP_FAILED {
            0
        } else {
            p as u64
        };
        Self {
            addr,
            words: if addr == 0 { 0 } else { words },
        }
    }

    pub(crate) fn get(&self, i: usize) -> u64 {
        if i >= self.words {
            return 0;
        }
        // SAFETY: `i` is inside the mapping, which lives as long as the
        // process; other processes write it only while this one waits.
        unsafe { std::ptr::read_volatile((self.addr as usize as *const u64).add(i)) }
    }

    pub(crate) fn set(&self, i: usize, v: u64) {
        if i >= self.words {
            return;
        }
        // SAFETY: as in `get`.
        unsafe { std::ptr::write_volatile((self.addr as usize as *mut u64).add(i), v) }
    }
}

/// Zeroes `addr..addr + len` of a mapping from [`mmap_anon`] (the readable
/// page before the guard, which the kernel may have written through a
/// pointer that ran into the guard).
pub(crate) fn zero(addr: u64, len: usize) {
    // SAFETY: only the fuzzer's own read-write anonymous mapping is passed
    // here; no Rust reference points into it.
    unsafe { std::ptr::write_bytes(addr as usize as *mut u8, 0, len) }
}
