// SPDX-License-Identifier: GPL-2.0

//! The `NETLINK_RDMA` kernel socket: requests dispatched by type `(client << 10) + op` to safe
//! Rust handlers, unicast replies, and dumps.
//!
//! upstream: `drivers/infiniband/core/netlink.c` (`rdma_nl_rcv()`, `rdma_nl_rcv_msg()`,
//! `rdma_nl_unicast()`). The byte-level work (headers, attributes, length validation) is the
//! pure [`codec`], which the host also compiles; this file owns the socket and the `sk_buff`s.
//!
//! A user implements [`NlHandler`] on its state type and lists its operations in
//! [`NlHandler::OPS`] (the Rust form of upstream's `rdma_nl_cbs` tables):
//!
//! * a request without `NLM_F_DUMP` runs the op's `doit`, which writes its reply into a
//!   [`codec::MsgWriter`] over a fresh `sk_buff`; a non-empty reply is unicast to the sender;
//! * a request with `NLM_F_DUMP` starts a netlink dump (`netlink_dump_start()`): the op's `dump`
//!   is called for every `recvmsg()` of the requester with a [`DumpCursor`] to resume from,
//!   writes as many `NLM_F_MULTI` messages as fit, and the dump ends (`NLMSG_DONE`, added by
//!   the netlink core) when a call writes nothing;
//! * an unknown client or op, or a missing `doit`/`dump`, is `EINVAL`; an op marked `admin`
//!   without `CAP_NET_ADMIN` is `EPERM`; errors and requested acks are sent by
//!   `netlink_rcv_skb()`, exactly as upstream.
//!
//! Only `init_net` gets a socket (upstream has one per network namespace).

use core::{ffi::c_void, marker::PhantomData, ptr::NonNull};
use kernel::{
    bindings,
    ffi::{c_int, c_long},
    prelude::*,
    sync::{Arc, ArcBorrow},
    ThisModule,
};

#[path = "netlink/codec.rs"]
pub(crate) mod codec;
#[path = "netlink/mcast.rs"]
pub(crate) mod mcast;
#[path = "netlink/nldev_uapi.rs"]
pub(crate) mod nldev_uapi;

use codec::{CodecError, MsgWriter, NlMsg, NLM_F_DUMP};
use mcast::McastSock;

/// `NETLINK_RDMA`.
pub(crate) const NETLINK_RDMA: i32 = bindings::NETLINK_RDMA as i32;

extern "C" {
    fn rdma_rs_nlmsg_new_default() -> *mut bindings::sk_buff;
    fn rdma_rs_skb_tail(skb: *mut bindings::sk_buff, room: *mut u32) -> *mut c_void;
    fn rdma_rs_skb_portid(skb: *const bindings::sk_buff) -> u32;
    fn rdma_rs_skb_sk(skb: *const bindings::sk_buff) -> *mut bindings::sock;
    fn rdma_rs_nlmsg_unicast(
        sk: *mut bindings::sock,
        skb: *mut bindings::sk_buff,
        portid: u32,
    ) -> c_int;
    fn rdma_rs_sk_user_data(sk: *const bindings::sock) -> *mut c_void;
    fn rdma_rs_sk_set_user_data(sk: *mut bindings::sock, data: *mut c_void);
    fn rdma_rs_sock_hold(sk: *mut bindings::sock);
    fn rdma_rs_sock_put(sk: *mut bindings::sock);
    fn rdma_rs_sock_refs(sk: *const bindings::sock) -> u32;
    fn rdma_rs_sk_set_sndtimeo(sk: *mut bindings::sock, secs: u32);
    fn rdma_rs_nlmsg_multicast(
        sk: *mut bindings::sock,
        skb: *mut bindings::sk_buff,
        group: u32,
    ) -> c_int;
}

/// Multicasts one message that `build` writes to `group` of the published socket (upstream
/// `rdma_nl_multicast()` → `nlmsg_multicast()`); without a published socket nothing is sent.
/// No listener (`ESRCH`) is success, as upstream `rdma_nl_notify_event()` treats it.
///
/// # Errors
///
/// `ENOMEM`, `build`'s error, `nlmsg_multicast()`'s other errors.
pub(crate) fn multicast(group: u32, build: impl FnOnce(&mut MsgWriter<'_>) -> Result) -> Result {
    let g = crate::global::MCAST.lock();
    let Some(sk) = g.0 else {
        return Ok(());
    };
    // SAFETY: `sk` is live while the lock is held (type invariant of `McastSock`);
    // nlmsg_multicast() consumes the skb.
    let send = |skb| unsafe { rdma_rs_nlmsg_multicast(sk.as_ptr(), skb, group) };
    match send_new_skb(build, send)? {
        None | Some(0) => Ok(()),
        Some(e) if e == -(bindings::ESRCH as c_int) => Ok(()),
        Some(e) => Err(Error::from_errno(e)),
    }
}

impl From<CodecError> for Error {
    fn from(e: CodecError) -> Self {
        match e {
            CodecError::NoSpace => EMSGSIZE,
            _ => EINVAL,
        }
    }
}

/// A request as the handlers see it.
pub(crate) struct Request<'a> {
    /// The message (header and attribute payload), validated by the netlink core
    /// (`nlmsg_len` within the datagram).
    pub(crate) msg: NlMsg<'a>,
    /// The sender's port id (`NETLINK_CB(skb).portid`), where replies go.
    pub(crate) portid: u32,
    /// Whether the sender has `CAP_NET_ADMIN` (`netlink_capable()`; nldev shows MR keys and
    /// the PD's local DMA lkey only then).
    pub(crate) admin: bool,
}

impl Request<'_> {
    /// The request's sequence number, which replies echo.
    pub(crate) fn seq(&self) -> u32 {
        self.msg.hdr.seq
    }
}

/// Where a dump resumes: six words kept by the netlink core between the calls of one dump
/// (upstream `cb->args`), zero at the first call.
pub(crate) struct DumpCursor<'a>(&'a mut [c_long; 6]);

impl DumpCursor<'_> {
    /// Word `i` (0..6); 0 for an index out of range.
    pub(crate) fn get(&self, i: usize) -> u64 {
        self.0.get(i).map_or(0, |v| *v as u64)
    }

    /// Sets word `i` (0..6); ignored for an index out of range.
    pub(crate) fn set(&mut self, i: usize, v: u64) {
        if let Some(w) = self.0.get_mut(i) {
            *w = v as c_long;
        }
    }
}

/// A `doit`: answers one request by writing reply messages into the writer.
pub(crate) type DoitFn<T> = fn(&T, &Request<'_>, &mut MsgWriter<'_>) -> Result;

/// A `dump` step: writes the entries from the cursor on (each one an `NLM_F_MULTI` message
/// echoing the request's sequence number), stops at the first that does not fit
/// ([`CodecError::NoSpace`], after [`MsgWriter::cancel`]) and records where to resume. Writing
/// nothing ends the dump.
pub(crate) type DumpFn<T> = fn(&T, &Request<'_>, &mut DumpCursor<'_>, &mut MsgWriter<'_>) -> Result;

/// One operation of a netlink client (upstream `struct rdma_nl_cbs`).
pub(crate) struct NlOp<T: 'static> {
    /// The client (`RDMA_NL_NLDEV`, ...).
    pub(crate) client: u16,
    /// The op within the client (`RDMA_NLDEV_CMD_*`).
    pub(crate) op: u16,
    /// The handler of a request without `NLM_F_DUMP`.
    pub(crate) doit: Option<DoitFn<T>>,
    /// The handler of a request with `NLM_F_DUMP`.
    pub(crate) dump: Option<DumpFn<T>>,
    /// `RDMA_NL_ADMIN_PERM`: the sender needs `CAP_NET_ADMIN`.
    pub(crate) admin: bool,
}

/// The state behind a `NETLINK_RDMA` socket and its operations.
pub(crate) trait NlHandler: Send + Sync + Sized + 'static {
    /// The operations, looked up by client and op.
    const OPS: &'static [NlOp<Self>];
}

/// Looks up the operation of a message type (`(client << 10) + op`).
pub(crate) fn find_op<T: NlHandler>(ty: u16) -> Option<&'static NlOp<T>> {
    let client = nldev_uapi::rdma_nl_get_client(ty);
    let op = nldev_uapi::rdma_nl_get_op(ty);
    T::OPS.iter().find(|o| o.client == client && o.op == op)
}

/// How a request is served: the pure part of upstream `rdma_nl_rcv_msg()`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// Call the `doit`.
    Doit,
    /// Start a dump.
    Dump,
}

/// Decides how `ty` with `flags` is served, or the errno: `EINVAL` for an unknown client, op or
/// missing callback, `EPERM` for an admin op without `CAP_NET_ADMIN`.
pub(crate) fn route<T: NlHandler>(
    ty: u16,
    flags: u16,
    capable: impl FnOnce() -> bool,
) -> Result<Route> {
    let op = find_op::<T>(ty).ok_or(EINVAL)?;
    if op.admin && !capable() {
        return Err(EPERM);
    }
    if flags & NLM_F_DUMP != 0 {
        op.dump.map(|_| Route::Dump).ok_or(EINVAL)
    } else {
        op.doit.map(|_| Route::Doit).ok_or(EINVAL)
    }
}

/// The tailroom of `skb` as a byte slice.
///
/// # Safety
///
/// `skb` must be a valid `sk_buff` that the caller owns for `'a` and does not otherwise touch
/// the tail of during `'a`.
unsafe fn skb_tailroom<'a>(skb: *mut bindings::sk_buff) -> &'a mut [u8] {
    let mut room = 0u32;
    // SAFETY: `skb` is valid (function safety requirement).
    let tail = unsafe { rdma_rs_skb_tail(skb, &mut room) };
    // SAFETY: `tail..tail + room` is the skb's tailroom: allocated, owned by the skb's owner,
    // which the caller is for `'a`, and not aliased (nothing else writes past the tail).
    unsafe { core::slice::from_raw_parts_mut(tail.cast::<u8>(), room as usize) }
}

/// Commits `len` bytes written into the tailroom of `skb` (`skb_put()`).
///
/// # Safety
///
/// `skb` must be valid and owned by the caller; `len` at most its tailroom.
unsafe fn skb_commit(skb: *mut bindings::sk_buff, len: usize) {
    if len != 0 {
        // SAFETY: caller's requirements; `len` fits the tailroom, so skb_put() cannot panic.
        unsafe { bindings::skb_put(skb, len as u32) };
    }
}

/// Writes one message with `build` into a fresh `sk_buff` and hands the skb to `send`, which
/// must consume it; its return (0 or a negative errno) is `Some`. `None` when `build` wrote
/// nothing: the skb is freed and nothing is sent.
///
/// # Errors
///
/// `ENOMEM`; `build`'s error (the skb is freed).
fn send_new_skb(
    build: impl FnOnce(&mut MsgWriter<'_>) -> Result,
    send: impl FnOnce(*mut bindings::sk_buff) -> c_int,
) -> Result<Option<c_int>> {
    // SAFETY: plain allocation.
    let skb = unsafe { rdma_rs_nlmsg_new_default() };
    if skb.is_null() {
        return Err(ENOMEM);
    }
    // SAFETY: we own the fresh `skb` until it is sent or freed below.
    let mut w = MsgWriter::new(unsafe { skb_tailroom(skb) });
    let res = build(&mut w);
    let len = w.len();
    if res.is_err() || len == 0 {
        // SAFETY: we own `skb` and free it once.
        unsafe { bindings::nlmsg_free(skb) };
        return res.map(|()| None);
    }
    // SAFETY: we own `skb`; `len` bytes of its tailroom were written.
    unsafe { skb_commit(skb, len) };
    Ok(Some(send(skb)))
}

/// The request in `nlh` as a [`Request`].
///
/// # Safety
///
/// `nlh` must point to a message whose `nlmsg_len` bytes are readable for `'a` (the netlink
/// core checked `nlmsg_len` against the datagram) and `skb` must be the datagram.
unsafe fn request<'a>(
    skb: *const bindings::sk_buff,
    nlh: *const bindings::nlmsghdr,
) -> Result<Request<'a>> {
    // SAFETY: `nlh` is readable (function safety requirement).
    let len = unsafe { (*nlh).nlmsg_len } as usize;
    // SAFETY: `len` bytes from `nlh` are readable for `'a` (function safety requirement).
    let bytes = unsafe { core::slice::from_raw_parts(nlh.cast::<u8>(), len) };
    // SAFETY: `skb` is a valid netlink datagram (function safety requirement).
    let portid = unsafe { rdma_rs_skb_portid(skb) };
    // SAFETY: `skb` is a valid netlink datagram (function safety requirement).
    let admin = unsafe { bindings::netlink_capable(skb, bindings::CAP_NET_ADMIN as c_int) };
    Ok(Request {
        msg: NlMsg::parse(bytes)?,
        portid,
        admin,
    })
}

/// A `NETLINK_RDMA` kernel socket in `init_net` serving `T`.
///
/// # Invariants
///
/// `sk` is a kernel netlink socket created by `__netlink_kernel_create()` with
/// [`Trampolines::input`] as its input, on which this object holds one extra reference
/// (`sock_hold()`), and whose `sk_user_data` is the pointer of a [`Shared<T>`] that this object
/// owns (from `KBox::into_raw`) until [`Drop`] has waited out every running input.
pub(crate) struct NlSocket<T: NlHandler> {
    sk: NonNull<bindings::sock>,
    _state: PhantomData<KBox<Shared<T>>>,
}

// SAFETY: the socket is only released (in `Drop`), which any thread may do; `T: Send + Sync`.
unsafe impl<T: NlHandler> Send for NlSocket<T> {}
// SAFETY: `&NlSocket` gives no access to the socket.
unsafe impl<T: NlHandler> Sync for NlSocket<T> {}

impl<T: NlHandler> NlSocket<T> {
    /// Creates the `NETLINK_RDMA` kernel socket of `init_net` serving `state`.
    ///
    /// `module` is pinned by every user-space `NETLINK_RDMA` socket opened while this socket
    /// exists (the netlink core's `nl_table[].module`) and by every running dump.
    ///
    /// # Errors
    ///
    /// `EADDRINUSE` if the protocol already has a kernel socket in `init_net` — which is the
    /// case while the upstream `ib_core` is loaded — or the allocation failed; a message
    /// naming the conflict is logged.
    pub(crate) fn new(module: &'static ThisModule, state: Arc<T>) -> Result<Self> {
        let shared = KBox::new(Shared { module, state }, GFP_KERNEL)?;
        let mut cfg = bindings::netlink_kernel_cfg {
            input: Some(Trampolines::<T>::input),
            flags: bindings::NL_CFG_F_NONROOT_RECV,
            ..Default::default()
        };
        // SAFETY: `init_net` is the initial network namespace, which lives forever; `cfg` is
        // valid for the call (the core copies what it keeps); `module` is this module.
        let sk = unsafe {
            bindings::__netlink_kernel_create(
                &raw mut bindings::init_net,
                NETLINK_RDMA,
                module.as_ptr(),
                &mut cfg,
            )
        };
        let Some(sk) = NonNull::new(sk) else {
            pr_err!(
                "ib_core_rs: NETLINK_RDMA (protocol {}) already has a kernel socket: is the upstream ib_core loaded? Unload it first (modprobe -r ib_core)\n",
                NETLINK_RDMA
            );
            return Err(EADDRINUSE);
        };
        // SAFETY: `sk` was just created and is valid. Until the user data is set, `input`
        // finds NULL and drops requests (see `Trampolines::input`).
        unsafe {
            rdma_rs_sock_hold(sk.as_ptr());
            // upstream rdma_nl_net_init(): nls->sk_sndtimeo = 10 * HZ.
            rdma_rs_sk_set_sndtimeo(sk.as_ptr(), 10);
            rdma_rs_sk_set_user_data(sk.as_ptr(), KBox::into_raw(shared).cast());
        }
        // INVARIANT: created with our input, held once more, user data owned by us.
        Ok(Self {
            sk,
            _state: PhantomData,
        })
    }
}

impl<T: NlHandler> NlSocket<T> {
    /// Makes this the socket [`multicast`] sends from, until it is dropped.
    pub(crate) fn publish(&self) {
        // INVARIANT: the socket is live until `Drop`, which clears it first.
        *crate::global::MCAST.lock() = McastSock(Some(self.sk));
    }
}

impl<T: NlHandler> Drop for NlSocket<T> {
    fn drop(&mut self) {
        {
            let mut g = crate::global::MCAST.lock();
            if g.0 == Some(self.sk) {
                *g = McastSock(None);
            }
        }
        let sk = self.sk.as_ptr();
        // SAFETY: `sk` is our kernel socket (type invariant). netlink_kernel_release() unhashes
        // it, so no new sender finds it; our extra reference keeps it allocated.
        unsafe { bindings::netlink_kernel_release(sk) };
        // A sender that found the socket before it was unhashed holds a reference while it runs
        // our input (netlink_unicast() -> netlink_unicast_kernel()); wait until ours is the
        // only one left, so the state below is no longer borrowed by any input.
        // SAFETY: `sk` is valid while we hold our reference.
        while unsafe { rdma_rs_sock_refs(sk) } > 1 {
            // SAFETY: plain sleep in process context (drop of a registration).
            unsafe { bindings::msleep(1) };
        }
        // SAFETY: the user data is the pointer of our `KBox<Shared<T>>` (type invariant) and no input
        // runs any more; running dumps hold their own clone (`Trampolines::start`).
        unsafe {
            let state = rdma_rs_sk_user_data(sk);
            rdma_rs_sk_set_user_data(sk, core::ptr::null_mut());
            drop(KBox::<Shared<T>>::from_raw(state.cast::<Shared<T>>()));
            rdma_rs_sock_put(sk);
        }
    }
}

/// What the socket's input finds in `sk_user_data`.
struct Shared<T> {
    module: &'static ThisModule,
    state: Arc<T>,
}

/// The `extern "C"` callbacks of a [`NlSocket<T>`].
struct Trampolines<T: NlHandler>(PhantomData<T>);

impl<T: NlHandler> Trampolines<T> {
    /// `netlink_kernel_cfg.input`: runs in the sender's context with a reference on our socket
    /// held by the sender.
    ///
    /// # Safety
    ///
    /// Called by the netlink core with a datagram sent to an [`NlSocket<T>`].
    unsafe extern "C" fn input(skb: *mut bindings::sk_buff) {
        // SAFETY: `skb` is a valid datagram delivered to our socket; netlink_rcv_skb() calls
        // `rcv_msg` for each well-formed request in it and acks as upstream.
        unsafe { bindings::netlink_rcv_skb(skb, Some(Self::rcv_msg)) };
    }

    /// `netlink_rcv_skb()`'s per-message callback; the errno it returns is acked by the core.
    ///
    /// # Safety
    ///
    /// `skb` is a datagram received by an [`NlSocket<T>`] and `nlh` a message in it.
    unsafe extern "C" fn rcv_msg(
        skb: *mut bindings::sk_buff,
        nlh: *mut bindings::nlmsghdr,
        _extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        // SAFETY: callback contract.
        match unsafe { Self::serve(skb, nlh) } {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// As [`Self::rcv_msg`].
    unsafe fn serve(skb: *mut bindings::sk_buff, nlh: *mut bindings::nlmsghdr) -> Result {
        // SAFETY: `skb` is valid; netlink_unicast_kernel() made the receiving kernel socket,
        // ours, its owner (`skb->sk`) before calling our input.
        let ssk = unsafe { rdma_rs_skb_sk(skb) };
        let Some(ssk) = NonNull::new(ssk) else {
            return Err(ECONNREFUSED);
        };
        // SAFETY: the sender holds a reference on our socket while `input` runs (see `Drop`),
        // so the user data is either NULL (creation not finished) or our `Shared<T>`, which
        // `Drop` frees only after every input has returned.
        let shared = unsafe { rdma_rs_sk_user_data(ssk.as_ptr()) };
        if shared.is_null() {
            return Err(ECONNREFUSED);
        }
        // SAFETY: see above: the `Shared<T>` outlives this call.
        let shared = unsafe { &*shared.cast::<Shared<T>>() };
        let state = shared.state.as_arc_borrow();
        // SAFETY: the netlink core validated `nlmsg_len` against the datagram, which lives for
        // this call.
        let req = unsafe { request(skb, nlh) }?;
        // SAFETY: `skb` is valid.
        let capable =
            || unsafe { bindings::netlink_capable(skb, bindings::CAP_NET_ADMIN as c_int) };
        let op = find_op::<T>(req.msg.hdr.ty);
        match route::<T>(req.msg.hdr.ty, req.msg.hdr.flags, capable)? {
            Route::Doit => {
                let doit = op.and_then(|o| o.doit).ok_or(EINVAL)?;
                Self::doit(ssk, &state, &req, doit)
            }
            Route::Dump => {
                let mut control = bindings::netlink_dump_control {
                    start: Some(Self::start),
                    dump: Some(Self::dump),
                    done: Some(Self::done),
                    // Borrowed here; `start` turns it into an owned clone.
                    data: core::ptr::from_ref::<T>(&state).cast_mut().cast(),
                    module: shared.module.as_ptr(),
                    ..Default::default()
                };
                // SAFETY: `ssk` is our socket, `skb`/`nlh` the request being received, `control`
                // valid for the call (the core copies it).
                let ret =
                    unsafe { bindings::__netlink_dump_start(ssk.as_ptr(), skb, nlh, &mut control) };
                // -EINTR: started; the core sends no ack.
                match ret {
                    0 => Ok(()),
                    e => Err(Error::from_errno(e)),
                }
            }
        }
    }

    fn doit(ssk: NonNull<bindings::sock>, state: &T, req: &Request<'_>, doit: DoitFn<T>) -> Result {
        // SAFETY: `ssk` is our socket; nlmsg_unicast() consumes the skb in every case.
        let send = |skb| unsafe { rdma_rs_nlmsg_unicast(ssk.as_ptr(), skb, req.portid) };
        match send_new_skb(|w| doit(state, req, w), send)? {
            None | Some(0) => Ok(()),
            Some(e) => Err(Error::from_errno(e)),
        }
    }

    /// `netlink_dump_control.start`: takes the dump's own reference on the state.
    ///
    /// # Safety
    ///
    /// Called by `__netlink_dump_start()` with `cb->data` borrowed from a live `Arc<T>`.
    unsafe extern "C" fn start(cb: *mut bindings::netlink_callback) -> c_int {
        // SAFETY: `cb` is valid; `data` is borrowed from the `Arc<T>` that `serve` holds.
        let state: ArcBorrow<'_, T> = unsafe { ArcBorrow::from_raw((*cb).data.cast::<T>()) };
        let owned: Arc<T> = state.into();
        // SAFETY: `cb` is valid; `done` releases this clone (the core calls it once the dump
        // ran, at its end or when the requester's socket is destroyed).
        unsafe { (*cb).data = Arc::into_raw(owned).cast_mut().cast() };
        0
    }

    /// `netlink_dump_control.done`: drops the dump's reference.
    ///
    /// # Safety
    ///
    /// Called once by the netlink core after a successful `start`.
    unsafe extern "C" fn done(cb: *mut bindings::netlink_callback) -> c_int {
        // SAFETY: `data` is the clone `start` made, released here once.
        drop(unsafe { Arc::<T>::from_raw((*cb).data.cast::<T>()) });
        0
    }

    /// `netlink_dump_control.dump`: one step; returns the bytes written, 0 when done.
    ///
    /// # Safety
    ///
    /// Called by the netlink core between `start` and `done` with a fresh reply skb.
    unsafe extern "C" fn dump(
        skb: *mut bindings::sk_buff,
        cb: *mut bindings::netlink_callback,
    ) -> c_int {
        // SAFETY: `cb` is valid and `data` is our clone (see `start`); `cb->skb` is the request
        // datagram, held by the core for the whole dump, and `cb->nlh` a validated message in
        // it.
        let (state, req, args) = unsafe {
            let state = &*(*cb).data.cast::<T>();
            let req = request((*cb).skb, (*cb).nlh);
            (state, req, &mut (*cb).__bindgen_anon_1.args)
        };
        let req = match req {
            Ok(r) => r,
            Err(e) => return e.to_errno(),
        };
        let Some(dumpfn) = find_op::<T>(req.msg.hdr.ty).and_then(|o| o.dump) else {
            return EINVAL.to_errno();
        };
        // SAFETY: the core owns `skb` and lends it to us for this call.
        let mut w = MsgWriter::new(unsafe { skb_tailroom(skb) });
        let mut cursor = DumpCursor(args);
        let res = dumpfn(state, &req, &mut cursor, &mut w);
        let len = w.len();
        // SAFETY: `len` bytes of the tailroom were written.
        unsafe { skb_commit(skb, len) };
        match res {
            // A full skb with something in it is a partial step, not an error.
            Ok(()) | Err(_) if len != 0 => len as c_int,
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }
}

#[kunit_tests(ib_core_rs_netlink)]
mod tests {
    use super::codec::{NlMsgIter, NLM_F_ACK};
    use super::nldev_uapi::*;
    use super::*;

    struct Echo;

    fn noop_doit(_: &Echo, _: &Request<'_>, _: &mut MsgWriter<'_>) -> Result {
        Ok(())
    }

    fn noop_dump(
        _: &Echo,
        _: &Request<'_>,
        _: &mut DumpCursor<'_>,
        _: &mut MsgWriter<'_>,
    ) -> Result {
        Ok(())
    }

    impl NlHandler for Echo {
        const OPS: &'static [NlOp<Self>] = &[
            NlOp {
                client: RDMA_NL_NLDEV,
                op: RDMA_NLDEV_CMD_GET,
                doit: Some(noop_doit),
                dump: Some(noop_dump),
                admin: false,
            },
            NlOp {
                client: RDMA_NL_NLDEV,
                op: RDMA_NLDEV_CMD_SYS_SET,
                doit: Some(noop_doit),
                dump: None,
                admin: true,
            },
        ];
    }

    fn ty(op: u16) -> u16 {
        rdma_nl_get_type(RDMA_NL_NLDEV, op)
    }

    #[test]
    fn routing_follows_rdma_nl_rcv_msg() {
        assert_eq!(
            route::<Echo>(ty(RDMA_NLDEV_CMD_GET), NLM_F_ACK, || true),
            Ok(Route::Doit)
        );
        assert_eq!(
            route::<Echo>(ty(RDMA_NLDEV_CMD_GET), NLM_F_DUMP, || true),
            Ok(Route::Dump)
        );
        // No dump callback, unknown op, unknown client: EINVAL.
        assert_eq!(
            route::<Echo>(ty(RDMA_NLDEV_CMD_SYS_SET), NLM_F_DUMP, || true),
            Err(EINVAL)
        );
        assert_eq!(
            route::<Echo>(ty(RDMA_NLDEV_CMD_PORT_GET), 0, || true),
            Err(EINVAL)
        );
        assert_eq!(
            route::<Echo>(rdma_nl_get_type(RDMA_NL_LS, RDMA_NLDEV_CMD_GET), 0, || true),
            Err(EINVAL)
        );
        // RDMA_NL_ADMIN_PERM without CAP_NET_ADMIN: EPERM.
        assert_eq!(
            route::<Echo>(ty(RDMA_NLDEV_CMD_SYS_SET), 0, || false),
            Err(EPERM)
        );
        assert_eq!(
            route::<Echo>(ty(RDMA_NLDEV_CMD_SYS_SET), 0, || true),
            Ok(Route::Doit)
        );
    }

    #[test]
    fn dump_cursor_keeps_words() {
        let mut args: [c_long; 6] = [0; 6];
        let mut c = DumpCursor(&mut args);
        c.set(0, 7);
        c.set(5, u64::MAX);
        c.set(6, 1);
        assert_eq!((c.get(0), c.get(5), c.get(6)), (7, u64::MAX, 0));
    }

    #[test]
    fn sys_get_reply_has_upstream_attributes() -> Result {
        let mut buf = [0u8; 128];
        let mut w = MsgWriter::new(&mut buf);
        crate::nldev::sys_get_reply(&mut w, 9, 1234)?;
        let mut it = NlMsgIter::new(w.bytes());
        let m = it.next().ok_or(EINVAL)??;
        assert!(it.next().is_none());
        assert_eq!(m.hdr.ty, ty(RDMA_NLDEV_CMD_SYS_GET));
        assert_eq!((m.hdr.seq, m.hdr.pid, m.hdr.flags), (9, 1234, 0));
        let mut tb = [None; RDMA_NLDEV_ATTR_MAX as usize];
        codec::parse_attrs(m.payload, &mut tb)?;
        let u8_of = |a: u16| tb[a as usize].map(|a| a.u8());
        assert_eq!(u8_of(RDMA_NLDEV_SYS_ATTR_NETNS_MODE), Some(Ok(1)));
        assert_eq!(u8_of(RDMA_NLDEV_SYS_ATTR_PRIVILEGED_QKEY_MODE), Some(Ok(0)));
        assert_eq!(u8_of(RDMA_NLDEV_SYS_ATTR_MONITOR_MODE), Some(Ok(1)));
        assert_eq!(u8_of(RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK), Some(Ok(1)));
        Ok(())
    }
}
