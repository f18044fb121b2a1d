// SPDX-License-Identifier: GPL-2.0

//! The device of a driver: [`Device<D>`] holds the driver-independent part ([`DeviceCore`]),
//! the op table assembled from the driver's partial tables ([`Ops`], upstream
//! `struct ib_device_ops`) and the driver's private data, in one allocation (upstream
//! `_ib_alloc_device()` with the driver struct embedding `struct ib_device`).
//!
//! Ownership: a [`Device<D>`] lives in an [`Arc`]; the driver, the registry (from
//! registration to dealloc) and every verbs object hold one. Memory goes when the last one is
//! dropped, so dealloc is separate from both unregister and freeing, as upstream
//! (`put_device()` ... `kfree_rcu`).
//!
//! Registration, the registration refcount, unregistration and dealloc are in
//! `device/registration.rs`; the shared types every subsystem sees are in `ib_device.rs`,
//! re-exported here.

pub use crate::event::queue_device_event;
pub use crate::ib_device::{DevName, DeviceCore, DeviceRef, IbDevice, Phase, IB_DEVICE_NAME_MAX};

use crate::attr::{DeviceAttr, Gid, GidAttr, GidType, PortAttr, PortImmutable, PortModify};
use crate::driver::{Driver, DriverId, UverbsApi};
use crate::mad::{Mad, MadRecvInfo};
use crate::mad_qp::{MadQp, MadQpNotify};
use crate::mm::UserVma;
use crate::sysfs::{DriverGroup, IbSysfs, Sysfs};
use crate::ud_qp::{UdQp, UdQpConfig, UdQpNotify};
use crate::verbs::{
    AccessFlags, Ah, AhAttr, Cq, CqHandler, CqInitAttr, CqNotify, Dm, DmAllocAttr, DmMrAttr, Mr,
    MrCreated, MrType, Mw, MwCreated, MwType, Pd, Qp, QpAttr, QpAttrMask, QpCreated, QpHandler,
    QpInitAttr, RecvWr, ReregFlags, Reregistered, SendWr, Srq, SrqAttrMask, SrqHandler,
    SrqInitAttr, Ucontext, UcontextPriv, Udata, UserCtx, UserMrReq, Wc, XrcSrqCreated, Xrcd,
};
use core::ops::Deref;
use kernel::prelude::*;
use kernel::str::CString;
use kernel::sync::{Arc, Mutex, UniqueArc};

pub(crate) mod registration;

/// An RDMA device of driver `D`: the core part, the assembled ops and the
/// driver's private data in one allocation (upstream `struct mlx5_ib_dev`
/// embedding `struct ib_device`).
#[pin_data]
pub struct Device<D: Driver> {
    #[pin]
    pub(crate) core: DeviceCore,
    pub(crate) ops: Ops<D>,
    #[pin]
    data: D::DevData,
    /// The class device in `/sys/class/infiniband` while registered.
    #[pin]
    pub(crate) sysfs: Mutex<Option<Sysfs>>,
    /// upstream `ops.device_group`: the driver's sysfs attributes.
    #[pin]
    pub(crate) driver_group: Mutex<Option<&'static DriverGroup>>,
}

impl<D: Driver> Deref for Device<D> {
    type Target = DeviceCore;
    fn deref(&self) -> &DeviceCore {
        &self.core
    }
}

impl<D: Driver> Device<D> {
    /// Allocates a device with its driver data in the same allocation
    /// (upstream `_ib_alloc_device()`): the registration refcount is 0, the
    /// resource tracker empty, nothing is visible yet. `ops` is the table
    /// assembled from the driver's partial tables ([`Ops::assemble`]).
    ///
    /// # Errors
    ///
    /// `ENOMEM`, or the error of `data`.
    pub fn alloc(
        ops: &Ops<D>,
        phys_port_cnt: u32,
        data: impl PinInit<D::DevData, Error>,
    ) -> Result<Arc<Self>> {
        Arc::pin_init(Self::new(*ops, phys_port_cnt, data), GFP_KERNEL)
    }

    /// Allocates a device as [`Device::alloc`] does, held by the caller alone (upstream
    /// `ib_alloc_device()` before `ib_register_device()`): until it is shared (`Arc::from`), the
    /// driver fills its data ([`Device::data_mut`]) and sets more ops ([`Device::ops_mut`],
    /// upstream `ib_set_device_ops()`), as upstream's probe stages do.
    ///
    /// # Errors
    ///
    /// `ENOMEM`, or the error of `data`.
    pub fn alloc_unique(
        ops: &Ops<D>,
        phys_port_cnt: u32,
        data: impl PinInit<D::DevData, Error>,
    ) -> Result<Pin<UniqueArc<Self>>> {
        UniqueArc::try_pin_init(Self::new(*ops, phys_port_cnt, data), GFP_KERNEL)
    }

    fn new(
        ops: Ops<D>,
        phys_port_cnt: u32,
        data: impl PinInit<D::DevData, Error>,
    ) -> impl PinInit<Self, Error> {
        try_pin_init!(Device {
            core <- DeviceCore::new(phys_port_cnt),
            ops,
            data <- data,
            sysfs <- core_mutex!(None, c"ib_device.sysfs"),
            driver_group <- core_mutex!(None, c"ib_device.device_group"),
        })
    }

    /// The driver's private data.
    pub fn data(&self) -> &D::DevData {
        &self.data
    }

    /// The driver's private data of a device nobody else holds yet ([`Device::alloc_unique`]).
    pub fn data_mut(self: Pin<&mut Self>) -> &mut D::DevData
    where
        D::DevData: Unpin,
    {
        self.project().data.get_mut()
    }

    /// The op table of a device nobody else holds yet: upstream `ib_set_device_ops()` before
    /// registration ([`Ops::set`]: the first setter of an op wins).
    pub fn ops_mut(self: Pin<&mut Self>) -> &mut Ops<D> {
        self.project().ops
    }

    /// The assembled op table.
    pub fn ops(&self) -> &Ops<D> {
        &self.ops
    }

    /// Adds a driver attribute group to the device's sysfs directory (upstream
    /// `rdma_set_device_sysfs_group()`); effective at the next registration.
    pub fn set_sysfs_group(&self, group: &'static DriverGroup) {
        *self.driver_group.lock() = Some(group);
    }

    /// Queries the driver for the device attributes (not cached).
    ///
    /// # Errors
    ///
    /// `EOPNOTSUPP` without `query_device`; the driver's error.
    pub fn query_device(this: &Self) -> Result<DeviceAttr> {
        (this.ops.query_device.ok_or(EOPNOTSUPP)?)(this)
    }

    /// Queries the driver for a port's attributes (upstream
    /// `ib_query_port()`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a port the device does not have, `EOPNOTSUPP`, the
    /// driver's error.
    pub fn query_port(this: &Self, port: u32) -> Result<PortAttr> {
        if port == 0 || port > this.core.phys_port_cnt {
            return Err(EINVAL);
        }
        (this.ops.query_port.ok_or(EOPNOTSUPP)?)(this, port)
    }
}

impl IbSysfs {
    /// The device as its driver's type, for a driver group's `show` functions; `None` for a
    /// device of another driver.
    pub fn device<D: Driver>(&self) -> Option<&Device<D>> {
        self.dev.as_any().downcast_ref()
    }
}

/// Declares [`Ops`], [`Op`] and the per-slot code from the list of [`op_slots!`].
macro_rules! ops_table {
    ($($name:ident : $variant:ident : $ty:ty),* $(,)?) => {
        /// The assembled op table of a device (upstream `struct ib_device_ops`):
        /// one `Option<fn>` per op, `None` where no table provided it.
        pub struct Ops<D: Driver> {
            pub(crate) driver_id: DriverId,
            pub(crate) owner: Option<&'static CStr>,
            pub(crate) uverbs_abi_ver: u32,
            pub(crate) uverbs_objects: &'static [<D as UverbsApi>::ObjectSpec],
            $(pub(crate) $name: Option<$ty>,)*
        }

        /// Names one op (a slot of [`Ops`]), for checks and messages.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Op {
            $(
                #[doc = concat!("`", stringify!($name), "`.")]
                $variant,
            )*
        }

        impl Op {
            /// The upstream name of the op, for error messages.
            pub fn name(self) -> &'static str {
                match self {
                    $(Op::$variant => stringify!($name),)*
                }
            }
        }

        impl<D: Driver> Ops<D> {
            /// The table with no op set.
            pub const EMPTY: Self = Ops {
                driver_id: DriverId::Unknown,
                owner: None,
                uverbs_abi_ver: 0,
                uverbs_objects: &[],
                $($name: None,)*
            };

            /// Whether `op` is set.
            pub fn has(&self, op: Op) -> bool {
                match op {
                    $(Op::$variant => self.$name.is_some(),)*
                }
            }

            pub(crate) fn fill_empty_slots(&mut self, src: &Self) {
                $(
                    if self.$name.is_none() {
                        self.$name = src.$name;
                    }
                )*
            }
        }
    };
}

/// The op slots, one line each (`name: Variant: fn type`), handed to `$m`: the table here
/// ([`ops_table!`]) and [`Ops::of`](crate::ops::DeviceOps), which fills it from a
/// [`DeviceOps`](crate::ops::DeviceOps) impl, are made from the same list, so that a new op is
/// one line here plus its trait method.
macro_rules! op_slots {
    ($m:ident) => {
        $m! {
                query_device: QueryDevice: fn(&Device<D>) -> Result<DeviceAttr>,
                query_device_udata: QueryDeviceUdata: fn(&Device<D>, &mut Udata<'_>) -> Result,
                query_port: QueryPort: fn(&Device<D>, u32) -> Result<PortAttr>,
                get_port_immutable: GetPortImmutable: fn(&Device<D>, u32) -> Result<PortImmutable>,
                query_gid: QueryGid: fn(&Device<D>, u32, u32) -> Result<Gid>,
                query_gid_type: QueryGidType: fn(&Device<D>, u32, u32) -> Result<GidType>,
                add_gid: AddGid: fn(&Device<D>, &GidAttr) -> Result,
                del_gid: DelGid: fn(&Device<D>, &GidAttr) -> Result,
                query_pkey: QueryPkey: fn(&Device<D>, u32, u32) -> Result<u16>,
                process_mad: ProcessMad:
                    fn(&Device<D>, u32, u32, Option<&MadRecvInfo>, &Mad, &mut Mad) -> Result<u32>,
                modify_port: ModifyPort: fn(&Device<D>, u32, &PortModify) -> Result,
                open_mad_qp: OpenMadQp:
                    fn(&Arc<Device<D>>, u32, u32, Arc<dyn MadQpNotify>) -> Result<Arc<dyn MadQp>>,
                open_ud_qp: OpenUdQp:
                    fn(&Arc<Device<D>>, u32, &UdQpConfig, Arc<dyn UdQpNotify>) -> Result<Arc<dyn UdQp>>,
                get_dev_fw_str: GetDevFwStr: fn(&Device<D>) -> Result<CString>,
                enable_driver: EnableDriver: fn(&Device<D>) -> Result,
                dealloc_driver: DeallocDriver: fn(&Device<D>),
                alloc_ucontext: AllocUcontext: fn(&Device<D>, &mut Udata<'_>) -> Result<UcontextPriv>,
                dealloc_ucontext: DeallocUcontext: fn(&Ucontext<D>),
                mmap: Mmap: fn(&Ucontext<D>, &mut UserVma<'_>) -> Result,
                alloc_pd: AllocPd: fn(&Device<D>, Option<&mut UserCtx<'_, '_, D>>) -> Result<D::PdData>,
                dealloc_pd: DeallocPd: fn(&Pd<D>) -> Result,
                create_cq: CreateCq:
                    fn(
                        &Device<D>,
                        &CqInitAttr,
                        Option<&Arc<dyn CqHandler>>,
                        Option<&mut UserCtx<'_, '_, D>>,
                    ) -> Result<D::CqData>,
                destroy_cq: DestroyCq: fn(&Cq<D>) -> Result,
                req_notify_cq: ReqNotifyCq: fn(&Cq<D>, CqNotify) -> Result,
                poll_cq: PollCq: fn(&Cq<D>, &mut [Wc]) -> Result<usize>,
                resize_user_cq: ResizeUserCq: fn(&Cq<D>, u32, &mut UserCtx<'_, '_, D>) -> Result,
                modify_cq: ModifyCq: fn(&Cq<D>, u16, u16) -> Result,
                create_srq: CreateSrq: fn(
                    &Pd<D>,
                    &mut SrqInitAttr,
                    Option<&Arc<dyn SrqHandler>>,
                    Option<&mut UserCtx<'_, '_, D>>,
                ) -> Result<D::SrqData>,
                modify_srq: ModifySrq: fn(&Srq<D>, &SrqInitAttr, SrqAttrMask, Option<&mut Udata<'_>>) -> Result,
                query_srq: QuerySrq: fn(&Srq<D>) -> Result<SrqInitAttr>,
                destroy_srq: DestroySrq: fn(&Srq<D>) -> Result,
                alloc_xrcd: AllocXrcd: fn(&Device<D>, Option<&mut UserCtx<'_, '_, D>>) -> Result<u32>,
                dealloc_xrcd: DeallocXrcd: fn(&Device<D>, u32) -> Result,
                create_xrc_srq: CreateXrcSrq: fn(
                    &Pd<D>,
                    &Xrcd<D>,
                    &Cq<D>,
                    &mut SrqInitAttr,
                    Option<&Arc<dyn SrqHandler>>,
                    &mut UserCtx<'_, '_, D>,
                ) -> Result<XrcSrqCreated<D::SrqData>>,
                create_xrc_tgt_qp: CreateXrcTgtQp:
                    fn(&Xrcd<D>, &Arc<dyn QpHandler>) -> Result<QpCreated<D::QpData>>,
                create_qp: CreateQp: fn(
                    &Pd<D>,
                    &QpInitAttr<'_, D>,
                    Option<&mut UserCtx<'_, '_, D>>,
                ) -> Result<QpCreated<D::QpData>>,
                modify_qp: ModifyQp: fn(&Qp<D>, &QpAttr, QpAttrMask, Option<&mut Udata<'_>>) -> Result,
                query_qp: QueryQp: fn(&Qp<D>) -> Result<QpAttr>,
                destroy_qp: DestroyQp: fn(&Qp<D>) -> Result,
                post_send: PostSend: fn(&Qp<D>, &[SendWr<'_>]) -> Result,
                post_recv: PostRecv: fn(&Qp<D>, &[RecvWr<'_>]) -> Result,
                attach_mcast: AttachMcast: fn(&Qp<D>, &Gid, u16) -> Result,
                detach_mcast: DetachMcast: fn(&Qp<D>, &Gid, u16) -> Result,
                get_dma_mr: GetDmaMr: fn(&Pd<D>, AccessFlags) -> Result<MrCreated<D::MrData>>,
                reg_user_mr: RegUserMr:
                    fn(&Pd<D>, &UserMrReq, &mut UserCtx<'_, '_, D>) -> Result<MrCreated<D::MrData>>,
                rereg_user_mr: ReregUserMr: fn(
                    &Mr<D>,
                    ReregFlags,
                    &UserMrReq,
                    &Pd<D>,
                    &mut UserCtx<'_, '_, D>,
                ) -> Result<Reregistered<D::MrData>>,
                alloc_mr: AllocMr: fn(&Pd<D>, MrType, u32) -> Result<MrCreated<D::MrData>>,
                hw_port_stat_names: HwPortStatNames: fn(&Device<D>, u32) -> Option<&'static [&'static CStr]>,
                get_hw_stats: GetHwStats: fn(&Device<D>, u32, &mut [u64]) -> Result<usize>,
                counter_bind_qp: CounterBindQp: fn(&Device<D>, u32, u32, u32) -> Result<u32>,
                counter_unbind_qp: CounterUnbindQp: fn(&Device<D>, u32, u32) -> Result,
                counter_dealloc: CounterDealloc: fn(&Device<D>, u32) -> Result,
                counter_update_stats: CounterUpdateStats: fn(&Device<D>, u32, u32, &mut [u64]) -> Result<usize>,
                dereg_mr: DeregMr: fn(&Mr<D>) -> Result,
                uverbs_method: UverbsMethod: fn(u16, &mut <D as UverbsApi>::Call<'_>) -> Result,
                create_ah: CreateAh: fn(&Pd<D>, &AhAttr, Option<&mut UserCtx<'_, '_, D>>) -> Result<D::AhData>,
                destroy_ah: DestroyAh: fn(&Ah<D>) -> Result,
                alloc_mw: AllocMw: fn(&Pd<D>, MwType, &mut UserCtx<'_, '_, D>) -> Result<MwCreated<D::MwData>>,
                dealloc_mw: DeallocMw: fn(&Mw<D>) -> Result,
                alloc_dm: AllocDm:
                    fn(&Ucontext<D>, &DmAllocAttr, &mut <D as UverbsApi>::Call<'_>) -> Result<D::DmData>,
                dealloc_dm: DeallocDm: fn(&Dm<D>) -> Result,
                query_ucontext: QueryUcontext:
                    fn(&Ucontext<D>, &mut <D as UverbsApi>::Call<'_>) -> Result,
                reg_dm_mr: RegDmMr: fn(&Pd<D>, &Dm<D>, &DmMrAttr) -> Result<MrCreated<D::MrData>>,
        }
    };
}
pub(crate) use op_slots;

op_slots!(ops_table);

impl<D: Driver> Clone for Ops<D> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<D: Driver> Copy for Ops<D> {}
