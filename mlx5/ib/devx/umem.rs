// SPDX-License-Identifier: GPL-2.0

//! DEVX umems (`MLX5_IB_OBJECT_DEVX_UMEM`): pinned user memory registered with CREATE_UMEM.

use super::command::{build_destroy_cmd, set};
use super::obj::DevxObj;
use super::uctx::ctx_uid;
use super::{
    ATTR_UMEM_ACCESS, ATTR_UMEM_ADDR, ATTR_UMEM_LEN, ATTR_UMEM_OUT_ID, ATTR_UMEM_PGSZ_BITMAP,
};
use crate::ib::device::Mlx5Ib;
use crate::ib::user_mem::UserBuf;
use crate::prm::cmd::create_umem_in;
use crate::prm::ctx::umem as umemc;
use crate::prm::devx_ops as op;
use ib_core_rs::uverbs::driver_api::{DriverCall, DriverUobject};
use ib_core_rs::verbs::AccessFlags;
use kernel::prelude::*;

/// `IB_ACCESS_LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | RELAXED_ORDERING`: what UMEM_REG
/// accepts.
const UMEM_ACCESS: u64 = 1 | 2 | 4 | (1 << 20);
/// `MLX5_ADAPTER_PAGE_SHIFT`.
const ADAPTER_PAGE_SHIFT: u32 = 12;

/// upstream `MLX5_IB_METHOD_DEVX_UMEM_REG`: pin, CREATE_UMEM with the uid and an MTT of the
/// pages' bus addresses, commit, answer the id.
pub(super) fn umem_reg(call: &mut DriverCall<'_, '_, Mlx5Ib>) -> Result {
    let ctx = call.ctx().clone();
    let uid = ctx_uid(&ctx);
    if uid == 0 {
        return Err(EINVAL);
    }
    let access = call.flags32(ATTR_UMEM_ACCESS, UMEM_ACCESS)?;
    let word = |v: KVec<u8>| -> Result<u64> {
        let mut b = [0u8; 8];
        b.copy_from_slice(v.get(..8).ok_or(EINVAL)?);
        Ok(u64::from_ne_bytes(b))
    };
    let addr = word(call.ptr_in(ATTR_UMEM_ADDR)?)?;
    let len = word(call.ptr_in(ATTR_UMEM_LEN)?)?;
    // upstream devx_umem_find_best_pgsize(): the largest size of the bitmap the pages allow;
    // the pages here are mapped one by one, so only the system page size is taken (it must be
    // in the bitmap, else EINVAL).
    let default = !((1u64 << ADAPTER_PAGE_SHIFT.min(kernel::page::PAGE_SHIFT as u32)) - 1);
    let bitmap = call.const_in(ATTR_UMEM_PGSZ_BITMAP, u64::MAX, Some(default))?;
    let page_shift = kernel::page::PAGE_SHIFT as u32;
    if bitmap & (1u64 << page_shift) == 0 {
        return Err(EINVAL);
    }
    let flags = AccessFlags(access);
    let buf = UserBuf::pin(&ctx, addr, len, flags)?;
    let pages = buf.pages()?;
    let n = pages.len();
    let inlen = create_umem_in::SIZE_BYTES + 8 * n;
    let mut cmd = KVec::from_elem(0u8, inlen, GFP_KERNEL)?;
    let u = |f| create_umem_in::umem.inner(f).field();
    set(
        &mut cmd,
        create_umem_in::opcode.field(),
        op::CREATE_UMEM.into(),
    )?;
    set(&mut cmd, create_umem_in::uid.field(), uid.into())?;
    set(
        &mut cmd,
        u(umemc::log_page_size),
        page_shift - ADAPTER_PAGE_SHIFT,
    )?;
    set(&mut cmd, u(umemc::page_offset), buf.page_offset() as u32)?;
    u(umemc::num_of_mtt)
        .set64(&mut cmd, n as u64)
        .map_err(|_| EINVAL)?;
    // upstream mlx5_ib_populate_pas() with MLX5_IB_MTT_READ (| _WRITE when writable).
    let perm: u64 = if buf.writable() { 3 } else { 1 };
    for (i, p) in pages.iter().enumerate() {
        let o = create_umem_in::SIZE_BYTES + 8 * i;
        cmd.get_mut(o..o + 8)
            .ok_or(EINVAL)?
            .copy_from_slice(&(p | perm).to_be_bytes());
    }
    let hw = ctx.device().data().hw.clone();
    let mut out = [0u8; 16];
    hw.exec(&cmd, &mut out)?;
    let (din, obj_id) = build_destroy_cmd(&cmd, &out)?;
    let id = obj_id as u32;
    let obj = DevxUmem {
        obj: DevxObj::new(hw, ctx.device().data().events.clone(), obj_id, din),
        _buf: buf,
    };
    call.set_new_object(KBox::new(obj, GFP_KERNEL)?)?;
    call.put(ATTR_UMEM_OUT_ID, &id.to_ne_bytes())
}

/// A umem (upstream `struct devx_umem`): DESTROY_UMEM first, then the pages are unmapped and
/// unpinned (field order).
pub(crate) struct DevxUmem {
    obj: DevxObj,
    _buf: UserBuf,
}

impl DriverUobject for DevxUmem {
    fn destroy_hw(&self) -> Result {
        self.obj.destroy()
    }
}
