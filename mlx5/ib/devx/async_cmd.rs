// SPDX-License-Identifier: GPL-2.0

//! The DEVX async command fd (`MLX5_IB_OBJECT_DEVX_ASYNC_CMD_FD`) and `OBJ_ASYNC_QUERY`, whose
//! results reach the user through a read of that fd.

use super::command::{is_obj_query_cmd, set};
use super::obj::is_valid_obj_id;
use super::uctx::obj_cmd_in;
use super::{ATTR_AQ_CMD_IN, ATTR_AQ_FD, ATTR_AQ_HANDLE, ATTR_AQ_OUT_LEN, ATTR_AQ_WR_ID};
use crate::ib::device::Mlx5Ib;
use crate::ib::devx_events::{poll_mask, wait_queued, ChannelQueue};
use crate::prm::cmd::general_obj_in_cmd_hdr as hdr;
use ib_core_rs::uverbs::driver_api::{DriverCall, DriverFdOps, RemoveReason};
use kernel::fs::File;
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::poll::PollTable;
use kernel::sync::Arc;
use kernel::uaccess::UserSliceWriter;

/// upstream `MAX_ASYNC_BYTES_IN_USE`: the output bytes of one async command fd's queries
/// not yet read.
const MAX_ASYNC_BYTES_IN_USE: u32 = 1024 * 1024;

/// upstream `MLX5_IB_METHOD_DEVX_ASYNC_CMD_FD_ALLOC`: a new `[devx_async_cmd]` fd.
pub(super) fn async_cmd_fd_alloc(call: &mut DriverCall<'_, '_, Mlx5Ib>) -> Result {
    let f = DevxCmdFd::new()?;
    call.set_new_fd(
        c"[devx_async_cmd]",
        &<crate::LocalModule as kernel::ModuleMetadata>::THIS_MODULE,
        f,
    )
}

/// upstream `MLX5_IB_METHOD_DEVX_OBJ_ASYNC_QUERY`: the checks of `OBJ_QUERY`, the budget of
/// the fd, then the command. Upstream runs it with `mlx5_cmd_exec_cb()` and queues the result
/// from the completion (`devx_query_callback()`, whatever the firmware status: the outbox
/// says it); here the command runs at once and its result is queued before the method
/// returns, so it reaches the user only through a read of the fd, as upstream's.
pub(super) fn obj_async_query(call: &mut DriverCall<'_, '_, Mlx5Ib>) -> Result {
    let (mut cmd, uid) = obj_cmd_in(call, ATTR_AQ_CMD_IN)?;
    if !is_obj_query_cmd(&cmd) {
        return Err(EINVAL);
    }
    let out_len = call.const_in(ATTR_AQ_OUT_LEN, u16::MAX.into(), None)? as u32;
    if !is_valid_obj_id(&call.object(ATTR_AQ_HANDLE)?, &cmd) {
        return Err(EINVAL);
    }
    let hw = call.ctx().device().data().hw.clone();
    let f: &dyn core::any::Any = &**call.fd_object(ATTR_AQ_FD)?;
    let f = f.downcast_ref::<DevxCmdFd>().ok_or(EBADF)?;
    // upstream: atomic_add_return() over the budget is EAGAIN.
    if f.bytes_in_use.fetch_add(out_len, Relaxed) + out_len > MAX_ASYNC_BYTES_IN_USE {
        f.bytes_in_use.fetch_sub(out_len, Relaxed);
        return Err(EAGAIN);
    }
    let r = (|| -> Result<KVVec<u8>> {
        let mut ev = KVVec::from_elem(0u8, CMD_HDR + out_len as usize, GFP_KERNEL)?;
        let wr_id = call.ptr_in(ATTR_AQ_WR_ID)?;
        ev.get_mut(..CMD_HDR)
            .ok_or(EINVAL)?
            .copy_from_slice(wr_id.get(..CMD_HDR).ok_or(EINVAL)?);
        set(&mut cmd, hdr::uid.field(), uid.into())?;
        match hw.cmd_do(&cmd, ev.get_mut(CMD_HDR..).ok_or(EINVAL)?) {
            // A refused command completes too: its outbox has the status and syndrome.
            Ok(()) => Ok(ev),
            Err(e) if e == EREMOTEIO => Ok(ev),
            // Not delivered (upstream: mlx5_cmd_exec_cb() failing): the method fails.
            Err(e) => Err(e),
        }
    })();
    match r {
        Ok(ev) => {
            f.complete(ev, out_len);
            Ok(())
        }
        Err(e) => {
            f.bytes_in_use.fetch_sub(out_len, Relaxed);
            Err(e)
        }
    }
}

/// `sizeof(struct mlx5_ib_uapi_devx_async_cmd_hdr)`: the `wr_id` before the outbox.
const CMD_HDR: usize = 8;
/// upstream `struct devx_async_event_queue` of a `devx_async_cmd_event_file`: completed
/// queries, each the `wr_id` and the outbox (upstream `struct devx_async_data`'s `hdr`).
type CmdQueue = ChannelQueue<KVVec<u8>>;

/// upstream `struct devx_async_cmd_event_file`: the `[devx_async_cmd]` fd's object. It holds
/// no reference to the device: after its destroy it lives as long as its file and only
/// answers reads (`EIO`) and polls.
#[pin_data]
pub(crate) struct DevxCmdFd {
    /// A mutex: every producer runs in process context (the query's method).
    #[pin]
    queue: kernel::sync::Mutex<CmdQueue>,
    #[pin]
    wait: kernel::sync::poll::PollCondVar,
    /// upstream `bytes_in_use`: the output bytes of the queries not read yet.
    bytes_in_use: Atomic<u32>,
}

impl DevxCmdFd {
    fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(DevxCmdFd {
                queue <- kernel::new_mutex!(
                    CmdQueue::new(()),
                    "devx_async_cmd_queue"
                ),
                wait <- kernel::new_poll_condvar!("devx_async_cmd_wait"),
                bytes_in_use: Atomic::new(0),
            }),
            GFP_KERNEL,
        )
    }

    /// upstream `devx_query_callback()`: queues a completion and wakes the readers; after
    /// the destroy (the fd was closed meanwhile) the completion is dropped, as upstream's
    /// destroy frees what it finds.
    fn complete(&self, ev: KVVec<u8>, out_len: u32) {
        let mut q = self.queue.lock();
        if q.destroyed || q.events.push(ev, GFP_KERNEL).is_err() {
            drop(q);
            self.bytes_in_use.fetch_sub(out_len, Relaxed);
            return;
        }
        drop(q);
        self.wait.notify_all();
    }
}

impl DriverFdOps for DevxCmdFd {
    // upstream devx_async_cmd_event_read(): empty: EAGAIN (O_NONBLOCK) or wait; EIO once
    // destroyed; ENOSPC for a buffer smaller than the next completion (it stays queued);
    // one completion per read.
    fn read(&self, file: &File, mut out: UserSliceWriter) -> Result<usize> {
        let mut q = self.queue.lock();
        wait_queued(file, &self.wait, &mut q)?;
        let size = q.events.first().map_or(0, |e| e.len());
        if size > out.len() {
            return Err(ENOSPC);
        }
        let ev = q.events.remove(0).map_err(|_| EINVAL)?;
        drop(q);
        let r = out.write_slice(&ev).map(|()| ev.len());
        let out_len = (ev.len() - CMD_HDR) as u32;
        self.bytes_in_use.fetch_sub(out_len, Relaxed);
        r
    }

    // upstream devx_async_cmd_event_poll()
    fn poll(&self, file: &File, table: PollTable<'_>) -> u32 {
        table.register_wait(file, &self.wait);
        poll_mask(&*self.queue.lock())
    }

    // upstream devx_async_cmd_event_destroy_uobj(): mark destroyed, wake the readers, free
    // the completions nobody read (mlx5_cmd_cleanup_async_ctx() has nothing to wait for:
    // the queries completed in their methods).
    fn destroy(&self, _why: RemoveReason) {
        let events = self.queue.lock().destroy();
        self.wait.notify_all();
        drop(events);
    }
}
