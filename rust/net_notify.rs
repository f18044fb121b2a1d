// SPDX-License-Identifier: GPL-2.0

//! Network devices as the RDMA core sees them: [`NetDevRef`], a counted reference to a
//! `struct net_device` (`dev_hold()`/`dev_put()`) with the fields RoCE GID management reads
//! (ifindex, name, MAC, MTU, flags, VLAN, addresses, upper devices), and [`NetNotifier`], the
//! netdevice, inetaddr and inet6addr notifier chains delivered to a [`NetHandler`]
//! (upstream `roce_gid_mgmt.c`'s `nb_netdevice`, `nb_inetaddr`, `nb_inet6addr`). The C side
//! is `net_notify_shim.c`: the accessors are inline functions and macros over structs the
//! kernel crate's bindings lack.

use core::ptr::NonNull;
use kernel::bindings;
use kernel::ffi::{c_char, c_int, c_void};
use kernel::prelude::*;
use kernel::sync::Arc;

/// `struct rdma_rs_net_nb` of the shim: the three notifier blocks and the callbacks.
#[repr(C)]
struct RawNb {
    _opaque: [u8; 0],
}

type NetdevFn = unsafe extern "C" fn(
    ctx: *mut c_void,
    kind: c_int,
    ndev: *mut bindings::net_device,
    upper: *mut bindings::net_device,
);
type AddrFn = unsafe extern "C" fn(
    ctx: *mut c_void,
    up: c_int,
    ndev: *mut bindings::net_device,
    family: c_int,
    addr: *const u8,
);

extern "C" {
    fn rdma_rs_net_notifier_register(ctx: *mut c_void, n: NetdevFn, a: AddrFn) -> *mut RawNb;
    fn rdma_rs_net_notifier_unregister(nb: *mut RawNb);
    fn rdma_rs_netdev_get_by_name(name: *const c_char) -> *mut bindings::net_device;
    fn rdma_rs_dev_hold(dev: *mut bindings::net_device);
    fn rdma_rs_dev_put(dev: *mut bindings::net_device);
    fn rdma_rs_netdev_ifindex(dev: *const bindings::net_device) -> c_int;
    fn rdma_rs_netdev_name(dev: *const bindings::net_device, buf: *mut c_char, len: usize);
    fn rdma_rs_netdev_mac(dev: *const bindings::net_device, mac: *mut u8) -> c_int;
    fn rdma_rs_netdev_mtu(dev: *const bindings::net_device) -> u32;
    fn rdma_rs_netdev_is_up(dev: *const bindings::net_device) -> bool;
    fn rdma_rs_netdev_carrier(dev: *const bindings::net_device) -> bool;
    fn rdma_rs_netdev_operstate(dev: *const bindings::net_device) -> u8;
    fn rdma_rs_netdev_is_ether(dev: *const bindings::net_device) -> bool;
    fn rdma_rs_netdev_registered(dev: *const bindings::net_device) -> bool;
    fn rdma_rs_netdev_vlan_id(dev: *const bindings::net_device) -> u16;
    fn rdma_rs_netdev_vlan_real_dev(dev: *mut bindings::net_device) -> *mut bindings::net_device;
    fn rdma_rs_netdev_is_upper(
        dev: *mut bindings::net_device,
        upper: *mut bindings::net_device,
    ) -> bool;
    fn rdma_rs_netdev_uppers(
        dev: *mut bindings::net_device,
        out: *mut *mut bindings::net_device,
        max: c_int,
    ) -> c_int;
    fn rdma_rs_netdev_ipv4(dev: *mut bindings::net_device, out: *mut [u8; 4], max: c_int) -> c_int;
    fn rdma_rs_netdev_ipv6(dev: *mut bindings::net_device, out: *mut [u8; 16], max: c_int)
        -> c_int;
}

/// `IFNAMSIZ`.
pub const IFNAMSIZ: usize = 16;

/// A netdev's name as read at one moment (`IFNAMSIZ` bytes at most, without the NUL).
#[derive(Clone, Copy)]
pub struct NetDevName {
    buf: [u8; IFNAMSIZ],
    len: usize,
}

impl NetDevName {
    /// The name's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl core::fmt::Display for NetDevName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        use core::fmt::Write;
        // Names are printable ASCII (`dev_valid_name()` refuses '/', ':' and whitespace).
        self.as_bytes()
            .iter()
            .try_for_each(|b| f.write_char(char::from(*b)))
    }
}

/// A counted reference to a network device (`dev_hold()`; `dev_put()` on drop). The device
/// stays allocated while a reference exists; `unregister_netdevice()` waits for every
/// reference to go, so holders drop theirs when they see [`NetEvent::Unregister`].
///
/// # Invariants
///
/// `self.0` points to a `struct net_device` on which this value holds one reference.
pub struct NetDevRef(NonNull<bindings::net_device>);

// SAFETY: the reference count of a `struct net_device` is per-CPU/atomic and may be dropped
// from any thread; every accessor reads the device under its own rules (RCU, READ_ONCE).
unsafe impl Send for NetDevRef {}
// SAFETY: as for `Send`: shared access only reads.
unsafe impl Sync for NetDevRef {}

impl NetDevRef {
    /// Takes a new reference on `dev` (`dev_hold()`); `None` for a null pointer.
    ///
    /// # Safety
    ///
    /// `dev` must be null or point to a `struct net_device` that stays allocated for the
    /// duration of the call (registered and held by the caller, or inside a notifier call for
    /// it).
    pub unsafe fn from_raw(dev: *mut bindings::net_device) -> Option<Self> {
        let p = NonNull::new(dev)?;
        // SAFETY: `dev` points to a live net_device (the function's safety section).
        unsafe { rdma_rs_dev_hold(p.as_ptr()) };
        // INVARIANT: the reference just taken.
        Some(NetDevRef(p))
    }

    /// The device of the initial network namespace named `name`, held (`dev_get_by_name()`);
    /// `None` when there is none.
    pub fn by_name(name: &CStr) -> Option<Self> {
        // SAFETY: `name` is NUL-terminated; the shim returns the device held, or null.
        unsafe { Self::from_held(rdma_rs_netdev_get_by_name(name.as_char_ptr())) }
    }

    /// Wraps a pointer the shim returned held; `None` for null.
    ///
    /// # Safety
    ///
    /// `dev` must be null or carry one reference that the new value takes over.
    pub(crate) unsafe fn from_held(dev: *mut bindings::net_device) -> Option<Self> {
        // INVARIANT: the caller hands over its reference.
        NonNull::new(dev).map(NetDevRef)
    }

    /// The raw pointer (valid while `self` lives).
    pub fn as_ptr(&self) -> *mut bindings::net_device {
        self.0.as_ptr()
    }

    /// `dev->ifindex`.
    pub fn ifindex(&self) -> u32 {
        // SAFETY: `self.0` is a held net_device (type invariant).
        let i = unsafe { rdma_rs_netdev_ifindex(self.0.as_ptr()) };
        u32::try_from(i).unwrap_or(0)
    }

    /// `dev->name` now (it changes on rename).
    pub fn name(&self) -> NetDevName {
        let mut buf = [0u8; IFNAMSIZ];
        // SAFETY: `self.0` is a held net_device (type invariant); `buf` has `IFNAMSIZ` bytes
        // and `strscpy()` NUL-terminates within them.
        unsafe { rdma_rs_netdev_name(self.0.as_ptr(), buf.as_mut_ptr().cast(), IFNAMSIZ) };
        let len = buf.iter().position(|b| *b == 0).unwrap_or(IFNAMSIZ);
        NetDevName { buf, len }
    }

    /// The Ethernet address (`dev->dev_addr`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a device whose address is not 6 bytes long.
    pub fn mac(&self) -> Result<[u8; 6]> {
        let mut mac = [0u8; 6];
        // SAFETY: `self.0` is a held net_device (type invariant); `mac` has 6 bytes.
        let r = unsafe { rdma_rs_netdev_mac(self.0.as_ptr(), mac.as_mut_ptr()) };
        kernel::error::to_result(r)?;
        Ok(mac)
    }

    /// The link type and addresses (`dev->type`, `addr_len`, `dev_addr`, `broadcast`).
    pub fn link(&self) -> crate::netdev::LinkInfo {
        // SAFETY: `self.0` is a held net_device (type invariant).
        unsafe { crate::netdev::LinkInfo::of(self.0.as_ptr().cast()) }
    }

    /// `dev->mtu`.
    pub fn mtu(&self) -> u32 {
        // SAFETY: `self.0` is a held net_device (type invariant).
        unsafe { rdma_rs_netdev_mtu(self.0.as_ptr()) }
    }

    /// Whether `IFF_UP` is set.
    pub fn is_up(&self) -> bool {
        // SAFETY: `self.0` is a held net_device (type invariant).
        unsafe { rdma_rs_netdev_is_up(self.0.as_ptr()) }
    }

    /// `netif_carrier_ok()`.
    pub fn carrier(&self) -> bool {
        // SAFETY: `self.0` is a held net_device (type invariant).
        unsafe { rdma_rs_netdev_carrier(self.0.as_ptr()) }
    }

    /// `dev->operstate` (RFC 2863 `IF_OPER_*`).
    pub fn operstate(&self) -> u8 {
        // SAFETY: `self.0` is a held net_device (type invariant).
        unsafe { rdma_rs_netdev_operstate(self.0.as_ptr()) }
    }

    /// Whether the device is Ethernet (`ARPHRD_ETHER`).
    pub fn is_ether(&self) -> bool {
        // SAFETY: `self.0` is a held net_device (type invariant).
        unsafe { rdma_rs_netdev_is_ether(self.0.as_ptr()) }
    }

    /// Whether the device is registered (`NETREG_REGISTERED`).
    pub fn is_registered(&self) -> bool {
        // SAFETY: `self.0` is a held net_device (type invariant).
        unsafe { rdma_rs_netdev_registered(self.0.as_ptr()) }
    }

    /// The VLAN id of a VLAN device, `None` for any other (upstream
    /// `rdma_read_gid_l2_fields()`'s `vlan_id`, 0xffff there).
    pub fn vlan_id(&self) -> Option<u16> {
        // SAFETY: `self.0` is a held net_device (type invariant).
        let v = unsafe { rdma_rs_netdev_vlan_id(self.0.as_ptr()) };
        (v != 0xffff).then_some(v)
    }

    /// The real device under a VLAN device (upstream `rdma_vlan_dev_real_dev()`).
    pub fn vlan_real_dev(&self) -> Option<NetDevRef> {
        // SAFETY: `self.0` is a held net_device (type invariant); the shim returns the real
        // device held, or null.
        unsafe { Self::from_held(rdma_rs_netdev_vlan_real_dev(self.0.as_ptr())) }
    }

    /// Whether `upper` is an upper device of this one, at any depth (upstream
    /// `rdma_is_upper_dev_rcu()`).
    pub fn has_upper(&self, upper: &NetDevRef) -> bool {
        // SAFETY: both are held net_devices (type invariant); the shim takes the RCU lock.
        unsafe { rdma_rs_netdev_is_upper(self.0.as_ptr(), upper.0.as_ptr()) }
    }

    /// Every upper device of this one (VLANs, bonds), each held (upstream
    /// `handle_netdev_upper()`'s walk).
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub fn uppers(&self) -> Result<KVec<NetDevRef>> {
        let mut cap = 8usize;
        loop {
            let mut raw: KVec<*mut bindings::net_device> =
                KVec::from_elem(core::ptr::null_mut(), cap, GFP_KERNEL)?;
            // Allocated before the walk: wrapping the held pointers below cannot fail.
            let mut out = KVec::with_capacity(cap, GFP_KERNEL)?;
            let max = c_int::try_from(cap).map_err(|_| ENOMEM)?;
            // SAFETY: `self.0` is a held net_device (type invariant); `raw` has `cap` slots;
            // the shim holds each device it writes.
            let n = unsafe { rdma_rs_netdev_uppers(self.0.as_ptr(), raw.as_mut_ptr(), max) };
            let n = usize::try_from(n).unwrap_or(0);
            for p in raw.iter().take(n.min(cap)) {
                // SAFETY: the shim wrote a held device into each of the first `n` slots.
                if let Some(r) = unsafe { Self::from_held(*p) } {
                    // Within the capacity reserved above: no allocation, cannot fail.
                    let _ = out.push(r, GFP_KERNEL);
                }
            }
            if n <= cap {
                return Ok(out);
            }
            // More than fitted: drop these references and walk again with room for all.
            drop(out);
            cap = n;
        }
    }

    /// The IPv4 addresses (`ifa_address`, network order) in the device's list order
    /// (upstream `enum_netdev_ipv4_ips()`); none while the device unregisters.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub fn ipv4_addrs(&self) -> Result<KVec<[u8; 4]>> {
        // SAFETY: `self.0` is a held net_device (type invariant); the closure's buffer has
        // `max` slots, and the shim writes at most that many under RCU.
        read_list(|out, max| unsafe { rdma_rs_netdev_ipv4(self.0.as_ptr(), out, max) })
    }

    /// The IPv6 addresses in the device's list order (upstream `enum_netdev_ipv6_ips()`);
    /// none while the device unregisters.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub fn ipv6_addrs(&self) -> Result<KVec<[u8; 16]>> {
        // SAFETY: as in `ipv4_addrs`; the shim takes the inet6_dev's lock.
        read_list(|out, max| unsafe { rdma_rs_netdev_ipv6(self.0.as_ptr(), out, max) })
    }
}

/// Reads a list with `f(buffer, room) -> count`, growing the buffer until the list fits.
fn read_list<T: Copy + Default>(f: impl Fn(*mut T, c_int) -> c_int) -> Result<KVec<T>> {
    let mut cap = 8usize;
    loop {
        let mut v = KVec::from_elem(T::default(), cap, GFP_KERNEL)?;
        let max = c_int::try_from(cap).map_err(|_| ENOMEM)?;
        let n = usize::try_from(f(v.as_mut_ptr(), max)).unwrap_or(0);
        if n <= cap {
            v.truncate(n);
            return Ok(v);
        }
        cap = n;
    }
}

impl Clone for NetDevRef {
    fn clone(&self) -> Self {
        // SAFETY: `self.0` is a held net_device (type invariant), so it is live.
        unsafe { rdma_rs_dev_hold(self.0.as_ptr()) };
        // INVARIANT: the reference just taken.
        NetDevRef(self.0)
    }
}

impl Drop for NetDevRef {
    fn drop(&mut self) {
        // SAFETY: this value holds one reference (type invariant), given back here.
        unsafe { rdma_rs_dev_put(self.0.as_ptr()) };
    }
}

impl PartialEq for NetDevRef {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl Eq for NetDevRef {}

/// An IP address of an address event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpAddr {
    /// IPv4, network order.
    V4([u8; 4]),
    /// IPv6.
    V6([u8; 16]),
}

/// A netdevice event (the `NETDEV_*` ones RoCE GID management handles).
pub enum NetEvent {
    /// `NETDEV_REGISTER` (also replayed for every existing device at registration).
    Register,
    /// `NETDEV_UNREGISTER` of a device not yet unregistered; `moving`: the device stays
    /// registered and moves to another network namespace (`dev_change_net_namespace()`),
    /// where `NETDEV_REGISTER` follows.
    Unregister {
        /// The device moves to another namespace rather than going away.
        moving: bool,
    },
    /// `NETDEV_UP`.
    Up,
    /// `NETDEV_DOWN`.
    Down,
    /// `NETDEV_CHANGE` (carrier, operstate).
    Change,
    /// `NETDEV_CHANGEADDR` (the MAC).
    ChangeAddr,
    /// `NETDEV_CHANGEUPPER`, linking this upper device.
    LinkUpper(NetDevRef),
    /// `NETDEV_CHANGEUPPER`, unlinking this upper device.
    UnlinkUpper(NetDevRef),
}

/// Who receives the events of a [`NetNotifier`]. Only Ethernet devices are reported.
pub trait NetHandler: Send + Sync + 'static {
    /// A netdevice event, in process context with RTNL held (the handler must not take RTNL
    /// and should defer work, as upstream's `netdevice_event()` does).
    fn netdev_event(&self, ev: NetEvent, ndev: NetDevRef);

    /// An address added (`up`) or removed, possibly in atomic context (the inet6addr chain is
    /// atomic): the handler must not sleep.
    fn addr_event(&self, up: bool, ndev: NetDevRef, addr: IpAddr);
}

/// The three notifier registrations (upstream `roce_gid_mgmt_init()`); dropping it
/// unregisters them (`roce_gid_mgmt_cleanup()`), waiting for calls in progress.
///
/// # Invariants
///
/// `nb` is the shim's registered block whose context is `Arc::as_ptr(&handler)`.
pub struct NetNotifier<T: NetHandler> {
    nb: NonNull<RawNb>,
    handler: Arc<T>,
}

// SAFETY: the registration is only unregistered (from any thread) at drop; the handler is
// `Send + Sync`.
unsafe impl<T: NetHandler> Send for NetNotifier<T> {}
// SAFETY: shared access reads nothing of the registration.
unsafe impl<T: NetHandler> Sync for NetNotifier<T> {}

impl<T: NetHandler> NetNotifier<T> {
    /// Registers the inetaddr, inet6addr and netdevice notifiers, in that order; the
    /// netdevice registration replays `NETDEV_REGISTER` and `NETDEV_UP` for every existing
    /// device, delivered to `handler` before this returns.
    ///
    /// # Errors
    ///
    /// `ENOMEM`, or the chains' registration errno (nothing stays registered then).
    pub fn register(handler: Arc<T>) -> Result<Self> {
        let ctx = Arc::as_ptr(&handler).cast_mut().cast::<c_void>();
        // SAFETY: `ctx` points to the handler, which `Self` keeps alive until the
        // unregistration in `drop` has waited for every call; the trampolines are for `T`.
        let nb = unsafe {
            rdma_rs_net_notifier_register(ctx, netdev_trampoline::<T>, addr_trampoline::<T>)
        };
        let nb = kernel::error::from_err_ptr(nb)?;
        let nb = NonNull::new(nb).ok_or(ENOMEM)?;
        // INVARIANT: registered above with the handler as context.
        Ok(NetNotifier { nb, handler })
    }

    /// The handler.
    pub fn handler(&self) -> &Arc<T> {
        &self.handler
    }
}

impl<T: NetHandler> Drop for NetNotifier<T> {
    fn drop(&mut self) {
        // SAFETY: `nb` is the shim's registered block (type invariant); unregistering a
        // notifier chain waits for the calls in progress, so no trampoline uses the handler
        // after this.
        unsafe { rdma_rs_net_notifier_unregister(self.nb.as_ptr()) };
    }
}

/// `RDMA_RS_NET_*` of the shim.
const KIND_REGISTER: c_int = 1;
const KIND_UNREGISTER: c_int = 2;
const KIND_UP: c_int = 3;
const KIND_DOWN: c_int = 4;
const KIND_CHANGEADDR: c_int = 5;
const KIND_LINK_UPPER: c_int = 6;
const KIND_UNLINK_UPPER: c_int = 7;
const KIND_CHANGE: c_int = 8;
const KIND_UNREGISTER_MOVE: c_int = 9;

/// `AF_INET`, `AF_INET6`.
const AF_INET: c_int = 2;
const AF_INET6: c_int = 10;

/// The netdevice chain's callback.
///
/// # Safety
///
/// `ctx` is the `Arc<T>` of a live [`NetNotifier<T>`]; `ndev` (and `upper` unless null) are
/// the devices of a notifier call in progress.
unsafe extern "C" fn netdev_trampoline<T: NetHandler>(
    ctx: *mut c_void,
    kind: c_int,
    ndev: *mut bindings::net_device,
    upper: *mut bindings::net_device,
) {
    // SAFETY: `ctx` is the handler of a registered notifier (the function's safety section).
    let h = unsafe { &*ctx.cast::<T>() };
    // SAFETY: `ndev` is live for the notifier call.
    let Some(dev) = (unsafe { NetDevRef::from_raw(ndev) }) else {
        return;
    };
    // SAFETY: `upper` is null or live for the notifier call.
    let upper = unsafe { NetDevRef::from_raw(upper) };
    let ev = match (kind, upper) {
        (KIND_REGISTER, _) => NetEvent::Register,
        (KIND_UNREGISTER, _) => NetEvent::Unregister { moving: false },
        (KIND_UNREGISTER_MOVE, _) => NetEvent::Unregister { moving: true },
        (KIND_UP, _) => NetEvent::Up,
        (KIND_DOWN, _) => NetEvent::Down,
        (KIND_CHANGE, _) => NetEvent::Change,
        (KIND_CHANGEADDR, _) => NetEvent::ChangeAddr,
        (KIND_LINK_UPPER, Some(u)) => NetEvent::LinkUpper(u),
        (KIND_UNLINK_UPPER, Some(u)) => NetEvent::UnlinkUpper(u),
        _ => return,
    };
    h.netdev_event(ev, dev);
}

/// The inetaddr and inet6addr chains' callback.
///
/// # Safety
///
/// `ctx` is the `Arc<T>` of a live [`NetNotifier<T>`]; `ndev` is the device of the address
/// event in progress; `addr` points to 4 (`AF_INET`) or 16 (`AF_INET6`) bytes.
unsafe extern "C" fn addr_trampoline<T: NetHandler>(
    ctx: *mut c_void,
    up: c_int,
    ndev: *mut bindings::net_device,
    family: c_int,
    addr: *const u8,
) {
    // SAFETY: `ctx` is the handler of a registered notifier (the function's safety section).
    let h = unsafe { &*ctx.cast::<T>() };
    let a = match family {
        AF_INET => {
            let mut b = [0u8; 4];
            // SAFETY: `addr` points to 4 bytes for AF_INET.
            unsafe { core::ptr::copy_nonoverlapping(addr, b.as_mut_ptr(), 4) };
            IpAddr::V4(b)
        }
        AF_INET6 => {
            let mut b = [0u8; 16];
            // SAFETY: `addr` points to 16 bytes for AF_INET6.
            unsafe { core::ptr::copy_nonoverlapping(addr, b.as_mut_ptr(), 16) };
            IpAddr::V6(b)
        }
        _ => return,
    };
    // SAFETY: `ndev` is live for the notifier call.
    let Some(dev) = (unsafe { NetDevRef::from_raw(ndev) }) else {
        return;
    };
    h.addr_event(up != 0, dev, a);
}
