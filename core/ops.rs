// SPDX-License-Identifier: GPL-2.0

//! Driver operation tables and their assembly.
//!
//! A driver implements [`DeviceOps`] (a `#[vtable]` trait) once per partial
//! table; [`Ops::of`] turns an impl into a table of `Option<fn ...>` at
//! compile time (the `HAS_*` constants say which slots the impl fills), and
//! [`Ops::set`] merges tables with upstream `ib_set_device_ops()` semantics:
//! a slot is taken only while it is still empty (first setter wins).
//! Registration then checks the ops every device needs
//! ([`Ops::check_mandatory`], upstream `setup_device()`).

pub use crate::device::{Op, Ops};

use crate::attr::{DeviceAttr, Gid, GidAttr, GidType, PortAttr, PortImmutable, PortModify};
use crate::device::Device;
use crate::driver::{Driver, DriverId, UverbsApi};
use crate::mad::{Mad, MadRecvInfo};
use crate::mad_qp::{MadQp, MadQpNotify};
use crate::mm::UserVma;
use crate::ud_qp::{UdQp, UdQpConfig, UdQpNotify};
use crate::verbs::{
    AccessFlags, Ah, AhAttr, Cq, CqHandler, CqInitAttr, CqNotify, Dm, DmAllocAttr, DmMrAttr, Mr,
    MrCreated, MrType, Mw, MwCreated, MwType, Pd, Qp, QpAttr, QpAttrMask, QpCreated, QpHandler,
    QpInitAttr, RecvWr, ReregFlags, Reregistered, SendWr, Srq, SrqAttrMask, SrqHandler,
    SrqInitAttr, Ucontext, UcontextPriv, Udata, UserCtx, UserMrReq, Wc, XrcSrqCreated, Xrcd,
};
use kernel::error::VTABLE_DEFAULT_ERROR;
use kernel::prelude::*;
use kernel::str::CString;
use kernel::sync::Arc;
use kernel::ModuleMetadata;

/// One partial table of driver operations (upstream: one
/// `static const struct ib_device_ops`, e.g. `mlx5_ib_dev_ops` or
/// `mlx5_ib_dev_port_ops`). Every op is optional here; which ones a device
/// must have is checked at registration.
#[vtable]
pub trait DeviceOps: 'static {
    /// The driver whose objects these ops work on.
    type Driver: Driver;

    /// The driver id this table claims ([`DriverId::Unknown`]: none).
    const DRIVER_ID: DriverId = DriverId::Unknown;

    /// The driver's uverbs ABI version (0: this table does not set it).
    const UVERBS_ABI_VER: u32 = 0;

    /// The driver's uverbs objects and methods (upstream the driver's
    /// `uapi_definition` chain, e.g. `mlx5_ib_defs`), merged into the
    /// device's uapi tree after the core's; their handlers are
    /// [`DeviceOps::uverbs_method`]. Empty: this table adds none.
    const UVERBS_OBJECTS: &'static [<Self::Driver as UverbsApi>::ObjectSpec] = &[];

    /// Reports the device attributes (upstream `ops.query_device`).
    fn query_device(_dev: &Device<Self::Driver>) -> Result<DeviceAttr> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The driver's part of `ops.query_device` for a user request: upstream passes
    /// `EX_QUERY_DEVICE`'s driver udata to `ops.query_device(ibdev, attr, udata)` (mlx5 answers
    /// `mlx5_ib_query_device_resp` there). The core attributes come from [`Self::query_device`];
    /// this op only reads the request and writes the driver's response. Without it the udata
    /// is ignored.
    fn query_device_udata(_dev: &Device<Self::Driver>, _udata: &mut Udata<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Reports a port's attributes (upstream `ops.query_port`).
    fn query_port(_dev: &Device<Self::Driver>, _port: u32) -> Result<PortAttr> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Reports a port's immutable data (upstream `ops.get_port_immutable`).
    fn get_port_immutable(_dev: &Device<Self::Driver>, _port: u32) -> Result<PortImmutable> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Reads one GID table entry from the device (upstream `ops.query_gid`).
    fn query_gid(_dev: &Device<Self::Driver>, _port: u32, _index: u32) -> Result<Gid> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The type of GID table entry `index` (upstream: the type
    /// `roce_gid_mgmt` gave the entry). Without it: IB on InfiniBand ports,
    /// RoCE v1 on Ethernet ports.
    fn query_gid_type(_dev: &Device<Self::Driver>, _port: u32, _index: u32) -> Result<GidType> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Programs RoCE GID table entry `attr.index` of port `attr.port` (upstream
    /// `ops.add_gid`): the core owns the RoCE GID tables of a driver with this op and
    /// [`Self::del_gid`] and calls it under its table lock for every GID it adds
    /// (`roce_gid_mgmt.c`: default GIDs and one per IP address and RoCE type). An error
    /// leaves the entry empty.
    fn add_gid(_dev: &Device<Self::Driver>, _attr: &GidAttr) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Clears RoCE GID table entry `attr.index` (upstream `ops.del_gid`); the core empties
    /// the entry whatever it answers.
    fn del_gid(_dev: &Device<Self::Driver>, _attr: &GidAttr) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Reads one P_Key table entry from the device (upstream `ops.query_pkey`).
    fn query_pkey(_dev: &Device<Self::Driver>, _port: u32, _index: u32) -> Result<u16> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Lets the device handle a MAD (upstream `ops.process_mad`): `port` is 1-based, `flags`
    /// the `MAD_IGNORE_*` bits, `recv` where an incoming MAD came from (`None` for one the
    /// host sends to its own port). Returns the `MAD_RESULT_*` bits; with
    /// [`MAD_RESULT_REPLY`](crate::mad::MAD_RESULT_REPLY) `out` is the reply to send.
    fn process_mad(
        _dev: &Device<Self::Driver>,
        _port: u32,
        _flags: u32,
        _recv: Option<&MadRecvInfo>,
        _in_mad: &Mad,
        _out: &mut Mad,
    ) -> Result<u32> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Sets and clears bits of a port's capability mask (upstream `ops.modify_port`, what
    /// `ib_modify_port()` calls; umad's `issmN` sets and clears `IsSM` with it). Without it
    /// `ib_modify_port()` is `EOPNOTSUPP` (a RoCE port accepts changes of `IsCM` only).
    fn modify_port(_dev: &Device<Self::Driver>, _port: u32, _modify: &PortModify) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates the special QP `qpn` (0: SMI, 1: GSI) of `port` for the MAD layer, in RTS with
    /// its receive queue filled (upstream `ib_mad_port_open()` -> `create_mad_qp()`,
    /// `ib_mad_port_start()`; see [`crate::mad_qp`] for why the driver owns it). `notify` is
    /// told when completions wait.
    fn open_mad_qp(
        _dev: &Arc<Device<Self::Driver>>,
        _port: u32,
        _qpn: u32,
        _notify: Arc<dyn MadQpNotify>,
    ) -> Result<Arc<dyn MadQp>> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates a kernel UD QP of `port` that carries whole datagrams, in RTS with its receive
    /// queue filled (what an IPoIB interface sends and receives with; see [`crate::ud_qp`]
    /// for why the driver owns it). `notify` is told when completions wait.
    fn open_ud_qp(
        _dev: &Arc<Device<Self::Driver>>,
        _port: u32,
        _cfg: &UdQpConfig,
        _notify: Arc<dyn UdQpNotify>,
    ) -> Result<Arc<dyn UdQp>> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Formats the firmware version as sysfs `fw_ver` shows it
    /// (upstream `ops.get_dev_fw_str`).
    fn get_dev_fw_str(_dev: &Device<Self::Driver>) -> Result<CString> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Called once the device is registered, before clients are added
    /// (upstream `ops.enable_driver`).
    fn enable_driver(_dev: &Device<Self::Driver>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Releases driver resources at dealloc (upstream `ops.dealloc_driver`).
    fn dealloc_driver(_dev: &Device<Self::Driver>) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates the driver part of a user context (upstream
    /// `ops.alloc_ucontext`): `udata` carries the provider library's request
    /// and response (mlx5: `mlx5_ib_alloc_ucontext_req_v2`/`_resp`). A device
    /// without it gets no uverbs char device.
    fn alloc_ucontext(_dev: &Device<Self::Driver>, _udata: &mut Udata<'_>) -> Result<UcontextPriv> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Releases the driver part of a user context (upstream
    /// `ops.dealloc_ucontext`; it cannot fail).
    fn dealloc_ucontext(_ctx: &Ucontext<Self::Driver>) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Answers the driver's part of `UVERBS_METHOD_QUERY_CONTEXT` (upstream
    /// `ops.query_ucontext`): the driver writes its own outputs of the method through `call`
    /// (mlx5: its `alloc_ucontext` response again). Without it the method is `EOPNOTSUPP`.
    fn query_ucontext(
        _ctx: &Ucontext<Self::Driver>,
        _call: &mut <Self::Driver as UverbsApi>::Call<'_>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Maps something of a user context into the caller (upstream
    /// `ops.mmap`, called by `ib_uverbs_mmap()` with the file's context):
    /// the driver decodes `vma.pgoff()` (or finds its entry with
    /// `ctx.mmap_entries().get(vma)`) and fills the VMA with
    /// [`UserVma::map_page`](crate::mm::UserVma::map_page) or
    /// [`UserVma::map_io`](crate::mm::UserVma::map_io). The core tracks the
    /// VMA and zaps it when the device is removed. Without this op `mmap()`
    /// on the uverbs file fails with `ENODEV` (upstream: no `.mmap` in the
    /// file operations).
    fn mmap(_ctx: &Ucontext<Self::Driver>, _vma: &mut UserVma<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates the driver part of a PD (upstream `ops.alloc_pd`); `user` is
    /// `Some` for a PD of a user context (the driver may answer in its
    /// udata, mlx5: `pdn`).
    fn alloc_pd(
        _dev: &Device<Self::Driver>,
        _user: Option<&mut UserCtx<'_, '_, Self::Driver>>,
    ) -> Result<<Self::Driver as Driver>::PdData> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Destroys the driver part of a PD (upstream `ops.dealloc_pd`).
    fn dealloc_pd(_pd: &Pd<Self::Driver>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates the driver part of a CQ (upstream `ops.create_cq`); `user`
    /// is `Some` for a CQ of a user context (its buffers are user memory
    /// described by the udata). `handler` is the consumer's (upstream: the
    /// driver finds `ibcq->comp_handler` set before its `create_cq` runs),
    /// for a driver whose device raises completion and CQ events.
    fn create_cq(
        _dev: &Device<Self::Driver>,
        _attr: &CqInitAttr,
        _handler: Option<&Arc<dyn CqHandler>>,
        _user: Option<&mut UserCtx<'_, '_, Self::Driver>>,
    ) -> Result<<Self::Driver as Driver>::CqData> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Destroys the driver part of a CQ (upstream `ops.destroy_cq`).
    fn destroy_cq(_cq: &Cq<Self::Driver>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Arms the CQ's completion notification (upstream `ops.req_notify_cq`).
    fn req_notify_cq(_cq: &Cq<Self::Driver>, _flags: CqNotify) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Resizes a user CQ to at least `cqe` entries (upstream
    /// `ops.resize_user_cq`; since 7.3 only user CQs resize): the new buffer
    /// is described by `user`'s udata. The driver records the new number of
    /// entries with [`Cq::set_cqe`] under its resize lock (upstream: it sets
    /// `cq->cqe`).
    fn resize_user_cq(
        _cq: &Cq<Self::Driver>,
        _cqe: u32,
        _user: &mut UserCtx<'_, '_, Self::Driver>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Sets the CQ's event moderation: an event after `count` completions
    /// or `period` microseconds (upstream `ops.modify_cq`).
    fn modify_cq(_cq: &Cq<Self::Driver>, _count: u16, _period: u16) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Polls up to `wc.len()` completions; returns how many were written
    /// (upstream `ops.poll_cq`).
    fn poll_cq(_cq: &Cq<Self::Driver>, _wc: &mut [Wc]) -> Result<usize> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates the driver part of an SRQ (upstream `ops.create_srq`): the driver updates
    /// `attr` to what it created (upstream `init_attr->attr.max_wr`/`max_sge`); `handler` is
    /// the consumer's, for a driver whose device raises SRQ events; `user` is `Some` for an
    /// SRQ of a user context.
    fn create_srq(
        _pd: &Pd<Self::Driver>,
        _attr: &mut SrqInitAttr,
        _handler: Option<&Arc<dyn SrqHandler>>,
        _user: Option<&mut UserCtx<'_, '_, Self::Driver>>,
    ) -> Result<<Self::Driver as Driver>::SrqData> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Changes an SRQ's limit or size (upstream `ops.modify_srq`); `udata` is the driver
    /// request of a user's MODIFY_SRQ (`None` for a kernel caller).
    fn modify_srq(
        _srq: &Srq<Self::Driver>,
        _attr: &SrqInitAttr,
        _mask: SrqAttrMask,
        _udata: Option<&mut Udata<'_>>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Reads an SRQ's attributes (upstream `ops.query_srq`).
    fn query_srq(_srq: &Srq<Self::Driver>) -> Result<SrqInitAttr> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Destroys the driver part of an SRQ (upstream `ops.destroy_srq`).
    fn destroy_srq(_srq: &Srq<Self::Driver>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Allocates the driver part of an XRC domain (upstream `ops.alloc_xrcd`): its number.
    fn alloc_xrcd(
        _dev: &Device<Self::Driver>,
        _user: Option<&mut UserCtx<'_, '_, Self::Driver>>,
    ) -> Result<u32> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Deallocates XRC domain `xrcdn` (upstream `ops.dealloc_xrcd`).
    fn dealloc_xrcd(_dev: &Device<Self::Driver>, _xrcdn: u32) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates the driver part of an XRC SRQ of a user context in `xrcd`, completing on
    /// `cq` (upstream `ops.create_srq` with `IB_SRQT_XRC`); as [`DeviceOps::create_srq`].
    fn create_xrc_srq(
        _pd: &Pd<Self::Driver>,
        _xrcd: &Xrcd<Self::Driver>,
        _cq: &Cq<Self::Driver>,
        _attr: &mut SrqInitAttr,
        _handler: Option<&Arc<dyn SrqHandler>>,
        _user: &mut UserCtx<'_, '_, Self::Driver>,
    ) -> Result<XrcSrqCreated<<Self::Driver as Driver>::SrqData>> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates the driver part of an XRC target QP in `xrcd` (upstream `ops.create_qp` with
    /// `IB_QPT_XRC_TGT`, no udata); `handler` gets the QP's events.
    fn create_xrc_tgt_qp(
        _xrcd: &Xrcd<Self::Driver>,
        _handler: &Arc<dyn QpHandler>,
    ) -> Result<QpCreated<<Self::Driver as Driver>::QpData>> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates the driver part of a QP (upstream `ops.create_qp`); `user`
    /// is `Some` for a QP of a user context.
    fn create_qp(
        _pd: &Pd<Self::Driver>,
        _attr: &QpInitAttr<'_, Self::Driver>,
        _user: Option<&mut UserCtx<'_, '_, Self::Driver>>,
    ) -> Result<QpCreated<<Self::Driver as Driver>::QpData>> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Changes QP attributes and state (upstream `ops.modify_qp`); `udata` is the driver
    /// request and response of a user's MODIFY_QP (`None` for a kernel caller).
    fn modify_qp(
        _qp: &Qp<Self::Driver>,
        _attr: &QpAttr,
        _mask: QpAttrMask,
        _udata: Option<&mut Udata<'_>>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Reports QP attributes (upstream `ops.query_qp`).
    fn query_qp(_qp: &Qp<Self::Driver>) -> Result<QpAttr> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Destroys the driver part of a QP (upstream `ops.destroy_qp`).
    fn destroy_qp(_qp: &Qp<Self::Driver>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Posts send work requests (upstream `ops.post_send`).
    fn post_send(_qp: &Qp<Self::Driver>, _wr: &[SendWr<'_>]) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Posts receive work requests (upstream `ops.post_recv`).
    fn post_recv(_qp: &Qp<Self::Driver>, _wr: &[RecvWr<'_>]) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Attaches a UD QP to the multicast group `gid` (LID `lid` on InfiniBand; upstream
    /// `ops.attach_mcast`).
    fn attach_mcast(_qp: &Qp<Self::Driver>, _gid: &Gid, _lid: u16) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Detaches a QP from the multicast group `gid` (upstream `ops.detach_mcast`).
    fn detach_mcast(_qp: &Qp<Self::Driver>, _gid: &Gid, _lid: u16) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates a DMA MR covering all memory (upstream `ops.get_dma_mr`).
    fn get_dma_mr(
        _pd: &Pd<Self::Driver>,
        _access: AccessFlags,
    ) -> Result<MrCreated<<Self::Driver as Driver>::MrData>> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Registers user memory (upstream `ops.reg_user_mr`): the driver pins
    /// it (`Umem`) and creates the translation.
    fn reg_user_mr(
        _pd: &Pd<Self::Driver>,
        _req: &UserMrReq,
        _user: &mut UserCtx<'_, '_, Self::Driver>,
    ) -> Result<MrCreated<<Self::Driver as Driver>::MrData>> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Re-registers a user MR (upstream `ops.rereg_user_mr`): `flags` says which of
    /// `req`'s translation (`start`, `length`, `iova`), `access` and `new_pd` apply. The driver
    /// answers [`Reregistered::InPlace`] when it changed the hardware MR in place (upstream
    /// returns `NULL`; only without a PD or translation change), or a new hardware object,
    /// which the core puts in the old MR's place (upstream's "return a new `ib_mr`" path).
    fn rereg_user_mr(
        _mr: &Mr<Self::Driver>,
        _flags: ReregFlags,
        _req: &UserMrReq,
        _new_pd: &Pd<Self::Driver>,
        _user: &mut UserCtx<'_, '_, Self::Driver>,
    ) -> Result<Reregistered<<Self::Driver as Driver>::MrData>> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The names of a port's hardware counters (upstream `ops.alloc_hw_port_stats`, which
    /// returns an `rdma_hw_stats` with the descriptors): shown in
    /// `ports/N/hw_counters/` and by netlink `STAT_GET`.
    fn hw_port_stat_names(
        _dev: &Device<Self::Driver>,
        _port: u32,
    ) -> Option<&'static [&'static CStr]> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Reads a port's hardware counters into `out`, in the order of
    /// [`DeviceOps::hw_port_stat_names`] (upstream `ops.get_hw_stats`); returns how many
    /// were written.
    fn get_hw_stats(_dev: &Device<Self::Driver>, _port: u32, _out: &mut [u64]) -> Result<usize> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Binds QP `qpn` to counter `id` on `port` (upstream `ops.counter_bind_qp`); `id` 0 is
    /// a new counter, which the driver allocates and whose id it returns (mlx5: its Q counter
    /// set). A new counter's values have the port's names (upstream `counter_alloc_stats`).
    fn counter_bind_qp(
        _dev: &Device<Self::Driver>,
        _id: u32,
        _qpn: u32,
        _port: u32,
    ) -> Result<u32> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Moves QP `qpn` back to the port's default counting (upstream `ops.counter_unbind_qp`).
    fn counter_unbind_qp(_dev: &Device<Self::Driver>, _qpn: u32, _port: u32) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Frees counter `id` (upstream `ops.counter_dealloc`).
    fn counter_dealloc(_dev: &Device<Self::Driver>, _id: u32) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Reads counter `id` into `out` in the order of the port's names (upstream
    /// `ops.counter_update_stats`); returns how many were written.
    fn counter_update_stats(
        _dev: &Device<Self::Driver>,
        _id: u32,
        _port: u32,
        _out: &mut [u64],
    ) -> Result<usize> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates an MR for fast registration (upstream `ops.alloc_mr`).
    fn alloc_mr(
        _pd: &Pd<Self::Driver>,
        _mr_type: MrType,
        _max_num_sg: u32,
    ) -> Result<MrCreated<<Self::Driver as Driver>::MrData>> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Runs driver uverbs method `handler` (the number in
    /// `MethodSpec::driver` of the uverbs driver API)
    /// of a method of [`DeviceOps::UVERBS_OBJECTS`].
    fn uverbs_method(_handler: u16, _call: &mut <Self::Driver as UverbsApi>::Call<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Destroys the driver part of an MR (upstream `ops.dereg_mr`).
    fn dereg_mr(_mr: &Mr<Self::Driver>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates the driver part of an address handle (upstream `ops.create_ah`); `user` is
    /// `Some` for an AH of a user context (mlx5 answers the RoCE destination MAC in its udata).
    fn create_ah(
        _pd: &Pd<Self::Driver>,
        _attr: &AhAttr,
        _user: Option<&mut UserCtx<'_, '_, Self::Driver>>,
    ) -> Result<<Self::Driver as Driver>::AhData> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Destroys the driver part of an address handle (upstream `ops.destroy_ah`).
    fn destroy_ah(_ah: &Ah<Self::Driver>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Creates the driver part of a memory window of a user context (upstream
    /// `ops.alloc_mw`): its rkey and data.
    fn alloc_mw(
        _pd: &Pd<Self::Driver>,
        _mw_type: MwType,
        _user: &mut UserCtx<'_, '_, Self::Driver>,
    ) -> Result<MwCreated<<Self::Driver as Driver>::MwData>> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Destroys the driver part of a memory window (upstream `ops.dealloc_mw`).
    fn dealloc_mw(_mw: &Mw<Self::Driver>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Allocates device memory for a user context (upstream `ops.alloc_dm` with the method's
    /// attribute bundle): the driver reads its own attributes of `DM_ALLOC` and writes its
    /// outputs through `call`.
    fn alloc_dm(
        _ctx: &Ucontext<Self::Driver>,
        _attr: &DmAllocAttr,
        _call: &mut <Self::Driver as UverbsApi>::Call<'_>,
    ) -> Result<<Self::Driver as Driver>::DmData> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Frees device memory (upstream `ops.dealloc_dm`).
    fn dealloc_dm(_dm: &Dm<Self::Driver>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Registers an MR on device memory (upstream `ops.reg_dm_mr`); the core checked the range
    /// and the generic access rules.
    fn reg_dm_mr(
        _pd: &Pd<Self::Driver>,
        _dm: &Dm<Self::Driver>,
        _attr: &DmMrAttr,
    ) -> Result<MrCreated<<Self::Driver as Driver>::MrData>> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// Makes [`Ops::of`] from the op slots ([`op_slots!`](crate::device::op_slots)).
macro_rules! ops_of {
    ($($name:ident : $variant:ident : $ty:ty),* $(,)?) => {
        impl<D: Driver> Ops<D> {
            /// The partial table of impl `T`: a slot is set iff `T`
            /// overrides the method.
            pub const fn of<T: DeviceOps<Driver = D>>() -> Self {
                kernel::macros::paste! {
                    Ops {
                        driver_id: T::DRIVER_ID,
                        owner: Some(<T::OwnerModule as ModuleMetadata>::NAME),
                        uverbs_abi_ver: T::UVERBS_ABI_VER,
                        uverbs_objects: T::UVERBS_OBJECTS,
                        $($name: if T::[<HAS_ $name:upper>] { Some(T::$name) } else { None },)*
                    }
                }
            }
        }
    };
}

crate::device::op_slots!(ops_of);

/// Ops that registration cannot do without: the device's attributes, its
/// ports and their immutable data are read while registering.
pub const MANDATORY: [Op; 3] = [Op::QueryDevice, Op::QueryPort, Op::GetPortImmutable];

impl<D: Driver> Ops<D> {
    /// Merges `src` into `self` (upstream `ib_set_device_ops()`): each op
    /// is copied only where `self` has none yet (first setter wins);
    /// `driver_id` and the owner module are taken from the first table that
    /// sets them; `uverbs_abi_ver` is overwritten when `src` sets one.
    ///
    /// # Errors
    ///
    /// `EINVAL` when `src` claims a different `driver_id` or owner than an
    /// earlier table (upstream WARNs and takes it; a device whose tables
    /// disagree on who drives it is refused here). `self` is unchanged then.
    pub fn set(&mut self, src: &Ops<D>) -> Result {
        if src.driver_id != DriverId::Unknown
            && self.driver_id != DriverId::Unknown
            && self.driver_id != src.driver_id
        {
            pr_err!(
                "ib_core_rs: ops table claims driver_id {} but the device has {}\n",
                src.driver_id as u32,
                self.driver_id as u32
            );
            return Err(EINVAL);
        }
        if let (Some(a), Some(b)) = (self.owner, src.owner) {
            if a != b {
                pr_err!(
                    "ib_core_rs: ops table of module {:?} mixed into a device of {:?}\n",
                    b,
                    a
                );
                return Err(EINVAL);
            }
        }
        if src.driver_id != DriverId::Unknown {
            self.driver_id = src.driver_id;
        }
        if self.owner.is_none() {
            self.owner = src.owner;
        }
        if self.uverbs_objects.is_empty() {
            self.uverbs_objects = src.uverbs_objects;
        }
        if src.uverbs_abi_ver != 0 {
            self.uverbs_abi_ver = src.uverbs_abi_ver;
        }
        self.fill_empty_slots(src);
        Ok(())
    }

    /// Builds a table from partial tables in order (each [`Ops::set`]).
    ///
    /// # Errors
    ///
    /// `EINVAL` on a `driver_id` or owner conflict.
    pub fn assemble(tables: &[&Ops<D>]) -> Result<Self> {
        let mut ops = Self::EMPTY;
        for t in tables {
            ops.set(t)?;
        }
        Ok(ops)
    }

    /// Checks that every mandatory op is set.
    ///
    /// # Errors
    ///
    /// Returns the first missing op, so that registration can name it.
    pub fn check_mandatory(&self) -> core::result::Result<(), Op> {
        for op in MANDATORY {
            if !self.has(op) {
                return Err(op);
            }
        }
        Ok(())
    }

    /// The driver id the assembled table claims.
    pub fn driver_id(&self) -> DriverId {
        self.driver_id
    }

    /// The uverbs ABI version (upstream `ops.uverbs_abi_ver`).
    pub fn uverbs_abi_ver(&self) -> u32 {
        self.uverbs_abi_ver
    }

    /// The module that provided the first table (upstream `ops.owner`).
    pub fn owner(&self) -> Option<&'static CStr> {
        self.owner
    }
}
