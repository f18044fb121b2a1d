// SPDX-License-Identifier: GPL-2.0

//! An rdma_cm id's connection over the IB CM (upstream `cma.c`: `cma_connect_ib()`,
//! `cma_ib_listen()`, `cma_ib_req_handler()`, `cma_ib_handler()`, `cma_accept_ib()`,
//! `cma_rep_recv()`, `rdma_reject()`, `rdma_disconnect()`, `rdma_init_qp_attr()`): the cma
//! header in the REQ's private data for the IP port spaces, the service id of a space and a
//! port, the new id of a connection request, the IB CM's events turned into rdma_cm's.

use super::sockaddr::{SockAddr, AF_IB, AF_INET, AF_INET6};
use super::{CmEvent, CmEventType, CmId, CmState, DevBinding, IdState, PathRec, PortSpace, QPT_UD};
use crate::attr::Gid;
use crate::cm::msg::{self, Req, SidrReq};
use crate::cm::service::{
    self as cm_service, CmAv, CmConn, CmConnEvent, CmConnHandler, CmListener, CmMsg, RepParams,
    ReqParams,
};
use crate::cm::state::CmEventKind;
use crate::net_notify::IpAddr;
use crate::verbs::{AhAttr, GlobalRoute, QpAttr, QpState};
use kernel::prelude::*;
use kernel::sync::Arc;

/// A connection's parameters (upstream `struct rdma_conn_param`).
#[derive(Clone, Copy, Debug)]
pub struct ConnParam {
    /// Private data.
    pub private_data: [u8; 256],
    /// Its length.
    pub private_data_len: u8,
    /// Responder resources.
    pub responder_resources: u8,
    /// Initiator depth.
    pub initiator_depth: u8,
    /// Flow control.
    pub flow_control: u8,
    /// Retry count.
    pub retry_count: u8,
    /// RNR retry count.
    pub rnr_retry_count: u8,
    /// SRQ.
    pub srq: u8,
    /// QP number.
    pub qp_num: u32,
    /// Q_Key (a UD id's accept).
    pub qkey: u32,
}

/// A UD id's event parameters (upstream `struct rdma_ud_param`).
#[derive(Clone, Copy, Debug)]
pub struct UdParam {
    /// Private data.
    pub private_data: [u8; 256],
    /// Its length.
    pub private_data_len: u8,
    /// The route to the peer (`RDMA_CM_EVENT_ESTABLISHED`).
    pub ah_attr: Option<AhAttr>,
    /// The peer's QPN.
    pub qp_num: u32,
    /// The peer's Q_Key.
    pub qkey: u32,
}

impl Default for UdParam {
    fn default() -> Self {
        UdParam {
            private_data: [0; 256],
            private_data_len: 0,
            ah_attr: None,
            qp_num: 0,
            qkey: 0,
        }
    }
}

/// upstream `RDMA_UDP_QKEY`: the Q_Key of the UDP port space.
pub(super) const UDP_QKEY: u32 = 0x0123_4567;

/// upstream `CMA_CM_RESPONSE_TIMEOUT` (the module parameter `cma_cm_response_timeout`).
fn cm_response_timeout() -> u8 {
    crate::module_parameters::cma_cm_response_timeout
        .value()
        .min(31)
}

/// upstream `CMA_MAX_CM_RETRIES` (the module parameter `cma_max_cm_retries`).
fn max_cm_retries() -> u8 {
    crate::module_parameters::cma_max_cm_retries.value().min(15)
}

impl Default for ConnParam {
    fn default() -> Self {
        ConnParam {
            private_data: [0; 256],
            private_data_len: 0,
            responder_resources: 0,
            initiator_depth: 0,
            flow_control: 0,
            retry_count: 0,
            rnr_retry_count: 0,
            srq: 0,
            qp_num: 0,
            qkey: 0,
        }
    }
}

/// `sizeof(struct cma_hdr)`: version, IP version, source port, source and destination.
const CMA_HDR: usize = 36;
/// `CMA_VERSION`.
const CMA_VERSION: u8 = 0;

/// upstream `rdma_get_service_id()` for an IP address: the space and the port.
pub(super) fn service_id(ps: PortSpace, port: u16) -> u64 {
    ((ps as u64) << 16) + u64::from(port)
}

/// upstream `cma_user_data_offset()`: the cma header's room in the private data.
fn user_offset(ps: PortSpace, family: u16) -> usize {
    // upstream cma_user_data_offset(): no header for an AF_IB id.
    match (ps, family) {
        (PortSpace::Ib, _) | (_, AF_IB) => 0,
        _ => CMA_HDR,
    }
}

/// upstream `cma_save_ib_info()`: an AF_IB listener's new id's addresses from the REQ's
/// path (this end's GID, P_Key, flow label and the service ID; the peer's GID).
fn req_ib_addrs(req: &Req) -> (SockAddr, SockAddr) {
    let p = &req.primary;
    let mut local = SockAddr::any(AF_IB);
    local.set_ib_pkey(req.pkey);
    local.set_ib_flowinfo(p.flow_label);
    local.set_ib_gid(&p.remote_gid);
    local.set_ib_sid(req.service_id, !0);
    let mut peer = SockAddr::any(AF_IB);
    peer.set_ib_pkey(req.pkey);
    peer.set_ib_flowinfo(p.flow_label);
    peer.set_ib_gid(&p.local_gid);
    (peer, local)
}

/// upstream `cma_format_hdr()`.
fn format_hdr(src: &SockAddr, dst: &SockAddr) -> [u8; CMA_HDR] {
    let mut h = [0u8; CMA_HDR];
    h[0] = CMA_VERSION;
    let put = |h: &mut [u8; CMA_HDR], off: usize, a: &SockAddr| match a.ip() {
        Some(IpAddr::V4(v)) => h[off + 12..off + 16].copy_from_slice(&v),
        Some(IpAddr::V6(v)) => h[off..off + 16].copy_from_slice(&v),
        None => {}
    };
    h[1] = if src.family() == AF_INET {
        4 << 4
    } else {
        6 << 4
    };
    h[2..4].copy_from_slice(&src.port().to_be_bytes());
    put(&mut h, 4, src);
    put(&mut h, 20, dst);
    h
}

/// The addresses of a cma header: (active side, passive side) without ports but the
/// active side's.
fn parse_hdr(pd: &[u8]) -> Option<(SockAddr, SockAddr)> {
    let h = pd.get(..CMA_HDR)?;
    if h[0] != CMA_VERSION {
        return None;
    }
    let port = u16::from_be_bytes([h[2], h[3]]);
    let get = |off: usize| -> Option<IpAddr> {
        match h[1] >> 4 {
            4 => Some(IpAddr::V4([
                h[off + 12],
                h[off + 13],
                h[off + 14],
                h[off + 15],
            ])),
            6 => {
                let mut a = [0u8; 16];
                a.copy_from_slice(&h[off..off + 16]);
                Some(IpAddr::V6(a))
            }
            _ => None,
        }
    };
    Some((
        SockAddr::from_ip(get(4)?, port),
        SockAddr::from_ip(get(20)?, 0),
    ))
}

fn boxed(p: ConnParam) -> Option<KBox<ConnParam>> {
    KBox::new(p, GFP_KERNEL).ok()
}

/// The events of an id's IB CM connection (upstream `cma_ib_handler()`).
struct IdConn {
    id: Arc<CmId>,
}

impl CmConnHandler for IdConn {
    fn event(&self, conn: &Arc<CmConn>, ev: CmConnEvent) {
        let id = &self.id;
        let e = match ev.kind {
            CmEventKind::RepReceived => {
                let mut e = CmEvent::new(CmEventType::ConnectResponse, 0);
                if let CmMsg::Rep(r) = &ev.msg {
                    // upstream cm_format_rep_event(): the peer's resources seen from here.
                    let mut p = ConnParam {
                        private_data_len: msg::REP_PRIVATE_DATA as u8,
                        responder_resources: r.initiator_depth,
                        initiator_depth: r.responder_resources,
                        flow_control: r.flow_control.into(),
                        rnr_retry_count: r.rnr_retry_count,
                        srq: r.srq.into(),
                        qp_num: r.local_qpn,
                        ..Default::default()
                    };
                    p.private_data[..msg::REP_PRIVATE_DATA].copy_from_slice(&r.private_data);
                    e.conn = boxed(p);
                }
                // upstream cma_ib_handler(): an id with a QP answers the REP itself
                // (cma_rep_recv()) and reports the connection established.
                if id.qp().is_some() {
                    match id.rep_recv(conn) {
                        Ok(()) => e.event = CmEventType::Established,
                        Err(err) => {
                            e.event = CmEventType::ConnectError;
                            e.status = err.to_errno();
                        }
                    }
                }
                e
            }
            CmEventKind::RtuReceived | CmEventKind::UserEstablished => {
                CmEvent::new(CmEventType::Established, 0)
            }
            CmEventKind::DreqReceived | CmEventKind::DrepReceived | CmEventKind::DreqError => {
                let st = if ev.kind == CmEventKind::DreqError {
                    ETIMEDOUT.to_errno()
                } else {
                    0
                };
                CmEvent::new(CmEventType::Disconnected, st)
            }
            CmEventKind::TimewaitExit => CmEvent::new(CmEventType::TimewaitExit, 0),
            CmEventKind::RejReceived => {
                let CmMsg::Rej(r) = &ev.msg else { return };
                let mut e = CmEvent::new(CmEventType::Rejected, i32::from(r.reason));
                let mut p = ConnParam {
                    private_data_len: msg::REJ_PRIVATE_DATA as u8,
                    ..Default::default()
                };
                p.private_data[..msg::REJ_PRIVATE_DATA].copy_from_slice(&r.private_data);
                e.conn = boxed(p);
                e
            }
            CmEventKind::ReqError | CmEventKind::RepError | CmEventKind::SidrReqError => {
                CmEvent::new(CmEventType::Unreachable, ETIMEDOUT.to_errno())
            }
            // upstream cma_sidr_rep_handler().
            CmEventKind::SidrRepReceived => {
                let CmMsg::SidrRep(r) = &ev.msg else { return };
                let mut ud = UdParam {
                    private_data_len: msg::SIDR_REP_PRIVATE_DATA as u8,
                    ..Default::default()
                };
                ud.private_data[..msg::SIDR_REP_PRIVATE_DATA].copy_from_slice(&r.private_data);
                let mut e = if r.status != cm_service::SIDR_SUCCESS {
                    CmEvent::new(CmEventType::Unreachable, i32::from(r.status))
                } else {
                    ud.ah_attr = id.path_ah();
                    ud.qp_num = r.qpn;
                    ud.qkey = r.qkey;
                    CmEvent::new(CmEventType::Established, 0)
                };
                e.ud = KBox::new(ud, GFP_KERNEL).ok();
                e
            }
            _ => return,
        };
        // The connection a REJ ended, dropped after the report.
        let mut ended = None;
        id.step_and_report(|s| match ev.kind {
            CmEventKind::DreqReceived | CmEventKind::DrepReceived | CmEventKind::DreqError => {
                CmId::transition(s, CmState::Connect, CmState::Disconnect, e)
            }
            // upstream cma_sidr_rep_handler(): only while connecting.
            CmEventKind::SidrRepReceived => (s.state == CmState::Connect).then_some(e),
            // upstream cma_ib_handler(): a REJ leaves the id in RDMA_CM_CONNECT (connecting
            // again is EINVAL: rdma_connect() wants ROUTE_RESOLVED).
            _ if e.event == CmEventType::Rejected => {
                ended = s.conn.take();
                Some(e)
            }
            _ => Some(e),
        });
        drop(ended);
    }
}

/// A listening id as the IB CM's listener (upstream `cma_ib_req_handler()`).
struct IdListen {
    id: Arc<CmId>,
}

/// The IB CM listener of a listening id.
pub(super) fn listener(id: &Arc<CmId>) -> Result<Arc<dyn CmListener>> {
    Ok(Arc::new(IdListen { id: id.clone() }, GFP_KERNEL)?)
}

impl IdListen {
    /// A request's new id (upstream `cma_ib_new_conn_id()`, `cma_ib_new_udp_id()`): the
    /// listener's space and QP type, in `RDMA_CM_CONNECT` with the request's addresses (the
    /// local one on the listener's port) and connection, bound to the device of the local
    /// address; `fill` sets the rest. Destroyed again when a step fails.
    ///
    /// On InfiniBand the interface that has the local IP address must be an IPoIB interface
    /// of the port the request came to, with the request's P_Key and, for a REQ (`dst`: its
    /// path's GID on this side and its P_Key), that GID (upstream `cma_get_net_dev()`,
    /// `ib_get_net_dev_by_params()`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a request to another address than a bound listener's
    /// (`cma_check_req_addrs()`) or a listener being destroyed; the device's (`EADDRNOTAVAIL`,
    /// `ENODEV`); `EHOSTUNREACH` for an IP address of no IPoIB interface of the port the
    /// request came to; `ENOMEM`.
    fn new_id(
        &self,
        conn: &Arc<CmConn>,
        mut local: SockAddr,
        peer: SockAddr,
        lsrc: SockAddr,
        dst: (Option<[u8; 16]>, u16),
        fill: impl FnOnce(&mut IdState, &DevBinding),
    ) -> Result<(Arc<CmId>, Arc<dyn CmConnHandler>)> {
        if !lsrc.is_any() && !lsrc.same_addr(&local) {
            return Err(EINVAL);
        }
        local.set_port(lsrc.port());
        let l = &self.id;
        let handler = l.handler.lock().clone().ok_or(EINVAL)?;
        let nid = CmId::create_child(handler, l)?;
        let r = (|| -> Result<Arc<dyn CmConnHandler>> {
            let b = if local.family() == AF_IB {
                super::ib::acquire_dev_by_gid(&local)?
            } else {
                let ip = local.ip().ok_or(EINVAL)?;
                let ndev = crate::net_addr::ip_dev_find(&ip).ok_or(EADDRNOTAVAIL)?;
                let b = super::resolve::acquire_dev_by_ip(l.ps, ip, &ndev)?;
                if !b.roce && !on_req_port(&b, conn.dev_port(), dst) {
                    return Err(EHOSTUNREACH);
                }
                b
            };
            {
                let mut s = nid.st.lock();
                s.state = CmState::Connect;
                s.src = local;
                s.dst = peer;
                s.dev = Some(b);
                s.bound_dev_if = b.ifindex;
                s.conn = Some(conn.clone());
                fill(&mut s, &b);
            }
            Ok(Arc::new(IdConn { id: nid.clone() }, GFP_KERNEL)?)
        })();
        match r {
            Ok(h) => Ok((nid, h)),
            Err(e) => {
                nid.destroy();
                Err(e)
            }
        }
    }
}

/// upstream `ipoib_match_gid_pkey_addr()`: whether an InfiniBand binding (of an IPoIB
/// interface's address) is on the request's device and port, with the request's P_Key (the
/// full-member bit aside) and, when given, its GID.
fn on_req_port(
    b: &DevBinding,
    (dev_index, port): (u32, u32),
    dst: (Option<[u8; 16]>, u16),
) -> bool {
    let (gid, pkey) = dst;
    b.dev_index == dev_index
        && b.port == port
        && (b.pkey | 0x8000) == (pkey | 0x8000)
        && gid.is_none_or(|g| g == b.sgid)
}

impl CmListener for IdListen {
    fn req(&self, conn: &Arc<CmConn>, req: &Req) -> Result<Arc<dyn CmConnHandler>> {
        let l = &self.id;
        let (off, peer, local, lsrc) = {
            let s = l.st.lock();
            if s.state != CmState::Listen {
                return Err(EINVAL);
            }
            let off = user_offset(l.ps, s.src.family());
            let (peer, local) = if s.src.family() == AF_IB {
                req_ib_addrs(req)
            } else if off != 0 {
                parse_hdr(&req.private_data).ok_or(EINVAL)?
            } else {
                (SockAddr::any(AF_INET6), SockAddr::any(AF_INET6))
            };
            (off, peer, local, s.src)
        };
        let p = req.primary;
        let dst = (Some(p.remote_gid), req.pkey);
        let (nid, h) = self.new_id(conn, local, peer, lsrc, dst, |s, b| {
            s.dgid = p.local_gid;
            s.route = Some(PathRec {
                dgid: p.local_gid,
                sgid: p.remote_gid,
                flow_label: p.flow_label,
                hop_limit: p.hop_limit,
                traffic_class: p.traffic_class,
                reversible: true,
                pkey: req.pkey,
                sl: p.sl,
                mtu: req.mtu,
                rate: p.packet_rate,
                packet_life_time: p.local_ack_timeout.saturating_sub(1),
                dmac: [0; 6],
                dlid: if b.roce { 0 } else { p.local_lid },
                slid: if b.roce { 0 } else { p.remote_lid },
                service_id: if b.roce { 0 } else { req.service_id },
            });
        })?;
        // upstream cm_format_req_event(): the peer's resources seen from here.
        let mut p = ConnParam {
            private_data_len: (msg::REQ_PRIVATE_DATA - off) as u8,
            responder_resources: req.initiator_depth,
            initiator_depth: req.responder_resources,
            flow_control: req.flow_control.into(),
            retry_count: req.retry_count,
            rnr_retry_count: req.rnr_retry_count,
            srq: req.srq.into(),
            qp_num: req.local_qpn,
            ..Default::default()
        };
        p.private_data[..msg::REQ_PRIVATE_DATA - off].copy_from_slice(&req.private_data[off..]);
        let mut e = CmEvent::new(CmEventType::ConnectRequest, 0);
        e.conn = boxed(p);
        e.new_id = Some(nid);
        l.report(e);
        Ok(h)
    }

    // upstream cma_ib_req_handler() for IB_CM_SIDR_REQ_RECEIVED: a new UD id
    // (cma_ib_new_udp_id()) with the addresses of the cma header.
    fn sidr_req(&self, conn: &Arc<CmConn>, req: &SidrReq) -> Result<Arc<dyn CmConnHandler>> {
        let l = &self.id;
        let (off, peer, local, lsrc) = {
            let s = l.st.lock();
            if s.state != CmState::Listen || l.qp_type != QPT_UD {
                return Err(EINVAL);
            }
            let off = user_offset(l.ps, s.src.family());
            let (peer, local) = if s.src.family() == AF_IB {
                // upstream cma_save_ib_info() without a path: the listener's address (its
                // whole service ID), the peer's family alone.
                let mut local = s.src;
                local.set_ib_sid(local.ib_sid().0, !0);
                (SockAddr::any(AF_IB), local)
            } else {
                parse_hdr(&req.private_data).ok_or(EINVAL)?
            };
            (off, peer, local, s.src)
        };
        let (nid, h) = self.new_id(conn, local, peer, lsrc, (None, req.pkey), |_, _| {})?;
        let n = msg::SIDR_REQ_PRIVATE_DATA - off;
        let mut ud = UdParam {
            private_data_len: n as u8,
            ..Default::default()
        };
        ud.private_data[..n].copy_from_slice(&req.private_data[off..]);
        let mut e = CmEvent::new(CmEventType::ConnectRequest, 0);
        e.ud = KBox::new(ud, GFP_KERNEL).ok();
        e.new_id = Some(nid);
        l.report(e);
        Ok(h)
    }
}

impl CmId {
    /// Connects (upstream `rdma_connect()` -> `cma_connect_ib()`): a REQ for the service id
    /// of the destination's port, with the cma header before the private data.
    ///
    /// # Errors
    ///
    /// `EINVAL` unless the route is resolved, for private data that does not fit the REQ;
    /// the IB CM's errors (a UD id sends a SIDR REQ, upstream `cma_resolve_ib_udp()`).
    pub fn connect(self: &Arc<Self>, p: &ConnParam) -> Result {
        if !self.comp_exch(CmState::RouteResolved, CmState::Connect) {
            return Err(EINVAL);
        }
        {
            // upstream rdma_connect(): the consumer's QP number, for an id without a QP.
            let mut s = self.st.lock();
            if s.qp.is_none() {
                s.qp_num = p.qp_num;
            }
        }
        let r = self.connect_ib(p);
        if r.is_err() {
            self.comp_exch(CmState::Connect, CmState::RouteResolved);
        }
        r
    }

    fn connect_ib(self: &Arc<Self>, p: &ConnParam) -> Result {
        let (b, route, src, dst, seq) = {
            let s = self.st.lock();
            (
                s.dev.ok_or(EINVAL)?,
                s.route.ok_or(EINVAL)?,
                s.src,
                s.dst,
                s.seq_num,
            )
        };
        let off = user_offset(self.ps, src.family());
        let len = off + usize::from(p.private_data_len);
        if len > msg::REQ_PRIVATE_DATA {
            return Err(EINVAL);
        }
        let mut pd = [0u8; msg::REQ_PRIVATE_DATA];
        if off != 0 {
            pd[..off].copy_from_slice(&format_hdr(&src, &dst));
        }
        pd[off..len].copy_from_slice(&p.private_data[..usize::from(p.private_data_len)]);
        let av = CmAv {
            ib: !b.roce,
            dlid: route.dlid,
            slid: route.slid,
            dev_index: b.dev_index,
            port: b.port,
            sgid_index: b.gid_index as u8,
            sgid: b.sgid,
            dgid: route.dgid,
            hop_limit: route.hop_limit,
            traffic_class: route.traffic_class,
            flow_label: route.flow_label,
            sl: route.sl,
            mtu: route.mtu,
            packet_life_time: route.packet_life_time,
        };
        let h = Arc::new(IdConn { id: self.clone() }, GFP_KERNEL)?;
        if self.qp_type == QPT_UD {
            // upstream cma_resolve_ib_udp(): a SIDR REQ waiting 2^(timeout - 8) ms a try.
            if len > msg::SIDR_REQ_PRIVATE_DATA {
                return Err(EINVAL);
            }
            let mut spd = [0u8; msg::SIDR_REQ_PRIVATE_DATA];
            spd[..len].copy_from_slice(&pd[..len]);
            let conn = CmConn::sidr_req(
                av,
                super::ib::service_id(self.ps, &dst),
                &spd[..len],
                1 << cm_response_timeout().saturating_sub(8),
                max_cm_retries(),
                h,
            )?;
            self.st.lock().conn = Some(conn);
            return Ok(());
        }
        // upstream rdma_connect(): the id's QP, else the consumer's number.
        let qp = self.qp();
        let req = ReqParams {
            service_id: super::ib::service_id(self.ps, &dst),
            qp_num: qp.as_ref().map_or(p.qp_num, |q| q.qp_num()),
            starting_psn: seq,
            responder_resources: p.responder_resources,
            initiator_depth: p.initiator_depth,
            retry_count: p.retry_count.min(7),
            rnr_retry_count: p.rnr_retry_count.min(7),
            flow_control: p.flow_control != 0,
            srq: qp.as_ref().map_or(p.srq != 0, |q| q.has_srq()),
            local_ca_guid: b.node_guid,
            cm_response_timeout: cm_response_timeout(),
            max_cm_retries: max_cm_retries(),
            private_data: &pd[..len],
        };
        let conn = CmConn::connect(av, &req, h)?;
        self.st.lock().conn = Some(conn);
        Ok(())
    }

    fn conn(&self) -> Result<Arc<CmConn>> {
        self.st.lock().conn.clone().ok_or(EINVAL)
    }

    /// Accepts (upstream `rdma_accept()`): on the passive side a REP with `p` (the id's QP
    /// to RTR and RTS first); on the active side (`None`, after
    /// `RDMA_CM_EVENT_CONNECT_RESPONSE`) the RTU (`cma_rep_recv()`).
    ///
    /// # Errors
    ///
    /// `EINVAL` unless connecting, for private data over the REP's; the IB CM's errors.
    pub fn accept(&self, p: Option<&ConnParam>) -> Result {
        let (state, b, seq) = {
            let s = self.st.lock();
            (s.state, s.dev, s.seq_num)
        };
        if state != CmState::Connect {
            return Err(EINVAL);
        }
        let conn = self.conn()?;
        if let Some(p) = p {
            // upstream rdma_accept(): the consumer's QP number, for an id without a QP.
            let mut s = self.st.lock();
            if s.qp.is_none() {
                s.qp_num = p.qp_num;
            }
        }
        if self.qp_type == QPT_UD {
            // upstream rdma_accept() -> cma_send_sidr_rep(IB_SIDR_SUCCESS).
            let p = p.ok_or(EINVAL)?;
            let qkey = if p.qkey != 0 { p.qkey } else { UDP_QKEY };
            return conn.sidr_rep(
                cm_service::SIDR_SUCCESS,
                p.qp_num,
                qkey,
                &p.private_data[..usize::from(p.private_data_len)],
            );
        }
        let Some(p) = p else {
            // upstream cma_rep_recv(); ucma's ids (no QP) just send the RTU.
            if self.qp().is_none() {
                return conn.rtu(&[]);
            }
            return self.rep_recv(&conn);
        };
        // upstream cma_accept_ib(): the id's QP to RTR and RTS before the REP.
        let qp = self.qp();
        let r = self
            .qp_to_rts(Some((p.responder_resources, p.initiator_depth)))
            .and_then(|()| {
                conn.rep(&RepParams {
                    qp_num: qp.as_ref().map_or(p.qp_num, |q| q.qp_num()),
                    starting_psn: seq,
                    responder_resources: p.responder_resources,
                    initiator_depth: p.initiator_depth,
                    rnr_retry_count: p.rnr_retry_count.min(7),
                    flow_control: p.flow_control != 0,
                    srq: qp.as_ref().map_or(p.srq != 0, |q| q.has_srq()),
                    local_ca_guid: b.map_or(0, |b| b.node_guid),
                    private_data: &p.private_data[..usize::from(p.private_data_len)],
                })
            });
        if r.is_err() && qp.is_some() {
            // upstream rdma_accept(): a failed accept rejects (here for an id with a QP).
            let _ = self.qp_to_err();
            let _ = conn.rej(cm_service::REJ_CONSUMER_DEFINED, &[]);
        }
        r
    }

    /// upstream `cma_rep_recv()`: the active side's QP to RTR and RTS, then the RTU; a
    /// failure moves the QP to ERR and rejects the REP.
    fn rep_recv(&self, conn: &CmConn) -> Result {
        let r = self.qp_to_rts(None).and_then(|()| conn.rtu(&[]));
        if r.is_err() {
            let _ = self.qp_to_err();
            let _ = conn.rej(cm_service::REJ_CONSUMER_DEFINED, &[]);
        }
        r
    }

    /// Rejects a connection request (upstream `rdma_reject()`).
    ///
    /// # Errors
    ///
    /// `EINVAL` without a request or for private data over the REJ's; the IB CM's errors.
    pub fn reject(&self, pd: &[u8], reason: u16) -> Result {
        if self.qp_type == QPT_UD {
            // upstream: cma_send_sidr_rep(IB_SIDR_REJECT).
            return self.conn()?.sidr_rep(cm_service::SIDR_REJECT, 0, 0, pd);
        }
        self.conn()?.rej(reason, pd)
    }

    /// The address vector of the id's route (upstream `ib_init_ah_attr_from_path()`).
    fn path_ah(&self) -> Option<AhAttr> {
        let s = self.st.lock();
        let (b, r) = (s.dev?, s.route?);
        // upstream ib_init_ah_attr_from_path(): an InfiniBand path's LID, a GRH for RoCE or
        // a hop limit above 0.
        Some(AhAttr {
            dlid: if b.roce { 0 } else { r.dlid },
            sl: r.sl,
            port_num: b.port,
            grh: (b.roce || r.hop_limit > 0).then_some(GlobalRoute {
                dgid: Gid(r.dgid),
                flow_label: r.flow_label,
                sgid_index: b.gid_index as u8,
                hop_limit: r.hop_limit,
                traffic_class: r.traffic_class,
            }),
            dmac: r.dmac,
        })
    }

    /// Disconnects (upstream `rdma_disconnect()`: the id's QP to ERR, a DREQ, or the DREP of
    /// a DREQ received).
    ///
    /// # Errors
    ///
    /// `EINVAL` without a connection; the QP's modify error.
    pub fn disconnect(&self) -> Result {
        let c = self.conn()?;
        // upstream: the id's QP to ERR first (cma_modify_qp_err()).
        self.qp_to_err()?;
        if c.dreq(&[]).is_err() {
            let _ = c.drep(&[]);
        }
        Ok(())
    }

    /// upstream `rdma_notify()`: an id without an IB CM id (neither connecting nor listening)
    /// is `EINVAL`; with one, `ib_cm_notify()` takes `IB_EVENT_COMM_EST` and
    /// `IB_EVENT_PATH_MIG` only (`EINVAL` otherwise). Those two (`cm_establish()`,
    /// `cm_migrate()`) are not implemented: `EOPNOTSUPP`.
    ///
    /// # Errors
    ///
    /// As above.
    pub fn notify(&self, event: u32) -> Result {
        const IB_EVENT_COMM_EST: u32 = 4;
        const IB_EVENT_PATH_MIG: u32 = 6;
        {
            let s = self.st.lock();
            if s.conn.is_none() && s.listen.is_none() {
                return Err(EINVAL);
            }
        }
        match event {
            IB_EVENT_COMM_EST | IB_EVENT_PATH_MIG => Err(EOPNOTSUPP),
            _ => Err(EINVAL),
        }
    }

    /// The QP attributes for `state` (upstream `rdma_init_qp_attr()`) and their mask: the
    /// connection's (`ib_cm_init_qp_attr()`), or before a connection the port and access of
    /// `cma_ib_init_qp_attr()`.
    ///
    /// # Errors
    ///
    /// `EINVAL` without a device, or for a state the connection is not ready for.
    pub fn init_qp_attr(&self, state: QpState) -> Result<(QpAttr, u32)> {
        use crate::cm::service as cm;
        let (conn, b, seq) = {
            let s = self.st.lock();
            (s.conn.clone(), s.dev.ok_or(EINVAL)?, s.seq_num)
        };
        let (mut a, mask) = match conn.filter(|_| self.qp_type != QPT_UD) {
            Some(c) => c.init_qp_attr(state)?,
            None => {
                let mut a = QpAttr {
                    qp_state: state,
                    port_num: b.port,
                    ..Default::default()
                };
                let mut mask = cm::QP_STATE | cm::QP_PKEY_INDEX | cm::QP_PORT;
                if self.qp_type == QPT_UD {
                    // upstream cma_set_default_qkey(): RDMA_UDP_QKEY for the UDP space.
                    a.qkey = UDP_QKEY;
                    mask |= QP_QKEY;
                } else {
                    mask |= cm::QP_ACCESS_FLAGS;
                }
                (a, mask)
            }
        };
        if state == QpState::Rtr {
            a.rq_psn = seq;
        }
        if let Some(t) = self
            .st
            .lock()
            .ack_timeout
            .filter(|_| mask & cm::QP_TIMEOUT != 0)
        {
            a.timeout = t;
        }
        Ok((a, mask))
    }
}

/// `IB_QP_QKEY`.
const QP_QKEY: u32 = 1 << 6;
