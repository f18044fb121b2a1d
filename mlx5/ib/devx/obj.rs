// SPDX-License-Identifier: GPL-2.0

//! DEVX objects (`MLX5_IB_OBJECT_DEVX_OBJ`): create, modify and query through a handle, and the
//! object that keeps its destroy command.

use super::command::{
    build_destroy_cmd, can_destroy, enc, handle_mkey_create, is_obj_create_cmd, is_obj_modify_cmd,
    is_obj_query_cmd, obj_id_of, opcode, set, set_umem_valid, DestroyCmd,
};
use super::uctx::{obj_cmd_in, run};
use super::{ATTR_OBJ_CMD_IN, ATTR_OBJ_CMD_OUT, ATTR_OBJ_HANDLE};
use crate::hw::Mlx5Hw;
use crate::ib::device::Mlx5Ib;
use crate::ib::devx_events;
use crate::ib::events::EventTable;
use crate::prm::cmd::general_obj_in_cmd_hdr as hdr;
use crate::prm::devx_ops as op;
use ib_core_rs::uverbs::driver_api::{AnyObject, DriverCall, DriverUobject};
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::Arc;

/// upstream `devx_is_valid_obj_id()`: the command's object is the handle's.
pub(super) fn is_valid_obj_id(obj: &AnyObject<'_, Mlx5Ib>, cmd: &[u8]) -> bool {
    let id = obj_id_of(cmd);
    if id == 0 {
        return false;
    }
    match obj {
        AnyObject::Cq(c) => enc(op::CREATE_CQ.into(), c.data().cqn) == id,
        AnyObject::Qp(q) => enc(op::CREATE_QP.into(), q.data().qpn) == id,
        // ISSI 1: an SRQ is an RMP.
        AnyObject::Srq(s) => enc(op::CREATE_RMP.into(), s.data().srqn) == id,
        AnyObject::Driver(d) => d.downcast_ref::<DevxObj>().is_some_and(|o| o.obj_id == id),
        AnyObject::Other => false,
    }
}

/// upstream `MLX5_IB_METHOD_DEVX_OBJ_CREATE`.
pub(super) fn obj_create(call: &mut DriverCall<'_, '_, Mlx5Ib>) -> Result {
    let (mut cmd, uid) = obj_cmd_in(call, ATTR_OBJ_CMD_IN)?;
    if !is_obj_create_cmd(&cmd) {
        return Err(EINVAL);
    }
    let o = opcode(&cmd);
    if !can_destroy(o) {
        return Err(EOPNOTSUPP);
    }
    set(&mut cmd, hdr::uid.field(), uid.into())?;
    if o == op::CREATE_MKEY {
        handle_mkey_create(&mut cmd)?;
    } else {
        set_umem_valid(&mut cmd)?;
    }
    let out = run(call, &cmd, ATTR_OBJ_CMD_OUT)?;
    let (din, obj_id) = build_destroy_cmd(&cmd, &out)?;
    let obj = DevxObj::new(
        call.ctx().device().data().hw.clone(),
        call.ctx().device().data().events.clone(),
        obj_id,
        din,
    );
    // From here dropping the object destroys it (a failed copy below: upstream obj_destroy).
    call.set_new_object(KBox::new(obj, GFP_KERNEL)?)?;
    call.put(ATTR_OBJ_CMD_OUT, &out)
}

/// upstream `MLX5_IB_METHOD_DEVX_OBJ_MODIFY` (`modify`) and `_QUERY`.
pub(super) fn obj_use(call: &mut DriverCall<'_, '_, Mlx5Ib>, modify: bool) -> Result {
    let (mut cmd, uid) = obj_cmd_in(call, ATTR_OBJ_CMD_IN)?;
    let allowed = if modify {
        is_obj_modify_cmd(&cmd)
    } else {
        is_obj_query_cmd(&cmd)
    };
    if !allowed || !is_valid_obj_id(&call.object(ATTR_OBJ_HANDLE)?, &cmd) {
        return Err(EINVAL);
    }
    set(&mut cmd, hdr::uid.field(), uid.into())?;
    if modify {
        set_umem_valid(&mut cmd)?;
    }
    let out = run(call, &cmd, ATTR_OBJ_CMD_OUT)?;
    call.put(ATTR_OBJ_CMD_OUT, &out)
}

/// A DEVX object (upstream `struct devx_obj`): its encoded id and the command that destroys it.
pub(crate) struct DevxObj {
    hw: Arc<dyn Mlx5Hw>,
    /// The device's event table: the object's event subscriptions go at its destroy.
    events: Arc<EventTable>,
    /// upstream `obj->obj_id` ([`enc`]).
    pub(super) obj_id: u64,
    /// upstream `obj->dinbox`.
    din: DestroyCmd,
    /// 1 once the destroy command succeeded.
    freed: Atomic<u32>,
}

impl DevxObj {
    /// An object created with id `obj_id` whose destroy command is `din`.
    pub(super) fn new(
        hw: Arc<dyn Mlx5Hw>,
        events: Arc<EventTable>,
        obj_id: u64,
        din: DestroyCmd,
    ) -> Self {
        DevxObj {
            hw,
            events,
            obj_id,
            din,
            freed: Atomic::new(0),
        }
    }

    /// upstream `devx_obj_cleanup()`: the destroy command, once.
    pub(super) fn destroy(&self) -> Result {
        if self.freed.load(Relaxed) != 0 {
            return Ok(());
        }
        let mut out = [0u8; 16];
        self.hw.exec(self.din.bytes(), &mut out)?;
        self.freed.store(1, Relaxed);
        // upstream devx_obj_cleanup(): the subscriptions go after the destroy command.
        devx_events::unsubscribe_obj(&self.events.devx, self.obj_id);
        Ok(())
    }
}

impl DriverUobject for DevxObj {
    fn destroy_hw(&self) -> Result {
        self.destroy()
    }
}

impl Drop for DevxObj {
    fn drop(&mut self) {
        // Reached without a successful destroy_hw only when the method that created it failed
        // after the create command, or at the end of a cleanup that could not destroy it (the
        // refusal was logged by exec): one more try, nothing else can be done.
        let _ = self.destroy();
    }
}
