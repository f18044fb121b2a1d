// SPDX-License-Identifier: GPL-2.0

//! Resource tracking (upstream `drivers/infiniband/core/restrack.c`): every
//! PD, CQ, QP, SRQ and MR of a device is recorded with a per-type ID and its
//! owner, for the count and dump APIs (RDMA netlink `RES_GET` later), and so
//! that dealloc can name whatever was left behind.
//!
//! Upstream keeps one XArray per type with `xa_alloc_cyclic` IDs. Here one
//! [`Table`] per type, under one mutex: chunks of 64 IDs (a bit mask of the
//! IDs in use and 64 entry pointers, 512 bytes) in a red-black tree keyed by
//! `ID >> 6`. Adding and forgetting an entry are a walk of that tree (a
//! context with 100k objects destroys one as fast as a context with 10) and a
//! bit; a dump walks a type's IDs in order; an entry costs about 9 bytes of
//! chunk when the IDs are dense, like an XArray leaf, where a red-black node
//! per entry cost 64. IDs are cyclic per type like upstream's, skipping IDs
//! still in use, so the IDs alive are mostly a window of a few chunks: the
//! tree is shallow and a new chunk is needed once every 64 adds (and the last
//! emptied one is kept for it, `Inner::spare`).
//!
//! Not one XArray at `type << 32 | ID`: a store there walks six levels of
//! nodes and takes the XArray's own spinlock under the mutex, which halved the
//! PD and CQ pair rates (`Documentation/performance.md`, "restrack's chunks").

use crate::task;
use kernel::prelude::*;
use kernel::rbtree::RBTree;
use kernel::str::BStr;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sync::{Arc, Mutex};

upstream_enum! {
    /// Tracked resource types (upstream `enum rdma_restrack_type`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    #[repr(u8)]
    pub enum ResType: u8 {
        Pd = 0 => RDMA_RESTRACK_PD,
        Cq = 1 => RDMA_RESTRACK_CQ,
        Qp = 2 => RDMA_RESTRACK_QP,
        Srq = 3 => RDMA_RESTRACK_SRQ,
        Mr = 4 => RDMA_RESTRACK_MR,
        /// User contexts (uverbs).
        Ctx = 5 => RDMA_RESTRACK_CTX,
    }
}

const NR_TYPES: usize = 6;

impl ResType {
    /// The name `rdma res` uses for the type.
    pub fn name(self) -> &'static str {
        match self {
            ResType::Pd => "pd",
            ResType::Cq => "cq",
            ResType::Qp => "qp",
            ResType::Srq => "srq",
            ResType::Mr => "mr",
            ResType::Ctx => "ctx",
        }
    }
}

/// Who owns a resource (upstream `rdma_restrack_entry.kern_name` or
/// `.task`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// A kernel consumer, by module name (upstream `KBUILD_MODNAME`).
    Kernel(&'static CStr),
    /// A user process: thread-group id and `comm`.
    User {
        /// The process id.
        pid: i32,
        /// The task's `comm`, NUL-padded.
        comm: [u8; task::TASK_COMM_LEN],
    },
}

impl Owner {
    /// The calling task as owner (upstream `rdma_restrack_set_name()` with
    /// a user context: `get_task_struct(current)`).
    pub fn current_task() -> Owner {
        let (pid, comm) = task::current_pid_comm();
        Owner::User { pid, comm }
    }

    /// The `comm` of a user owner without the NUL padding.
    pub fn comm(&self) -> Option<&[u8]> {
        match self {
            Owner::Kernel(_) => None,
            Owner::User { comm, .. } => {
                let n = comm.iter().position(|&b| b == 0).unwrap_or(comm.len());
                Some(&comm[..n])
            }
        }
    }
}

/// The kernel owner for the calling module: `kernel_owner!()` in a module
/// expands to `Owner::Kernel(<its name>)`.
#[macro_export]
// The caller's `LocalModule` is meant: it names the calling module.
#[allow(clippy::crate_in_macro_def)]
macro_rules! kernel_owner {
    () => {
        $crate::restrack::Owner::Kernel(<crate::LocalModule as ::kernel::ModuleMetadata>::NAME)
    };
}

/// What a resource is beyond its type, fixed at creation: the fields nldev's `RES_*_GET`
/// report (upstream reads them from the object behind `rdma_restrack_entry`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ResDetails {
    /// Nothing more (PD, ucontext).
    #[default]
    None,
    /// A CQ: its number of entries (upstream `cq->cqe`).
    Cq {
        /// Entries.
        cqe: u32,
    },
    /// A QP: its transport type (upstream `qp->qp_type`).
    Qp {
        /// `enum ib_qp_type` value.
        qp_type: u8,
        /// The restrack ID of the SRQ it receives from, plus one (0: none).
        srq: u32,
    },
    /// An SRQ: its type and PD (upstream `srq->srq_type`, `srq->pd->res.id`).
    Srq {
        /// `enum ib_srq_type` value.
        srq_type: u8,
        /// The PD's restrack ID.
        pdn: u32,
    },
    /// An MR: its length (upstream `mr->length`).
    Mr {
        /// Length in bytes.
        length: u64,
    },
}

/// The objects a user resource names in its nldev dump, fixed at creation (upstream reads
/// them through the object: `pd->uobject->context->res.id`, `qp->pd->res.id`, `mr->pd`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResLinks {
    /// The restrack ID of the user context of a user PD or CQ (`RDMA_NLDEV_ATTR_RES_CTXN`).
    pub ctxn: Option<u32>,
    /// The restrack ID of the PD of a QP or MR (`RDMA_NLDEV_ATTR_RES_PDN`; an XRC target QP
    /// has none).
    pub pdn: Option<u32>,
}

/// A tracked resource (upstream `struct rdma_restrack_entry`): shared by the table and the
/// object, which keeps its changing state here (`usecnt`, QP state) so that a dump can read
/// it without a reference on the object.
///
/// Kept small (one per PD, CQ, QP, SRQ and MR: `slab_bytes_pd` in
/// `Documentation/performance.md`): the type is a byte and the links are two IDs and a mask
/// of which are set ([`ResEntry::links`]), so that the entry and its reference count fit a
/// 96-byte slab object rather than a 128-byte one.
pub struct ResEntry {
    /// The type.
    pub kind: ResType,
    /// Which of `ctxn` ([`LINK_CTX`]) and `pdn` ([`LINK_PD`]) are set.
    link_mask: u8,
    /// Per-type ID.
    pub id: u32,
    /// [`ResLinks::ctxn`] if set.
    ctxn: u32,
    /// [`ResLinks::pdn`] if set.
    pdn: u32,
    /// The owner.
    pub owner: Owner,
    /// Fields fixed at creation.
    pub details: ResDetails,
    /// The object's use count (upstream `pd->usecnt`, `cq->usecnt`, ...).
    pub usecnt: Atomic<i32>,
    /// The QP state (`enum ib_qp_state`), kept by `Qp::modify`.
    pub state: Atomic<i32>,
    /// The QP number or the MR's lkey, known once the driver created the object; a CQ's
    /// current number of entries.
    pub num: Atomic<u32>,
    /// The MR's rkey, known once the driver created the object.
    pub rkey: Atomic<u32>,
    /// QP: the port, destination QP number and PSNs set by the last modifies
    /// that carried them (upstream reads them back with `ib_query_qp()`).
    pub qp_port: Atomic<u32>,
    /// QP: `dest_qp_num`.
    pub dest_qpn: Atomic<u32>,
    /// QP: `rq_psn`.
    pub rq_psn: Atomic<u32>,
    /// QP: `sq_psn`.
    pub sq_psn: Atomic<u32>,
}

/// [`ResEntry::link_mask`]: `ctxn` is set.
const LINK_CTX: u8 = 1;
/// [`ResEntry::link_mask`]: `pdn` is set.
const LINK_PD: u8 = 2;

impl ResEntry {
    /// The context and PD it was created in.
    pub fn links(&self) -> ResLinks {
        let get = |bit: u8, v: u32| (self.link_mask & bit != 0).then_some(v);
        ResLinks {
            ctxn: get(LINK_CTX, self.ctxn),
            pdn: get(LINK_PD, self.pdn),
        }
    }

    fn snapshot(&self) -> ResInfo {
        ResInfo {
            kind: self.kind,
            id: self.id,
            owner: self.owner,
            details: self.details,
            links: self.links(),
            usecnt: self.usecnt.load(Relaxed),
            state: self.state.load(Relaxed) as u8,
            num: self.num.load(Relaxed),
            rkey: self.rkey.load(Relaxed),
            qp_port: self.qp_port.load(Relaxed),
            dest_qpn: self.dest_qpn.load(Relaxed),
            rq_psn: self.rq_psn.load(Relaxed),
            sq_psn: self.sq_psn.load(Relaxed),
        }
    }
}

/// One tracked resource, as the dump API reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResInfo {
    /// The type.
    pub kind: ResType,
    /// Per-type ID.
    pub id: u32,
    /// The owner.
    pub owner: Owner,
    /// Fields fixed at creation.
    pub details: ResDetails,
    /// The context and PD it was created in.
    pub links: ResLinks,
    /// The use count when the snapshot was taken.
    pub usecnt: i32,
    /// The QP state when the snapshot was taken (0 for other types).
    pub state: u8,
    /// The QP number, or the MR's lkey (0 for other types).
    pub num: u32,
    /// The MR's rkey (0 for other types).
    pub rkey: u32,
    /// QP: the port (0 before one was set).
    pub qp_port: u32,
    /// QP: the destination QP number.
    pub dest_qpn: u32,
    /// QP: the receive PSN.
    pub rq_psn: u32,
    /// QP: the send PSN.
    pub sq_psn: u32,
}

/// The resource table of one device (upstream `struct rdma_restrack_root`
/// array, `ib_device.res`).
#[pin_data]
pub struct Restrack {
    #[pin]
    inner: Mutex<Inner>,
}

struct Inner {
    /// The entries of each type (`ResType as usize`).
    tables: [Table; NR_TYPES],
    /// The slots of the last chunk that emptied, for the next chunk any table needs.
    spare: Option<KBox<Slots>>,
}

/// log2 of the IDs a [`Chunk`] holds.
const CHUNK_SHIFT: u32 = 6;
/// The IDs a [`Chunk`] holds (the bits of [`Chunk::used`]).
const CHUNK_LEN: usize = 1 << CHUNK_SHIFT;

/// The entries of a [`Chunk`], by `ID % 64`.
type Slots = [Option<Arc<ResEntry>>; CHUNK_LEN];

/// The entries of 64 consecutive IDs of one type.
struct Chunk {
    /// Bit `ID % 64` is set while `slots[ID % 64]` holds an entry.
    used: u64,
    slots: KBox<Slots>,
}

/// The entries of one type, by ID (upstream: the type's `rdma_restrack_root.xa`).
struct Table {
    /// The chunks holding an entry, by `ID >> 6`.
    chunks: RBTree<u32, Chunk>,
    count: usize,
    /// Where the next cyclic ID search starts.
    next_id: u32,
}

/// The bit of `id` in its chunk's mask.
fn bit(id: u32) -> u64 {
    1 << (id as usize % CHUNK_LEN)
}

impl Table {
    fn new() -> Self {
        Table {
            chunks: RBTree::new(),
            count: 0,
            next_id: 0,
        }
    }

    fn contains(&self, id: u32) -> bool {
        self.chunks
            .get(&(id >> CHUNK_SHIFT))
            .is_some_and(|c| c.used & bit(id) != 0)
    }

    /// The next free ID from `next_id` on (upstream `xa_alloc_cyclic()`: at most one skip per
    /// live entry, after the IDs wrapped).
    fn free_id(&self) -> u32 {
        let mut id = self.next_id;
        while self.contains(id) {
            id = id.wrapping_add(1);
        }
        id
    }

    /// Stores `e` at the free ID `e.id`, with a new chunk (from `spare` if there is one) when
    /// its chunk has no entry yet.
    fn insert(&mut self, e: Arc<ResEntry>, spare: &mut Option<KBox<Slots>>) -> Result {
        let id = e.id;
        let key = id >> CHUNK_SHIFT;
        let c = match self.chunks.get_mut(&key) {
            Some(c) => c,
            None => {
                let slots = match spare.take() {
                    Some(s) => s,
                    None => KBox::new([const { None }; CHUNK_LEN], GFP_KERNEL)?,
                };
                let chunk = Chunk { used: 0, slots };
                self.chunks.try_create_and_insert(key, chunk, GFP_KERNEL)?;
                self.chunks.get_mut(&key).ok_or(ENOMEM)?
            }
        };
        c.used |= bit(id);
        c.slots[id as usize % CHUNK_LEN] = Some(e);
        self.count += 1;
        self.next_id = id.wrapping_add(1);
        Ok(())
    }

    /// Takes the entry of `id` out; a chunk left empty goes, its slots into `spare`.
    fn remove(&mut self, id: u32, spare: &mut Option<KBox<Slots>>) -> Option<Arc<ResEntry>> {
        let key = id >> CHUNK_SHIFT;
        let c = self.chunks.get_mut(&key)?;
        if c.used & bit(id) == 0 {
            return None;
        }
        c.used &= !bit(id);
        let e = c.slots[id as usize % CHUNK_LEN].take();
        self.count -= 1;
        if c.used == 0 {
            if let Some(node) = self.chunks.remove_node(&key) {
                let (_, chunk) = node.to_key_value();
                *spare = Some(chunk.slots);
            }
        }
        e
    }

    /// The entries, by ID.
    fn iter(&self) -> impl Iterator<Item = &Arc<ResEntry>> + '_ {
        self.chunks.values().flat_map(|c| c.slots.iter().flatten())
    }
}

impl Restrack {
    /// An empty table (upstream `rdma_restrack_init()`).
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Restrack {
            inner <- core_mutex!(
                Inner {
                    tables: core::array::from_fn(|_| Table::new()),
                    spare: None,
                },
                c"rdma_restrack_root.lock"
            ),
        })
    }

    /// Records a new resource and returns its ID (upstream
    /// `rdma_restrack_add()`; the ID is allocated cyclically per type).
    ///
    /// # Errors
    ///
    /// `ENOMEM` when the table cannot grow.
    // For objects without details (uverbs' ucontext).
    pub(crate) fn add(&self, kind: ResType, owner: Owner) -> Result<u32> {
        Ok(self.add_entry(kind, owner, ResDetails::None)?.id)
    }

    /// Records a new resource with its details and returns the entry, which the object keeps
    /// (upstream `rdma_restrack_add()`).
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn add_entry(
        &self,
        kind: ResType,
        owner: Owner,
        details: ResDetails,
    ) -> Result<Arc<ResEntry>> {
        self.add_linked(kind, owner, details, ResLinks::default())
    }

    /// [`Restrack::add_entry`] for a resource that names its user context or PD.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn add_linked(
        &self,
        kind: ResType,
        owner: Owner,
        details: ResDetails,
        links: ResLinks,
    ) -> Result<Arc<ResEntry>> {
        let mut g = self.inner.lock();
        let id = g.tables[kind as usize].free_id();
        let mask = |bit: u8, v: Option<u32>| if v.is_some() { bit } else { 0 };
        let e = Arc::new(
            ResEntry {
                kind,
                link_mask: mask(LINK_CTX, links.ctxn) | mask(LINK_PD, links.pdn),
                id,
                ctxn: links.ctxn.unwrap_or(0),
                pdn: links.pdn.unwrap_or(0),
                owner,
                details,
                usecnt: Atomic::new(0),
                state: Atomic::new(0),
                num: Atomic::new(0),
                rkey: Atomic::new(0),
                qp_port: Atomic::new(0),
                dest_qpn: Atomic::new(0),
                rq_psn: Atomic::new(0),
                sq_psn: Atomic::new(0),
            },
            GFP_KERNEL,
        )?;
        let Inner { tables, spare } = &mut *g;
        tables[kind as usize].insert(e.clone(), spare)?;
        Ok(e)
    }

    /// Forgets a resource (upstream `rdma_restrack_del()`).
    pub(crate) fn del(&self, kind: ResType, id: u32) {
        let mut g = self.inner.lock();
        let Inner { tables, spare } = &mut *g;
        let e = tables[kind as usize].remove(id, spare);
        drop(g);
        // The last reference may go here, outside the lock.
        drop(e);
    }

    /// Number of tracked resources of a type (upstream `rdma_restrack_count()`).
    pub fn count(&self, kind: ResType) -> usize {
        self.inner.lock().tables[kind as usize].count
    }

    /// Number of tracked resources of every type.
    pub fn total(&self) -> usize {
        self.inner.lock().tables.iter().map(|t| t.count).sum()
    }

    /// A snapshot of the resources of a type, ordered by ID (what an nldev
    /// `RES_*_GET` dump walks).
    ///
    /// # Errors
    ///
    /// `ENOMEM` when the snapshot cannot be allocated.
    pub fn dump(&self, kind: ResType) -> Result<KVec<ResInfo>> {
        let g = self.inner.lock();
        let t = &g.tables[kind as usize];
        let mut v = KVec::with_capacity(t.count, GFP_KERNEL)?;
        for e in t.iter() {
            v.push(e.snapshot(), GFP_KERNEL)?;
        }
        Ok(v)
    }

    /// The resource of a type whose number (`num`: the QP number) is `num`, if any (upstream
    /// `rdma_restrack_get_byid()` for QPs, whose restrack id is the QP number).
    ///
    /// # Errors
    ///
    /// `ENOENT` for number 0 (a QP the driver has not created yet).
    pub fn find_num(&self, kind: ResType, num: u32) -> Result<Option<ResInfo>> {
        if num == 0 {
            return Err(ENOENT);
        }
        let g = self.inner.lock();
        let found = g.tables[kind as usize]
            .iter()
            .find(|e| e.num.load(Relaxed) == num)
            .map(|e| e.snapshot());
        Ok(found)
    }

    /// Reports every resource still tracked, with its owner, and returns how
    /// many there were (upstream `rdma_restrack_clean()` at dealloc, which
    /// prints them and WARNs).
    pub fn report_leftovers(&self, dev_name: &[u8]) -> usize {
        let g = self.inner.lock();
        for e in g.tables.iter().flat_map(Table::iter) {
            let name = BStr::from_bytes(dev_name);
            match e.owner {
                Owner::Kernel(m) => pr_err!(
                    "ib_core_rs: {}: {} {} still allocated by kernel module {:?}\n",
                    name,
                    e.kind.name(),
                    e.id,
                    m
                ),
                Owner::User { pid, .. } => pr_err!(
                    "ib_core_rs: {}: {} {} still allocated by pid {} ({})\n",
                    name,
                    e.kind.name(),
                    e.id,
                    pid,
                    BStr::from_bytes(e.owner.comm().unwrap_or(b""))
                ),
            }
        }
        g.tables.iter().map(|t| t.count).sum()
    }
}

#[kunit_tests(ib_core_rs_restrack)]
mod tests {
    use super::*;

    const OWN: Owner = Owner::Kernel(c"kunit");

    fn ids(r: &Restrack, kind: ResType) -> Result<KVec<u32>> {
        let mut v = KVec::new();
        for i in r.dump(kind)? {
            v.push(i.id, GFP_KERNEL)?;
        }
        Ok(v)
    }

    /// IDs are cyclic per type (a freed ID is not the next one), counted per type, and a
    /// dump lists them in ID order across chunks; forgetting an unknown ID changes nothing.
    #[test]
    fn cyclic_ids_per_type_dumped_in_order() -> Result {
        let r = KBox::pin_init(Restrack::new(), GFP_KERNEL)?;
        for i in 0..130u32 {
            assert_eq!(r.add(ResType::Pd, OWN)?, i);
        }
        assert_eq!(r.add(ResType::Cq, OWN)?, 0);
        r.del(ResType::Pd, 5);
        for i in 64..128 {
            r.del(ResType::Pd, i);
        }
        assert_eq!(r.add(ResType::Pd, OWN)?, 130);
        r.del(ResType::Pd, 5);
        r.del(ResType::Pd, 1000);
        assert_eq!(r.count(ResType::Pd), 66);
        assert_eq!(r.total(), 67);
        let got = ids(&r, ResType::Pd)?;
        assert_eq!(&got[..4], &[0, 1, 2, 3]);
        assert_eq!(&got[4..6], &[4, 6]);
        assert_eq!(&got[got.len() - 4..], &[63, 128, 129, 130]);
        assert_eq!(&ids(&r, ResType::Cq)?[..], &[0]);
        // The chunk of 64..127 emptied: its slots wait for the next new chunk.
        assert!(r.inner.lock().spare.is_some());
        Ok(())
    }

    /// After the IDs wrap, the search skips the IDs still in use; the entry an add returns
    /// is the one the table keeps (its changing state is what a dump reads); a chunk that
    /// empties goes and a new one takes its slots.
    #[test]
    fn wraps_past_ids_in_use() -> Result {
        let r = KBox::pin_init(Restrack::new(), GFP_KERNEL)?;
        let zero = r.add_entry(ResType::Qp, OWN, ResDetails::None)?;
        assert_eq!(r.add(ResType::Qp, OWN)?, 1);
        r.inner.lock().tables[ResType::Qp as usize].next_id = u32::MAX - 1;
        assert_eq!(r.add(ResType::Qp, OWN)?, u32::MAX - 1);
        assert_eq!(r.add(ResType::Qp, OWN)?, u32::MAX);
        assert_eq!(r.add(ResType::Qp, OWN)?, 2);
        assert_eq!(
            &ids(&r, ResType::Qp)?[..],
            &[0, 1, 2, u32::MAX - 1, u32::MAX]
        );
        zero.num.store(77, Relaxed);
        assert_eq!(r.find_num(ResType::Qp, 77)?.map(|i| i.id), Some(0));
        assert_eq!(r.find_num(ResType::Qp, 0), Err(ENOENT));
        r.del(ResType::Qp, u32::MAX - 1);
        r.del(ResType::Qp, u32::MAX);
        assert_eq!(
            r.inner.lock().tables[ResType::Qp as usize]
                .chunks
                .iter()
                .count(),
            1
        );
        assert!(r.inner.lock().spare.is_some());
        r.inner.lock().tables[ResType::Qp as usize].next_id = 1 << 20;
        assert_eq!(r.add(ResType::Qp, OWN)?, 1 << 20);
        assert!(r.inner.lock().spare.is_none());
        for id in [0, 1, 2, 1 << 20] {
            r.del(ResType::Qp, id);
        }
        assert_eq!(r.total(), 0);
        assert_eq!(
            r.inner.lock().tables[ResType::Qp as usize]
                .chunks
                .iter()
                .count(),
            0
        );
        Ok(())
    }
}
