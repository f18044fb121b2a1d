// SPDX-License-Identifier: GPL-2.0

//! The DEVX async event fd (`ASYNC_EVENT_FD_ALLOC`) and `SUBSCRIBE_EVENT`: the methods; the
//! subscriptions and the event delivery are [`crate::ib::devx_events`].

use super::obj::DevxObj;
use super::uctx::ctx_uid;
use super::{
    ATTR_EVENT_FD_ALLOC_FLAGS, ATTR_SUB_COOKIE, ATTR_SUB_FD_HANDLE, ATTR_SUB_FD_NUM,
    ATTR_SUB_OBJ_HANDLE, ATTR_SUB_TYPE_NUM_LIST,
};
use crate::ib::device::Mlx5Ib;
use crate::ib::devx_events::{self, DevxEventFd};
use ib_core_rs::uverbs::driver_api::{AnyObject, DriverCall};
use kernel::prelude::*;

/// upstream `MLX5_IB_METHOD_DEVX_ASYNC_EVENT_FD_ALLOC`: a new `[devx_async_event]` fd; the
/// only flag is `OMIT_DATA` (others `EINVAL`, `uverbs_get_flags32()`).
pub(super) fn async_event_fd_alloc(call: &mut DriverCall<'_, '_, Mlx5Ib>) -> Result {
    let flags = call.flags32(ATTR_EVENT_FD_ALLOC_FLAGS, devx_events::OMIT_DATA)?;
    let table = call.ctx().device().data().events.devx.clone();
    let f = DevxEventFd::new(u64::from(flags) & devx_events::OMIT_DATA != 0, table)?;
    call.set_new_fd(
        c"[devx_async_event]",
        &<crate::LocalModule as kernel::ModuleMetadata>::THIS_MODULE,
        f,
    )
}

/// upstream `MLX5_IB_METHOD_DEVX_SUBSCRIBE_EVENT`: one subscription per event number of the
/// list, for the DEVX object of the handle (affiliated events) or for none (unaffiliated),
/// with the cookie; all or nothing.
pub(super) fn subscribe_event(call: &mut DriverCall<'_, '_, Mlx5Ib>) -> Result {
    if ctx_uid(call.ctx()) == 0 {
        return Err(EINVAL);
    }
    let obj = if call.is_present(ATTR_SUB_OBJ_HANDLE) {
        match call.object(ATTR_SUB_OBJ_HANDLE)? {
            AnyObject::Driver(d) => Some(d.downcast_ref::<DevxObj>().ok_or(EINVAL)?.obj_id),
            _ => return Err(EINVAL),
        }
    } else {
        None
    };
    let file = call.fd_object(ATTR_SUB_FD_HANDLE)?.clone();
    {
        let f: &dyn core::any::Any = &*file;
        if f.downcast_ref::<DevxEventFd>().is_none() {
            return Err(EBADF);
        }
    }
    let cookie_given = call.is_present(ATTR_SUB_COOKIE);
    // upstream: a redirect fd (an eventfd signalled per event instead of a queued event);
    // with a cookie EINVAL.
    let redirect = if call.is_present(ATTR_SUB_FD_NUM) {
        if cookie_given {
            return Err(EINVAL);
        }
        let v = call.ptr_in(ATTR_SUB_FD_NUM)?;
        let mut b = [0u8; 4];
        b.copy_from_slice(v.get(..4).ok_or(EINVAL)?);
        Some(i32::from_ne_bytes(b))
    } else {
        None
    };
    let cookie = if cookie_given {
        let c = call.ptr_in(ATTR_SUB_COOKIE)?;
        let mut b = [0u8; 8];
        b.copy_from_slice(c.get(..8).ok_or(EINVAL)?);
        u64::from_ne_bytes(b)
    } else {
        0
    };
    // upstream uverbs_attr_ptr_get_array_size(): a length that is no multiple of u16 is
    // EINVAL; more than MAX_NUM_EVENTS too.
    let list = call.ptr_in(ATTR_SUB_TYPE_NUM_LIST)?;
    if list.len() % 2 != 0 || list.len() / 2 > devx_events::MAX_NUM_EVENTS {
        return Err(EINVAL);
    }
    let nums = list
        .chunks_exact(2)
        .map(|c| u16::from_ne_bytes([c[0], c[1]]));
    // upstream is_valid_events_legacy() (no event_cap).
    let valid = nums.clone().all(|n| {
        if obj.is_some() {
            devx_events::is_legacy_obj_event_num(n)
        } else {
            devx_events::is_legacy_unaffiliated_event_num(n)
        }
    });
    if !valid {
        return Err(EINVAL);
    }
    let mut subs = KVec::with_capacity(list.len() / 2, GFP_KERNEL)?;
    for n in nums {
        // upstream: key_level1 = event | get_dec_obj_type() << 16, key_level2 = the
        // object's number (get_dec_obj_id()).
        let (key1, level2, owner) = match obj {
            Some(id) => {
                let t = devx_events::legacy_obj_type(((id >> 32) & 0xffff) as u16);
                (u32::from(n) | (u32::from(t) << 16), Some(id as u32), id)
            }
            None => (u32::from(n), None, 0),
        };
        // upstream eventfd_ctx_fdget() per subscription: EBADF, EINVAL (not an eventfd).
        let efd = match redirect {
            Some(fd) => Some(crate::eventfd::EventFd::fdget(fd)?),
            None => None,
        };
        subs.push(
            devx_events::Sub::new(key1, level2, owner, cookie, file.clone(), efd)?,
            GFP_KERNEL,
        )?;
    }
    devx_events::subscribe(&call.ctx().device().data().events.devx, subs)
}
