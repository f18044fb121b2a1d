// SPDX-License-Identifier: GPL-2.0

//! uverbs as a client of the core: one `uverbsN` char device per device
//! that can allocate user contexts (upstream `ib_uverbs_add_one()`,
//! `ib_uverbs_remove_one()`, `ib_uverbs_open()`, `ib_uverbs_close()` in
//! `uverbs_main.c`).
//!
//! The core hands the client a [`UverbsDriver`]: the driver-typed entry
//! points (`DriverHandle<D>`, made through the core's [`UverbsRegistration`] extension point
//! by the generic `Device::register`), so that files can create objects of driver `D` while
//! everything here stays non-generic.
//!
//! Remove order (upstream): the cdev and class device are deleted first (no
//! new opens), then every open file is disassociated: its objects are
//! destroyed with the driver-remove reason, its ucontext released, its
//! driver-typed state dropped; later calls on it return `EIO`, and its close
//! touches nothing of the driver.

use super::abi::uapi::{DeviceDesc, UapiTree};
use super::abi::{spec::ObjectSpec, std_types};
use super::file::{UFile, UFileOps, XrcdTree};
use super::UverbsShared;
use crate::chrdev::CharDevice;
use crate::class::{AttrGroup, ClassDevice, DevAttr, DeviceSpec, SysfsBuf};
use crate::device::registration::UverbsRegistration;
use crate::device::{Device, DeviceCore};
use crate::driver::Driver;
use core::any::Any;
use core::fmt::Write;
use kernel::fs::File;
use kernel::prelude::*;
use kernel::sync::{Arc, ArcBorrow, Mutex, Srcu, UniqueArc};
use kernel::uaccess::UserSliceReader;

/// The driver-typed entry points of one device (upstream: the device's
/// `ops` as uverbs uses them).
pub(crate) trait UverbsDriver: Send + Sync {
    /// What the uapi tree is built for.
    fn desc(&self) -> DeviceDesc;
    /// The driver's uverbs ABI version.
    fn abi_ver(&self) -> u32;
    /// The driver's uverbs objects (merged into the uapi tree).
    fn objects(&self) -> &'static [ObjectSpec];
    /// A new open file.
    fn open(&self, tree: &Arc<UapiTree>) -> Result<Arc<dyn UFileOps>>;
}

struct DriverHandle<D: Driver> {
    dev: Arc<Device<D>>,
    /// upstream `ib_uverbs_device.xrcd_tree`: shared by every file of the device.
    xrcds: Arc<XrcdTree<D>>,
}

/// What `DeviceCore` keeps of the uverbs layer: the typed handle of the device, behind
/// the core's opaque `Any`.
struct DriverHandleSlot(Arc<dyn UverbsDriver>);

// upstream: the core's registration calls into uverbs through the client list only; here
// registration is generic over the driver and makes the handle through this extension point.
impl<D: Driver> UverbsRegistration for D {
    fn uverbs_handle(dev: &Arc<Device<D>>) -> Result<Arc<dyn Any + Send + Sync>> {
        let h: Arc<dyn UverbsDriver> = Arc::new(
            DriverHandle {
                dev: dev.clone(),
                xrcds: XrcdTree::new()?,
            },
            GFP_KERNEL,
        )?;
        let slot: Arc<dyn Any + Send + Sync> = Arc::new(DriverHandleSlot(h), GFP_KERNEL)?;
        Ok(slot)
    }
}

/// The typed handle registration made for `dev` (see [`UverbsRegistration`]).
fn driver_handle(dev: &DeviceCore) -> Option<Arc<dyn UverbsDriver>> {
    let slot = dev.uverbs.lock().clone()?;
    let slot: &DriverHandleSlot = (*slot).downcast_ref()?;
    Some(slot.0.clone())
}

impl<D: Driver> UverbsDriver for DriverHandle<D> {
    fn desc(&self) -> DeviceDesc {
        use super::abi::spec::{DriverOp as O, DriverOps};
        let ops = self.dev.ops();
        let mut set = DriverOps::NONE;
        let mut add = |has: bool, op: O| {
            if has {
                set = set.with(op);
            }
        };
        add(ops.alloc_ucontext.is_some(), O::AllocUcontext);
        // dealloc_ucontext cannot fail and may be absent: the core has
        // nothing to undo then.
        add(ops.alloc_ucontext.is_some(), O::DeallocUcontext);
        add(ops.query_device.is_some(), O::QueryDevice);
        add(ops.query_port.is_some(), O::QueryPort);
        add(ops.alloc_pd.is_some(), O::AllocPd);
        add(ops.alloc_pd.is_some(), O::DeallocPd);
        // The core destroys what it created even without the driver's
        // destroy op (nothing to undo on the driver's side then).
        add(ops.create_cq.is_some(), O::CreateCq);
        add(ops.create_cq.is_some(), O::DestroyCq);
        add(ops.resize_user_cq.is_some(), O::ResizeUserCq);
        add(ops.modify_cq.is_some(), O::ModifyCq);
        add(ops.create_qp.is_some(), O::CreateQp);
        add(ops.create_qp.is_some(), O::DestroyQp);
        add(ops.modify_qp.is_some(), O::ModifyQp);
        add(ops.create_srq.is_some(), O::CreateSrq);
        add(ops.create_srq.is_some(), O::DestroySrq);
        add(ops.modify_srq.is_some(), O::ModifySrq);
        add(ops.query_srq.is_some(), O::QuerySrq);
        add(ops.query_qp.is_some(), O::QueryQp);
        add(ops.attach_mcast.is_some(), O::AttachMcast);
        add(ops.detach_mcast.is_some(), O::DetachMcast);
        add(ops.reg_user_mr.is_some(), O::RegUserMr);
        add(ops.reg_user_mr.is_some(), O::DeregMr);
        add(ops.rereg_user_mr.is_some(), O::ReregUserMr);
        add(ops.create_ah.is_some(), O::CreateUserAh);
        add(ops.create_ah.is_some(), O::DestroyAh);
        add(ops.alloc_mw.is_some(), O::AllocMw);
        add(ops.dealloc_mw.is_some(), O::DeallocMw);
        add(ops.alloc_xrcd.is_some(), O::AllocXrcd);
        add(ops.dealloc_xrcd.is_some(), O::DeallocXrcd);
        add(ops.alloc_dm.is_some(), O::AllocDm);
        add(ops.dealloc_dm.is_some(), O::DeallocDm);
        add(ops.reg_dm_mr.is_some(), O::RegDmMr);
        DeviceDesc {
            driver_id: ops.driver_id() as u32,
            ops: set,
            uverbs_cmd_mask: std_types::DEFAULT_UVERBS_CMD_MASK,
        }
    }

    fn abi_ver(&self) -> u32 {
        self.dev.ops().uverbs_abi_ver()
    }

    fn objects(&self) -> &'static [ObjectSpec] {
        self.dev.ops().uverbs_objects
    }

    fn open(&self, tree: &Arc<UapiTree>) -> Result<Arc<dyn UFileOps>> {
        let f: Arc<dyn UFileOps> = UFile::new(self.dev.clone(), tree.clone(), self.xrcds.clone())?;
        Ok(f)
    }
}

/// An open file as the cdev sees it: the driver-typed file until the
/// device goes away.
#[pin_data]
pub(crate) struct OpenFile {
    /// The device, whose uapi tree an ioctl's method is looked up in before the file is
    /// (the tree outlives the driver: upstream's `uverbs_dev->uapi`).
    udev: Arc<UverbsDevice>,
    #[pin]
    ops: Mutex<Option<Arc<dyn UFileOps>>>,
}

impl OpenFile {
    /// Runs `f` on the driver-typed file inside the device's disassociate SRCU read section
    /// (`UverbsDevice::srcu`); `EIO` once the file is disassociated. The reference taken for
    /// `f` is dropped inside the section too: the removal's `synchronize()` waits for it.
    fn call<R>(&self, f: impl FnOnce(&dyn UFileOps) -> Result<R>) -> Result<R> {
        let _srcu = self.udev.srcu.read_lock();
        let ops = self.ops.lock().clone().ok_or(EIO)?;
        f(&*ops)
    }
}

/// The per-device state (upstream `struct ib_uverbs_device`).
#[pin_data]
pub(crate) struct UverbsDevice {
    /// `N` of `uverbsN`.
    devnum: u32,
    /// The RDMA device's index, by which `ibdev` reads its current name.
    ibdev_index: u32,
    /// Its name at add (`ibdev` after the device left the registry).
    ibdev_name: crate::device::DevName,
    abi_ver: u32,
    /// The merged uapi tree (upstream `uverbs_dev->uapi`), built once; its open files hold it
    /// too.
    tree: Arc<UapiTree>,
    /// The driver entry points; `None` once the device is removed.
    #[pin]
    driver: Mutex<Option<Arc<dyn UverbsDriver>>>,
    /// Open files (upstream `uverbs_file_list`), for disassociate.
    #[pin]
    files: Mutex<KVec<Arc<OpenFile>>>,
    /// upstream `disassociate_srcu`: every file operation that may enter the driver's code
    /// (open, release, ioctl, write, mmap) runs inside a read-side section, and the removal
    /// waits for them after it disassociated the files. A file's driver-typed part is code
    /// of the driver's module: an operation that took its reference just before the removal
    /// would otherwise still run it (or drop the last reference, running its destructor)
    /// after the removal returned and the module could be unloaded.
    #[pin]
    srcu: Srcu,
}

/// The data of the `uverbsN` class device: what sysfs and the cdev see.
pub(crate) struct Node {
    udev: Arc<UverbsDevice>,
}

// upstream ibdev_show(): `dev_name(&ib_dev->dev)`, the current name (a rename shows here).
fn show_ibdev(n: &Node, b: &mut SysfsBuf<'_>) -> Result {
    let cur = crate::registry::name_of(n.udev.ibdev_index).unwrap_or(n.udev.ibdev_name);
    let name = core::str::from_utf8(cur.as_bytes()).map_err(|_| EINVAL)?;
    writeln!(b, "{}", name).map_err(|_| EINVAL)
}

fn show_abi_version(n: &Node, b: &mut SysfsBuf<'_>) -> Result {
    writeln!(b, "{}", n.udev.abi_ver).map_err(|_| EINVAL)
}

static NODE_ATTRS: [&DevAttr<Node>; 2] = {
    static IBDEV: DevAttr<Node> = DevAttr::ro(c"ibdev", show_ibdev);
    static ABI: DevAttr<Node> = DevAttr::ro(c"abi_version", show_abi_version);
    [&IBDEV, &ABI]
};

#[vtable]
impl CharDevice for Node {
    type Ptr = Arc<OpenFile>;

    // upstream: ib_uverbs_open()
    fn open(dev: &Self, _file: &File) -> Result<Self::Ptr> {
        let udev = &dev.udev;
        // The driver's `open` and, on a removal meanwhile, its `destroy_all` run in the
        // section; so do the drops of `drv` and `ops` (declared after the guard).
        let _srcu = udev.srcu.read_lock();
        let drv = udev.driver.lock().clone().ok_or(ENXIO)?;
        let ops = drv.open(&udev.tree)?;
        let of = Arc::pin_init(
            pin_init!(OpenFile {
                udev: udev.clone(),
                ops <- kernel::new_mutex!(Some(ops), "uverbs_open_file"),
            }),
            GFP_KERNEL,
        )?;
        let mut files = udev.files.lock();
        // A removal that took the list after the driver check above must not miss this file:
        // it would stay associated with a removed driver, and it and the device would keep
        // each other alive (`OpenFile::udev`). The removal takes the driver before the list.
        if udev.driver.lock().is_none() {
            drop(files);
            let ops = of.ops.lock().take();
            if let Some(ops) = ops {
                ops.destroy_all(false);
            }
            return Err(ENXIO);
        }
        files.push(of.clone(), GFP_KERNEL)?;
        drop(files);
        Ok(of)
    }

    // upstream: ib_uverbs_close() -> uverbs_destroy_ufile_hw(RDMA_REMOVE_CLOSE)
    fn release(ptr: Self::Ptr, file: &File) {
        let _ = file;
        {
            let _srcu = ptr.udev.srcu.read_lock();
            let ops = ptr.ops.lock().take();
            if let Some(ops) = ops {
                ops.destroy_all(false);
            }
        }
        // upstream ib_uverbs_close(): `list_del_init(&file->list)`. The entry is the file's to
        // remove: left to the device's removal, every file ever opened stayed in the list (an
        // `OpenFile` and a list slot each) for as long as the device was registered. A removal
        // may have emptied the list already; then there is nothing to find.
        ptr.udev.files.lock().retain(|f| !Arc::ptr_eq(f, &ptr));
        drop(ptr);
    }

    // upstream ib_uverbs_ioctl(): the command, the header's copy and its length and reserved
    // fields are checked before the SRCU read lock that keeps the device, and
    // ib_uverbs_cmd_verbs() then checks the driver id and finds the method in the device's
    // uapi radix tree. Here both before the open file's lock and the reference to its
    // driver-typed file: a rejected ioctl (bad header, foreign driver id, unknown object or
    // method) costs the header's copy and a tree lookup, as upstream's, and takes no lock; a
    // disassociated file answers these as upstream does (the tree outlives the driver), not
    // EIO.
    fn ioctl(ptr: ArcBorrow<'_, OpenFile>, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        let hdr = super::file::ioctl_header(cmd, arg)?;
        let method =
            super::abi::parse::find_method(&ptr.udev.tree, &hdr).map_err(super::file::kerr)?;
        ptr.call(|ops| ops.ioctl(arg, &hdr, method))
    }

    // upstream: ib_uverbs_write() refuses, before anything else, a caller
    // whose credentials are not the opener's (ib_safe_file_access():
    // CVE-2016-4565, a write() issued on a task's behalf by a more privileged
    // context, or after a fork, a setuid exec or an fd passed over a socket).
    // ioctl() has no such check upstream either.
    fn write(ptr: ArcBorrow<'_, OpenFile>, file: &File, data: UserSliceReader) -> Result<usize> {
        if !crate::task::file_cred_is_current(file) {
            let (pid, comm) = crate::task::current_pid_comm();
            let n = comm.iter().position(|b| *b == 0).unwrap_or(comm.len());
            let comm = core::str::from_utf8(comm.get(..n).unwrap_or(&[])).unwrap_or("?");
            kernel::pr_err_once!(
                "uverbs_write: process {} ({}) changed security contexts after opening file descriptor, this is not allowed.\n",
                pid,
                comm
            );
            return Err(EACCES);
        }
        ptr.call(|ops| ops.write(data))
    }

    // upstream: ib_uverbs_mmap(); a disassociated file is EIO.
    fn mmap(ptr: ArcBorrow<'_, OpenFile>, _file: &File, vma: &kernel::mm::virt::VmaNew) -> Result {
        ptr.call(|ops| ops.mmap(vma))
    }
}

/// What the client keeps per device.
struct Attached {
    index: u32,
    devnum: u32,
    node: Option<ClassDevice<Node>>,
    udev: Arc<UverbsDevice>,
}

/// The uverbs client (upstream `uverbs_client`).
#[pin_data]
pub(crate) struct UverbsClient {
    module: &'static ThisModule,
    shared: Arc<UverbsShared>,
    #[pin]
    devices: Mutex<KVec<Attached>>,
}

impl UverbsClient {
    pub(crate) fn new(module: &'static ThisModule, shared: Arc<UverbsShared>) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(UverbsClient {
                module,
                shared,
                devices <- kernel::new_mutex!(KVec::new(), "uverbs_devices"),
            }),
            GFP_KERNEL,
        )
    }

    fn alloc_devnum(&self) -> Result<u32> {
        let mut ida = self.shared.ida.lock();
        if let Some(i) = ida.iter().position(|t| !*t) {
            if let Some(slot) = ida.get_mut(i) {
                *slot = true;
            }
            return u32::try_from(i).map_err(|_| ENOMEM);
        }
        let n = ida.len();
        if n >= (super::IB_UVERBS_NUM_FIXED_MINOR + super::IB_UVERBS_NUM_DYNAMIC_MINOR) as usize {
            return Err(ENOMEM);
        }
        ida.push(true, GFP_KERNEL)?;
        u32::try_from(n).map_err(|_| ENOMEM)
    }

    fn free_devnum(&self, n: u32) {
        if let Some(slot) = self.shared.ida.lock().get_mut(n as usize) {
            *slot = false;
        }
    }

    fn add_one(&self, dev: &DeviceCore, drv: Arc<dyn UverbsDriver>, devnum: u32) -> Result {
        // upstream: uverbs_alloc_api() once per device. The tree (about 8 KiB) is written
        // into its allocation: `UniqueArc::new(UapiTree::EMPTY)` built it on the stack first,
        // which with the registration's callers above overran a 16 KiB kernel stack (a
        // kernel without KASAN, whose stacks are twice that).
        let mut tree = UniqueArc::new_uninit(GFP_KERNEL)?.write(UapiTree::EMPTY);
        let desc = drv.desc();
        tree.build_in(std_types::CORE_API, &[drv.objects()], &desc)
            .map_err(|e| Error::from_errno(e.to_errno()))
            .inspect_err(|e| ibdev_err!(dev.name(), "uapi tree: {:?}\n", e))?;
        let tree: Arc<UapiTree> = tree.into();
        let udev = Arc::pin_init(
            try_pin_init!(UverbsDevice {
                devnum,
                ibdev_index: dev.index(),
                ibdev_name: dev.name(),
                abi_ver: drv.abi_ver(),
                tree,
                driver <- kernel::new_mutex!(Some(drv), "uverbs_dev_driver"),
                files <- kernel::new_mutex!(KVec::new(), "uverbs_dev_files"),
                srcu <- kernel::new_srcu!("uverbs_disassociate_srcu"),
            }),
            GFP_KERNEL,
        )?;
        // upstream: devnum < IB_UVERBS_NUM_FIXED_MINOR ? fixed : dynamic range.
        let devt = if devnum < super::IB_UVERBS_NUM_FIXED_MINOR {
            self.shared.fixed.devt(devnum)
        } else {
            self.shared
                .dynamic
                .devt(devnum - super::IB_UVERBS_NUM_FIXED_MINOR)
        };
        let devt = devt.ok_or(ENOMEM)?;
        let groups = [AttrGroup {
            name: None,
            attrs: &NODE_ATTRS,
        }];
        // upstream: `uverbs_dev->dev.parent = device->dev.parent` (the `device` link).
        let parent = dev.parent();
        let node = ClassDevice::register_chrdev(
            DeviceSpec {
                class: &self.shared.class,
                parent: parent.as_deref(),
                devt: Some(devt),
                groups: &groups,
            },
            self.module,
            fmt!("uverbs{}", devnum),
            Node { udev: udev.clone() },
        )?;
        self.devices.lock().push(
            Attached {
                index: dev.index(),
                devnum,
                node: Some(node),
                udev,
            },
            GFP_KERNEL,
        )?;
        Ok(())
    }
}

impl crate::client::Client for UverbsClient {
    fn name(&self) -> &'static CStr {
        c"uverbs"
    }

    // upstream: ib_uverbs_add_one()
    fn add(&self, dev: &DeviceCore) -> Result {
        let Some(drv) = driver_handle(dev) else {
            // No alloc_ucontext: no char device (upstream returns -EOPNOTSUPP).
            return Err(EOPNOTSUPP);
        };
        let devnum = self.alloc_devnum()?;
        self.add_one(dev, drv, devnum)
            .inspect_err(|_| self.free_devnum(devnum))
    }

    // upstream: ib_uverbs_get_nl_info()
    fn get_nl_info(
        &self,
        dev: &DeviceCore,
        _port: Option<u32>,
    ) -> Result<crate::client::ClientNlInfo> {
        let devs = self.devices.lock();
        let a = devs
            .iter()
            .find(|a| a.index == dev.index())
            .ok_or(EOPNOTSUPP)?;
        let devt = if a.devnum < super::IB_UVERBS_NUM_FIXED_MINOR {
            self.shared.fixed.devt(a.devnum)
        } else {
            self.shared
                .dynamic
                .devt(a.devnum - super::IB_UVERBS_NUM_FIXED_MINOR)
        }
        .ok_or(EINVAL)?;
        let drv = a.udev.driver.lock().clone().ok_or(EOPNOTSUPP)?;
        let name = crate::device::DevName::format(b"uverbs", a.devnum, b"")?;
        Ok(crate::client::ClientNlInfo {
            devt,
            abi: u64::from(a.udev.abi_ver),
            name,
            driver_id: Some(drv.desc().driver_id),
        })
    }

    // upstream: ib_uverbs_event_handler() of every async event file of the
    // device: the port number as element.
    fn event(&self, dev: &DeviceCore, ev: &crate::event::Event) {
        let udev = {
            let devs = self.devices.lock();
            match devs.iter().find(|a| a.index == dev.index()) {
                Some(a) => a.udev.clone(),
                None => return,
            }
        };
        let files = udev.files.lock();
        for f in files.iter() {
            let ops = f.ops.lock().clone();
            if let Some(ops) = ops {
                ops.async_event(u64::from(ev.port), ev.kind.ib_event_type());
            }
        }
    }

    // upstream: ib_uverbs_remove_one()
    fn remove(&self, dev: &DeviceCore) {
        let att = {
            let mut devs = self.devices.lock();
            let Some(pos) = devs.iter().position(|a| a.index == dev.index()) else {
                return;
            };
            devs.remove(pos)
        };
        let Ok(mut att) = att else { return };
        // 1. No new opens: cdev_device_del().
        drop(att.node.take());
        // 2. No new calls into the driver.
        let drv = att.udev.driver.lock().take();
        // 3. Disassociate every open file (upstream uverbs_disassociate_api_pre()
        //    + ib_uverbs_free_hw_resources()).
        let files = core::mem::take(&mut *att.udev.files.lock());
        for f in files.iter() {
            let ops = f.ops.lock().take();
            if let Some(ops) = ops {
                ops.destroy_all(true);
            }
        }
        drop(files);
        // 4. No file operation is still in the driver's code (upstream
        //    uverbs_destroy_ufile_hw()'s synchronize_srcu()): those that took a file's ops
        //    before step 3 have returned and dropped them.
        att.udev.srcu.synchronize();
        drop(drv);
        self.free_devnum(att.devnum);
    }
}
