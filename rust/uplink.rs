// SPDX-License-Identifier: GPL-2.0

//! A real network interface as the uplink of a simulated Ethernet segment, as a bridge port
//! is attached (`br_add_if()`): the interface is put in promiscuous mode and gets an
//! rx_handler (`netdev_rx_handler_register()`) that hands every received frame not addressed
//! to the interface itself to an [`UplinkRx`] implementation; [`UplinkXmit::xmit`] sends a
//! frame out of it (`dev_queue_xmit()` of a new skb). The C side is `rust/uplink_shim.c`.
//!
//! [`Uplink::attach`] takes a reference on the interface and on the handler (an `Arc<T>`);
//! dropping the [`Uplink`] unregisters the handler (which waits for running handlers),
//! leaves promiscuous mode, puts the interface, then drops the `Arc<T>`. While attached, the
//! interface cannot finish unregistering (its reference count waits for the uplink), as a
//! bridge port's would without the bridge's netdev notifier: the uplink is meant for a VM's
//! fixed NIC, attached at module load and detached at unload.

use crate::netdev::NetDevice;
use core::ptr::NonNull;
use kernel::{
    error::to_result,
    ffi::{c_char, c_int, c_uint, c_void},
    prelude::*,
    sync::aref::ARef,
    sync::Arc,
};

/// The Rust callback the C rx_handler calls (`struct rdma_rs_uplink_cbs`).
#[repr(C)]
struct Callbacks {
    rx: unsafe extern "C" fn(*const c_void, *const u8, c_uint),
}

extern "C" {
    fn rdma_rs_uplink_attach(
        name: *const c_char,
        cbs: *const Callbacks,
        data: *const c_void,
        err: *mut c_int,
    ) -> *mut c_void;
    fn rdma_rs_uplink_detach(dev: *mut c_void);
    fn rdma_rs_uplink_xmit(dev: *mut c_void, frame: *const u8, len: c_uint) -> c_int;
}

/// What receives the uplink's frames.
pub(crate) trait UplinkRx: Send + Sync + 'static {
    /// A frame received on the uplink (Ethernet header first, without FCS). Called in the
    /// receive softirq under `rcu_read_lock()`: it must not sleep, and the bytes are only
    /// valid during the call.
    fn rx(&self, frame: &[u8]);
}

/// An interface attached as an uplink.
///
/// # Invariants
///
/// `dev` was returned by `rdma_rs_uplink_attach()` (a held reference, the handler registered
/// with [`Self::CALLBACKS`] and `data`) and is detached only in `drop`; `data` is the
/// `Arc::into_raw` of an `Arc<T>`, released after the detach.
pub(crate) struct Uplink<T: UplinkRx> {
    dev: ARef<NetDevice>,
    data: *const T,
}

// SAFETY: the uplink may be detached from any task; `T` is `Send + Sync`.
unsafe impl<T: UplinkRx> Send for Uplink<T> {}
// SAFETY: `&Uplink` gives only `&NetDevice` (Sync).
unsafe impl<T: UplinkRx> Sync for Uplink<T> {}

impl<T: UplinkRx> Uplink<T> {
    const CALLBACKS: Callbacks = Callbacks { rx: Self::rx_cb };

    /// # Safety
    ///
    /// Called by the shim's rx_handler with the uplink's data pointer (valid until the
    /// handler is unregistered, which waits for this call) and a frame readable for `len`
    /// bytes until this returns.
    unsafe extern "C" fn rx_cb(data: *const c_void, frame: *const u8, len: c_uint) {
        // SAFETY: `data` is the `Arc<T>` this uplink holds until after the detach (type
        // invariant of `Uplink`); the frame is readable for `len` bytes (the caller).
        let (t, f) = unsafe {
            (
                &*data.cast::<T>(),
                core::slice::from_raw_parts(frame, len as usize),
            )
        };
        t.rx(f);
    }

    /// Attaches to the interface named `name` (in the initial network namespace).
    ///
    /// # Errors
    ///
    /// `ENODEV` (no such interface), `EINVAL` (not Ethernet), `EBUSY` (it has an rx_handler
    /// already: a bridge or bond port, another uplink), `ENOMEM`, or the interface's
    /// promiscuous mode error.
    pub(crate) fn attach(name: &CStr, handler: Arc<T>) -> Result<Self> {
        let data = Arc::into_raw(handler);
        let mut err: c_int = 0;
        // SAFETY: `name` is NUL-terminated; `CALLBACKS` is static; `data` stays valid until
        // it is released below (on failure) or after the detach (in `drop`).
        let dev = unsafe {
            rdma_rs_uplink_attach(name.as_char_ptr(), &Self::CALLBACKS, data.cast(), &mut err)
        };
        let Some(dev) = NonNull::new(dev.cast::<NetDevice>()) else {
            // SAFETY: the attach failed, so no handler holds `data`: this gives back the
            // reference `into_raw` took.
            drop(unsafe { Arc::from_raw(data) });
            return Err(to_result(err).err().unwrap_or(EINVAL));
        };
        // SAFETY: the attach took a reference on the device (`dev_hold()`), which this
        // `ARef` owns and `drop` puts after the detach.
        let dev = unsafe { ARef::from_raw(dev) };
        // INVARIANT: attached, with `data` as the handler's data.
        Ok(Self { dev, data })
    }

    /// The uplink interface.
    pub(crate) fn dev(&self) -> &ARef<NetDevice> {
        &self.dev
    }
}

impl<T: UplinkRx> Drop for Uplink<T> {
    fn drop(&mut self) {
        // SAFETY: attached (type invariant); the detach unregisters the handler and waits
        // for running ones. The device reference stays `self.dev`'s, put after this.
        unsafe { rdma_rs_uplink_detach(self.dev.as_raw().cast()) };
        // SAFETY: no handler runs any more (detached above): this gives back the reference
        // `attach` took.
        drop(unsafe { Arc::from_raw(self.data) });
    }
}

/// Transmitting on an interface the uplink does not own ([`NetDevice`] is the core's).
pub(crate) trait UplinkXmit {
    /// Sends a copy of the Ethernet frame `frame` out of this interface
    /// (`dev_queue_xmit()`; any context but hard IRQ).
    ///
    /// # Errors
    ///
    /// `EINVAL` (shorter than an Ethernet header, longer than the MTU and a tagged header),
    /// `ENETDOWN`, `ENOMEM`, `ENOBUFS` (the queue dropped it).
    fn xmit(&self, frame: &[u8]) -> Result;
}

impl UplinkXmit for NetDevice {
    fn xmit(&self, frame: &[u8]) -> Result {
        let len = c_uint::try_from(frame.len()).map_err(|_| EINVAL)?;
        // SAFETY: `self` is allocated (type invariant of `NetDevice`); `frame` is readable
        // for `len` bytes and only copied during the call.
        to_result(unsafe { rdma_rs_uplink_xmit(self.as_raw().cast(), frame.as_ptr(), len) })
    }
}
