// SPDX-License-Identifier: GPL-2.0

//! umad (upstream `drivers/infiniband/core/user_mad.c`, ABI version 5,
//! `include/uapi/rdma/ib_user_mad.h`): per port with a MAD layer `/dev/infiniband/umadN`, and
//! for a port with QP0 `/dev/infiniband/issmN`, in the `infiniband_mad` class (`abi_version`;
//! per node `ibdev`, `port`). Char device numbers as upstream: major 231, `umadN` at minor N
//! and `issmN` at minor 64 + N for the first 64 ports, a dynamic range for the rest.
//!
//! A `umadN` file registers up to 32 agents of the MAD layer ([`crate::mad_agent`]) with
//! `IB_USER_MAD_REGISTER_AGENT`/`REGISTER_AGENT2`, writes MADs behind a `struct
//! ib_user_mad_hdr` (the old 56-byte header unless `IB_USER_MAD_ENABLE_PKEY` or
//! `REGISTER_AGENT2` chose the 64-byte one) and reads what arrived for its agents: received
//! MADs, and the header of a send that got no response with `status` `ETIMEDOUT`. Opening
//! `issmN` sets the port's `IsSM` capability bit (`ib_modify_port()`), closing it clears it;
//! one opener at a time. At the device's removal (upstream `ib_umad_kill_port()`) the nodes
//! go, every agent is unregistered, and open files get `EIO` from read and write and `EPIPE`
//! from a registration.

use crate::attr::{LinkLayer, PortModify, CORE_CAP_IB_MAD, CORE_CAP_IB_SMI, PORT_SM};
use crate::chrdev::{CharDevice, ChrdevRegion};
use crate::class::{
    AttrGroup, Class, ClassAttr, ClassDevice, DevAttr, DeviceSpec, Devnode, SysfsBuf,
};
use crate::ib_device::{DevName, DeviceCore, IbDevice};
use crate::mad::{self, Mad, MadHdr, MAD_SIZE, MGMT_MAD_HDR, MGMT_RMPP_HDR};
use crate::mad_agent::{
    self, MadAgent, MadAgentHandler, MadRecv, MadRegReq, MadSend, MadSendDone, SpecialQp,
};
use crate::mad_qp::MadGrh;
use crate::verbs::WcStatus;
use core::fmt::Write;
use kernel::fs::File;
use kernel::prelude::*;
use kernel::sync::poll::{PollCondVar, PollTable};
use kernel::sync::{Arc, ArcBorrow, CondVar, Mutex};
use kernel::uaccess::{UserPtr, UserSlice, UserSliceReader, UserSliceWriter};

/// `IB_USER_MAD_ABI_VERSION`.
pub const IB_USER_MAD_ABI_VERSION: u32 = 5;
/// `IB_UMAD_MAJOR`.
pub const IB_UMAD_MAJOR: u32 = 231;
/// `IB_UMAD_NUM_FIXED_MINOR`: `umadN` at minors 0..63, `issmN` at 64..127.
pub const IB_UMAD_NUM_FIXED_MINOR: u32 = 64;
/// `IB_UMAD_MAX_PORTS` (`RDMA_MAX_PORTS`).
pub const IB_UMAD_MAX_PORTS: u32 = 1024;
/// `IB_UMAD_NUM_DYNAMIC_MINOR`.
pub const IB_UMAD_NUM_DYNAMIC_MINOR: u32 = IB_UMAD_MAX_PORTS - IB_UMAD_NUM_FIXED_MINOR;
/// `IB_UMAD_MAX_AGENTS`.
pub const IB_UMAD_MAX_AGENTS: usize = 32;
/// `MAX_UMAD_RECV_LIST_SIZE`.
const MAX_UMAD_RECV_LIST_SIZE: usize = 200_000;

/// `IB_USER_MAD_REGISTER_AGENT` = `_IOWR(0x1b, 1, struct ib_user_mad_reg_req)` (28 bytes).
pub const IB_USER_MAD_REGISTER_AGENT: u32 = 0xc01c_1b01;
/// `IB_USER_MAD_UNREGISTER_AGENT` = `_IOW(0x1b, 2, __u32)`.
pub const IB_USER_MAD_UNREGISTER_AGENT: u32 = 0x4004_1b02;
/// `IB_USER_MAD_ENABLE_PKEY` = `_IO(0x1b, 3)`.
pub const IB_USER_MAD_ENABLE_PKEY: u32 = 0x0000_1b03;
/// `IB_USER_MAD_REGISTER_AGENT2` = `_IOWR(0x1b, 4, struct ib_user_mad_reg_req2)` (40 bytes).
pub const IB_USER_MAD_REGISTER_AGENT2: u32 = 0xc028_1b04;
/// `IB_USER_MAD_USER_RMPP`, the one flag of `REGISTER_AGENT2` (`IB_USER_MAD_REG_FLAGS_CAP`).
const IB_USER_MAD_REG_FLAGS_CAP: u32 = 1;

/// `sizeof(struct ib_user_mad_hdr)`.
const HDR_SIZE: usize = 64;
/// `sizeof(struct ib_user_mad_hdr_old)`.
const HDR_SIZE_OLD: usize = 56;

const EPOLLIN: u32 = 0x1;
const EPOLLERR: u32 = 0x8;
const EPOLLOUT: u32 = 0x4;
const EPOLLRDNORM: u32 = 0x40;
const EPOLLWRNORM: u32 = 0x100;

fn show_class_abi_version(b: &mut SysfsBuf<'_>) -> Result {
    writeln!(b, "{}", IB_USER_MAD_ABI_VERSION).map_err(|_| EINVAL)
}

static CLASS_ATTRS: [&ClassAttr; 1] = {
    static ABI_VERSION: ClassAttr = ClassAttr::ro(c"abi_version", show_class_abi_version);
    [&ABI_VERSION]
};

/// What umad registers at module load (upstream `ib_umad_init()`); dropped at unload.
pub(crate) struct UmadGlobal {
    // Dropped first: kills every port before the class and regions go.
    _client: crate::client::ClientRegistration,
    _shared: Arc<UmadShared>,
}

#[pin_data]
struct UmadShared {
    class: Class,
    fixed: ChrdevRegion,
    dynamic: ChrdevRegion,
    /// Which port numbers `N` are taken (upstream `umad_ida`).
    #[pin]
    ida: Mutex<KVec<bool>>,
}

impl UmadGlobal {
    /// Registers the char device ranges and the `infiniband_mad` class, then the client.
    ///
    /// # Errors
    ///
    /// `EBUSY` if the upstream `ib_umad` holds the range, `EEXIST` for the class, `ENOMEM`.
    pub(crate) fn register(module: &'static ThisModule) -> Result<Self> {
        let fixed = ChrdevRegion::register(
            IB_UMAD_MAJOR,
            0,
            IB_UMAD_NUM_FIXED_MINOR * 2,
            c"infiniband_mad",
        )?;
        let dynamic = ChrdevRegion::alloc(0, IB_UMAD_NUM_DYNAMIC_MINOR * 2, c"infiniband_mad")?;
        let class = Class::register(
            c"infiniband_mad",
            Some(Devnode {
                dir: c"infiniband",
                mode: None,
            }),
            &CLASS_ATTRS,
        )
        .inspect_err(|e| pr_err!("ib_core_rs: class infiniband_mad: {:?}\n", e))?;
        let shared = Arc::pin_init(
            pin_init!(UmadShared {
                class,
                fixed,
                dynamic,
                ida <- kernel::new_mutex!(KVec::new(), "umad_ida"),
            }),
            GFP_KERNEL,
        )?;
        let s2 = shared.clone();
        let client = Arc::pin_init(
            pin_init!(UmadClient {
                module,
                shared: s2,
                devices <- kernel::new_mutex!(KVec::new(), "umad_devices"),
            }),
            GFP_KERNEL,
        )?;
        let client = crate::client::register_client(client)?;
        Ok(Self {
            _client: client,
            _shared: shared,
        })
    }
}

/// The port's files and whether its device is still there (upstream `port->file_mutex`
/// with `port->ib_dev` and `port->file_list`).
struct PortFiles {
    dev: Option<Arc<dyn IbDevice>>,
    files: KVec<Arc<UmadFile>>,
}

/// One port (upstream `struct ib_umad_port`).
#[pin_data]
struct UmadPort {
    devnum: u32,
    port_num: u32,
    ibdev_index: u32,
    ibdev_name: DevName,
    link_layer: LinkLayer,
    #[pin]
    files: Mutex<PortFiles>,
    /// upstream `sm_sem`: whether `issmN` is open.
    #[pin]
    sm_busy: Mutex<bool>,
    #[pin]
    sm_wait: CondVar,
}

/// The data of a `umadN` or `issmN` class device.
struct Node {
    port: Arc<UmadPort>,
}

/// The data of an `issmN` class device.
struct SmNode {
    port: Arc<UmadPort>,
}

// upstream ibdev_show(), port_show()
fn show_ibdev(port: &UmadPort, b: &mut SysfsBuf<'_>) -> Result {
    let cur = crate::registry::name_of(port.ibdev_index).unwrap_or(port.ibdev_name);
    let name = core::str::from_utf8(cur.as_bytes()).map_err(|_| EINVAL)?;
    writeln!(b, "{}", name).map_err(|_| EINVAL)
}

fn node_ibdev(n: &Node, b: &mut SysfsBuf<'_>) -> Result {
    show_ibdev(&n.port, b)
}

fn node_port(n: &Node, b: &mut SysfsBuf<'_>) -> Result {
    writeln!(b, "{}", n.port.port_num).map_err(|_| EINVAL)
}

fn sm_ibdev(n: &SmNode, b: &mut SysfsBuf<'_>) -> Result {
    show_ibdev(&n.port, b)
}

fn sm_port(n: &SmNode, b: &mut SysfsBuf<'_>) -> Result {
    writeln!(b, "{}", n.port.port_num).map_err(|_| EINVAL)
}

static NODE_ATTRS: [&DevAttr<Node>; 2] = {
    static IBDEV: DevAttr<Node> = DevAttr::ro(c"ibdev", node_ibdev);
    static PORT: DevAttr<Node> = DevAttr::ro(c"port", node_port);
    [&IBDEV, &PORT]
};

static SM_ATTRS: [&DevAttr<SmNode>; 2] = {
    static IBDEV: DevAttr<SmNode> = DevAttr::ro(c"ibdev", sm_ibdev);
    static PORT: DevAttr<SmNode> = DevAttr::ro(c"port", sm_port);
    [&IBDEV, &PORT]
};

/// A queued packet of a file (upstream `struct ib_umad_packet`): the header as the user
/// reads it and the MAD bytes after it.
struct Packet {
    hdr: [u8; HDR_SIZE],
    data: KVec<u8>,
}

/// A send in flight (upstream the file's `send_list`): what `is_duplicate()` compares and
/// what a timed-out send reports.
struct Sent {
    context: u64,
    hdr: [u8; HDR_SIZE],
    mad_hdr: [u8; MGMT_MAD_HDR],
}

struct FileInner {
    agents: KVec<Option<MadAgent>>,
    agents_dead: bool,
    use_pkey_index: bool,
    already_used: bool,
    recv: KVec<Packet>,
    sent: KVec<Sent>,
    next_context: u64,
}

/// An open `umadN` (upstream `struct ib_umad_file`).
#[pin_data]
struct UmadFile {
    port: Arc<UmadPort>,
    #[pin]
    inner: Mutex<FileInner>,
    #[pin]
    recv_wait: PollCondVar,
}

impl FileInner {
    fn hdr_size(&self) -> usize {
        if self.use_pkey_index {
            HDR_SIZE
        } else {
            HDR_SIZE_OLD
        }
    }

    /// The slot of the agent with `hi_tid` (upstream `queue_packet()`'s search).
    fn slot_of(&self, hi_tid: u32) -> Option<usize> {
        if self.agents_dead {
            return None;
        }
        self.agents
            .iter()
            .position(|a| a.as_ref().is_some_and(|a| a.hi_tid() == hi_tid))
    }
}

/// The MAD layer's handler of one file's agents.
struct FileHandler {
    file: Arc<UmadFile>,
}

impl MadAgentHandler for FileHandler {
    // upstream send_handler(): a send that got no response is queued for read() with its
    // header and status ETIMEDOUT; any other completion only ends the send.
    fn send_done(&self, agent: u32, done: MadSendDone) {
        let f = &self.file;
        let mut inner = f.inner.lock();
        let Some(pos) = inner.sent.iter().position(|s| s.context == done.context) else {
            return;
        };
        let Ok(sent) = inner.sent.remove(pos) else {
            return;
        };
        if done.status != WcStatus::RespTimeoutErr {
            return;
        }
        let Some(id) = inner.slot_of(agent) else {
            return;
        };
        let mut hdr = sent.hdr;
        put32(&mut hdr, 0, id as u32);
        put32(&mut hdr, 4, ETIMEDOUT.to_errno().unsigned_abs());
        let mut data = KVec::new();
        if data.extend_from_slice(&sent.mad_hdr, GFP_KERNEL).is_err() {
            return;
        }
        if inner.recv.push(Packet { hdr, data }, GFP_KERNEL).is_ok() {
            f.recv_wait.notify_all();
        }
    }

    // upstream recv_handler()
    fn recv(&self, agent: u32, recv: MadRecv, _send: Option<u64>) {
        let f = &self.file;
        let mut inner = f.inner.lock();
        if inner.recv.len() > MAX_UMAD_RECV_LIST_SIZE {
            return;
        }
        let Some(id) = inner.slot_of(agent) else {
            return;
        };
        let mut hdr = [0u8; HDR_SIZE];
        put32(&mut hdr, 0, id as u32);
        // upstream: the header's length is the whole message's (mad_len).
        put32(&mut hdr, 16, (inner.hdr_size() + recv.len) as u32);
        hdr[20..24].copy_from_slice(&recv.info.src_qp.to_be_bytes());
        hdr[28..30].copy_from_slice(&recv.info.slid.to_be_bytes());
        hdr[30] = recv.info.sl;
        hdr[31] = recv.info.dlid_path_bits;
        hdr[56..58].copy_from_slice(&recv.info.pkey_index.to_ne_bytes());
        // upstream ib_init_ah_attr_from_wc(): the reply's route from the received GRH (the
        // sender's GID as the destination; SGID index 0, upstream looks the GRH's DGID up).
        if let Some(g) = recv.info.grh {
            let vtf = u32::from_be_bytes([g[0], g[1], g[2], g[3]]);
            hdr[32] = 1;
            hdr[34] = g[7];
            hdr[35] = ((vtf >> 20) & 0xff) as u8;
            hdr[36..52].copy_from_slice(&g[8..24]);
            hdr[52..56].copy_from_slice(&(vtf & 0xf_ffff).to_be_bytes());
        }
        // The first segment (or the whole of a shorter message), then the other segments'
        // data (upstream copy_recv_mad() copies them from the segment list).
        let mut data = KVec::new();
        let first = recv.len.min(MAD_SIZE);
        if data
            .extend_from_slice(&recv.mad.0[..first], GFP_KERNEL)
            .is_err()
            || data.extend_from_slice(&recv.rest, GFP_KERNEL).is_err()
        {
            return;
        }
        if inner.recv.push(Packet { hdr, data }, GFP_KERNEL).is_ok() {
            f.recv_wait.notify_all();
        }
    }
}

fn put32(b: &mut [u8], off: usize, v: u32) {
    if let Some(s) = b.get_mut(off..off + 4) {
        s.copy_from_slice(&v.to_ne_bytes());
    }
}

fn get32(b: &[u8], off: usize) -> u32 {
    let mut a = [0u8; 4];
    if let Some(s) = b.get(off..off + 4) {
        a.copy_from_slice(s);
    }
    u32::from_ne_bytes(a)
}

/// upstream `get_pad_size()`.
fn pad_size(hdr_len: usize, data_len: usize) -> usize {
    let seg = MAD_SIZE.saturating_sub(hdr_len);
    if data_len != 0 && seg != 0 {
        let pad = seg - data_len % seg;
        if pad == seg {
            0
        } else {
            pad
        }
    } else {
        seg
    }
}

/// upstream `same_destination()`.
fn same_destination(a: &[u8; HDR_SIZE], b: &[u8; HDR_SIZE]) -> bool {
    match (a[32] != 0, b[32] != 0) {
        (false, false) => a[28..30] == b[28..30],
        (true, true) => a[36..52] == b[36..52],
        _ => false,
    }
}

impl UmadFile {
    /// upstream `is_duplicate()`.
    fn is_duplicate(inner: &FileInner, hdr: &[u8; HDR_SIZE], mad_hdr: &[u8]) -> bool {
        let h = MadHdr(mad_hdr);
        inner.sent.iter().any(|s| {
            let sh = MadHdr(&s.mad_hdr);
            if sh.tid() != h.tid() || sh.mgmt_class() != h.mgmt_class() {
                return false;
            }
            match (h.is_response(), sh.is_response()) {
                (false, false) => true,
                (true, true) => same_destination(hdr, &s.hdr),
                _ => false,
            }
        })
    }

    // upstream ib_umad_write()
    fn write(self: &Arc<Self>, mut data: UserSliceReader) -> Result<usize> {
        let count = data.len();
        let mut inner = self.inner.lock();
        let hs = inner.hdr_size();
        if count < hs + MGMT_RMPP_HDR {
            return Err(EINVAL);
        }
        let mut hdr = [0u8; HDR_SIZE];
        data.read_slice(&mut hdr[..hs])?;
        let id = get32(&hdr, 0) as usize;
        if id >= IB_UMAD_MAX_AGENTS {
            return Err(EINVAL);
        }
        let mut m = Mad::zeroed();
        data.read_slice(&mut m.0[..MGMT_RMPP_HDR])?;
        let Some(Some(agent)) = inner.agents.get(id).filter(|_| !inner.agents_dead) else {
            return Err(EIO);
        };
        // upstream rdma_create_user_ah(): a RoCE port needs a GRH.
        if self.port.link_layer == LinkLayer::Ethernet && hdr[32] == 0 {
            return Err(EINVAL);
        }
        let class = m.mgmt_class();
        let hdr_len = mad::data_offset(class);
        let (copy_offset, rmpp_active) = if mad::is_rmpp_class(class) && agent.kernel_rmpp() {
            (
                MGMT_RMPP_HDR,
                MadHdr(&m.0).rmpp_flags() & mad::MGMT_RMPP_FLAG_ACTIVE != 0,
            )
        } else {
            (MGMT_MAD_HDR, false)
        };
        let data_len = count.checked_sub(hs + hdr_len).ok_or(EINVAL)?;
        // upstream ib_create_send_mad(): one MAD unless the kernel does RMPP for the agent.
        let size = hdr_len + data_len + pad_size(hdr_len, data_len);
        if agent.kernel_rmpp() {
            if !rmpp_active && size > MAD_SIZE {
                return Err(EINVAL);
            }
        } else if rmpp_active || size > MAD_SIZE {
            return Err(EINVAL);
        }
        let mut rmpp_data = None;
        if rmpp_active {
            // upstream: the MAD header and the class's header after the RMPP header from
            // the user (copy_rmpp_mad()), the RMPP header the kernel's
            // (alloc_send_rmpp_list()), then the data, sent in segments.
            m.0[mad::MGMT_MAD_HDR..MGMT_RMPP_HDR].fill(0);
            if hdr_len > MGMT_RMPP_HDR {
                data.read_slice(&mut m.0[MGMT_RMPP_HDR..hdr_len])?;
            }
            let mut d = KVec::from_elem(0u8, data_len, GFP_KERNEL)?;
            data.read_slice(&mut d)?;
            rmpp_data = Some(d);
        } else {
            let end = (hdr_len + data_len).min(MAD_SIZE);
            if end > copy_offset {
                // The reader is at MGMT_RMPP_HDR: skip to copy_offset first.
                let skip = copy_offset.saturating_sub(MGMT_RMPP_HDR);
                if skip > 0 {
                    let mut tmp = [0u8; MGMT_RMPP_HDR];
                    data.read_slice(&mut tmp[..skip.min(MGMT_RMPP_HDR)])?;
                }
                let from = copy_offset.max(MGMT_RMPP_HDR);
                if end > from {
                    data.read_slice(&mut m.0[from..end])?;
                }
            }
        }
        // upstream: the TID's upper half is the agent's, so the response comes back to it.
        let mh = MadHdr(&m.0);
        if !mh.is_response() {
            let tid = (u64::from(agent.hi_tid()) << 32) | (mh.tid() & 0xffff_ffff);
            mad::set_tid(&mut m.0, tid);
        }
        let mut mad_hdr = [0u8; MGMT_MAD_HDR];
        mad_hdr.copy_from_slice(&m.0[..MGMT_MAD_HDR]);
        let user_rmpp_active = !agent.kernel_rmpp()
            && mad::is_rmpp_class(class)
            && MadHdr(&m.0).rmpp_flags() & mad::MGMT_RMPP_FLAG_ACTIVE != 0;
        if !user_rmpp_active && Self::is_duplicate(&inner, &hdr, &mad_hdr) {
            return Err(EINVAL);
        }
        let context = inner.next_context;
        inner.next_context = inner.next_context.wrapping_add(1);
        inner.sent.push(
            Sent {
                context,
                hdr,
                mad_hdr,
            },
            GFP_KERNEL,
        )?;
        let send = MadSend {
            mad: m,
            remote_qpn: u32::from_be_bytes([hdr[20], hdr[21], hdr[22], hdr[23]]),
            dlid: u16::from_be_bytes([hdr[28], hdr[29]]),
            sl: hdr[30],
            pkey_index: if inner.use_pkey_index {
                u16::from_ne_bytes([hdr[56], hdr[57]])
            } else {
                0
            },
            // struct ib_user_mad_hdr: qkey (be32 at 24), path_bits (31), grh_present (32),
            // gid_index, hop_limit, traffic_class, gid[16] (36), flow_label (be32 at 52).
            remote_qkey: u32::from_be_bytes([hdr[24], hdr[25], hdr[26], hdr[27]]),
            src_path_bits: hdr[31],
            grh: (hdr[32] != 0).then(|| {
                let mut dgid = [0u8; 16];
                dgid.copy_from_slice(&hdr[36..52]);
                MadGrh {
                    dgid: crate::attr::Gid(dgid),
                    sgid_index: hdr[33],
                    hop_limit: hdr[34],
                    traffic_class: hdr[35],
                    flow_label: u32::from_be_bytes([hdr[52], hdr[53], hdr[54], hdr[55]]),
                }
            }),
            timeout_ms: get32(&hdr, 8),
            retries: get32(&hdr, 12),
            context,
        };
        let agent = inner.agents.get(id).and_then(|a| a.as_ref()).ok_or(EIO)?;
        if let Err(e) = agent.post_send(send, rmpp_data) {
            inner.sent.retain(|s| s.context != context);
            return Err(e);
        }
        Ok(count)
    }

    // upstream ib_umad_read()
    fn read(&self, file: &File, mut out: UserSliceWriter) -> Result<usize> {
        let count = out.len();
        let mut inner = self.inner.lock();
        if count < inner.hdr_size() {
            return Err(EINVAL);
        }
        if inner.agents_dead {
            return Err(EIO);
        }
        while inner.recv.is_empty() {
            if file.flags() & kernel::fs::file::flags::O_NONBLOCK != 0 {
                return Err(EAGAIN);
            }
            if self.recv_wait.wait_interruptible(&mut inner) {
                return Err(ERESTARTSYS);
            }
            if inner.agents_dead {
                return Err(EIO);
            }
        }
        let hs = inner.hdr_size();
        let Some(p) = inner.recv.first() else {
            return Err(EAGAIN);
        };
        // upstream copy_recv_mad()/copy_send_mad(): the first (or only) segment must fit;
        // a reassembled RMPP message that does not fit whole gives its header and first
        // segment (which carries the message's length) with ENOSPC, and stays queued.
        let size = hs + p.data.len();
        let first = hs + p.data.len().min(MAD_SIZE);
        if count < first {
            return Err(EINVAL);
        }
        if count < size {
            let mut part = [0u8; HDR_SIZE + MAD_SIZE];
            part[..hs].copy_from_slice(&p.hdr[..hs]);
            part[hs..first].copy_from_slice(&p.data[..first - hs]);
            drop(inner);
            out.write_slice(&part[..first])?;
            return Err(ENOSPC);
        }
        let p = inner.recv.remove(0).map_err(|_| EAGAIN)?;
        drop(inner);
        out.write_slice(&p.hdr[..hs])?;
        out.write_slice(&p.data)?;
        Ok(size)
    }

    /// Unregisters every agent (close and removal): the agents are taken under the lock and
    /// dropped after it, since their handlers take it.
    fn kill_agents(&self) {
        let agents = {
            let mut inner = self.inner.lock();
            inner.agents_dead = true;
            inner.recv.clear();
            self.recv_wait.notify_all();
            core::mem::take(&mut inner.agents)
        };
        drop(agents);
    }
}

/// An ioctl's argument as a user slice of `len` bytes.
fn arg_slice(arg: usize, len: usize) -> UserSlice {
    UserSlice::new(UserPtr::from_addr(arg), len)
}

impl UmadFile {
    fn register(self: &Arc<Self>, arg: usize, v2: bool) -> Result<isize> {
        let port = &self.port;
        let files = port.files.lock();
        let mut inner = self.inner.lock();
        let Some(dev) = files.dev.clone() else {
            return Err(EPIPE);
        };
        let (qpn, class, version, oui, mask, rmpp, flags, oui_bad);
        if v2 {
            let mut b = [0u8; 40];
            arg_slice(arg, 40).reader().read_slice(&mut b)?;
            qpn = get32(&b, 4);
            class = b[8];
            version = b[9];
            flags = get32(&b, 12);
            let mut mm = [0u64; 2];
            for (i, w) in mm.iter_mut().enumerate() {
                let mut x = [0u8; 8];
                x.copy_from_slice(&b[16 + 8 * i..24 + 8 * i]);
                *w = u64::from_ne_bytes(x);
            }
            mask = mm;
            let o = get32(&b, 32);
            rmpp = b[36];
            if qpn != 0 && qpn != 1 {
                return Err(EINVAL);
            }
            if flags & !IB_USER_MAD_REG_FLAGS_CAP != 0 {
                // upstream: the supported flags are written back.
                let mut w = arg_slice(arg + 12, 4).writer();
                w.write_slice(&IB_USER_MAD_REG_FLAGS_CAP.to_ne_bytes())?;
                return Err(EINVAL);
            }
            oui_bad = class != 0 && o & 0xff00_0000 != 0;
            oui = [(o >> 16) as u8, (o >> 8) as u8, o as u8];
        } else {
            let mut b = [0u8; 28];
            arg_slice(arg, 28).reader().read_slice(&mut b)?;
            let mut mm = [0u64; 2];
            for (i, w) in mm.iter_mut().enumerate() {
                let mut x = [0u8; 8];
                x.copy_from_slice(&b[4 + 8 * i..12 + 8 * i]);
                *w = u64::from_ne_bytes(x);
            }
            mask = mm;
            qpn = u32::from(b[20]);
            class = b[21];
            version = b[22];
            oui = [b[23], b[24], b[25]];
            rmpp = b[26];
            flags = 0;
            oui_bad = false;
            if qpn != 0 && qpn != 1 {
                return Err(EINVAL);
            }
        }
        if inner.agents.is_empty() && !inner.agents_dead {
            // upstream's fixed array of IB_UMAD_MAX_AGENTS: all the slots at once, so a failed
            // allocation leaves none (and the next registration tries again).
            inner.agents.reserve(IB_UMAD_MAX_AGENTS, GFP_KERNEL)?;
            for _ in 0..IB_UMAD_MAX_AGENTS {
                inner.agents.push(None, GFP_KERNEL)?;
            }
        }
        let id = inner
            .agents
            .iter()
            .position(|a| a.is_none())
            .filter(|_| !inner.agents_dead)
            .ok_or(ENOMEM)?;
        // upstream ib_umad_reg_agent2(): the OUI is 24 bits.
        if oui_bad {
            return Err(EINVAL);
        }
        let req = MadRegReq {
            mgmt_class: class,
            mgmt_class_version: version,
            oui,
            method_mask: mask,
        };
        let qp = if qpn == 1 {
            SpecialQp::Gsi
        } else {
            SpecialQp::Smi
        };
        let handler: Arc<dyn MadAgentHandler> =
            Arc::new(FileHandler { file: self.clone() }, GFP_KERNEL)?;
        let agent = mad_agent::register_agent(
            dev.core(),
            port.port_num,
            qp,
            (class != 0).then_some(&req),
            rmpp,
            handler,
            flags,
        )?;
        let mut w = arg_slice(arg, 4).writer();
        if let Err(e) = w.write_slice(&(id as u32).to_ne_bytes()) {
            drop(inner);
            drop(agent);
            return Err(e);
        }
        if !inner.already_used {
            inner.already_used = true;
            if v2 {
                inner.use_pkey_index = true;
            }
        }
        if let Some(slot) = inner.agents.get_mut(id) {
            *slot = Some(agent);
        }
        drop(inner);
        drop(files);
        Ok(0)
    }

    // upstream ib_umad_unreg_agent()
    fn unregister(&self, arg: usize) -> Result<isize> {
        let mut b = [0u8; 4];
        arg_slice(arg, 4).reader().read_slice(&mut b)?;
        let id = u32::from_ne_bytes(b) as usize;
        if id >= IB_UMAD_MAX_AGENTS {
            return Err(EINVAL);
        }
        let _files = self.port.files.lock();
        let agent = {
            let mut inner = self.inner.lock();
            if inner.agents_dead {
                return Err(EINVAL);
            }
            inner
                .agents
                .get_mut(id)
                .and_then(|a| a.take())
                .ok_or(EINVAL)?
        };
        drop(agent);
        Ok(0)
    }

    // upstream ib_umad_enable_pkey()
    fn enable_pkey(&self) -> Result<isize> {
        let mut inner = self.inner.lock();
        if inner.already_used {
            return Err(EINVAL);
        }
        inner.use_pkey_index = true;
        Ok(0)
    }
}

#[vtable]
impl CharDevice for Node {
    type Ptr = Arc<UmadFile>;

    // upstream ib_umad_open()
    fn open(dev: &Self, _file: &File) -> Result<Self::Ptr> {
        let port = &dev.port;
        let mut files = port.files.lock();
        if files.dev.is_none() {
            return Err(ENXIO);
        }
        let f = Arc::pin_init(
            pin_init!(UmadFile {
                port: port.clone(),
                inner <- kernel::new_mutex!(
                    FileInner {
                        agents: KVec::new(),
                        agents_dead: false,
                        use_pkey_index: false,
                        already_used: false,
                        recv: KVec::new(),
                        sent: KVec::new(),
                        next_context: 1,
                    },
                    "umad_file"
                ),
                recv_wait <- kernel::new_poll_condvar!("umad_recv_wait"),
            }),
            GFP_KERNEL,
        )?;
        files.files.push(f.clone(), GFP_KERNEL)?;
        Ok(f)
    }

    // upstream ib_umad_close()
    fn release(ptr: Self::Ptr, _file: &File) {
        let port = ptr.port.clone();
        let files = port.files.lock();
        ptr.kill_agents();
        drop(files);
        port.files.lock().files.retain(|f| !Arc::ptr_eq(f, &ptr));
        drop(ptr);
    }

    fn ioctl(ptr: ArcBorrow<'_, UmadFile>, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        let f: Arc<UmadFile> = ptr.into();
        match cmd {
            IB_USER_MAD_REGISTER_AGENT => f.register(arg, false),
            IB_USER_MAD_UNREGISTER_AGENT => f.unregister(arg),
            IB_USER_MAD_ENABLE_PKEY => f.enable_pkey(),
            IB_USER_MAD_REGISTER_AGENT2 => f.register(arg, true),
            _ => Err(ENOTTY),
        }
    }

    fn write(ptr: ArcBorrow<'_, UmadFile>, _file: &File, data: UserSliceReader) -> Result<usize> {
        let f: Arc<UmadFile> = ptr.into();
        f.write(data)
    }

    fn read(ptr: ArcBorrow<'_, UmadFile>, file: &File, out: UserSliceWriter) -> Result<usize> {
        ptr.read(file, out)
    }

    // upstream ib_umad_poll()
    fn poll(ptr: ArcBorrow<'_, UmadFile>, file: &File, table: PollTable<'_>) -> u32 {
        table.register_wait(file, &ptr.recv_wait);
        let inner = ptr.inner.lock();
        let mut mask = EPOLLOUT | EPOLLWRNORM;
        if !inner.recv.is_empty() {
            mask |= EPOLLIN | EPOLLRDNORM;
        }
        if inner.agents_dead {
            mask = EPOLLERR;
        }
        mask
    }
}

/// The open `issmN`: clears `IsSM` at the last close.
struct SmOpen {
    port: Arc<UmadPort>,
}

#[vtable]
impl CharDevice for SmNode {
    type Ptr = KBox<SmOpen>;

    // upstream ib_umad_sm_open(): one opener (EAGAIN with O_NONBLOCK, else wait), then
    // ib_modify_port(set IsSM).
    fn open(dev: &Self, file: &File) -> Result<Self::Ptr> {
        let port = &dev.port;
        {
            let mut busy = port.sm_busy.lock();
            while *busy {
                if file.flags() & kernel::fs::file::flags::O_NONBLOCK != 0 {
                    return Err(EAGAIN);
                }
                if port.sm_wait.wait_interruptible(&mut busy) {
                    return Err(ERESTARTSYS);
                }
            }
            *busy = true;
        }
        let release = || {
            *port.sm_busy.lock() = false;
            port.sm_wait.notify_one();
        };
        let dev_ref = port.files.lock().dev.clone();
        let Some(ibdev) = dev_ref else {
            release();
            return Err(ENXIO);
        };
        let set = PortModify {
            set_port_cap_mask: PORT_SM,
            clr_port_cap_mask: 0,
        };
        if let Err(e) = ibdev.modify_port(port.port_num, &set) {
            release();
            return Err(e);
        }
        match KBox::new(SmOpen { port: port.clone() }, GFP_KERNEL) {
            Ok(b) => Ok(b),
            Err(e) => {
                let clr = PortModify {
                    set_port_cap_mask: 0,
                    clr_port_cap_mask: PORT_SM,
                };
                let _ = ibdev.modify_port(port.port_num, &clr);
                release();
                Err(e.into())
            }
        }
    }

    // upstream ib_umad_sm_close()
    fn release(ptr: Self::Ptr, _file: &File) {
        let port = &ptr.port;
        {
            let files = port.files.lock();
            if let Some(d) = &files.dev {
                let clr = PortModify {
                    set_port_cap_mask: 0,
                    clr_port_cap_mask: PORT_SM,
                };
                let _ = d.modify_port(port.port_num, &clr);
            }
        }
        *port.sm_busy.lock() = false;
        port.sm_wait.notify_one();
    }
}

/// What the client keeps per port.
struct Attached {
    dev_index: u32,
    port: Arc<UmadPort>,
    node: Option<ClassDevice<Node>>,
    sm_node: Option<ClassDevice<SmNode>>,
}

#[pin_data]
struct UmadClient {
    module: &'static ThisModule,
    shared: Arc<UmadShared>,
    #[pin]
    devices: Mutex<KVec<Attached>>,
}

impl UmadClient {
    fn alloc_devnum(&self) -> Result<u32> {
        let mut ida = self.shared.ida.lock();
        if let Some(i) = ida.iter().position(|t| !*t) {
            if let Some(s) = ida.get_mut(i) {
                *s = true;
            }
            return u32::try_from(i).map_err(|_| ENOMEM);
        }
        let n = ida.len();
        if n >= IB_UMAD_MAX_PORTS as usize {
            return Err(ENOMEM);
        }
        ida.push(true, GFP_KERNEL)?;
        u32::try_from(n).map_err(|_| ENOMEM)
    }

    fn free_devnum(&self, n: u32) {
        if let Some(s) = self.shared.ida.lock().get_mut(n as usize) {
            *s = false;
        }
    }

    /// The `umadN` and `issmN` numbers of port number `n`.
    fn devts(&self, n: u32) -> Option<(u32, u32)> {
        if n < IB_UMAD_NUM_FIXED_MINOR {
            Some((
                self.shared.fixed.devt(n)?,
                self.shared.fixed.devt(n + IB_UMAD_NUM_FIXED_MINOR)?,
            ))
        } else {
            let d = n - IB_UMAD_NUM_FIXED_MINOR;
            Some((
                self.shared.dynamic.devt(d)?,
                self.shared.dynamic.devt(d + IB_UMAD_NUM_DYNAMIC_MINOR)?,
            ))
        }
    }

    // upstream ib_umad_init_port()
    fn init_port(
        &self,
        dev: &DeviceCore,
        ibdev: &Arc<dyn IbDevice>,
        port_num: u32,
        smi: bool,
    ) -> Result<Attached> {
        let devnum = self.alloc_devnum()?;
        let r = self.init_port_num(dev, ibdev, port_num, smi, devnum);
        if r.is_err() {
            self.free_devnum(devnum);
        }
        r
    }

    fn init_port_num(
        &self,
        dev: &DeviceCore,
        ibdev: &Arc<dyn IbDevice>,
        port_num: u32,
        smi: bool,
        devnum: u32,
    ) -> Result<Attached> {
        let (umad_devt, issm_devt) = self.devts(devnum).ok_or(ENOMEM)?;
        let imm = dev.port_immutable(port_num)?;
        let port = Arc::pin_init(
            pin_init!(UmadPort {
                devnum,
                port_num,
                ibdev_index: dev.index(),
                ibdev_name: dev.name(),
                link_layer: imm.link_layer,
                files <- kernel::new_mutex!(
                    PortFiles {
                        dev: Some(ibdev.clone()),
                        files: KVec::new(),
                    },
                    "umad_port_files"
                ),
                sm_busy <- kernel::new_mutex!(false, "umad_sm_busy"),
                sm_wait <- kernel::new_condvar!("umad_sm_wait"),
            }),
            GFP_KERNEL,
        )?;
        let parent = dev.parent();
        let groups = [AttrGroup {
            name: None,
            attrs: &NODE_ATTRS,
        }];
        let node = ClassDevice::register_chrdev(
            DeviceSpec {
                class: &self.shared.class,
                parent: parent.as_deref(),
                devt: Some(umad_devt),
                groups: &groups,
            },
            self.module,
            fmt!("umad{}", devnum),
            Node { port: port.clone() },
        )?;
        let sm_node = if smi {
            let groups = [AttrGroup {
                name: None,
                attrs: &SM_ATTRS,
            }];
            Some(ClassDevice::register_chrdev(
                DeviceSpec {
                    class: &self.shared.class,
                    parent: parent.as_deref(),
                    devt: Some(issm_devt),
                    groups: &groups,
                },
                self.module,
                fmt!("issm{}", devnum),
                SmNode { port: port.clone() },
            )?)
        } else {
            None
        };
        Ok(Attached {
            dev_index: dev.index(),
            port,
            node: Some(node),
            sm_node,
        })
    }

    // upstream ib_umad_kill_port()
    fn kill_port(&self, mut a: Attached) {
        drop(a.sm_node.take());
        drop(a.node.take());
        let files = {
            let mut pf = a.port.files.lock();
            pf.dev = None;
            core::mem::take(&mut pf.files)
        };
        for f in files.iter() {
            f.kill_agents();
        }
        drop(files);
        self.free_devnum(a.port.devnum);
    }
}

impl crate::client::Client for UmadClient {
    fn name(&self) -> &'static CStr {
        c"umad"
    }

    // upstream ib_umad_add_one()
    fn add(&self, dev: &DeviceCore) -> Result {
        let ibdev = crate::registry::device_arc(dev.index()).ok_or(ENODEV)?;
        let mut made = KVec::new();
        for port in 1..=dev.phys_port_cnt() {
            let Ok(imm) = dev.port_immutable(port) else {
                continue;
            };
            if imm.core_cap_flags & CORE_CAP_IB_MAD == 0 {
                continue;
            }
            let smi = imm.core_cap_flags & CORE_CAP_IB_SMI != 0;
            let r = self
                .init_port(dev, &ibdev, port, smi)
                .and_then(|a| made.push(a, GFP_KERNEL).map_err(Error::from));
            if let Err(e) = r {
                while let Some(a) = made.pop() {
                    self.kill_port(a);
                }
                return Err(e);
            }
        }
        if made.is_empty() {
            return Err(EOPNOTSUPP);
        }
        let mut devs = self.devices.lock();
        if devs.reserve(made.len(), GFP_KERNEL).is_err() {
            drop(devs);
            while let Some(a) = made.pop() {
                self.kill_port(a);
            }
            return Err(ENOMEM);
        }
        for a in made {
            // Room reserved above.
            let _ = devs.push(a, GFP_KERNEL);
        }
        Ok(())
    }

    // upstream ib_umad_remove_one(): each port is killed under the list's lock (killing
    // waits for the agents' handlers, which never take it).
    fn remove(&self, dev: &DeviceCore) {
        let mut devs = self.devices.lock();
        while let Some(pos) = devs.iter().position(|a| a.dev_index == dev.index()) {
            if let Ok(a) = devs.remove(pos) {
                self.kill_port(a);
            }
        }
    }
}
