// SPDX-License-Identifier: GPL-2.0

//! The device's XRC domains shared by inode (upstream `ib_uverbs_device.xrcd_tree`) and the
//! XRCD handle of a file (upstream `struct ib_uxrcd_object`), with the close that
//! deallocates a domain with its last open (`ib_uverbs_dealloc_xrcd()`). The commands that
//! fill them are in [`super::cmd::xrcd`].

use crate::driver::Driver;
use crate::inode::InodeRef;
use crate::verbs::{Counted, Xrcd};
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Full, Relaxed};
use kernel::sync::{Arc, Mutex};

pub(in crate::uverbs::file) struct Node<D: Driver> {
    pub(in crate::uverbs::file) inode: InodeRef,
    pub(in crate::uverbs::file) xrcd: Arc<Xrcd<D>>,
    /// Open handles of the domain (upstream: their share of `xrcd->usecnt`).
    pub(in crate::uverbs::file) opens: u32,
}

/// The device's XRC domains opened by inode (upstream `xrcd_tree` with
/// `xrcd_tree_mutex`).
#[pin_data]
pub(crate) struct XrcdTree<D: Driver> {
    #[pin]
    pub(in crate::uverbs::file) nodes: Mutex<KVec<Node<D>>>,
}

impl<D: Driver> XrcdTree<D> {
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(XrcdTree {
                nodes <- core_mutex!(KVec::new(), c"uverbs_xrcd_tree"),
            }),
            GFP_KERNEL,
        )
    }
}

/// One XRCD handle (upstream `struct ib_uxrcd_object`).
pub(in crate::uverbs::file) struct UXrcd<D: Driver> {
    pub(in crate::uverbs::file) xrcd: Arc<Xrcd<D>>,
    tree: Arc<XrcdTree<D>>,
    /// The inode of a shared domain (`None`: opened with fd -1).
    inode_key: Option<usize>,
    /// XRC SRQs and target QPs using this handle (upstream `uxrcd->refcnt`).
    refcnt: Atomic<i32>,
    closed: Atomic<bool>,
}

impl<D: Driver> UXrcd<D> {
    /// A new handle of `xrcd`, shared by inode `inode_key` in `tree` (`None`: a domain of
    /// its own).
    pub(in crate::uverbs::file) fn new(
        xrcd: Arc<Xrcd<D>>,
        tree: Arc<XrcdTree<D>>,
        inode_key: Option<usize>,
    ) -> Result<Arc<Self>> {
        Ok(Arc::new(
            UXrcd {
                xrcd,
                tree,
                inode_key,
                refcnt: Atomic::new(0),
                closed: Atomic::new(false),
            },
            GFP_KERNEL,
        )?)
    }

    pub(in crate::uverbs::file) fn get(&self) {
        self.refcnt.fetch_add(1, Full);
    }

    pub(in crate::uverbs::file) fn put(&self) {
        self.refcnt.fetch_sub(1, Full);
    }

    pub(in crate::uverbs::file) fn users(&self) -> i32 {
        self.refcnt.load(Relaxed)
    }

    /// Closes the handle (upstream `ib_uverbs_dealloc_xrcd()`): a shared domain loses one
    /// open and is deallocated with its last one (then it leaves the table); a domain of
    /// its own is deallocated. On an error the handle stays open.
    pub(in crate::uverbs::file) fn close(&self) -> Result {
        if self.closed.load(Relaxed) {
            return Ok(());
        }
        let mut nodes = self.tree.nodes.lock();
        let Some(key) = self.inode_key else {
            Xrcd::dealloc(self.xrcd.clone()).map_err(|e| e.err)?;
            self.closed.store(true, Relaxed);
            return Ok(());
        };
        let i = nodes
            .iter()
            .position(|n| n.inode.key() == key)
            .ok_or(EINVAL)?;
        let n = nodes.get_mut(i).ok_or(EINVAL)?;
        // upstream: `!atomic_dec_and_test(&xrcd->usecnt)`, the opens and the users together.
        if n.opens > 1 || n.xrcd.usecnt() != 0 {
            n.opens = n.opens.saturating_sub(1);
            self.closed.store(true, Relaxed);
            return Ok(());
        }
        Xrcd::dealloc(self.xrcd.clone()).map_err(|e| e.err)?;
        let _ = nodes.remove(i);
        self.closed.store(true, Relaxed);
        Ok(())
    }
}

impl<D: Driver> Drop for UXrcd<D> {
    fn drop(&mut self) {
        // A handle dropped without a close (a file torn down past its EBUSY passes).
        let _ = self.close();
    }
}
