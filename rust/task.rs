// SPDX-License-Identifier: GPL-2.0

//! Task facts the kernel crate does not expose: the command name of the
//! current task (upstream restrack records `task->comm` via
//! `get_task_comm()` for user-owned resources).

/// Length of `task_struct::comm` (`TASK_COMM_LEN`).
pub const TASK_COMM_LEN: usize = 16;

/// The current task's pid (thread group id, as restrack reports it) and
/// its `comm`, NUL-padded.
pub fn current_pid_comm() -> (i32, [u8; TASK_COMM_LEN]) {
    let task = kernel::current!();
    let leader = task.group_leader();
    let pid = leader.pid();
    let mut comm = [0u8; TASK_COMM_LEN];
    let p = task.as_ptr();
    // SAFETY: `p` is the current task, valid for the duration of this
    // function. `comm` is a fixed-size array that is always NUL terminated;
    // a concurrent `set_task_comm()` may change bytes under us, which
    // upstream's `get_task_comm()` (a plain `strscpy_pad`) tolerates in the
    // same way: the result is some recent name.
    let raw: [u8; TASK_COMM_LEN] =
        unsafe { core::ptr::read_volatile(core::ptr::addr_of!((*p).comm)) };
    comm.copy_from_slice(&raw);
    // Keep the last byte a terminator whatever we read.
    comm[TASK_COMM_LEN - 1] = 0;
    (pid, comm)
}

/// upstream `ib_safe_file_access()` (`include/rdma/ib.h`): whether the
/// current task runs with the very credentials `file` was opened with (the
/// same `struct cred`, compared by address as upstream does). A task that
/// changed its credentials since the open, or another process the file was
/// inherited by (`fork()` gives the child a copy of the parent's creds) or
/// passed to, is not.
pub fn file_cred_is_current(file: &kernel::fs::File) -> bool {
    let task = kernel::current!();
    let p = task.as_ptr();
    // SAFETY: `p` is the current task, valid for the duration of this
    // function; a task's own `cred` pointer changes only by the task itself
    // (`commit_creds()`), so reading it from the task is upstream's
    // `current_cred()` (`rcu_dereference_protected(current->cred, 1)`). The
    // pointer is compared, never dereferenced.
    let cur: *const kernel::bindings::cred =
        unsafe { core::ptr::read(core::ptr::addr_of!((*p).cred)) };
    core::ptr::eq(cur, file.cred().as_ptr())
}

extern "C" {
    fn rdma_rs_access_ok(addr: u64, size: u64) -> core::ffi::c_int;
}

/// upstream `access_ok(addr, size)`: whether `[addr, addr + size)` lies in the
/// user address range (no mapping is looked at).
pub fn user_range_ok(addr: u64, size: u64) -> bool {
    // SAFETY: a pure range check of two integers; nothing is dereferenced.
    unsafe { rdma_rs_access_ok(addr, size) != 0 }
}
