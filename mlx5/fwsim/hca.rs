// SPDX-License-Identifier: GPL-2.0

//! The function's life cycle and its event queues: the commands upstream `mlx5_core` sends
//! before and after everything else (`mlx5_function_setup()`, `mlx5_load()` and their
//! teardown in `main.c`, `eq.c`, `pagealloc.c`, `fw.c`).
//!
//! A ConnectX function starts disabled. The driver enables it (ENABLE_HCA), negotiates the
//! interface step (QUERY_ISSI/SET_ISSI), hands over boot pages (QUERY_PAGES, here always 0
//! pages, so MANAGE_PAGES is never needed), sets host endianness (ACCESS_REG
//! HOST_ENDIANNESS), adjusts the writable capabilities (SET_HCA_CAP), asks for init pages
//! (QUERY_PAGES again) and initializes it (INIT_HCA). Only then do resource commands work.
//! TEARDOWN_HCA and DISABLE_HCA go back down. The kernel simulator (`mlx5/simdev.rs`) never
//! sends these commands: its [`Fw`] is built already initialized ([`Fw::new`]); the emulated
//! PCI function starts from [`Fw::cold_boot`].
//!
//! EQs (CREATE_EQ/DESTROY_EQ) keep their page list, size, UAR, MSI-X vector and event mask;
//! [`Fw::post_eqe`] writes an EQE with the owner bit through [`DmaMem`] and says which MSI-X
//! vector to raise, [`Fw::eq_doorbell`] takes the consumer counter the driver writes to the
//! UAR page (`eq_update_ci()`: offset 0x40 arms, 0x48 does not).

use super::dma::DmaMem;
use super::ring::Ring;
use super::syndrome::{self as syn, CmdError};
use super::table::ResTable;
use super::{fail, Cmd, Done, Fw};
use crate::prm::cmd::*;
use crate::prm::command::*;
use crate::prm::consts::*;
use crate::prm::ctx::{atomic_caps, cmd_hca_cap, eqc, roce_cap};
use crate::prm::layout::{Member, PrmLayout};
use crate::prm::status::Status;

/// EQs per function: command, async and page-request EQs plus completion EQs.
pub(crate) const MAX_EQS: usize = 8;
/// Pages of 4 KiB an EQ buffer may span (1 MiB: 16384 EQEs). mlx5_core's largest is the async
/// EQ, 0x1000 + 0x80 entries rounded up to 8192, 512 KiB.
pub(crate) const EQ_MAX_PAGES: usize = 256;
/// The EQE size (`MLX5_EQE_SIZE`).
pub(crate) const EQE_BYTES: usize = 64;
/// log2 of [`EQE_BYTES`].
const EQE_SHIFT: u8 = EQE_BYTES.trailing_zeros() as u8;
/// The adapter page (`MLX5_ADAPTER_PAGE_SHIFT`).
const ADAPTER_PAGE: u64 = 4096;
/// First EQ number. EQN 0 is left unused so a zeroed `c_eqn` never names a live EQ.
const EQ_BASE: u32 = 1;
/// ISSIs this model supports: 0 and 1 (`supported_issi_dw0` bit per ISSI).
const SUPPORTED_ISSI: u32 = 0x3;
/// First UAR index of a PCI function: UAR page N is BAR 0 page N, and pages 0..=3 hold the
/// initialization segment (up to 0x2010) and the MSI-X table and PBA (0x2000, 0x3000).
pub(crate) const PCI_FIRST_UAR: u32 = 4;

/// `sizeof(struct mlx5_ifc_dtor_reg_bits)` in bytes.
pub(crate) const DTOR_BYTES: usize = 0x1e0 / 8;
/// `default_timeout` in seconds (multiplier 1).
const fn dtor_seconds(s: u32) -> u32 {
    (1 << 29) | (s & 0xf_ffff)
}
/// The DTOR fields the model reports: (byte offset in the register, value). `pcie_toggle_to`
/// at 0x20 bits, `health_poll_to` 0xa0, `fw_reset_to` 0xe0, `flush_on_err_to` 0x100,
/// `tear_down_to` 0x140.
pub(crate) const DTOR_REPORTED: [(usize, u32); 5] = [
    (0x04, dtor_seconds(2)),
    (0x14, dtor_seconds(2)),
    (0x1c, dtor_seconds(60)),
    (0x20, dtor_seconds(2)),
    (0x28, dtor_seconds(3)),
];
/// Offsets of the EQ doorbell in a UAR page (`MLX5_EQ_DOORBELL_OFFSET`, + 8 without arming).
pub(crate) const EQ_DB_ARM: u64 = 0x40;
/// See [`EQ_DB_ARM`].
pub(crate) const EQ_DB_NOARM: u64 = 0x48;

/// Where the function is in its life cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lifecycle {
    /// After reset, before ENABLE_HCA (and after DISABLE_HCA).
    Disabled,
    /// ENABLE_HCA done: the init commands are accepted, resource commands are not.
    Enabled,
    /// INIT_HCA done: everything is accepted.
    Initialized,
}

/// The current values of the writable capabilities (SET_HCA_CAP); QUERY_HCA_CAP with
/// `HCA_CAP_OPMOD_GET_CUR` reports them, `GET_MAX` reports the profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CurCaps {
    /// `cmd_hca_cap.log_max_qp` (mlx5_core limits it to 18).
    pub(crate) log_max_qp: Option<u32>,
    /// `cmd_hca_cap.pkey_table_size` encoding (0: 128 entries).
    pub(crate) pkey_table_size: u32,
    /// `atomic_caps.atomic_req_8B_endianness_mode`.
    pub(crate) atomic_req_8b_endianness_mode: u32,
}

/// An event queue.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Eq {
    /// `uid` of CREATE_EQ: 0, or `MLX5_SHARED_RESOURCE_UID` for completion EQs.
    pub(crate) uid: u16,
    /// The EQEs (64 bytes each) from the first byte of the buffer.
    pub(crate) ring: Ring,
    /// The UAR page whose EQ doorbell updates this EQ.
    pub(crate) uar_page: u32,
    /// The MSI-X vector (`eqc.intr`).
    pub(crate) intr: u16,
    /// `event_bitmask[0..4]`: bit N of word N / 64 enables event type N.
    pub(crate) mask: [u64; 4],
    /// Bus addresses of the buffer's pages, `page_bytes` each.
    pages: [u64; EQ_MAX_PAGES],
    npages: u16,
    page_bytes: u64,
    /// EQEs written so far (24-bit wrapping, like the hardware counter).
    pub(crate) producer: u32,
    /// The consumer counter the driver last wrote.
    pub(crate) consumer: u32,
    /// Armed: the next EQE (or a pending one at arming time) raises the vector.
    pub(crate) armed: bool,
    /// EQEs dropped because the queue was full.
    pub(crate) overruns: u32,
}

impl Eq {
    /// Whether event type `t` is enabled.
    pub(crate) fn wants(&self, t: u8) -> bool {
        let t = usize::from(t);
        self.mask
            .get(t / 64)
            .is_some_and(|w| w & (1u64 << (t % 64)) != 0)
    }

    /// Bus address of EQE `index` (wrapped to the queue size).
    fn entry_addr(&self, index: u32) -> Option<u64> {
        let off = self.ring.at(index);
        let page = usize::try_from(off / self.page_bytes).ok()?;
        if page >= usize::from(self.npages) {
            return None;
        }
        Some(self.pages.get(page)? + off % self.page_bytes)
    }
}

/// Life-cycle state and what the driver set: everything of the function but its EQs, and what
/// a power cycle puts back ([`HcaState::INITIALIZED`] is what the kernel simulator starts in).
#[derive(Clone, Copy, Debug)]
pub(crate) struct HcaState {
    pub(crate) life: Lifecycle,
    /// The ISSI SET_ISSI chose (0 until then).
    pub(crate) issi: u32,
    /// The `he` byte of HOST_ENDIANNESS, once written.
    pub(crate) host_endianness: Option<u8>,
    pub(crate) cur: CurCaps,
    /// SET_DRIVER_VERSION's string (NUL padded).
    pub(crate) driver_version: [u8; 64],
    /// The NODE_DESC register once written (`node_desc.rs`); `None`: the firmware's default.
    pub(crate) node_desc: Option<[u8; 64]>,
}

impl HcaState {
    /// An initialized function (mlx5_core's part is done), with the default settings.
    const INITIALIZED: HcaState = HcaState {
        life: Lifecycle::Initialized,
        issi: 1,
        host_endianness: None,
        cur: CUR_DEFAULT,
        driver_version: [0; 64],
        node_desc: None,
    };
}

/// Life-cycle state, negotiated settings and EQs.
pub(crate) struct Hca {
    pub(crate) st: HcaState,
    pub(crate) eqs: ResTable<Eq, MAX_EQS>,
}

/// What [`Fw::post_eqe`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EqePosted {
    /// Written; raise this MSI-X vector.
    Interrupt(u16),
    /// Written; the EQ is not armed, no interrupt now.
    Quiet,
}

/// Why [`Fw::post_eqe`] wrote nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EqeError {
    /// No EQ takes this event type.
    NoEq,
    /// The EQ is full (the driver did not advance its consumer counter).
    Overrun,
    /// The EQE's address was not mapped for the device.
    Dma,
}

const CUR_DEFAULT: CurCaps = CurCaps {
    log_max_qp: None,
    pkey_table_size: 0,
    atomic_req_8b_endianness_mode: 1,
};

impl Hca {
    /// An initialized function (what the kernel simulator models: mlx5_core's part is done).
    pub(crate) fn new() -> Self {
        Hca {
            st: HcaState::INITIALIZED,
            eqs: ResTable::new(EQ_BASE),
        }
    }

    /// [`Hca::new`] in place (the EQ table is 16 KiB).
    #[cfg(MODULE)]
    pub(crate) fn new_in_place() -> impl pin_init::Init<Self> {
        pin_init::init!(Hca {
            st: HcaState::INITIALIZED,
            eqs <- ResTable::new_in_place(EQ_BASE),
        })
    }

    /// Back to the state after a power cycle.
    pub(crate) fn reset(&mut self, life: Lifecycle) {
        self.st = HcaState {
            life,
            issi: if life == Lifecycle::Initialized { 1 } else { 0 },
            ..HcaState::INITIALIZED
        };
        self.eqs.clear();
    }
}

/// Commands accepted before INIT_HCA (in state Enabled).
pub(super) fn allowed_before_init(opcode: u16) -> bool {
    use crate::prm::opcode as op;
    matches!(
        opcode,
        op::ENABLE_HCA
            | op::DISABLE_HCA
            | op::QUERY_ISSI
            | op::SET_ISSI
            | op::QUERY_PAGES
            | op::QUERY_HCA_CAP
            | op::SET_HCA_CAP
            | op::ACCESS_REG
            | op::INIT_HCA
            | op::QUERY_ADAPTER
    )
}

impl Fw {
    /// The device as a PCI function presents it after reset: disabled, waiting for
    /// ENABLE_HCA. (`Fw::new` builds one already initialized, for the kernel simulator.)
    #[cfg_attr(MODULE, expect(dead_code, reason = "host callers only"))]
    pub(crate) fn cold_boot(&mut self) {
        self.clear_objects();
        self.uars = ResTable::new(PCI_FIRST_UAR);
        self.hca.reset(Lifecycle::Disabled);
    }

    /// Where the function is in its life cycle.
    #[cfg_attr(MODULE, expect(dead_code, reason = "host callers only"))]
    pub(crate) fn lifecycle(&self) -> Lifecycle {
        self.hca.st.life
    }

    /// The life-cycle gate of [`Fw::exec`]: `Some` refuses the command.
    pub(super) fn state_check(&self, opcode: u16) -> Option<CmdError> {
        use crate::prm::opcode as op;
        let ok = match self.hca.st.life {
            Lifecycle::Disabled => matches!(opcode, op::ENABLE_HCA | op::QUERY_ISSI),
            Lifecycle::Enabled => allowed_before_init(opcode),
            Lifecycle::Initialized => !matches!(
                opcode,
                op::ENABLE_HCA | op::SET_ISSI | op::SET_HCA_CAP | op::INIT_HCA
            ),
        };
        (!ok).then_some(CmdError::new(Status::BAD_SYS_STATE_ERR, syn::HCA_STATE))
    }

    /// Frees every resource object (TEARDOWN_HCA, cold boot, [`Fw::reset`]).
    pub(super) fn clear_objects(&mut self) {
        self.pds.clear();
        self.uars.clear();
        self.tds.clear();
        self.uctxs.clear();
        self.cqs.clear();
        self.qps.clear();
        self.mkeys.clear();
        self.rmps.clear();
        self.qcounters.clear();
        self.umems.clear();
        self.xrc.clear();
        self.memic.clear();
        self.events.clear();
        self.sq_hint = None;
        self.resize = None;
        self.flush = None;
        self.started = None;
        self.scan_start = 0;
        self.hca.eqs.clear();
        self.reset_ports();
    }

    /// ENABLE_HCA: function 0 of this PCI function (no embedded CPU, no other functions).
    pub(super) fn enable_hca(&mut self, c: &mut Cmd<'_, EnableHca>) -> Done {
        c.own_function(&[
            enable_hca_in::function_id,
            enable_hca_in::embedded_cpu_function,
        ])?;
        self.hca.st.life = Lifecycle::Enabled;
        Ok(())
    }

    /// DISABLE_HCA: back to Disabled; after TEARDOWN_HCA (or before INIT_HCA).
    pub(super) fn disable_hca(&mut self, c: &mut Cmd<'_, DisableHca>) -> Done {
        c.own_function(&[
            disable_hca_in::function_id,
            disable_hca_in::embedded_cpu_function,
        ])?;
        if self.hca.st.life != Lifecycle::Enabled {
            return fail(Status::BAD_SYS_STATE_ERR, syn::HCA_STATE);
        }
        self.hca.reset(Lifecycle::Disabled);
        Ok(())
    }

    /// QUERY_ISSI: ISSI 0 and 1 supported, the current one.
    pub(super) fn query_issi(&mut self, c: &mut Cmd<'_, QueryIssi>) -> Done {
        c.set(query_issi_out::current_issi, self.hca.st.issi)?;
        c.set(query_issi_out::supported_issi_dw0, SUPPORTED_ISSI)
    }

    /// SET_ISSI: one of the supported ISSIs.
    pub(super) fn set_issi(&mut self, c: &mut Cmd<'_, SetIssi>) -> Done {
        let issi = c.get(set_issi_in::current_issi);
        if issi >= 32 || SUPPORTED_ISSI & (1 << issi) == 0 {
            return fail(Status::BAD_PARAM_ERR, syn::ISSI_UNSUPPORTED);
        }
        self.hca.st.issi = issi;
        Ok(())
    }

    /// QUERY_PAGES: the model needs no host memory, so every answer is 0 pages (mlx5_core then
    /// never sends MANAGE_PAGES: `mlx5_satisfy_startup_pages()` returns on `!npages`).
    pub(super) fn query_pages(&mut self, c: &mut Cmd<'_, QueryPages>) -> Done {
        if !(QUERY_PAGES_BOOT..=QUERY_PAGES_REGULAR).contains(&c.op_mod) {
            return fail(Status::BAD_PARAM_ERR, syn::BAD_OP_MOD);
        }
        c.own_function(&[
            query_pages_in::function_id,
            query_pages_in::embedded_cpu_function,
        ])?;
        c.set(query_pages_out::function_id, 0)?;
        c.set(query_pages_out::num_pages, 0)
    }

    /// SET_HCA_CAP: general, atomic and RoCE groups. The writable members are checked and
    /// kept (reported by QUERY_HCA_CAP cur); the rest of the page is what the driver copied
    /// from cur and is ignored, as the firmware ignores read-only members.
    pub(super) fn set_hca_cap(&mut self, c: &mut Cmd<'_, SetHcaCap>) -> Done {
        c.own_function(&[set_hca_cap_in::other_function, set_hca_cap_in::function_id])?;
        if c.op_mod & 1 != 0 {
            return fail(Status::BAD_PARAM_ERR, syn::BAD_OP_MOD);
        }
        fn cap<A: PrmLayout>(f: Member<A>) -> Member<set_hca_cap_in::Bits> {
            set_hca_cap_in::capability.inner(f)
        }
        match c.op_mod >> 1 {
            CAP_GENERAL => {
                let log_max_qp = c.get(cap(cmd_hca_cap::log_max_qp));
                if log_max_qp == 0 || log_max_qp > self.cfg.profile.log_max_qp {
                    return fail(Status::BAD_PARAM_ERR, syn::CAP_NOT_WRITABLE);
                }
                // Only 128 PKeys (encoding 0) are offered.
                let pkey = c.get(cap(cmd_hca_cap::pkey_table_size));
                // No command checksums; 4 KiB UAR pages (log 0 above 4 KiB), no `uar_4k`
                // mode (it is not advertised).
                let checksum = c.get(cap(cmd_hca_cap::cmdif_checksum));
                let uar_page = c.get(cap(cmd_hca_cap::log_uar_page_sz));
                let uar_4k = c.get(cap(cmd_hca_cap::uar_4k));
                if pkey != 0 || checksum != 0 || uar_page != 0 || uar_4k != 0 {
                    return fail(Status::BAD_PARAM_ERR, syn::CAP_NOT_WRITABLE);
                }
                self.hca.st.cur.log_max_qp = Some(log_max_qp);
                self.hca.st.cur.pkey_table_size = pkey;
                Ok(())
            }
            CAP_ATOMIC => {
                let mode = c.get(cap(atomic_caps::atomic_req_8B_endianness_mode));
                // Only host endianness (1) is implemented by the data path.
                if mode != 1 {
                    return fail(Status::BAD_PARAM_ERR, syn::CAP_NOT_WRITABLE);
                }
                self.hca.st.cur.atomic_req_8b_endianness_mode = mode;
                Ok(())
            }
            CAP_ROCE if self.cfg.link_layer == super::profile::LinkLayer::Ethernet => {
                // The source UDP port is always software-chosen here (cur already says 1).
                if c.get(cap(roce_cap::sw_r_roce_src_udp_port)) != 1 {
                    return fail(Status::BAD_PARAM_ERR, syn::CAP_NOT_WRITABLE);
                }
                Ok(())
            }
            _ => fail(Status::BAD_PARAM_ERR, syn::CAP_TYPE),
        }
    }

    /// INIT_HCA: Enabled -> Initialized. `sw_owner_id` is not advertised and must be zero.
    pub(super) fn init_hca(&mut self, c: &mut Cmd<'_, InitHca>) -> Done {
        if c.in_bytes(init_hca_in::sw_owner_id).iter().any(|&b| b != 0)
            || c.get(init_hca_in::sw_vhca_id) != 0
        {
            return fail(Status::BAD_PARAM_ERR, syn::RESERVED_NOT_ZERO);
        }
        self.hca.st.life = Lifecycle::Initialized;
        Ok(())
    }

    /// TEARDOWN_HCA, graceful profile: every object is released (the firmware frees what the
    /// driver left), Initialized -> Enabled. Force close is not advertised (`force_teardown`).
    pub(super) fn teardown_hca(&mut self, c: &mut Cmd<'_, TeardownHca>) -> Done {
        if c.get(teardown_hca_in::profile) != TEARDOWN_GRACEFUL_CLOSE {
            return fail(Status::BAD_PARAM_ERR, syn::TEARDOWN_PROFILE);
        }
        self.clear_objects();
        self.hca.st.life = Lifecycle::Enabled;
        Ok(())
    }

    /// SET_DRIVER_VERSION: keeps the string (`"Linux,mlx5_core,<version>"`).
    pub(super) fn set_driver_version(&mut self, c: &mut Cmd<'_, SetDriverVersion>) -> Done {
        let s = c.in_bytes(set_driver_version_in::driver_version);
        let n = s.len().min(self.hca.st.driver_version.len());
        self.hca.st.driver_version.fill(0);
        if let (Some(d), Some(s)) = (self.hca.st.driver_version.get_mut(..n), s.get(..n)) {
            d.copy_from_slice(s);
        }
        Ok(())
    }

    /// The driver version string SET_DRIVER_VERSION stored (up to the first NUL).
    #[cfg_attr(MODULE, expect(dead_code, reason = "host callers only"))]
    pub(crate) fn driver_version(&self) -> &[u8] {
        let v = &self.hca.st.driver_version;
        let end = v.iter().position(|&b| b == 0).unwrap_or(v.len());
        v.get(..end).unwrap_or(&[])
    }

    /// ACCESS_REG HOST_ENDIANNESS (16 bytes, `he` in byte 0): write stores, read returns it.
    pub(super) fn host_endianness_reg(&mut self, c: &mut Cmd<'_, AccessReg>) -> Done {
        let off = access_register_in::SIZE_BYTES;
        let (Some(inb), true) = (c.inbox_raw().get(off), c.inbox_raw().len() >= off + 16) else {
            return fail(Status::BAD_INP_LEN_ERR, syn::INBOX_SHORT);
        };
        let he = *inb;
        if c.out_len() < access_register_out::SIZE_BYTES + 16 {
            return fail(Status::BAD_OUTP_LEN_ERR, syn::OUTBOX_SHORT);
        }
        match c.op_mod {
            ACCESS_REG_WRITE => {
                if he != SET_HOST_ENDIANNESS_LE && he != 0 {
                    return fail(Status::BAD_PARAM_ERR, syn::REG_BAD_WRITE);
                }
                self.hca.st.host_endianness = Some(he);
            }
            ACCESS_REG_READ => {}
            _ => return fail(Status::BAD_PARAM_ERR, syn::BAD_OP_MOD),
        }
        let v = self.hca.st.host_endianness.unwrap_or(0);
        if let Some(b) = c.out.raw_mut().get_mut(access_register_out::SIZE_BYTES) {
            *b = v;
        }
        Ok(())
    }

    /// ACCESS_REG DTOR (`struct mlx5_ifc_dtor_reg_bits`, 60 bytes), read only: the default
    /// timeouts `tout_query_dtor()` takes (each a `default_timeout`: multiplier in bits 31:29,
    /// 0 ms / 1 s / 2 min / 3 h, value in 19:0; 0 keeps mlx5_core's own default). The model
    /// reports upstream's defaults for the PCI toggle (2 s), health poll (2 s), firmware
    /// reset (60 s), flush on error (2 s) and teardown (3 s), and 0 for the rest. (The
    /// command timeout is not in this register: it is the init segment's `cmd_exec_to`.)
    pub(super) fn dtor_reg(&mut self, c: &mut Cmd<'_, AccessReg>) -> Done {
        let off = access_register_in::SIZE_BYTES;
        if c.inbox_raw().len() < off + DTOR_BYTES {
            return fail(Status::BAD_INP_LEN_ERR, syn::INBOX_SHORT);
        }
        let out_off = access_register_out::SIZE_BYTES;
        if c.out_len() < out_off + DTOR_BYTES {
            return fail(Status::BAD_OUTP_LEN_ERR, syn::OUTBOX_SHORT);
        }
        if c.op_mod != ACCESS_REG_READ {
            return fail(Status::BAD_PARAM_ERR, syn::REG_BAD_WRITE);
        }
        let Some(dst) = c.out.raw_mut().get_mut(out_off..out_off + DTOR_BYTES) else {
            return fail(Status::BAD_OUTP_LEN_ERR, syn::OUTBOX_SHORT);
        };
        dst.fill(0);
        for &(byte, value) in DTOR_REPORTED.iter() {
            if let Some(w) = dst.get_mut(byte..byte + 4) {
                w.copy_from_slice(&value.to_be_bytes());
            }
        }
        Ok(())
    }

    /// The "cur" overrides on top of the profile's general caps (QUERY_HCA_CAP GET_CUR).
    pub(super) fn apply_cur_general(
        &self,
        c: &mut Cmd<'_, QueryHcaCap>,
        cap: Member<query_hca_cap_out::Bits>,
    ) -> Result<(), CmdError> {
        if let Some(q) = self.hca.st.cur.log_max_qp {
            c.set(cap.inner(cmd_hca_cap::log_max_qp), q)?;
        }
        c.set(
            cap.inner(cmd_hca_cap::pkey_table_size),
            self.hca.st.cur.pkey_table_size,
        )
    }

    /// CREATE_EQ: context, page list, event mask. The UAR must be allocated; the EQ starts
    /// unarmed (mlx5_core arms it right after, `mlx5_eq_enable()`).
    pub(super) fn create_eq(&mut self, c: &mut Cmd<'_, CreateEq>) -> Done {
        let ctx = |f| create_eq_in::eq_context_entry.inner(f);
        for f in [eqc::status, eqc::st, eqc::page_offset] {
            if c.get(ctx(f)) != 0 {
                return fail(Status::BAD_PARAM_ERR, syn::RESERVED_NOT_ZERO);
            }
        }
        let log_size = c.get(ctx(eqc::log_eq_size));
        let log_page = c.get(ctx(eqc::log_page_size));
        if log_page > 8 {
            return fail(Status::BAD_PARAM_ERR, syn::EQ_BAD_SIZE);
        }
        let page_bytes = ADAPTER_PAGE << log_page;
        let bytes = (EQE_BYTES as u64) << log_size.min(40);
        let npages = bytes.div_ceil(page_bytes);
        if log_size == 0 || log_size > 22 || npages > EQ_MAX_PAGES as u64 {
            return fail(Status::BAD_PARAM_ERR, syn::EQ_BAD_SIZE);
        }
        let uar = c.get(ctx(eqc::uar_page));
        if self.uars.get(uar).is_none() {
            return fail(Status::BAD_RES_ERR, syn::EQ_BAD_UAR);
        }
        let intr = c.get(ctx(eqc::intr));
        // pas[] follows the fixed layout.
        let first = create_eq_in::SIZE_BYTES;
        let need = usize::try_from(npages)
            .ok()
            .and_then(|n| n.checked_mul(8))
            .and_then(|b| b.checked_add(first));
        if !matches!(need, Some(n) if c.inbox_raw().len() >= n) {
            return fail(Status::BAD_INP_LEN_ERR, syn::INBOX_SHORT);
        }
        let mut eq = Eq {
            uid: c.uid,
            // log_size is 1..=22 here.
            ring: Ring::new(u8::try_from(log_size).unwrap_or(0), EQE_SHIFT, 0),
            uar_page: uar,
            intr: intr as u16,
            mask: [0; 4],
            pages: [0; EQ_MAX_PAGES],
            npages: npages as u16,
            page_bytes,
            producer: 0,
            consumer: 0,
            armed: false,
            overruns: 0,
        };
        for (i, w) in eq.mask.iter_mut().enumerate() {
            let f: Member<create_eq_in::Bits> =
                Member::new("event_bitmask", create_eq_in::event_bitmask.bit_off, 64).nth(i as u32);
            *w = u64::from_be_bytes(c.inbox.array(f));
        }
        for (i, p) in eq.pages.iter_mut().take(npages as usize).enumerate() {
            let o = first + i * 8;
            let mut a = [0u8; 8];
            if let Some(b) = c.inbox_raw().get(o..o + 8) {
                a.copy_from_slice(b);
            }
            *p = u64::from_be_bytes(a) & !(page_bytes - 1);
        }
        let eqn = self.hca.eqs.insert(eq)?;
        c.set(create_eq_out::eq_number, eqn)
    }

    /// DESTROY_EQ.
    pub(super) fn destroy_eq(&mut self, c: &mut Cmd<'_, DestroyEq>) -> Done {
        let eqn = c.get(destroy_eq_in::eq_number);
        if self.hca.eqs.free(eqn).is_none() {
            return fail(Status::BAD_RES_ERR, syn::EQ_UNKNOWN);
        }
        Ok(())
    }

    /// A live EQ.
    #[cfg_attr(MODULE, expect(dead_code, reason = "host callers only"))]
    pub(crate) fn eq(&self, eqn: u32) -> Option<&Eq> {
        self.hca.eqs.get(eqn)
    }

    /// Writes an EQE of `event_type`/`sub_type` with `data` (the 28-byte `ev_data`) to the
    /// first EQ whose mask takes the event type.
    ///
    /// # Errors
    ///
    /// [`EqeError`]; nothing is written then.
    pub(crate) fn post_eqe(
        &mut self,
        mem: &dyn DmaMem,
        event_type: u8,
        sub_type: u8,
        data: &[u8; 28],
    ) -> Result<EqePosted, EqeError> {
        let Some(eqn) = self
            .hca
            .eqs
            .iter()
            .find(|(_, e)| e.wants(event_type))
            .map(|(n, _)| n)
        else {
            return Err(EqeError::NoEq);
        };
        self.post_eqe_to(mem, eqn, event_type, sub_type, data)
    }

    /// Writes an EQE to EQ `eqn` whatever its mask (completion EQEs go to the EQ the CQ
    /// names in `cqc.c_eqn`, not by mask).
    ///
    /// # Errors
    ///
    /// [`EqeError`]; nothing is written then.
    pub(crate) fn post_eqe_to(
        &mut self,
        mem: &dyn DmaMem,
        eqn: u32,
        event_type: u8,
        sub_type: u8,
        data: &[u8; 28],
    ) -> Result<EqePosted, EqeError> {
        let eq = self.hca.eqs.get_mut(eqn).ok_or(EqeError::NoEq)?;
        let size = eq.ring.entries();
        if eq.producer.wrapping_sub(eq.consumer) & 0x00ff_ffff >= size {
            eq.overruns = eq.overruns.saturating_add(1);
            return Err(EqeError::Overrun);
        }
        let addr = eq.entry_addr(eq.producer).ok_or(EqeError::Dma)?;
        let mut eqe = [0u8; EQE_BYTES];
        eqe[1] = event_type;
        eqe[3] = sub_type;
        eqe[32..60].copy_from_slice(data);
        // Owner: 0 on the first pass (mlx5_core initializes every EQE's owner to 1).
        eqe[63] = u8::from(eq.ring.phase(eq.producer));
        mem.write(addr, &eqe).map_err(|_| EqeError::Dma)?;
        eq.producer = eq.producer.wrapping_add(1) & 0x00ff_ffff;
        if eq.armed {
            eq.armed = false;
            Ok(EqePosted::Interrupt(eq.intr))
        } else {
            Ok(EqePosted::Quiet)
        }
    }

    /// The command-completion EQE (`MLX5_EVENT_TYPE_CMD`, `ev_data.cmd.vector` = the slots).
    ///
    /// # Errors
    ///
    /// As [`Fw::post_eqe`]; [`EqeError::NoEq`] before the command EQ exists (polling mode).
    #[cfg_attr(MODULE, expect(dead_code, reason = "host callers only"))]
    pub(crate) fn post_cmd_eqe(
        &mut self,
        mem: &dyn DmaMem,
        slots: u32,
    ) -> Result<EqePosted, EqeError> {
        let mut data = [0u8; 28];
        data[..4].copy_from_slice(&slots.to_be_bytes());
        self.post_eqe(mem, EVENT_TYPE_CMD, 0, &data)
    }

    /// Reports a data-path event as hardware does (upstream `mlx5_eq_comp_int()`,
    /// `mlx5_eq_async_int()`): a completion is an EQE of type `MLX5_EVENT_TYPE_COMP` with the
    /// CQ number (`struct mlx5_eqe_comp`) on the EQ of the CQ's `c_eqn`; a CQ error
    /// (`struct mlx5_eqe_cq_err`, syndrome 1: overrun) and QP/SRQ events (`struct
    /// mlx5_eqe_qp_srq`: queue type, number) go to the EQ whose mask takes their type (the
    /// async EQ). Returns `Ok(None)` for an event of an object that is gone.
    ///
    /// # Errors
    ///
    /// [`EqeError`]; nothing is written then.
    #[cfg_attr(MODULE, expect(dead_code, reason = "host callers only"))]
    pub(crate) fn post_event(
        &mut self,
        mem: &dyn DmaMem,
        ev: super::events::Event,
    ) -> Result<Option<EqePosted>, EqeError> {
        use super::events::Event;
        let mut data = [0u8; 28];
        let ty = ev.eqe_type();
        match ev {
            Event::Completion { cqn } => {
                let Some(cq) = self.cqs.get(cqn) else {
                    return Ok(None);
                };
                let eqn = crate::prm::ctx::cqc::c_eqn_or_apu_element
                    .get(&cq.cqc)
                    .map_err(|_| EqeError::NoEq)?;
                data[24..28].copy_from_slice(&(cqn & 0x00ff_ffff).to_be_bytes());
                self.post_eqe_to(mem, eqn, ty, 0, &data).map(Some)
            }
            Event::CqError { cqn } => {
                data[0..4].copy_from_slice(&(cqn & 0x00ff_ffff).to_be_bytes());
                // MLX5_CQ_ERROR_SYNDROME_CQ_OVERRUN.
                data[11] = 1;
                self.post_eqe(mem, ty, 0, &data).map(Some)
            }
            Event::Qp { qpn, .. } => {
                // MLX5_EVENT_QUEUE_TYPE_QP.
                data[20] = 0;
                data[24..28].copy_from_slice(&(qpn & 0x00ff_ffff).to_be_bytes());
                self.post_eqe(mem, ty, 0, &data).map(Some)
            }
            Event::Srq { srqn, .. } => {
                data[24..28].copy_from_slice(&(srqn & 0x00ff_ffff).to_be_bytes());
                self.post_eqe(mem, ty, 0, &data).map(Some)
            }
        }
    }

    /// A write of `value` (big-endian on the bus, given here as the number) to UAR page `uar`
    /// at `offset`: the EQ doorbell (`eqn << 24 | consumer`). Returns the vector to raise
    /// when arming an EQ that has unconsumed EQEs. Anything else is ignored (`None`).
    #[cfg_attr(MODULE, expect(dead_code, reason = "host callers only"))]
    pub(crate) fn eq_doorbell(&mut self, uar: u32, offset: u64, value: u32) -> Option<u16> {
        let arm = match offset {
            EQ_DB_ARM => true,
            EQ_DB_NOARM => false,
            _ => return None,
        };
        let eqn = value >> 24;
        let eq = self.hca.eqs.get_mut(eqn)?;
        if eq.uar_page != uar {
            return None;
        }
        eq.consumer = value & 0x00ff_ffff;
        if !arm {
            return None;
        }
        if eq.consumer != eq.producer {
            eq.armed = false;
            Some(eq.intr)
        } else {
            eq.armed = true;
            None
        }
    }
}
