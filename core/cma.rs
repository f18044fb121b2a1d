// SPDX-License-Identifier: GPL-2.0

//! The RDMA connection manager's ids (upstream `drivers/infiniband/core/cma.c`, the kernel API
//! of `include/rdma/rdma_cm.h`): an id in a port space (TCP, UDP, IPoIB, IB) with its state
//! machine, bound to an address and port ([`CmId::bind_addr`], the per-space bind lists with
//! port allocation, `reuseaddr` and `afonly`), its address resolved to a device, port, GID and
//! destination MAC ([`CmId::resolve_addr`], `core/cma/resolve.rs`), its route built locally on
//! RoCE ([`CmId::resolve_route`], upstream `cma_resolve_iboe_route()`) or asked of the SA on
//! InfiniBand (`AF_IB` ids and routes: `core/cma/ib.rs`), listening. Events go to
//! the id's [`CmHandler`] from the core's workqueue, never from inside a call, and not after
//! [`CmId::destroy`] returned (upstream's `handler_mutex`). A device's removal moves its ids to
//! `RDMA_CM_DEVICE_REMOVAL` and reports `RDMA_CM_EVENT_DEVICE_REMOVAL` ([`CmaClient`]).
//!
//! Connections over the IB CM are in `core/cma/conn.rs`, multicast groups on RoCE in
//! `core/cma/mcast.rs`. Not done (`EOPNOTSUPP`): multicast on InfiniBand ports (MCMember
//! records), the IB loopback of an `AF_IB` id. Everything runs in the initial network
//! namespace.

use crate::attr::{GidType, LinkLayer, PortState};
use crate::ib_device::{DeviceCore, IbDevice};
use crate::net_notify::{IpAddr, NetDevRef};
use crate::restrack::Owner;
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};

#[path = "cma/conn.rs"]
mod conn;
#[path = "cma/ib.rs"]
mod ib;
#[path = "cma/mcast.rs"]
mod mcast;
#[path = "cma/qp.rs"]
mod qp;
#[path = "cma/resolve.rs"]
mod resolve;

pub use conn::{ConnParam, UdParam};
pub use mcast::{JOIN_FULLMEMBER, JOIN_SENDONLY_FULLMEMBER};
pub use qp::CmQp;
#[path = "cma/sockaddr.rs"]
pub mod sockaddr;

use sockaddr::{SockAddr, AF_IB, AF_INET, AF_INET6};

upstream_enum! {
    /// The port spaces (upstream `enum rdma_ucm_port_space`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum PortSpace: u16 {
        Ipoib = 0x0002 => RDMA_PS_IPOIB,
        Tcp = 0x0106 => RDMA_PS_TCP,
        Udp = 0x0111 => RDMA_PS_UDP,
        Ib = 0x013f => RDMA_PS_IB,
    }
}

upstream_enum! {
    /// An id's state (upstream `enum rdma_cm_state`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum CmState: u32 {
        Idle = 0 => RDMA_CM_IDLE,
        AddrQuery = 1 => RDMA_CM_ADDR_QUERY,
        AddrResolved = 2 => RDMA_CM_ADDR_RESOLVED,
        RouteQuery = 3 => RDMA_CM_ROUTE_QUERY,
        RouteResolved = 4 => RDMA_CM_ROUTE_RESOLVED,
        Connect = 5 => RDMA_CM_CONNECT,
        Disconnect = 6 => RDMA_CM_DISCONNECT,
        AddrBound = 7 => RDMA_CM_ADDR_BOUND,
        Listen = 8 => RDMA_CM_LISTEN,
        DeviceRemoval = 9 => RDMA_CM_DEVICE_REMOVAL,
        Destroying = 10 => RDMA_CM_DESTROYING,
    }
}

upstream_enum! {
    /// The events of an id (upstream `enum rdma_cm_event_type`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum CmEventType: u32 {
        AddrResolved = 0 => RDMA_CM_EVENT_ADDR_RESOLVED,
        AddrError = 1 => RDMA_CM_EVENT_ADDR_ERROR,
        RouteResolved = 2 => RDMA_CM_EVENT_ROUTE_RESOLVED,
        RouteError = 3 => RDMA_CM_EVENT_ROUTE_ERROR,
        ConnectRequest = 4 => RDMA_CM_EVENT_CONNECT_REQUEST,
        ConnectResponse = 5 => RDMA_CM_EVENT_CONNECT_RESPONSE,
        ConnectError = 6 => RDMA_CM_EVENT_CONNECT_ERROR,
        Unreachable = 7 => RDMA_CM_EVENT_UNREACHABLE,
        Rejected = 8 => RDMA_CM_EVENT_REJECTED,
        Established = 9 => RDMA_CM_EVENT_ESTABLISHED,
        Disconnected = 10 => RDMA_CM_EVENT_DISCONNECTED,
        DeviceRemoval = 11 => RDMA_CM_EVENT_DEVICE_REMOVAL,
        MulticastJoin = 12 => RDMA_CM_EVENT_MULTICAST_JOIN,
        MulticastError = 13 => RDMA_CM_EVENT_MULTICAST_ERROR,
        AddrChange = 14 => RDMA_CM_EVENT_ADDR_CHANGE,
        TimewaitExit = 15 => RDMA_CM_EVENT_TIMEWAIT_EXIT,
    }
}

/// An event (upstream `struct rdma_cm_event`).
pub struct CmEvent {
    /// What happened.
    pub event: CmEventType,
    /// 0 or a negative errno (a REJ's reason for `RDMA_CM_EVENT_REJECTED`).
    pub status: i32,
    /// The connection parameters of a connection event (`param.conn`).
    pub conn: Option<KBox<ConnParam>>,
    /// The new id of `RDMA_CM_EVENT_CONNECT_REQUEST`.
    pub new_id: Option<Arc<CmId>>,
    /// The parameters of a UD id's event (`param.ud`).
    pub ud: Option<KBox<conn::UdParam>>,
    /// The context [`CmId::join_multicast`] was given, in the group's events (upstream
    /// `param.ud.private_data`).
    pub mc_context: u64,
}

impl CmEvent {
    /// An event without parameters.
    pub fn new(event: CmEventType, status: i32) -> Self {
        CmEvent {
            event,
            status,
            conn: None,
            new_id: None,
            ud: None,
            mc_context: 0,
        }
    }
}

/// Who gets an id's events (upstream the id's `event_handler`). Called from the core's
/// workqueue or a device's removal, one call at a time per id, never after
/// [`CmId::destroy`] returned.
pub trait CmHandler: Send + Sync + 'static {
    /// `ev` happened on `id`.
    fn event(&self, id: &Arc<CmId>, ev: CmEvent);
}

/// The device, port and source GID an id is bound to (upstream the id's `cma_dev`,
/// `port_num` and `route.addr.dev_addr`).
#[derive(Clone, Copy, Debug)]
pub struct DevBinding {
    /// The device's index.
    pub dev_index: u32,
    /// Its node GUID (host order).
    pub node_guid: u64,
    /// The port.
    pub port: u32,
    /// The source GID's table index.
    pub gid_index: u32,
    /// The source GID.
    pub sgid: [u8; 16],
    /// Its type.
    pub gid_type: GidType,
    /// Whether the port is RoCE.
    pub roce: bool,
    /// The netdev the GID belongs to (upstream `dev_addr.bound_dev_if`), 0 on InfiniBand.
    pub ifindex: u32,
    /// Its MAC (`dev_addr.src_dev_addr`).
    pub smac: [u8; 6],
    /// Its MTU.
    pub mtu: u32,
    /// The P_Key (`ib_addr_get_pkey()`; 0xffff on RoCE).
    pub pkey: u16,
}

/// A route (upstream `struct sa_path_rec` as `cma_resolve_iboe_route()` fills it on RoCE).
#[derive(Clone, Copy, Debug, Default)]
pub struct PathRec {
    /// Destination GID.
    pub dgid: [u8; 16],
    /// Source GID.
    pub sgid: [u8; 16],
    /// Flow label (host order).
    pub flow_label: u32,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class (the id's ToS).
    pub traffic_class: u8,
    /// Reversible.
    pub reversible: bool,
    /// P_Key (host order).
    pub pkey: u16,
    /// Service level.
    pub sl: u8,
    /// MTU (`enum ib_mtu`).
    pub mtu: u8,
    /// Rate (`enum ib_rate`).
    pub rate: u8,
    /// Packet life time (log2 of 4.096 us).
    pub packet_life_time: u8,
    /// Destination MAC (RoCE).
    pub dmac: [u8; 6],
    /// Destination LID (InfiniBand; 0 on RoCE).
    pub dlid: u16,
    /// Source LID (InfiniBand; 0 on RoCE).
    pub slid: u16,
    /// The service ID the SA was asked for (InfiniBand; 0 on RoCE).
    pub service_id: u64,
}

/// What [`CmId::info`] reports (what `ucma`'s queries copy out).
#[derive(Clone, Copy, Debug)]
pub struct CmIdInfo {
    /// State.
    pub state: CmState,
    /// Source address.
    pub src: SockAddr,
    /// Destination address.
    pub dst: SockAddr,
    /// The device binding, once bound to one.
    pub dev: Option<DevBinding>,
    /// The destination GID and MAC once the address is resolved.
    pub dgid: [u8; 16],
    /// The destination MAC.
    pub dmac: [u8; 6],
    /// The route, once resolved.
    pub route: Option<PathRec>,
}

/// The mutable state of an id (upstream `struct rdma_id_private`'s fields under its locks).
struct IdState {
    state: CmState,
    src: SockAddr,
    dst: SockAddr,
    dev: Option<DevBinding>,
    /// `dev_addr.bound_dev_if`: the interface a link-local address is scoped to.
    bound_dev_if: u32,
    dgid: [u8; 16],
    dmac: [u8; 6],
    hop_limit: u8,
    route: Option<PathRec>,
    /// The port this id holds in its space's bind list.
    bound_port: Option<u16>,
    reuseaddr: bool,
    afonly: bool,
    /// `CMA_OPTION_AFONLY`: `afonly` was set by the user.
    afonly_set: bool,
    tos: Option<u8>,
    ack_timeout: Option<u8>,
    backlog: u32,
    /// upstream `seq_num`: the starting PSN this end announces (24 random bits).
    seq_num: u32,
    /// The IB CM connection, once connecting.
    conn: Option<Arc<crate::cm::service::CmConn>>,
    /// The IB CM listen of a listening id.
    listen: Option<crate::cm::service::CmListen>,
    /// The groups joined (upstream `mc_list`).
    mcs: KVec<mcast::Mc>,
    /// A kernel consumer's QP (upstream `id->qp`, `core/cma/qp.rs`).
    qp: Option<Arc<dyn CmQp>>,
    /// The QP number a user gave `connect` or `accept` (upstream `id_priv->qp_num` of an id
    /// without a kernel QP).
    qp_num: u32,
}

impl IdState {
    fn new() -> Self {
        IdState {
            state: CmState::Idle,
            src: SockAddr::default(),
            dst: SockAddr::default(),
            dev: None,
            bound_dev_if: 0,
            dgid: [0; 16],
            dmac: [0; 6],
            hop_limit: 0,
            route: None,
            bound_port: None,
            reuseaddr: false,
            afonly: false,
            afonly_set: false,
            tos: None,
            ack_timeout: None,
            backlog: 0,
            seq_num: crate::net_addr::random_u32() & 0xff_ffff,
            conn: None,
            listen: None,
            mcs: KVec::new(),
            qp: None,
            qp_num: 0,
        }
    }
}

/// An rdma_cm id (upstream `struct rdma_id_private`).
#[pin_data]
pub struct CmId {
    ps: PortSpace,
    qp_type: u8,
    /// Who made it (upstream `res.task` or `res.kern_name`; a request's id has its
    /// listener's, `rdma_restrack_parent_name()`).
    owner: Owner,
    /// Its number in `rdma res show cm_id` (`RDMA_NLDEV_ATTR_RES_CM_IDN`): one sequence for
    /// all devices, so unique on each as upstream's per-device restrack ID.
    idn: u32,
    /// The handler while the id lives; held while it runs (upstream `handler_mutex`).
    #[pin]
    handler: Mutex<Option<Arc<dyn CmHandler>>>,
    #[pin]
    st: Mutex<IdState>,
}

/// One id's hold on a port (upstream `struct rdma_bind_list` owners), with what
/// `cma_check_port()` compares.
struct PortOwner {
    ps: PortSpace,
    port: u16,
    /// The id's address, as its identity.
    id: usize,
    src: SockAddr,
    reuseaddr: bool,
    afonly: bool,
}

/// The ids and the bind lists of every port space (upstream `lock`, the `ps` IDRs and
/// `dev_list`'s id lists).
pub(crate) struct CmaGlobal {
    ids: KVec<Arc<CmId>>,
    owners: KVec<PortOwner>,
    /// upstream `cma_alloc_any_port()`'s `last_used_port`.
    last_used_port: u16,
    /// The next [`CmId::idn`].
    next_idn: u32,
}

impl CmaGlobal {
    /// Empty tables.
    pub(crate) const fn new() -> Self {
        CmaGlobal {
            ids: KVec::new(),
            owners: KVec::new(),
            last_used_port: 0,
            next_idn: 0,
        }
    }

    /// upstream `cma_check_port()`: whether `id` may share `port` with its owners.
    fn check_port(&self, ps: PortSpace, port: u16, id: &PortOwner, reuseaddr: bool) -> Result {
        for cur in self
            .owners
            .iter()
            .filter(|o| o.ps == ps && o.port == port && o.id != id.id)
        {
            if reuseaddr && cur.reuseaddr {
                continue;
            }
            if id.afonly && cur.afonly && id.src.family() != cur.src.family() {
                continue;
            }
            if id.src.is_any() || cur.src.is_any() {
                return Err(EADDRNOTAVAIL);
            }
            if id.src.same_addr(&cur.src) {
                return Err(EADDRINUSE);
            }
        }
        Ok(())
    }

    fn port_used(&self, ps: PortSpace, port: u16) -> bool {
        self.owners.iter().any(|o| o.ps == ps && o.port == port)
    }
}

fn global() -> impl core::ops::DerefMut<Target = CmaGlobal> {
    crate::global::CMA.lock()
}

/// `PROT_SOCK`: ports below it need `CAP_NET_BIND_SERVICE`.
const PROT_SOCK: u16 = 1024;

impl CmId {
    /// A new id in `ps` for `owner` (upstream `rdma_create_user_id()` for a user's, with
    /// [`Owner::current_task`]; `rdma_create_id()` for a kernel consumer's, with
    /// `kernel_owner!()`). The QP type is the caller's, as ucma derives it from the space.
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub fn create(
        handler: Arc<dyn CmHandler>,
        ps: PortSpace,
        qp_type: u8,
        owner: Owner,
    ) -> Result<Arc<CmId>> {
        Self::new_in(handler, ps, qp_type, owner, false)
    }

    /// The new id of a connection request on `listener` (upstream `cma_ib_new_conn_id()`),
    /// made while the listener's handler runs: its locks are of their own class (they nest
    /// inside the listener's).
    ///
    /// # Errors
    ///
    /// `ENOMEM`.
    pub(crate) fn create_child(handler: Arc<dyn CmHandler>, listener: &CmId) -> Result<Arc<CmId>> {
        Self::new_in(handler, listener.ps, listener.qp_type, listener.owner, true)
    }

    fn new_in(
        handler: Arc<dyn CmHandler>,
        ps: PortSpace,
        qp_type: u8,
        owner: Owner,
        child: bool,
    ) -> Result<Arc<CmId>> {
        let idn = {
            let mut g = global();
            let n = g.next_idn;
            g.next_idn = n.wrapping_add(1);
            n
        };
        // Two initializers that differ only in their locks' names: `new_mutex!` gives each
        // call site its own lock class, and a request's id is locked inside its listener's.
        let id = if child {
            Arc::pin_init(
                pin_init!(CmId {
                    ps,
                    qp_type,
                    owner,
                    idn,
                    handler <- kernel::new_mutex!(Some(handler), "cma_handler_child"),
                    st <- kernel::new_mutex!(IdState::new(), "cma_id_child"),
                }),
                GFP_KERNEL,
            )?
        } else {
            Arc::pin_init(
                pin_init!(CmId {
                    ps,
                    qp_type,
                    owner,
                    idn,
                    handler <- kernel::new_mutex!(Some(handler), "cma_handler"),
                    st <- kernel::new_mutex!(IdState::new(), "cma_id"),
                }),
                GFP_KERNEL,
            )?
        };
        global().ids.push(id.clone(), GFP_KERNEL)?;
        Ok(id)
    }

    /// The id's identity in the bind lists.
    fn key(&self) -> usize {
        core::ptr::from_ref(self) as usize
    }

    /// The port space.
    pub fn ps(&self) -> PortSpace {
        self.ps
    }

    /// The QP type (`enum ib_qp_type`).
    pub fn qp_type(&self) -> u8 {
        self.qp_type
    }

    /// A snapshot of the id's addresses, device and route.
    pub fn info(&self) -> CmIdInfo {
        let s = self.st.lock();
        CmIdInfo {
            state: s.state,
            src: s.src,
            dst: s.dst,
            dev: s.dev,
            dgid: s.dgid,
            dmac: s.dmac,
            route: s.route,
        }
    }

    /// Destroys the id (upstream `rdma_destroy_id()`): its port is released, no handler call
    /// runs after this returns.
    pub fn destroy(self: &Arc<Self>) {
        // Waits for a handler call in progress.
        drop(self.handler.lock().take());
        let (conn, listen, qp) = {
            let mut s = self.st.lock();
            (s.conn.take(), s.listen.take(), s.qp.take())
        };
        drop(listen);
        drop(qp);
        if let Some(c) = conn {
            c.destroy();
        }
        self.leave_all_multicast();
        let mut s = self.st.lock();
        s.state = CmState::Destroying;
        s.dev = None;
        let mut g = global();
        let me = self.key();
        g.owners.retain(|o| o.id != me);
        g.ids.retain(|i| !Arc::ptr_eq(i, self));
        s.bound_port = None;
    }

    /// Moves the state from `from` to `to` (upstream `cma_comp_exch()`).
    fn comp_exch(&self, from: CmState, to: CmState) -> bool {
        let mut s = self.st.lock();
        if s.state == from {
            s.state = to;
            true
        } else {
            false
        }
    }

    /// Binds the id to `addr` (upstream `rdma_bind_addr()`): a specific address gets its
    /// device (`cma_translate_addr()`, `cma_acquire_dev_by_src_ip()`), port 0 a free port of
    /// the local range.
    ///
    /// # Errors
    ///
    /// `EAFNOSUPPORT` for a family other than IPv4, IPv6 and `AF_IB`; `EINVAL`
    /// unless the id is idle, for a link-local IPv6 address without scope, for a specific IP
    /// address of an `RDMA_PS_IPOIB` id (no IPoIB interface); `EADDRNOTAVAIL`
    /// when no interface has the address or no port is free; `ENODEV` when no RDMA port has
    /// its GID; `EACCES` for a port below 1024 without `CAP_NET_BIND_SERVICE`; `EADDRINUSE`.
    pub fn bind_addr(self: &Arc<Self>, addr: &SockAddr) -> Result {
        self.bind_addr_dst(addr, None)
    }

    /// upstream `rdma_bind_addr_dst()`.
    fn bind_addr_dst(self: &Arc<Self>, addr: &SockAddr, daddr: Option<&SockAddr>) -> Result {
        let fam = addr.family();
        if fam != AF_INET && fam != AF_INET6 && fam != AF_IB {
            return Err(EAFNOSUPPORT);
        }
        if !self.comp_exch(CmState::Idle, CmState::AddrBound) {
            return Err(EINVAL);
        }
        let r = self.bind_bound(addr, daddr);
        if r.is_err() {
            let mut s = self.st.lock();
            s.dev = None;
            if s.state == CmState::AddrBound {
                s.state = CmState::Idle;
            }
        }
        r
    }

    fn bind_bound(self: &Arc<Self>, addr: &SockAddr, daddr: Option<&SockAddr>) -> Result {
        // upstream cma_check_linklocal().
        let mut bound_dev_if = 0;
        if addr.is_link_local() {
            if addr.scope_id() == 0 {
                return Err(EINVAL);
            }
            bound_dev_if = addr.scope_id();
        }
        let dev = match addr.ip() {
            // upstream cma_translate_ib() and cma_acquire_dev_by_src_ip().
            None if !addr.is_any() => Some(ib::acquire_dev_by_gid(addr)?),
            // upstream cma_any_addr(): a loopback address binds like the unspecified one.
            Some(ip) if !addr.is_any() && !addr.is_loopback() => {
                // upstream rdma_translate_ip(): EADDRNOTAVAIL without a device owning it.
                let ndev = crate::net_addr::ip_dev_find(&ip).ok_or(EADDRNOTAVAIL)?;
                Some(resolve::acquire_dev_by_ip(self.ps, ip, &ndev)?)
            }
            _ => None,
        };
        let mut s = self.st.lock();
        s.src = *addr;
        s.bound_dev_if = bound_dev_if;
        if let Some(d) = dev {
            s.bound_dev_if = d.ifindex;
            s.dev = Some(d);
        }
        if !s.afonly_set {
            // upstream: IPv4 ids are AF-only, IPv6 ones follow net.ipv6.bindv6only (0).
            s.afonly = addr.family() == AF_INET;
        }
        s.dst = match daddr {
            Some(d) => *d,
            None => s.dst,
        };
        let mut d = s.dst;
        if d.family() != addr.family() {
            d = SockAddr::any(addr.family());
        }
        s.dst = d;
        self.get_port(&mut s)
    }

    /// upstream `cma_get_port()`: a free port for port 0 (`cma_alloc_any_port()`), else the
    /// port asked for (`cma_use_port()`).
    fn get_port(self: &Arc<Self>, s: &mut IdState) -> Result {
        let me = self.key();
        // upstream cma_select_ib_ps() for AF_IB (EPROTONOSUPPORT when the service ID names
        // no space the id may use), else the id's own space.
        let ps = if s.src.family() == AF_IB {
            ib::select_ib_ps(self.ps, &mut s.src).ok_or(EPROTONOSUPPORT)?
        } else {
            self.ps
        };
        let mut owner = PortOwner {
            ps,
            port: s.src.port(),
            id: me,
            src: s.src,
            reuseaddr: s.reuseaddr,
            afonly: s.afonly,
        };
        let mut g = global();
        g.owners.reserve(1, GFP_KERNEL)?;
        if owner.port == 0 {
            let (low, high) = crate::net_addr::local_port_range();
            let (low, high) = (u32::from(low), u32::from(high.max(low)));
            let mut remaining = high - low + 1;
            let mut rover = low + crate::net_addr::random_u32() % remaining;
            loop {
                let port = rover as u16;
                if u32::from(g.last_used_port) != rover && !g.port_used(ps, port) {
                    g.last_used_port = port;
                    owner.port = port;
                    break;
                }
                remaining -= 1;
                if remaining == 0 {
                    return Err(EADDRNOTAVAIL);
                }
                rover = if rover >= high { low } else { rover + 1 };
            }
            s.src.set_port(owner.port);
            owner.src = s.src;
        } else {
            if owner.port < PROT_SOCK && !crate::net_addr::capable_net_bind_service() {
                return Err(EACCES);
            }
            g.check_port(ps, owner.port, &owner, s.reuseaddr)?;
        }
        s.bound_port = Some(owner.port);
        g.owners.push(owner, GFP_KERNEL)?;
        Ok(())
    }

    /// Updates this id's entry in the bind lists after an option changed.
    fn update_owner(&self, s: &IdState) {
        let me = self.key();
        for o in global().owners.iter_mut().filter(|o| o.id == me) {
            o.reuseaddr = s.reuseaddr;
            o.afonly = s.afonly;
        }
    }

    /// upstream `rdma_set_reuseaddr()`.
    ///
    /// # Errors
    ///
    /// `EINVAL` when listening, or when clearing it on an id that is not idle.
    pub fn set_reuseaddr(&self, reuse: bool) -> Result {
        let mut s = self.st.lock();
        if (reuse && s.state != CmState::Listen) || s.state == CmState::Idle {
            s.reuseaddr = reuse;
            self.update_owner(&s);
            Ok(())
        } else {
            Err(EINVAL)
        }
    }

    /// upstream `rdma_set_afonly()`.
    ///
    /// # Errors
    ///
    /// `EINVAL` unless idle or bound.
    pub fn set_afonly(&self, afonly: bool) -> Result {
        let mut s = self.st.lock();
        if s.state == CmState::Idle || s.state == CmState::AddrBound {
            s.afonly_set = true;
            s.afonly = afonly;
            self.update_owner(&s);
            Ok(())
        } else {
            Err(EINVAL)
        }
    }

    /// upstream `rdma_set_service_type()`: the ToS of the id's traffic.
    pub fn set_tos(&self, tos: u8) {
        self.st.lock().tos = Some(tos);
    }

    /// upstream `rdma_set_ack_timeout()`.
    ///
    /// # Errors
    ///
    /// `EINVAL` for an id whose QP type is neither RC nor XRC initiator.
    pub fn set_ack_timeout(&self, timeout: u8) -> Result {
        if !matches!(self.qp_type, QPT_RC | QPT_XRC_INI) {
            return Err(EINVAL);
        }
        self.st.lock().ack_timeout = Some(timeout);
        Ok(())
    }

    /// Resolves `dst` to a device, GID and MAC (upstream `rdma_resolve_addr()`): an idle id is
    /// bound first (to `src`, or the unspecified address of `dst`'s family); the route is
    /// looked up now and its errors returned, the neighbour resolves on the workqueue within
    /// `timeout_ms` and ends in `RDMA_CM_EVENT_ADDR_RESOLVED` or `RDMA_CM_EVENT_ADDR_ERROR`.
    ///
    /// # Errors
    ///
    /// `EINVAL` unless idle or bound, or for a destination of another family than the
    /// source; the bind's errors; the route's (`ENETUNREACH`, ...); `ENODEV` when nothing can
    /// be bound for the unspecified destination or no InfiniBand port reaches an `AF_IB` one;
    /// `EOPNOTSUPP` for the unspecified `AF_IB` destination.
    pub fn resolve_addr(
        self: &Arc<Self>,
        src: Option<&SockAddr>,
        dst: &SockAddr,
        timeout_ms: u32,
    ) -> Result {
        // upstream resolve_prepare_src().
        if !self.comp_exch(CmState::AddrBound, CmState::AddrQuery) {
            match src.filter(|s| s.family() != 0) {
                Some(s) => self.bind_addr_dst(s, Some(dst))?,
                None => {
                    let mut any = SockAddr::any(dst.family());
                    // upstream cma_bind_addr(): an AF_IB source takes the destination's P_Key.
                    any.set_ib_pkey(dst.ib_pkey());
                    if dst.is_link_local() {
                        // upstream: the scope of the destination.
                        any = SockAddr::parse(dst.as_bytes()).unwrap_or(any);
                        any.set_ip(IpAddr::V6([0; 16]));
                        any.set_port(0);
                    }
                    self.bind_addr_dst(&any, Some(dst))?;
                }
            }
            if !self.comp_exch(CmState::AddrBound, CmState::AddrQuery) {
                return Err(EINVAL);
            }
        } else {
            self.st.lock().dst = *dst;
        }
        let r = self.resolve_addr_query(dst, timeout_ms);
        if r.is_err() {
            self.comp_exch(CmState::AddrQuery, CmState::AddrBound);
        }
        r
    }

    fn resolve_addr_query(self: &Arc<Self>, dst: &SockAddr, timeout_ms: u32) -> Result {
        let (src, bound_if) = {
            let mut s = self.st.lock();
            if s.src.family() != dst.family() {
                return Err(EINVAL);
            }
            s.dst = *dst;
            (s.src, s.bound_dev_if)
        };
        if dst.family() == AF_IB {
            // The IB loopback (cma_resolve_loopback() of an AF_IB id) is not done.
            if dst.is_any() {
                return Err(EOPNOTSUPP);
            }
            return ib::resolve_ib_addr(self);
        }
        if dst.is_any() || dst.is_loopback() {
            // upstream cma_any_addr() -> cma_resolve_loopback().
            return resolve::resolve_loopback(self);
        }
        let (Some(sip), Some(dip)) = (src.ip(), dst.ip()) else {
            return Err(EINVAL);
        };
        // upstream rdma_resolve_ip(): the route now, its error returned.
        let (ndev, chosen) = crate::net_addr::route_src(&sip, &dip, bound_if)?;
        // upstream rdma_set_src_addr_rcu(): the route's interface becomes the id's
        // (`dev_addr.bound_dev_if`, where none was), and stays whatever the resolution's
        // outcome: a later resolution routes through it, a route resolution needs it.
        if bound_if == 0 {
            self.st.lock().bound_dev_if = ndev.ifindex();
        }
        resolve::queue_addr_work(self.clone(), ndev, chosen, dip, timeout_ms)
    }

    /// Builds the route (upstream `rdma_resolve_route()` -> `cma_resolve_iboe_route()` on
    /// RoCE); `RDMA_CM_EVENT_ROUTE_RESOLVED` follows from the workqueue.
    ///
    /// # Errors
    ///
    /// `EINVAL` for a zero timeout, unless the address is resolved, or for a netdev MTU too
    /// small for RoCE; `ENODEV` when the source netdev is gone; on InfiniBand the SA
    /// client's (`ENETUNREACH` without an SM).
    pub fn resolve_route(self: &Arc<Self>, timeout_ms: u32) -> Result {
        if timeout_ms == 0 {
            return Err(EINVAL);
        }
        if !self.comp_exch(CmState::AddrResolved, CmState::RouteQuery) {
            return Err(EINVAL);
        }
        let ib_port = self.st.lock().dev.is_some_and(|b| !b.roce);
        // upstream rdma_resolve_route(): cma_resolve_ib_route() on InfiniBand.
        let r = if ib_port {
            ib::ib_route(self, timeout_ms)
        } else {
            resolve::iboe_route(self)
        };
        if r.is_err() {
            self.comp_exch(CmState::RouteQuery, CmState::AddrResolved);
        }
        r
    }

    /// Listens (upstream `rdma_listen()`): an idle id is bound to `0.0.0.0` first; an id
    /// with `reuseaddr` must then be alone on its port. Connection requests arrive once the
    /// IB CM exists (not done).
    ///
    /// # Errors
    ///
    /// The bind's errors; `EINVAL` unless idle or bound; `EADDRINUSE`, `EADDRNOTAVAIL` when a
    /// reusing id shares the port.
    pub fn listen(self: &Arc<Self>, backlog: u32) -> Result {
        if !self.comp_exch(CmState::AddrBound, CmState::Listen) {
            let mut any = SockAddr::any(AF_INET);
            any.set_port(0);
            self.bind_addr(&any)?;
            if !self.comp_exch(CmState::AddrBound, CmState::Listen) {
                return Err(EINVAL);
            }
        }
        let mut s = self.st.lock();
        if s.reuseaddr {
            let me = self.key();
            let owner = PortOwner {
                ps: self.ps,
                port: s.src.port(),
                id: me,
                src: s.src,
                reuseaddr: false,
                afonly: s.afonly,
            };
            let r = global().check_port(self.ps, owner.port, &owner, false);
            if let Err(e) = r {
                s.state = CmState::AddrBound;
                return Err(e);
            }
            s.reuseaddr = false;
            self.update_owner(&s);
        }
        s.backlog = backlog;
        // upstream cma_ib_listen(): the service id of the space and port.
        let sid = conn::service_id(self.ps, s.src.port());
        match crate::cm::service::listen(sid, conn::listener(self)?) {
            Ok(l) => {
                s.listen = Some(l);
                Ok(())
            }
            Err(e) => {
                s.state = CmState::AddrBound;
                Err(e)
            }
        }
    }

    /// Replaces the handler (ucma gives a new id of a connection request its own context).
    pub fn set_handler(&self, h: Arc<dyn CmHandler>) {
        let mut cur = self.handler.lock();
        if cur.is_some() {
            *cur = Some(h);
        }
    }

    /// Calls the handler with `ev` while the id is alive (upstream `cma_cm_event_handler()`
    /// under `handler_mutex`).
    fn report(self: &Arc<Self>, ev: CmEvent) {
        self.step_and_report(|_| Some(ev));
    }

    /// Under the handler lock (upstream `handler_mutex`), while the id is alive: `step` moves
    /// the id's state (upstream `cma_comp_exch()` and what goes with it) and gives the event
    /// its move implies, which the handler then gets (`cma_cm_event_handler()`); `None`: the
    /// id was not in the state the event needs, nothing is reported.
    fn step_and_report(self: &Arc<Self>, step: impl FnOnce(&mut IdState) -> Option<CmEvent>) {
        let h = self.handler.lock();
        let Some(h) = h.as_ref() else {
            return;
        };
        let ev = step(&mut self.st.lock());
        if let Some(ev) = ev {
            h.event(self, ev);
        }
    }

    /// [`CmId::step_and_report`] from the core's workqueue, after the call that started it.
    fn queue_step(
        self: &Arc<Self>,
        step: impl FnOnce(&mut IdState) -> Option<CmEvent> + Send + 'static,
    ) -> Result {
        let id = self.clone();
        crate::wq::queue().try_spawn(GFP_KERNEL, move || id.step_and_report(step))?;
        Ok(())
    }

    /// The event of the move `from` -> `to`, if the id was in `from` (upstream
    /// `cma_comp_exch()` before a report).
    fn transition(s: &mut IdState, from: CmState, to: CmState, ev: CmEvent) -> Option<CmEvent> {
        (s.state == from).then(|| {
            s.state = to;
            ev
        })
    }
}

/// `IB_QPT_RC`.
pub const QPT_RC: u8 = 2;
/// `IB_QPT_UD`.
pub const QPT_UD: u8 = 4;
/// `IB_QPT_XRC_INI`.
pub const QPT_XRC_INI: u8 = 9;

/// Whether a port is up (upstream `cma_bind_loopback()`'s check).
fn port_active(dev: &DeviceCore, port: u32) -> bool {
    dev.get_cached_port_state(port)
        .is_ok_and(|s| s == PortState::Active)
}

/// Whether a port is RoCE.
fn port_is_roce(dev: &DeviceCore, port: u32) -> bool {
    dev.port_immutable(port)
        .is_ok_and(|p| p.link_layer == LinkLayer::Ethernet)
}

/// Whether a port is InfiniBand (upstream `rdma_cap_af_ib()`, `rdma_cap_ib_sa()`).
pub(crate) fn port_is_ib(dev: &DeviceCore, port: u32) -> bool {
    dev.port_immutable(port)
        .is_ok_and(|p| p.link_layer == LinkLayer::Infiniband)
}

/// rdma_cm as a client of the core (upstream `cma_client`: `cma_add_one()`,
/// `cma_remove_one()`): a device's removal moves its ids to `RDMA_CM_DEVICE_REMOVAL`, drops
/// their binding and reports `RDMA_CM_EVENT_DEVICE_REMOVAL` to each.
pub(crate) struct CmaClient;

impl crate::client::Client for CmaClient {
    fn name(&self) -> &'static CStr {
        c"rdma_cm"
    }

    fn add(&self, _dev: &DeviceCore) -> Result {
        Ok(())
    }

    // upstream cma_process_remove() -> cma_send_device_removal_put().
    fn remove(&self, dev: &DeviceCore) {
        for id in all_ids().iter() {
            id.step_and_report(|s| {
                let hit = s.dev.is_some_and(|d| d.dev_index == dev.index())
                    && s.state != CmState::Destroying;
                hit.then(|| {
                    s.state = CmState::DeviceRemoval;
                    s.dev = None;
                    s.route = None;
                    CmEvent::new(CmEventType::DeviceRemoval, 0)
                })
            });
        }
    }
}

/// The ids alive, held: for walks that take each id's locks, which nest outside the table's.
fn all_ids() -> KVec<Arc<CmId>> {
    let g = global();
    let mut v = KVec::new();
    for i in g.ids.iter() {
        if v.push(i.clone(), GFP_KERNEL).is_err() {
            break;
        }
    }
    v
}

/// One id as nldev's `RES_CM_ID_GET` reports it (upstream `fill_res_cm_id_entry()`).
pub(crate) struct CmIdRes {
    /// `RDMA_NLDEV_ATTR_RES_CM_IDN`.
    pub(crate) idn: u32,
    /// The port it is bound to, 0 for none (a wildcard listener's).
    pub(crate) port: u32,
    /// The QP number, 0 before a connect, an accept or a kernel QP gave one.
    pub(crate) qp_num: u32,
    /// `enum ib_qp_type`.
    pub(crate) qp_type: u8,
    /// The port space (`enum rdma_ucm_port_space`).
    pub(crate) ps: u32,
    /// `enum rdma_cm_state`.
    pub(crate) state: u8,
    /// Source address.
    pub(crate) src: SockAddr,
    /// Destination address (family 0: none).
    pub(crate) dst: SockAddr,
    /// Who made it.
    pub(crate) owner: Owner,
}

/// The ids of device `dev_index`, in creation order (upstream: the `RDMA_RESTRACK_CM_ID`
/// entries of the device): those bound to it, and every listener bound to no device, which
/// upstream's `cma_listen_on_all()` has listening on each device through an internal id of its
/// own (state `LISTEN`, no port, the listener's address and owner).
///
/// # Errors
///
/// `ENOMEM`.
pub(crate) fn res_of_device(dev_index: u32) -> Result<KVec<CmIdRes>> {
    let mut v = KVec::new();
    for id in all_ids().iter() {
        let s = id.st.lock();
        let on_dev = match s.dev {
            Some(d) => d.dev_index == dev_index,
            None => s.state == CmState::Listen,
        };
        if !on_dev || s.state == CmState::Destroying {
            continue;
        }
        let qp_num = s.qp.as_ref().map_or(s.qp_num, |q| q.qp_num());
        // upstream's internal listener of a device copies the source address only.
        let dst = if s.dev.is_some() {
            s.dst
        } else {
            SockAddr::default()
        };
        v.push(
            CmIdRes {
                idn: id.idn,
                port: s.dev.map_or(0, |d| d.port),
                qp_num,
                qp_type: id.qp_type,
                ps: u32::from(id.ps as u16),
                state: s.state as u32 as u8,
                src: s.src,
                dst,
                owner: id.owner,
            },
            GFP_KERNEL,
        )?;
    }
    Ok(v)
}

/// Frees the tables' storage at module exit (every id is destroyed by then).
pub(crate) fn shutdown() {
    let mut g = global();
    g.ids = KVec::new();
    g.owners = KVec::new();
}

/// The registered devices, for walks that call into them without the registry's lock.
fn next_device(after: Option<u32>) -> Option<Arc<dyn IbDevice>> {
    crate::registry::next_registered(after)
}

/// The netdev of a bound device's source GID, held.
fn gid_ndev(b: &DevBinding) -> Option<NetDevRef> {
    let dev = crate::registry::device_arc(b.dev_index)?;
    dev.core().gid_ndev(b.port, b.gid_index).ok().flatten()
}
