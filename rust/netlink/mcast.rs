// SPDX-License-Identifier: GPL-2.0

//! The socket notifications are multicast from: the value behind `crate::global::MCAST`, in a
//! file of its own so that the global state does not import the socket code that uses it.

use core::ptr::NonNull;
use kernel::bindings;

/// The kernel socket notifications are multicast from (`NlSocket::publish`), behind
/// `crate::global::MCAST`.
///
/// # Invariants
///
/// A `Some` pointer is a live kernel netlink socket: `NlSocket`'s `Drop` clears it, under the
/// lock, before it releases the socket.
pub(crate) struct McastSock(pub(super) Option<NonNull<bindings::sock>>);

impl McastSock {
    /// No socket.
    pub(crate) const NONE: McastSock = McastSock(None);
}

// SAFETY: the pointer is only used under the global lock, from any thread.
unsafe impl Send for McastSock {}
