// SPDX-License-Identifier: GPL-2.0

//! rdma-rs RDMA core: the root of the stack.
//!
//! Device drivers (`mlx5_ib_rs`) name their private types with
//! [`driver::Driver`], provide partial op tables ([`ops::DeviceOps`]) and
//! allocate and register [`device::Device`]s; kernel consumers use
//! [`verbs`] and [`client`]. The uverbs layer (`uverbs/`) is compiled into
//! this crate so that the only Rust link between modules is driver -> core.
//! See `Documentation/core.md`.
//!
//! The files of this crate (Kbuild builds one crate per module, so files outside `core/` are
//! mounted with `#[path]`):
//!
//! | files | what |
//! | --- | --- |
//! | `core/` | the core: shared device types, subsystems, the op table, kernel verbs, nldev |
//! | `uverbs/` | the uverbs character devices (`#[path = "../uverbs/uverbs.rs"] pub mod uverbs`) |
//! | `uverbs/abi/` | pure; also compiled by the host crates `host/uverbs-abi`, `host/uverbs-fuzz` |
//! | `rust/{anon_file,chrdev,class,global,inode,mm,net_addr,net_notify,net_route,netdev,netlink,page_ref,task,uaccess,umem,wq}.rs` | the unsafe abstractions this crate uses (`rust/README.md`) |
//!
//! Imports run one way between the two folders: `core/` <- `uverbs/`; `core/` reaches uverbs only through
//! the extension points `driver::UverbsApi` and `device::registration::UverbsRegistration`,
//! which uverbs implements (`Documentation/architecture.md`; `tools/modgraph.py` checks it).

// The unsafe boundary: `unsafe` is allowed only in the `rust/` mounts below
// (Documentation/architecture.md, "The unsafe boundary"; tools/modgraph.py checks it).
#![deny(unsafe_code)]

use kernel::prelude::*;

/// `new_mutex!` with the lockdep class name held in a `static`.
///
/// Constructors of core objects get inlined into driver modules (a driver
/// instantiates `Device<D>`). `new_mutex!` names the class with a string
/// literal, which each module then carries its own copy of; lockdep finds the
/// key with a different name pointer and WARNs. Reading the name from one
/// `static` gives every module the same pointer.
macro_rules! core_mutex {
    ($inner:expr, $name:literal) => {{
        static NAME: &'static ::kernel::prelude::CStr = $name;
        ::kernel::sync::Mutex::new($inner, NAME, ::kernel::static_lock_class!())
    }};
}

/// `pr_err!` for a message about one device, prefixed with the device's name as upstream's
/// `ibdev_err()` prefixes `dev_name(&ibdev->dev)`: `ib_core_rs: <ibdev>: <message>` (the
/// module name is `pr_err!`'s own prefix). `$dev`
/// is the name (anything `Display`: a [`ib_device::DevName`], a `BStr`).
macro_rules! ibdev_err {
    ($dev:expr, $fmt:literal $($arg:tt)*) => {
        ::kernel::pr_err!("{}: {}", $dev, ::core::format_args!($fmt $($arg)*))
    };
}

/// `pr_warn!` with the device's name, as [`ibdev_err!`] (upstream `ibdev_warn()`).
macro_rules! ibdev_warn {
    ($dev:expr, $fmt:literal $($arg:tt)*) => {
        ::kernel::pr_warn!("{}: {}", $dev, ::core::format_args!($fmt $($arg)*))
    };
}

/// Declares the Rust mirror of an upstream C enum from one table: each variant with its value
/// and its C name (the variant's doc, then any doc given), and `from_raw()`, the variant of a
/// value, so that a conversion from the C value cannot drift from the declaration.
macro_rules! upstream_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident: $raw:ty {
            $($(#[$vmeta:meta])* $var:ident = $val:literal => $c:ident,)*
        }
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $(
                #[doc = concat!("`", stringify!($c), "`.")]
                $(#[$vmeta])*
                $var = $val,
            )*
        }

        impl $name {
            /// The variant whose C value is `v`, if any.
            pub fn from_raw(v: $raw) -> Option<Self> {
                match v {
                    $($val => Some(Self::$var),)*
                    _ => None,
                }
            }
        }
    };
}

pub mod addr;
#[allow(unsafe_code)]
#[path = "../rust/anon_file.rs"]
pub(crate) mod anon_file;
pub mod attr;
mod cache;
#[allow(unsafe_code)]
#[path = "../rust/chrdev.rs"]
pub(crate) mod chrdev;
#[allow(unsafe_code)]
#[path = "../rust/class.rs"]
pub(crate) mod class;
pub mod client;
pub mod cm;
pub mod cma;
pub mod counters;
pub mod device;
pub mod driver;
pub mod event;
#[allow(unsafe_code)]
#[path = "../rust/global.rs"]
mod global;
pub mod ib_device;
#[allow(unsafe_code)]
#[path = "../rust/inode.rs"]
pub(crate) mod inode;
pub mod ipoib;
pub mod mad;
pub mod mad_agent;
pub mod mad_qp;
#[allow(unsafe_code)]
#[path = "../rust/mm.rs"]
pub mod mm;
#[allow(unsafe_code)]
#[path = "../rust/net_addr.rs"]
pub mod net_addr;
#[allow(unsafe_code)]
#[path = "../rust/net_notify.rs"]
pub mod net_notify;
#[allow(unsafe_code)]
#[path = "../rust/net_route.rs"]
pub mod net_route;
#[allow(unsafe_code)]
#[path = "../rust/netdev.rs"]
pub mod netdev;
#[allow(unsafe_code)]
#[path = "../rust/netlink.rs"]
pub(crate) mod netlink;
pub mod nldev;
pub mod ops;
#[allow(unsafe_code)]
#[path = "../rust/page_ref.rs"]
pub mod page_ref;
pub(crate) mod port_agents;
pub mod registry;
pub mod restrack;
pub mod roce_gid;
pub mod sa;
pub mod smi;
pub mod sysfs;
#[allow(unsafe_code)]
#[path = "../rust/task.rs"]
pub mod task;
#[allow(unsafe_code)]
#[path = "../rust/uaccess.rs"]
pub(crate) mod uaccess;
pub mod ud_qp;
pub mod umad;
#[allow(unsafe_code)]
#[path = "../rust/umem.rs"]
pub(crate) mod umem;
#[path = "../uverbs/uverbs.rs"]
pub mod uverbs;
pub mod verbs;
#[allow(unsafe_code)]
#[path = "../rust/wq.rs"]
pub(crate) mod wq;

module! {
    type: IbCoreRs,
    name: "ib_core_rs",
    authors: ["rdma-rs developers"],
    description: "rdma-rs: RDMA core (device registry, ops, verbs) and uverbs",
    license: "GPL",
    params: {
        cma_cm_response_timeout: u8 {
            default: 20,
            description: "rdma_cm's CM response timeout (log2 of 4.096 us, upstream CMA_CM_RESPONSE_TIMEOUT 20: about 4.3 s a try)",
        },
        cma_max_cm_retries: u8 {
            default: 15,
            description: "How many times rdma_cm's REQ, REP, DREQ and SIDR REQ are sent again unanswered (upstream CMA_MAX_CM_RETRIES 15)",
        },
        ipoib: u8 {
            default: 0,
            description: "1: an IPoIB interface (ib%d, datagram mode) on each InfiniBand port whose driver has open_ud_qp (upstream: loading ib_ipoib)",
        },
    },
}

struct IbCoreRs {
    // The IPoIB client: its interfaces unregister (and leave their groups through the SA
    // client) before any other client goes.
    ipoib: Option<client::ClientRegistration>,
    // The NETLINK_RDMA socket first: it is what collides with a loaded upstream ib_core.
    _nldev: netlink::NlSocket<nldev::NlDev>,
    // Taken in drop before the leftover checks: it holds the uverbs client.
    uverbs: Option<uverbs::UverbsGlobal>,
    // The RoCE GID notifiers: unregistered before the queues they feed are destroyed.
    _roce_gid: net_notify::NetNotifier<roce_gid::RoceGidMgmt>,
    // umad's client and char devices, then the MAD layer's client: removed from devices in
    // that order (umad's agents are gone before the MAD ports close).
    umad: Option<umad::UmadGlobal>,
    mad: Option<client::ClientRegistration>,
    // rdma_cm's client, then ucma's device (upstream rdma_ucm loads after rdma_cm): ucma's
    // files are closed before unload (the device pins the module), so no id is left.
    ucma: Option<uverbs::ucma::UcmaGlobal>,
    cma: Option<client::ClientRegistration>,
    // The IB CM's client (upstream ib_cm loads before rdma_cm): its agents on QP1.
    ib_cm: Option<client::ClientRegistration>,
    // The SA client (upstream ib_sa is part of ib_core, registered before ib_cm loads).
    sa: Option<client::ClientRegistration>,
    // Last: dropped (drained and destroyed) after everything above is gone.
    _wq: wq::CoreWq,
}

impl kernel::Module for IbCoreRs {
    fn init(module: &'static ThisModule) -> Result<Self> {
        // The global locks first: the NETLINK_RDMA socket answers GET (registry) as soon as it
        // exists, and uverbs registers its client. Initializing them needs no undoing.
        global::init();
        // The core's workqueue before anything can queue a device event on it.
        let wq = wq::CoreWq::new()?;
        // Then what fails cleanly next to the upstream stack.
        let nldev =
            netlink::NlSocket::new(module, kernel::sync::Arc::new(nldev::NlDev, GFP_KERNEL)?)?;
        // upstream: notifications (RDMA_NL_GROUP_NOTIFY) go out of the init_net socket.
        nldev.publish();
        let uverbs = uverbs::UverbsGlobal::register(module)?;
        // upstream: ib_core's mad client is registered at ib_mad_init(), before ib_umad's.
        let mad =
            client::register_client(kernel::sync::Arc::new(mad_agent::MadClient, GFP_KERNEL)?)?;
        let umad = umad::UmadGlobal::register(module)?;
        let sa = client::register_client(kernel::sync::Arc::new(sa::SaClient, GFP_KERNEL)?)?;
        let ib_cm =
            client::register_client(kernel::sync::Arc::new(cm::service::CmClient, GFP_KERNEL)?)?;
        let cma = client::register_client(kernel::sync::Arc::new(cma::CmaClient, GFP_KERNEL)?)?;
        let ucma = uverbs::ucma::UcmaGlobal::register()?;
        // upstream: ib_ipoib loads after ib_core (its SA client) and rdma_cm, when asked for.
        let ipoib = if module_parameters::ipoib.value() != 0 {
            Some(client::register_client(kernel::sync::Arc::new(
                ipoib::IpoibClient,
                GFP_KERNEL,
            )?)?)
        } else {
            None
        };
        sysfs::init()?;
        // upstream roce_gid_mgmt_init(), after the queue its events go to.
        let roce_gid = roce_gid::init()?;
        pr_info!(
            "ib_core_rs: loaded (uverbs ABI {})\n",
            uverbs::UVERBS_CLASS_ABI_VERSION
        );
        Ok(IbCoreRs {
            ipoib,
            _nldev: nldev,
            uverbs: Some(uverbs),
            _roce_gid: roce_gid,
            umad: Some(umad),
            mad: Some(mad),
            ucma: Some(ucma),
            cma: Some(cma),
            ib_cm: Some(ib_cm),
            sa: Some(sa),
            _wq: wq,
        })
    }
}

impl Drop for IbCoreRs {
    fn drop(&mut self) {
        // Dependent modules are gone (they hold references on us), so their
        // devices and clients must be too (our own uverbs client aside).
        let devs = registry::device_count();
        let ours = usize::from(self.uverbs.is_some())
            + usize::from(self.mad.is_some())
            + usize::from(self.umad.is_some())
            + usize::from(self.cma.is_some())
            + usize::from(self.ib_cm.is_some())
            + usize::from(self.sa.is_some())
            + usize::from(self.ipoib.is_some());
        let clients = client::client_count().saturating_sub(ours);
        if devs != 0 || clients != 0 {
            pr_err!(
                "ib_core_rs: unloading with {} devices and {} clients left\n",
                devs,
                clients
            );
        }
        // Leftover devices belong to unloaded modules: forget them before the
        // uverbs client's unregistration walks the registry.
        registry::shutdown();
        drop(self.ipoib.take());
        ipoib::shutdown();
        drop(self.ucma.take());
        drop(self.cma.take());
        cma::shutdown();
        drop(self.ib_cm.take());
        cm::service::shutdown();
        drop(self.sa.take());
        sa::shutdown();
        drop(self.umad.take());
        drop(self.mad.take());
        mad_agent::shutdown();
        drop(self.uverbs.take());
        client::shutdown();
        sysfs::exit();
        pr_info!("ib_core_rs: unloaded\n");
    }
}
