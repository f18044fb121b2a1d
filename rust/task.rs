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

/// Whether `file` was opened with the current task's credentials (the
/// same `struct cred`, as upstream compares them): a forked child has its
/// own copy (`copy_creds()` shares them only with `CLONE_THREAD`), and a
/// file passed to a process of other credentials has another.
///
/// upstream: `ib_safe_file_access()` (`filp->f_cred == current_cred()`).
pub fn file_cred_is_current(file: &kernel::fs::File) -> bool {
    let task = kernel::current!().as_ptr();
    // SAFETY: `task` is the current task, valid for this call; only the
    // task itself replaces its `cred` (`commit_creds()`), so reading the
    // pointer from the running task is what `current_cred()` does. The
    // pointer is compared, never dereferenced.
    let cur = unsafe { core::ptr::read(core::ptr::addr_of!((*task).cred)) };
    core::ptr::eq(file.cred().as_ptr(), cur)
}
