// SPDX-License-Identifier: GPL-2.0

//! DEVX user memory: CREATE_UMEM/DESTROY_UMEM (PRM "User Memory", mlx5_ifc.h `create_umem_in`)
//! and the CQ and QP contexts that name a umem instead of carrying `pas[]` and a doorbell
//! record's bus address.
//!
//! A umem is user memory a DEVX context registered: upstream mlx5_ib pins it and sends
//! CREATE_UMEM with the uid of the context and one MTT entry (a bus address) per page
//! (`devx_umem_reg_cmd_alloc()`). A CQ then names it with `cq_umem_valid`, `cq_umem_id` and
//! `cq_umem_offset` (its buffer starts that far into the umem), and its doorbell record with
//! `cqc.dbr_umem_valid`, `cqc.dbr_umem_id` and `cqc.dbr_addr` as an offset in that umem; a QP
//! with `wq_umem_*` and `qpc.dbr_umem_*`, an RMP with its `wq`'s `wq_umem_*` and `dbr_umem_*`.
//! The model translates them once, at create time, into the same [`Xlat`] and doorbell bus
//! address a `pas[]` queue has, so the data path does not know the difference. A umem belongs to its uid: a command of another uid naming it is
//! `BAD_RES_ERR` (`UMEM_UNKNOWN`), as for every object. DESTROY_UMEM is `RES_BUSY` while a CQ,
//! QP or RMP uses it, and DESTROY_UCTX while the uid owns one.

use super::ring::Buf;
use super::syndrome::{self as syn, CmdError};
use super::xlat::Xlat;
use super::{fail, Cmd, Done, Fw};
use crate::prm::cmd::*;
use crate::prm::command::*;
use crate::prm::ctx::umem as umemc;
use crate::prm::status::Status;

/// A registered umem.
#[derive(Clone, Copy, Debug)]
pub(super) struct Umem {
    /// The owner.
    pub(super) uid: u16,
    /// Its pages, from the first page's start.
    xlat: Xlat,
    /// Where the umem starts in its first page.
    page_offset: u64,
    /// Bytes from `page_offset` to the end of the last page.
    len: u64,
}

super::table::owner_is_uid!(Umem);

/// MTT entries a CREATE_UMEM may carry: a 256 MiB umem of 4 KiB pages. The translation is
/// compressed into runs ([`Xlat`]), so this bounds the work of one command, not memory.
const MAX_MTT: u64 = 1 << 16;

impl Fw {
    /// CREATE_UMEM: the MTT (one big-endian bus address per page of `4 KiB <<
    /// log_page_size`, the low bits are `rd_en`/`wr_en`) after the fixed layout.
    pub(super) fn create_umem(&mut self, c: &mut Cmd<'_, CreateUmem>) -> Done {
        if c.uid == 0 {
            return fail(Status::BAD_PARAM_ERR, syn::UMEM_NO_UID);
        }
        let u = |f| create_umem_in::umem.inner(f);
        let log = c.get(u(umemc::log_page_size));
        let page = 4096u64.checked_shl(log).filter(|_| log <= 18);
        let n = c.inbox.get64(u(umemc::num_of_mtt));
        let off = u64::from(c.get(u(umemc::page_offset)));
        let Some(page) = page else {
            return fail(Status::BAD_PARAM_ERR, syn::UMEM_BAD_MTT);
        };
        if n == 0 || n > MAX_MTT || off >= page {
            return fail(Status::BAD_PARAM_ERR, syn::UMEM_BAD_MTT);
        }
        c.tail_fits(n, 8)?;
        let xlat = Xlat::from_pages(c.inbox_raw(), create_umem_in::SIZE_BYTES, n, page)
            .map_err(super::objects::fragmented)?;
        let len = n.saturating_mul(page) - off;
        let m = Umem {
            uid: c.uid,
            xlat,
            page_offset: off,
            len,
        };
        let id = self.umems.insert(m)?;
        c.set(create_umem_out::umem_id, id)
    }

    /// DESTROY_UMEM: refused while a CQ, QP or RMP uses the umem.
    pub(super) fn destroy_umem(&mut self, c: &mut Cmd<'_, DestroyUmem>) -> Done {
        let id = c.get(destroy_umem_in::umem_id);
        self.umem(c.uid, id)?;
        let used = self.cqs.iter().any(|(_, q)| q.umems.contains(&id))
            || self.qps.iter().any(|(_, q)| q.umems.contains(&id))
            || self.rmps.iter().any(|(_, q)| q.umems.contains(&id));
        if used {
            return fail(Status::RES_BUSY, syn::UMEM_BUSY);
        }
        self.umems.free(id);
        Ok(())
    }

    /// The umem `id` if `uid` may use it.
    fn umem(&self, uid: u16, id: u32) -> Result<&Umem, CmdError> {
        self.umems
            .lookup_owned(id, uid, syn::UMEM_UNKNOWN)
            .map_err(|_| CmdError::new(Status::BAD_RES_ERR, syn::UMEM_UNKNOWN))
    }

    /// DEVX: puts a queue's buffer of `bytes` bytes in umem range `wq` (umem id, offset) and
    /// its doorbell record in umem `dbr` (at the offset its `dbr_addr` gives), each if given,
    /// checked in that order. Returns the umem ids the queue holds (0: none).
    pub(super) fn umem_place(
        &self,
        uid: u16,
        buf: &mut Buf,
        bytes: u64,
        wq: Option<(u32, u64)>,
        dbr: Option<u32>,
    ) -> Result<[u32; 2], CmdError> {
        let mut umems = [0u32; 2];
        if let Some((id, off)) = wq {
            buf.move_to(self.umem_range(uid, id, off, bytes)?);
            umems[0] = id;
        }
        if let Some(id) = dbr {
            buf.dbr = self.umem_dbr(uid, id, buf.dbr)?;
            umems[1] = id;
        }
        Ok(umems)
    }

    /// The translation of `len` bytes at offset `off` of umem `id` (a queue buffer).
    fn umem_range(&self, uid: u16, id: u32, off: u64, len: u64) -> Result<Xlat, CmdError> {
        let m = self.umem(uid, id)?;
        if off.checked_add(len).is_none_or(|end| end > m.len) {
            return fail(Status::BAD_PARAM_ERR, syn::UMEM_RANGE);
        }
        m.xlat
            .slice(m.page_offset + off, len)
            .map_err(super::objects::fragmented)
    }

    /// The bus address of the 8-byte doorbell record at offset `off` of umem `id`.
    fn umem_dbr(&self, uid: u16, id: u32, off: u64) -> Result<u64, CmdError> {
        let m = self.umem(uid, id)?;
        if off.checked_add(8).is_none_or(|end| end > m.len) {
            return fail(Status::BAD_PARAM_ERR, syn::UMEM_RANGE);
        }
        match m.xlat.at(m.page_offset + off) {
            Some((bus, n)) if n >= 8 => Ok(bus),
            _ => fail(Status::BAD_PARAM_ERR, syn::UMEM_RANGE),
        }
    }

    /// Whether uid `uid` owns a umem (DESTROY_UCTX is refused then).
    pub(super) fn uid_owns_umem(&self, uid: u32) -> bool {
        self.umems.iter().any(|(_, m)| u32::from(m.uid) == uid)
    }
}
