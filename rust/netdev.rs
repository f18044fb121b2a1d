// SPDX-License-Identifier: GPL-2.0

//! An Ethernet or IPoIB network interface driven by Rust (`alloc_etherdev()`/`alloc_netdev()`,
//! `register_netdev()`, `ndo_open`/`ndo_stop`/`ndo_start_xmit`, `netif_rx()`); the kernel crate
//! of 7.3 has no net_device abstraction.
//!
//! [`NetDev::new`] allocates a device of the [`Link`] asked for, no offloads (the stack hands it
//! linear, checksummed frames; lockless transmit, `lltx`, as veth), gives it its addresses, an
//! MTU range and a parent, and registers it under a name the kernel picks. An Ethernet device
//! has `ether_setup()`'s defaults and an `eth%d` name. An IPoIB device (upstream ib_ipoib's
//! `ipoib_setup_common()`, RFC 4391) is an `ib%d` of type `ARPHRD_INFINIBAND` with
//! [`INFINIBAND_ALEN`]-byte addresses; its `header_ops` push the 4-byte IPoIB header and, in
//! front of it, the destination's hardware address (upstream's pseudo header), which
//! `start_xmit` gets first: ARP and the neighbour code reach the driver that way.
//! Its private area points at the [`NetDevOps`] implementation, an `Arc<T>` the device holds until it is freed: `open`,
//! `stop`, `start_xmit` and `change_mtu` call it (the transmitted skb is freed by this file on every path:
//! the implementation sees the frame's bytes only). [`NetDevice::rx`] builds an skb from bytes
//! and queues it with `netif_rx()`. Statistics are the core's per-CPU `dstats` (tx and rx
//! packets, bytes, drops), counted here and folded by `dev_get_stats()`.
//!
//! Dropping the [`NetDev`] unregisters the device (`unregister_netdev()`: it is closed first,
//! so `stop` runs if it was up, and it waits for every [`ARef<NetDevice>`] to be put), frees
//! it, then drops the `Arc<T>`. The device can be moved to another network namespace.

use core::ptr::NonNull;
use kernel::{
    bindings,
    error::to_result,
    ffi::{c_char, c_int, c_uint, c_void},
    prelude::*,
    sync::aref::{ARef, AlwaysRefCounted},
    sync::Arc,
    types::Opaque,
};

/// The Rust callbacks the C shim's `net_device_ops` call (`struct rdma_rs_netdev_cbs`).
#[repr(C)]
struct Callbacks {
    open: unsafe extern "C" fn(*const c_void, *mut c_void) -> c_int,
    stop: unsafe extern "C" fn(*const c_void, *mut c_void),
    xmit: unsafe extern "C" fn(*const c_void, *mut c_void, *const u8, c_uint) -> bool,
    change_mtu: unsafe extern "C" fn(*const c_void, *mut c_void, c_uint) -> c_int,
}

extern "C" {
    // `struct net_device *` and `struct device *` as `void *`: bindgen's structs are not
    // FFI-safe for the lint (they reach zero-sized members), as in rust/kthread.rs.
    fn rdma_rs_netdev_alloc(
        cbs: *const Callbacks,
        data: *const c_void,
        parent: *mut c_void,
    ) -> *mut c_void;
    fn rdma_rs_netdev_alloc_ib(
        cbs: *const Callbacks,
        data: *const c_void,
        parent: *mut c_void,
    ) -> *mut c_void;
    fn rdma_rs_netdev_free(dev: *mut c_void);
    fn rdma_rs_netdev_set_ib_addr(dev: *mut c_void, addr: *const u8, broadcast: *const u8);
    fn rdma_rs_netdev_link(
        dev: *mut c_void,
        ty: *mut u16,
        addr_len: *mut u8,
        addr: *mut u8,
        broadcast: *mut u8,
    );
    fn rdma_rs_netdev_set_mac(dev: *mut c_void, mac: *const u8);
    fn rdma_rs_netdev_set_mtu(dev: *mut c_void, mtu: c_uint, min: c_uint, max: c_uint);
    fn rdma_rs_netdev_register(dev: *mut c_void) -> c_int;
    fn rdma_rs_netdev_unregister(dev: *mut c_void);
    fn rdma_rs_netdev_open(dev: *mut c_void) -> c_int;
    fn rdma_rs_netdev_change_mtu(dev: *mut c_void, mtu: c_uint) -> c_int;
    fn rdma_rs_netdev_set_carrier(dev: *mut c_void, on: bool);
    fn rdma_rs_netdev_running(dev: *mut c_void) -> bool;
    // rust/net_notify_shim.c's readers, declared as there.
    fn rdma_rs_netdev_carrier(dev: *const bindings::net_device) -> bool;
    fn rdma_rs_netdev_mtu(dev: *const bindings::net_device) -> u32;
    fn rdma_rs_netdev_ifindex(dev: *const bindings::net_device) -> c_int;
    fn rdma_rs_netdev_name(dev: *const bindings::net_device, buf: *mut c_char, len: usize);
    fn rdma_rs_netdev_rx(dev: *mut c_void, frame: *const u8, len: c_uint) -> c_int;
    fn rdma_rs_netdev_rx_ib(dev: *mut c_void, pkt: *const u8, len: c_uint, pkt_type: u8) -> c_int;
    fn rdma_rs_netdev_send(
        dev: *mut c_void,
        proto: u16,
        daddr: *const u8,
        payload: *const u8,
        len: c_uint,
    ) -> c_int;
    fn rdma_rs_netdev_hold(dev: *mut c_void);
    fn rdma_rs_netdev_put(dev: *mut c_void);
}

/// `IFNAMSIZ`.
pub const IFNAMSIZ: usize = bindings::IFNAMSIZ as usize;

/// `ETH_MIN_MTU`: the smallest MTU an Ethernet interface takes.
pub const ETH_MIN_MTU: u32 = 68;

/// `INFINIBAND_ALEN`: the length of an IPoIB hardware address (flags and QPN, then the GID).
pub const INFINIBAND_ALEN: usize = 20;

/// `MAX_ADDR_LEN` (`include/linux/netdevice.h`; not in the kernel crate's bindings).
const MAX_ADDR_LEN: usize = 32;

/// `ARPHRD_INFINIBAND` (`include/uapi/linux/if_arp.h`; not in the kernel crate's bindings).
pub const ARPHRD_INFINIBAND: u16 = 32;

/// The kind of link an interface is, and its addresses.
#[derive(Clone, Copy, Debug)]
pub enum Link {
    /// Ethernet, with its MAC (`dev_addr`, `perm_addr`).
    Ether([u8; 6]),
    /// IPoIB in datagram mode: its hardware address (the flags and QPN of its QP, then the
    /// port's GID) and the broadcast address (the IPv4 broadcast group of its P_Key).
    Infiniband {
        /// `dev_addr`.
        addr: [u8; INFINIBAND_ALEN],
        /// `broadcast`.
        broadcast: [u8; INFINIBAND_ALEN],
    },
}

/// How a received IPoIB packet was addressed (`skb->pkt_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PacketType {
    /// `PACKET_HOST`: to this interface.
    Host = bindings::PACKET_HOST as u8,
    /// `PACKET_BROADCAST`: to the broadcast group.
    Broadcast = bindings::PACKET_BROADCAST as u8,
    /// `PACKET_MULTICAST`: to another multicast group.
    Multicast = bindings::PACKET_MULTICAST as u8,
}

/// An interface's link type and addresses as `ip -d link` shows them.
#[derive(Clone, Copy, Debug)]
pub struct LinkInfo {
    /// `dev->type` (`ARPHRD_*`).
    pub ty: u16,
    /// `dev->addr_len`.
    pub addr_len: u8,
    /// `dev->dev_addr`, zero past `addr_len`.
    pub addr: [u8; MAX_ADDR_LEN],
    /// `dev->broadcast`, zero past `addr_len`.
    pub broadcast: [u8; MAX_ADDR_LEN],
}

impl LinkInfo {
    /// The link type and addresses of `dev` (`rdma_copy_src_l2_addr()`'s fields).
    ///
    /// # Safety
    ///
    /// `dev` must point to a `struct net_device` that stays allocated during the call.
    pub(crate) unsafe fn of(dev: *mut c_void) -> Self {
        let mut l = LinkInfo {
            ty: 0,
            addr_len: 0,
            addr: [0; MAX_ADDR_LEN],
            broadcast: [0; MAX_ADDR_LEN],
        };
        // SAFETY: `dev` is allocated (the function's safety section); both arrays have the
        // MAX_ADDR_LEN bytes the shim writes.
        unsafe {
            rdma_rs_netdev_link(
                dev,
                &mut l.ty,
                &mut l.addr_len,
                l.addr.as_mut_ptr(),
                l.broadcast.as_mut_ptr(),
            )
        };
        l
    }

    /// The GID (bytes 4..20 of the address) and P_Key (bytes 8 and 9 of the broadcast address)
    /// of an IPoIB interface (upstream `rdma_addr_get_sgid()`, `ib_addr_get_pkey()`); `None`
    /// for any other link type.
    pub fn ipoib_gid_pkey(&self) -> Option<([u8; 16], u16)> {
        if self.ty != ARPHRD_INFINIBAND || usize::from(self.addr_len) != INFINIBAND_ALEN {
            return None;
        }
        let mut gid = [0u8; 16];
        gid.copy_from_slice(&self.addr[4..INFINIBAND_ALEN]);
        Some((
            gid,
            u16::from_be_bytes([self.broadcast[8], self.broadcast[9]]),
        ))
    }
}

/// What an interface's driver does (upstream `struct net_device_ops`, the four ops this
/// abstraction offers). Called under the RTNL lock (`open`, `stop`, `change_mtu`) or from the
/// transmit path (`start_xmit`: softirq context, must not sleep).
pub trait NetDevOps: Send + Sync + 'static {
    /// `ndo_open` (`ip link set dev X up`). An error keeps the interface down.
    fn open(&self, dev: &NetDevice) -> Result;

    /// `ndo_stop` (`ip link set dev X down`, and at unregistration if up).
    fn stop(&self, dev: &NetDevice);

    /// `ndo_start_xmit` of one frame: on Ethernet the frame with its header; on IPoIB the
    /// destination's [`INFINIBAND_ALEN`]-byte hardware address (the pseudo header), then the
    /// 4-byte IPoIB header and the payload, which go on the wire. `true`: sent (counted as a
    /// tx packet); `false`: dropped (counted as a tx drop). Either way the frame's buffer is
    /// freed when this returns.
    fn start_xmit(&self, dev: &NetDevice, frame: &[u8]) -> bool;

    /// `ndo_change_mtu` (`ip link set dev X mtu N`), under the RTNL lock, with `mtu` within
    /// the device's bounds (the core checked them); the device takes it when this succeeds.
    fn change_mtu(&self, dev: &NetDevice, mtu: u32) -> Result;
}

/// How [`NetDev::new`] sets the device up before registering it.
#[derive(Clone, Copy, Debug)]
pub struct NetDevConfig {
    /// The link type and its addresses.
    pub link: Link,
    /// The MTU, and its bounds (`min_mtu`, `max_mtu`: what `ip link set mtu` accepts).
    pub mtu: u32,
    /// The smallest MTU `ip link set mtu` accepts.
    pub min_mtu: u32,
    /// The largest MTU `ip link set mtu` accepts.
    pub max_mtu: u32,
}

/// An interface's name (`IFNAMSIZ` bytes, NUL-terminated).
#[derive(Clone, Copy)]
pub struct IfName([u8; IFNAMSIZ]);

impl IfName {
    /// The name's bytes, without the NUL.
    pub fn as_bytes(&self) -> &[u8] {
        let n = self.0.iter().position(|&b| b == 0).unwrap_or(IFNAMSIZ);
        self.0.get(..n).unwrap_or(&[])
    }
}

impl kernel::fmt::Display for IfName {
    fn fmt(&self, f: &mut kernel::fmt::Formatter<'_>) -> kernel::fmt::Result {
        kernel::fmt::Display::fmt(kernel::str::BStr::from_bytes(self.as_bytes()), f)
    }
}

/// A network interface (`struct net_device`), borrowed: what the callbacks get and what a
/// [`NetDev`] or an [`ARef<NetDevice>`] gives access to.
///
/// # Invariants
///
/// The wrapped `struct net_device` is allocated (not freed) for as long as a `&NetDevice`
/// exists.
#[repr(transparent)]
pub struct NetDevice(Opaque<bindings::net_device>);

// SAFETY: a `net_device` is used from any task; its methods here take the locks they need on
// the C side.
unsafe impl Send for NetDevice {}
// SAFETY: as above: every method is safe to call concurrently.
unsafe impl Sync for NetDevice {}

// SAFETY: `dev_hold()`/`dev_put()` keep a `net_device` allocated (`unregister_netdev()` waits
// for the count to drop, `free_netdev()` comes after it); the count is never zero while a
// `&NetDevice` exists (type invariant).
unsafe impl AlwaysRefCounted for NetDevice {
    fn inc_ref(&self) {
        // SAFETY: `self` is allocated (type invariant).
        unsafe { rdma_rs_netdev_hold(self.raw()) };
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: the caller gives back a reference taken by `inc_ref`.
        unsafe { rdma_rs_netdev_put(obj.as_ptr().cast()) };
    }
}

impl NetDevice {
    /// The device as a `&NetDevice`.
    ///
    /// # Safety
    ///
    /// `ptr` points to an allocated `struct net_device` that stays allocated for `'a`.
    unsafe fn from_raw<'a>(ptr: *mut c_void) -> &'a Self {
        // SAFETY: the caller's guarantee; `NetDevice` is a transparent wrapper of the struct.
        unsafe { &*ptr.cast::<Self>() }
    }

    fn raw(&self) -> *mut c_void {
        self.0.get().cast()
    }

    /// The C `struct net_device` (for C APIs of other abstractions: the RDMA core's GID code
    /// binds a port to it). Valid for as long as `self` is.
    pub fn as_raw(&self) -> *mut bindings::net_device {
        self.0.get()
    }

    /// The interface index (`dev->ifindex`; 0 before registration).
    pub fn ifindex(&self) -> i32 {
        // SAFETY: `self` is allocated (type invariant).
        unsafe { rdma_rs_netdev_ifindex(self.as_raw()) }
    }

    /// The interface name (a copy of `dev->name`; one racing with a rename may read either
    /// name, as upstream's `netdev_name()` readers do).
    pub fn name(&self) -> IfName {
        let mut n = [0u8; IFNAMSIZ];
        // SAFETY: `self` is allocated (type invariant); `n` has the IFNAMSIZ bytes the copy
        // writes.
        unsafe { rdma_rs_netdev_name(self.as_raw(), n.as_mut_ptr().cast(), IFNAMSIZ) };
        IfName(n)
    }

    /// The MTU (`dev->mtu`).
    pub fn mtu(&self) -> u32 {
        // SAFETY: `self` is allocated (type invariant).
        unsafe { rdma_rs_netdev_mtu(self.as_raw()) }
    }

    /// Whether the interface is up (`netif_running()`).
    pub fn running(&self) -> bool {
        // SAFETY: `self` is allocated (type invariant).
        unsafe { rdma_rs_netdev_running(self.raw()) }
    }

    /// Whether the link is up (`netif_carrier_ok()`).
    pub fn carrier_ok(&self) -> bool {
        // SAFETY: `self` is allocated (type invariant).
        unsafe { rdma_rs_netdev_carrier(self.as_raw()) }
    }

    /// Sets the link up or down (`netif_carrier_on()`/`netif_carrier_off()`; any context).
    pub fn set_carrier(&self, on: bool) {
        // SAFETY: `self` is allocated (type invariant); both calls may run in any context.
        unsafe { rdma_rs_netdev_set_carrier(self.raw(), on) };
    }

    /// Changes the MTU as `ip link set dev X mtu N` does (`dev_set_mtu()` under the RTNL lock:
    /// [`NetDevOps::change_mtu`] runs, `NETDEV_CHANGEMTU` is announced). Process context;
    /// takes the RTNL lock: the caller must not hold it.
    ///
    /// # Errors
    ///
    /// `EINVAL` for an MTU outside the device's bounds, [`NetDevOps::change_mtu`]'s error.
    pub fn set_mtu(&self, mtu: u32) -> Result {
        // SAFETY: `self` is allocated (type invariant); the shim takes the RTNL lock, and
        // `dev_set_mtu()` checks the bounds.
        to_result(unsafe { rdma_rs_netdev_change_mtu(self.raw(), mtu) })
    }

    /// The link type and addresses (`dev->type`, `addr_len`, `dev_addr`, `broadcast`).
    pub fn link(&self) -> LinkInfo {
        // SAFETY: `self` is allocated (type invariant).
        unsafe { LinkInfo::of(self.raw()) }
    }

    /// Sends `payload` as protocol `proto` (an EtherType) to the hardware address `daddr`, the
    /// way a protocol of the stack does (ARP: `dev_hard_header()` through the link's
    /// `header_ops`, then `dev_queue_xmit()`); any context but hard IRQ.
    ///
    /// # Errors
    ///
    /// `EINVAL` for an address that is not the link's length or a payload beyond the MTU,
    /// `ENOMEM`, `dev_queue_xmit()`'s errno, `ENOBUFS` when the queue dropped it.
    pub fn send(&self, proto: u16, daddr: &[u8], payload: &[u8]) -> Result {
        let len = c_uint::try_from(payload.len()).map_err(|_| EINVAL)?;
        if daddr.len() != usize::from(self.link().addr_len) {
            return Err(EINVAL);
        }
        // SAFETY: `self` is allocated (type invariant); `daddr` holds the `addr_len` bytes the
        // header_ops read and `payload` `len` bytes, both only read during the call.
        to_result(unsafe {
            rdma_rs_netdev_send(self.raw(), proto, daddr.as_ptr(), payload.as_ptr(), len)
        })
    }

    /// Hands a received IPoIB packet to the stack (upstream `ipoib_ib_handle_rx_wc()` after
    /// the GRH is stripped): `pkt` is the 4-byte IPoIB header and the payload; the protocol is
    /// the header's, `kind` how it was addressed. As [`Self::rx`] otherwise (a copy,
    /// `netif_rx()`, counted).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a packet shorter than the IPoIB header, `ENOMEM`, `EIO` when the stack
    /// dropped it.
    pub fn rx_ipoib(&self, pkt: &[u8], kind: PacketType) -> Result {
        let len = c_uint::try_from(pkt.len()).map_err(|_| EINVAL)?;
        // SAFETY: `self` is allocated (type invariant); `pkt` is readable for `len` bytes and
        // only read during the call.
        to_result(unsafe { rdma_rs_netdev_rx_ib(self.raw(), pkt.as_ptr(), len, kind as u8) })
    }

    /// Hands a received Ethernet frame to the stack: a new skb with a copy of `frame`,
    /// `eth_type_trans()`, `netif_rx()` (any context; no lock of the caller may be one the
    /// stack's receive path takes). Counted as an rx packet, or as an rx drop on failure.
    ///
    /// # Errors
    ///
    /// `EINVAL` for a frame shorter than an Ethernet header or longer than 4 GiB, `ENOMEM`,
    /// `EIO` when the stack dropped it (the interface is down, the backlog is full).
    pub fn rx(&self, frame: &[u8]) -> Result {
        let len = c_uint::try_from(frame.len()).map_err(|_| EINVAL)?;
        // SAFETY: `self` is allocated (type invariant); `frame` is readable for `len` bytes
        // and only read during the call.
        to_result(unsafe { rdma_rs_netdev_rx(self.raw(), frame.as_ptr(), len) })
    }
}

/// A registered network interface and the driver data its callbacks use. Dropping it
/// unregisters and frees the interface, then releases the data.
///
/// # Invariants
///
/// `dev` is a registered `net_device` allocated by `rdma_rs_netdev_alloc()` whose private
/// area holds [`Self::CALLBACKS`] and `data`; `data` is the `Arc::into_raw` of an `Arc<T>`,
/// released after the device is freed.
pub struct NetDev<T: NetDevOps> {
    dev: NonNull<c_void>,
    data: *const T,
}

// SAFETY: the device may be unregistered and freed from any task; `T` is `Send + Sync`.
unsafe impl<T: NetDevOps> Send for NetDev<T> {}
// SAFETY: `&NetDev` gives `&NetDevice` (Sync) and `&T` (Sync).
unsafe impl<T: NetDevOps> Sync for NetDev<T> {}

/// The data pointer of a callback as `&T`.
///
/// # Safety
///
/// `data` is the pointer a [`NetDev<T>`] stored, which stays valid until the device is freed
/// (after every callback returned: `unregister_netdev()` closes the device and waits for the
/// transmit path).
unsafe fn data_of<'a, T>(data: *const c_void) -> &'a T {
    // SAFETY: the caller's guarantee.
    unsafe { &*data.cast::<T>() }
}

impl<T: NetDevOps> NetDev<T> {
    const CALLBACKS: Callbacks = Callbacks {
        open: Self::open_cb,
        stop: Self::stop_cb,
        xmit: Self::xmit_cb,
        change_mtu: Self::change_mtu_cb,
    };

    /// # Safety
    ///
    /// Called by the shim's `ndo_open` with the device's data pointer and the device.
    unsafe extern "C" fn open_cb(data: *const c_void, dev: *mut c_void) -> c_int {
        // SAFETY: `data` is this device's `T` and `dev` the device, both alive during the
        // callback (see `data_of`).
        let (t, d) = unsafe { (data_of::<T>(data), NetDevice::from_raw(dev)) };
        match t.open(d) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// Called by the shim's `ndo_stop`, as `open_cb`.
    unsafe extern "C" fn stop_cb(data: *const c_void, dev: *mut c_void) {
        // SAFETY: as in `open_cb`.
        let (t, d) = unsafe { (data_of::<T>(data), NetDevice::from_raw(dev)) };
        t.stop(d);
    }

    /// # Safety
    ///
    /// Called by the shim's `ndo_start_xmit`, as `open_cb`, with the skb's linear data:
    /// `frame` readable for `len` bytes until this returns.
    unsafe extern "C" fn xmit_cb(
        data: *const c_void,
        dev: *mut c_void,
        frame: *const u8,
        len: c_uint,
    ) -> bool {
        // SAFETY: as in `open_cb`.
        let (t, d) = unsafe { (data_of::<T>(data), NetDevice::from_raw(dev)) };
        let Ok(len) = usize::try_from(len) else {
            return false;
        };
        // SAFETY: the shim passes the skb's data, `len` bytes, alive until this returns.
        let frame = unsafe { core::slice::from_raw_parts(frame, len) };
        t.start_xmit(d, frame)
    }

    /// # Safety
    ///
    /// Called by the shim's `ndo_change_mtu`, as `open_cb`.
    unsafe extern "C" fn change_mtu_cb(
        data: *const c_void,
        dev: *mut c_void,
        mtu: c_uint,
    ) -> c_int {
        // SAFETY: as in `open_cb`.
        let (t, d) = unsafe { (data_of::<T>(data), NetDevice::from_raw(dev)) };
        match t.change_mtu(d, mtu) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// Allocates an interface of `cfg.link`'s type driven by `data`, configured by `cfg`,
    /// under `parent` (its sysfs `device` link), and registers it (`eth%d`, `ib%d`). Its
    /// carrier is off until the driver sets it.
    ///
    /// # Errors
    ///
    /// `ENOMEM`, `EINVAL` for an MTU outside `[min_mtu, max_mtu]` or a `min_mtu` below
    /// [`ETH_MIN_MTU`], or `register_netdev()`'s error.
    pub fn new(
        data: Arc<T>,
        parent: Option<&kernel::device::Device>,
        cfg: &NetDevConfig,
    ) -> Result<Self> {
        if cfg.min_mtu < ETH_MIN_MTU || cfg.mtu < cfg.min_mtu || cfg.mtu > cfg.max_mtu {
            return Err(EINVAL);
        }
        let parent = parent.map_or(core::ptr::null_mut(), |p| {
            // `kernel::device::Device` is a transparent wrapper of `struct device`; the net
            // device takes its own reference on it at registration (device_add()).
            core::ptr::from_ref(p).cast::<c_void>().cast_mut()
        });
        let raw = Arc::into_raw(data);
        // SAFETY: `CALLBACKS` is a `'static` table whose functions have the shim's signatures;
        // `raw` stays valid until the device is freed (released in `drop`, or below on
        // failure); `parent` is null or a live device.
        let dev = unsafe {
            match cfg.link {
                Link::Ether(_) => rdma_rs_netdev_alloc(&Self::CALLBACKS, raw.cast(), parent),
                Link::Infiniband { .. } => {
                    rdma_rs_netdev_alloc_ib(&Self::CALLBACKS, raw.cast(), parent)
                }
            }
        };
        let Some(dev) = NonNull::new(dev) else {
            // SAFETY: no device holds `raw`; it came from `Arc::into_raw` above.
            drop(unsafe { Arc::from_raw(raw) });
            return Err(ENOMEM);
        };
        // SAFETY: `dev` is allocated and not registered yet: setting its addresses and MTU
        // needs no lock; each address has the length its link type's setter reads (6 bytes
        // for a MAC, INFINIBAND_ALEN for the `addr_len` of an IPoIB device).
        unsafe {
            match &cfg.link {
                Link::Ether(mac) => rdma_rs_netdev_set_mac(dev.as_ptr(), mac.as_ptr()),
                Link::Infiniband { addr, broadcast } => {
                    rdma_rs_netdev_set_ib_addr(dev.as_ptr(), addr.as_ptr(), broadcast.as_ptr())
                }
            }
            rdma_rs_netdev_set_mtu(dev.as_ptr(), cfg.mtu, cfg.min_mtu, cfg.max_mtu);
        }
        // SAFETY: `dev` is allocated and set up; registering takes the RTNL lock itself.
        let r = to_result(unsafe { rdma_rs_netdev_register(dev.as_ptr()) });
        if let Err(e) = r {
            // SAFETY: `dev` was never registered: free it, then release `raw`, which nothing
            // can call back with any more.
            unsafe { rdma_rs_netdev_free(dev.as_ptr()) };
            // SAFETY: as above.
            drop(unsafe { Arc::from_raw(raw) });
            return Err(e);
        }
        // INVARIANT: registered, with `raw` in its private area.
        Ok(Self { dev, data: raw })
    }

    /// Brings the interface up, as `ip link set dev X up` does (`dev_open()` under the RTNL
    /// lock: [`NetDevOps::open`] runs, `NETDEV_UP` is announced). Takes the RTNL lock: the
    /// caller must not hold it.
    ///
    /// # Errors
    ///
    /// [`NetDevOps::open`]'s error.
    pub fn open(&self) -> Result {
        // SAFETY: `dev` is registered (type invariant); the shim takes the RTNL lock.
        to_result(unsafe { rdma_rs_netdev_open(self.dev.as_ptr()) })
    }

    /// The device.
    pub fn device(&self) -> &NetDevice {
        // SAFETY: `dev` stays allocated until `self` drops (type invariant).
        unsafe { NetDevice::from_raw(self.dev.as_ptr()) }
    }

    /// The driver data.
    pub fn data(&self) -> &T {
        // SAFETY: `data` lives until `self` drops (type invariant).
        unsafe { &*self.data }
    }

    /// A counted reference on the device; it must be put before `self` drops (unregistering
    /// waits for it).
    pub fn get(&self) -> ARef<NetDevice> {
        ARef::from(self.device())
    }

    /// The C `struct net_device`, as [`NetDevice::as_raw`].
    pub fn as_raw(&self) -> *mut bindings::net_device {
        self.device().as_raw()
    }

    /// The interface index.
    pub fn ifindex(&self) -> i32 {
        self.device().ifindex()
    }

    /// The interface name.
    pub fn name(&self) -> IfName {
        self.device().name()
    }
}

impl<T: NetDevOps> Drop for NetDev<T> {
    fn drop(&mut self) {
        // SAFETY: `dev` is registered (type invariant) and unregistered once, here; this
        // closes it (`stop`), waits for the transmit path and every counted reference.
        unsafe { rdma_rs_netdev_unregister(self.dev.as_ptr()) };
        // SAFETY: unregistered above; nothing calls back any more.
        unsafe { rdma_rs_netdev_free(self.dev.as_ptr()) };
        // SAFETY: the device that held `data` is freed; `data` came from `Arc::into_raw` in
        // `new` and is released once, here.
        drop(unsafe { Arc::from_raw(self.data) });
    }
}
