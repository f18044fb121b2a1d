// SPDX-License-Identifier: GPL-2.0

//! [`CxFunction`]: the PCI function. BAR 0 accesses arrive as bytes at an offset (what a
//! transport such as vfio-user's REGION_READ/WRITE carries); registers of the init segment are
//! big-endian words, the MSI-X table little-endian. Commands run synchronously when the
//! doorbell is written; interrupts are queued as MSI-X vector numbers for the transport
//! ([`CxFunction::take_interrupts`]).

use std::time::{Duration, Instant};

use crate::cmdq::{Delivery, Entry};
use crate::config::{ConfigSpace, MSIX_ENABLE, MSIX_MASKALL};
use crate::fwsim::engine::{self, Node, Wire};
use crate::fwsim::fault::FaultAction;
use crate::fwsim::hca::EqePosted;
use crate::fwsim::profile::{LinkLayer, CONNECTX6_DX, CONNECTX7};
use crate::fwsim::switch::Switch;
use crate::fwsim::{Config, ExecError, Fw};
use crate::iova::{DeviceMap, Remapped};
use crate::mem::{Dma, GuestMemory};
use crate::prm::consts::{
    EVENT_TYPE_PORT_CHANGE, PORT_CHANGE_SUBTYPE_ACTIVE, PORT_CHANGE_SUBTYPE_DOWN,
};
use crate::prm::status::Status;
use crate::regs::*;
use std::cell::RefCell;

/// The adapter the function presents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// ConnectX-7 (15b3:1021), one InfiniBand port.
    Cx7Ib,
    /// ConnectX-7, one Ethernet (RoCE) port.
    Cx7Eth,
    /// ConnectX-6 Dx (15b3:101d), one Ethernet port.
    Cx6DxEth,
}

/// How MSI-X is delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MsixMode {
    /// The device's own table and PBA in BAR 0 decide (enable, function mask, vector mask).
    Table,
    /// The transport emulates the table (QEMU's vfio-user client does): every interrupt is
    /// passed on by vector number.
    External,
}

/// Counters for tests and logs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Commands executed.
    pub commands: u64,
    /// Commands refused with a delivery status.
    pub delivery_errors: u64,
    /// Command completions that could not be written to guest memory.
    pub dma_errors: u64,
    /// Doorbell bits for slots that were not hardware-owned.
    pub spurious_doorbells: u64,
    /// Writes to BAR 0 that no register takes.
    pub ignored_writes: u64,
    /// Data-path doorbells taken (CQ arm and send doorbells in allocated UAR pages).
    pub doorbells: u64,
    /// WQEs the data-path engine executed or flushed.
    pub wqes: u64,
    /// Data-path events written as EQEs (completions, CQ errors, QP and SRQ events).
    pub eqes: u64,
    /// Data-path events that could not be written (no EQ takes them, EQ full, bad memory).
    pub eqe_errors: u64,
    /// Commands held by a hang fault and completed late (test window).
    pub late_completions: u64,
    /// Commands run through the test window.
    pub window_commands: u64,
}

/// `CMD_IF_REV` (mlx5_core's cmd.c): the command interface revision mlx5_core requires in
/// the init segment (the kernel simulator has no init segment).
const CMD_IF_REV: u32 = 5;

/// Ticks of the health counter: one per 100 ms (mlx5_core polls every 2 s).
const HEALTH_TICK: Duration = Duration::from_millis(100);
/// Reads of `initializing` that still see the bit set after reset (the driver's wait loop is
/// exercised, briefly).
const INIT_READS: u32 = 2;

/// The NodeGUID of the function's switch.
const SWITCH_GUID: u64 = 0x0c42_a103_00fe_0000;

/// One emulated ConnectX PCI function.
pub struct CxFunction {
    model: Model,
    fw: Box<Fw>,
    /// The switch the function's port is linked to (its port 1), where the embedded subnet
    /// manager runs (`fwsim/switch.rs`, `fwsim/sm.rs`). The data path's SMPs and LID-routed
    /// packets go through it (InfiniBand).
    switch: Box<Switch>,
    /// Whether the switch's embedded subnet manager runs (the test window's
    /// [`tw_cmd::SM`]): off, the ports wait for a host SM (opensm) to sweep them.
    embedded_sm: bool,
    config: ConfigSpace,
    cmdq_h: u32,
    cmdq_l: u32,
    nic_state: u32,
    init_reads_left: u32,
    start: Instant,
    /// Time added by [`CxFunction::advance`] (tests).
    skew: Duration,
    /// Health counter frozen at this value (fault injection).
    health_stall: Option<u32>,
    msix_table: [[u32; 4]; MSIX_VECTORS as usize],
    msix_pending: u32,
    msix_mode: MsixMode,
    irqs: Vec<u16>,
    stats: Stats,
    log: Vec<CommandRecord>,
    /// The first half (offset, word) of a 64-bit UAR store made as two 32-bit writes.
    db_half: Option<(u64, u32)>,
    /// Page lists kept on the host side (`iova.rs`).
    iova: RefCell<DeviceMap>,
    /// Device time at which the data path wants to run again ([`CxFunction::poll_datapath`]).
    next_run: Option<Duration>,
    /// Entries (bus addresses) of commands a hang fault holds.
    held: Vec<u64>,
    /// The test window's argument registers and last command and result.
    tw_args: [u32; 3],
    tw_last: u32,
    tw_result: u32,
}

/// One executed command, for traces ([`CxFunction::command_log`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommandRecord {
    /// `mbox_in.opcode`.
    pub opcode: u16,
    /// `mbox_in.op_mod`.
    pub op_mod: u16,
    /// `mbox_out.status` (0 OK).
    pub status: u8,
    /// `mbox_out.syndrome`.
    pub syndrome: u32,
}

/// Commands kept in the log: a whole `make bench-pcifn` boot's (12 bytes each), so that the
/// commands of each figure can be counted from the server's log.
const LOG_MAX: usize = 1 << 16;
/// WQEs one engine pass may execute (a guest that claims a huge doorbell record cannot hold
/// the device; the rest runs at the next [`CxFunction::poll_datapath`]).
const ENGINE_BUDGET: u32 = 256;
/// While QPs exist, how often the transport should call [`CxFunction::poll_datapath`] when
/// nothing else is due: receive WQEs are posted with no doorbell store (the doorbell record
/// is the truth, as `Documentation/datapath.md` says), so a waiting sender is looked at again.
pub const DATAPATH_POLL: Duration = Duration::from_millis(10);
/// Blue-flame buffers start every 256 bytes (`bf_buf_size`, half a 512-byte register); a
/// doorbell is the first 8 bytes of one.
const BF_STRIDE: u64 = 0x100;

impl CxFunction {
    /// A function after power-on: the firmware is "initializing" for a moment, then waits for
    /// the driver's ENABLE_HCA.
    pub fn new(model: Model, serial: u32) -> Self {
        let (profile, link_layer, class) = match model {
            Model::Cx7Ib => (CONNECTX7, LinkLayer::Ib, 0x02_07_00),
            Model::Cx7Eth => (CONNECTX7, LinkLayer::Ethernet, 0x02_00_00),
            Model::Cx6DxEth => (CONNECTX6_DX, LinkLayer::Ethernet, 0x02_00_00),
        };
        let cfg = Config {
            profile,
            link_layer,
            num_ports: 1,
            serial,
            // No BAR window for MEMIC (yet): no `device_memory`, DM is EOPNOTSUPP there.
            memic: false,
        };
        // Every profile above fits its link layer and port count; `Fw::new` cannot refuse.
        let mut fw = match Fw::new(cfg) {
            Ok(fw) => Box::new(fw),
            Err(e) => unreachable!("built-in profile refused: {e:?}"),
        };
        fw.cold_boot();
        let mut switch = Box::new(Switch::new(1, SWITCH_GUID));
        crate::fwsim::sm::sweep(&mut fw, &mut switch, 1);
        let mut msix_table = [[0u32; 4]; MSIX_VECTORS as usize];
        // Vector control: masked after reset.
        for v in msix_table.iter_mut() {
            v[3] = 1;
        }
        CxFunction {
            model,
            fw,
            switch,
            embedded_sm: true,
            config: ConfigSpace::new(profile.device_id, class),
            cmdq_h: 0,
            cmdq_l: 0,
            nic_state: 0,
            init_reads_left: INIT_READS,
            start: Instant::now(),
            skew: Duration::ZERO,
            health_stall: None,
            msix_table,
            msix_pending: 0,
            msix_mode: MsixMode::Table,
            irqs: Vec::new(),
            stats: Stats::default(),
            log: Vec::new(),
            db_half: None,
            next_run: None,
            iova: RefCell::default(),
            held: Vec::new(),
            tw_args: [0; 3],
            tw_last: 0,
            tw_result: 0,
        }
    }

    /// The model presented.
    pub fn model(&self) -> Model {
        self.model
    }

    /// Chooses who interprets the MSI-X table.
    pub fn set_msix_mode(&mut self, mode: MsixMode) {
        self.msix_mode = mode;
    }

    /// Counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Firmware life-cycle state, for logs and tests: "disabled", "enabled", "initialized".
    pub fn lifecycle(&self) -> &'static str {
        match self.fw.lifecycle() {
            crate::fwsim::hca::Lifecycle::Disabled => "disabled",
            crate::fwsim::hca::Lifecycle::Enabled => "enabled",
            crate::fwsim::hca::Lifecycle::Initialized => "initialized",
        }
    }

    /// Whether any resource object (PD, UAR, CQ, QP, mkey, ...) is alive.
    pub fn has_objects(&self) -> bool {
        !self.fw.counts().is_zero()
    }

    /// Moves the device's clock forward (tests of the health counter).
    pub fn advance(&mut self, d: Duration) {
        self.skew += d;
    }

    /// Freezes (`true`) or restarts the health counter: mlx5_core's health poll reports a
    /// stalled counter as a fatal error.
    pub fn stall_health(&mut self, stall: bool) {
        self.health_stall = stall.then(|| self.health_counter_now());
    }

    fn elapsed(&self) -> Duration {
        self.start.elapsed() + self.skew
    }

    fn health_counter_now(&self) -> u32 {
        (self.elapsed().as_millis() / HEALTH_TICK.as_millis()) as u32
    }

    /// Reads configuration space.
    pub fn config_read(&self, off: usize, buf: &mut [u8]) {
        self.config.read(off, buf);
    }

    /// Writes configuration space.
    pub fn config_write(&mut self, off: usize, data: &[u8]) {
        let was = self.config.msix_control();
        self.config.write(off, data);
        if self.config.msix_control() != was {
            self.msix_update();
        }
    }

    /// Interrupts raised since the last call, as MSI-X vector numbers, oldest first.
    pub fn take_interrupts(&mut self) -> Vec<u16> {
        std::mem::take(&mut self.irqs)
    }

    /// The MSI-X message (address, data) of `vector` as the guest programmed it.
    pub fn msix_message(&self, vector: u16) -> Option<(u64, u32)> {
        let e = self.msix_table.get(usize::from(vector))?;
        Some(((u64::from(e[1]) << 32) | u64::from(e[0]), e[2]))
    }

    fn raise(&mut self, vector: u16) {
        if self.msix_mode == MsixMode::External {
            self.irqs.push(vector);
            return;
        }
        let ctl = self.config.msix_control();
        let Some(e) = self.msix_table.get(usize::from(vector)) else {
            return;
        };
        if ctl & MSIX_ENABLE == 0 {
            // No INTx: mlx5_core uses MSI-X only; an interrupt without MSI-X is dropped.
            return;
        }
        if ctl & MSIX_MASKALL != 0 || e[3] & 1 != 0 {
            self.msix_pending |= 1 << vector;
        } else {
            self.irqs.push(vector);
        }
    }

    /// Delivers pending vectors that are no longer masked.
    fn msix_update(&mut self) {
        let ctl = self.config.msix_control();
        if ctl & MSIX_ENABLE == 0 || ctl & MSIX_MASKALL != 0 {
            return;
        }
        for v in 0..MSIX_VECTORS {
            let bit = 1u32 << v;
            if self.msix_pending & bit != 0 && self.msix_table[usize::from(v)][3] & 1 == 0 {
                self.msix_pending &= !bit;
                self.irqs.push(v);
            }
        }
    }

    /// The value of the 32-bit big-endian register at `off` (4-byte aligned) of the init
    /// segment, or `None` where nothing is (reads as zero).
    fn iseg_reg(&mut self, off: u64) -> Option<u32> {
        let p = self.fw.config().profile;
        let (maj, min, sub) = p.fw_rev;
        let t = self.elapsed().as_nanos() as u64;
        Some(match off {
            FW_REV => (u32::from(min) << 16) | u32::from(maj),
            CMDIF_REV_FW_SUB => (CMD_IF_REV << 16) | u32::from(sub),
            CMDQ_ADDR_H => self.cmdq_h,
            CMDQ_ADDR_L_SZ => {
                (self.cmdq_l & !0xfff)
                    | (self.nic_state << 8)
                    | (CMDQ_LOG_SIZE << 4)
                    | CMDQ_LOG_STRIDE
            }
            INITIALIZING => {
                if self.init_reads_left > 0 {
                    self.init_reads_left -= 1;
                    1 << 31
                } else {
                    0
                }
            }
            CMD_EXEC_TO => CMD_EXEC_TO_VALUE,
            CMD_Q_INIT_TO => CMD_Q_INIT_TO_VALUE,
            INTERNAL_TIMER_H | REAL_TIME_H => (t >> 32) as u32,
            INTERNAL_TIMER_L | REAL_TIME_L => t as u32,
            HEALTH_COUNTER => self
                .health_stall
                .unwrap_or_else(|| self.health_counter_now()),
            _ => return None,
        })
    }

    /// Reads BAR 0 at `off` into `buf` (any size and alignment; registers are assembled
    /// from their big-endian bytes). Unimplemented space reads as zero.
    pub fn bar0_read(&mut self, off: u64, buf: &mut [u8]) {
        for (i, b) in buf.iter_mut().enumerate() {
            *b = 0;
            let Some(o) = off.checked_add(i as u64) else {
                continue;
            };
            let word = o & !3;
            let byte = (o & 3) as usize;
            if o < INIT_SEG_END {
                if let Some(v) = self.iseg_reg(word) {
                    *b = v.to_be_bytes()[byte];
                }
            } else if (MSIX_TABLE..MSIX_TABLE + u64::from(MSIX_VECTORS) * 16).contains(&o) {
                let idx = ((o - MSIX_TABLE) / 16) as usize;
                let w = (((o - MSIX_TABLE) % 16) / 4) as usize;
                *b = self.msix_table[idx][w].to_le_bytes()[byte];
            } else if (MSIX_PBA..MSIX_PBA + 8).contains(&o) {
                *b = (u64::from(self.msix_pending)).to_le_bytes()[(o - MSIX_PBA) as usize];
            } else if (TEST_WINDOW..BAR0_SIZE).contains(&o) {
                *b = self.tw_read((o - TEST_WINDOW) & !3).to_le_bytes()[byte];
            }
        }
    }

    /// Writes `data` to BAR 0 at `off`. Registers take aligned 32-bit writes (a 64-bit write
    /// is two of them, low address first); anything else is counted and ignored. Commands
    /// rung on the doorbell execute before this returns.
    pub fn bar0_write(&mut self, mem: &dyn GuestMemory, off: u64, data: &[u8]) {
        if !off.is_multiple_of(4) || !(data.len() == 4 || data.len() == 8) {
            self.stats.ignored_writes += 1;
            return;
        }
        for (i, chunk) in data.chunks(4).enumerate() {
            let mut a = [0u8; 4];
            a.copy_from_slice(chunk);
            self.write32(mem, off + 4 * i as u64, a);
        }
    }

    fn write32(&mut self, mem: &dyn GuestMemory, off: u64, bytes: [u8; 4]) {
        let be = u32::from_be_bytes(bytes);
        match off {
            CMDQ_ADDR_H => self.cmdq_h = be,
            CMDQ_ADDR_L_SZ => {
                self.cmdq_l = be & !0xfff;
                self.nic_state = (be >> 8) & 7;
            }
            CMD_DBELL => self.doorbell(mem, be),
            o if (MSIX_TABLE..MSIX_TABLE + u64::from(MSIX_VECTORS) * 16).contains(&o) => {
                let idx = ((o - MSIX_TABLE) / 16) as usize;
                let w = (((o - MSIX_TABLE) % 16) / 4) as usize;
                self.msix_table[idx][w] = u32::from_le_bytes(bytes);
                if w == 3 {
                    self.msix_update();
                }
            }
            o if (TEST_WINDOW..BAR0_SIZE).contains(&o) => {
                self.tw_write(mem, o - TEST_WINDOW, u32::from_le_bytes(bytes))
            }
            o if o >= u64::from(crate::fwsim::hca::PCI_FIRST_UAR) * UAR_PAGE && o < TEST_WINDOW => {
                self.uar_write(mem, o, be)
            }
            _ => self.stats.ignored_writes += 1,
        }
    }

    /// A write into a UAR page: EQ doorbells (0x40 arm, 0x48 no arm), the CQ arm doorbell
    /// (0x20) and send doorbells (the blue-flame registers from 0x800). The data-path ones are
    /// 64-bit stores; each runs the data path before this returns.
    fn uar_write(&mut self, mem: &dyn GuestMemory, off: u64, value: u32) {
        let uar = (off / UAR_PAGE) as u32;
        if self.fw.uar_owner(uar).is_none() {
            self.stats.ignored_writes += 1;
            return;
        }
        let in_page = off % UAR_PAGE;
        let data_path = in_page == UAR_CQ_DB
            || ((UAR_BF_START..UAR_BF_END).contains(&in_page) && in_page.is_multiple_of(BF_STRIDE));
        if data_path {
            // The high (first) word of a 64-bit store; the low word completes it.
            self.db_half = Some((off, value));
            return;
        }
        if let Some((first, hi)) = self.db_half.take() {
            if first + 4 == off {
                let v = (u64::from(hi) << 32) | u64::from(value);
                self.stats.doorbells += 1;
                if first % UAR_PAGE == UAR_CQ_DB {
                    self.fw.cq_doorbell(uar, v);
                } else {
                    // Any blue-flame register: only the first 8 bytes of a WQE copy matter
                    // (the WQE itself is read from the queue buffer).
                    self.fw.sq_doorbell(uar, v);
                }
                self.poll_datapath(mem);
                return;
            }
        }
        if (UAR_BF_START..UAR_BF_END).contains(&in_page) {
            // The rest of a blue-flame WQE copy.
            return;
        }
        if let Some(v) = self.fw.eq_doorbell(uar, in_page, value) {
            self.raise(v);
        }
    }

    /// Runs the data-path engine over guest memory at the device's current time: executes
    /// what the doorbell records say is posted, writes CQEs, and turns the events it raised
    /// into EQEs (and MSI-X interrupts of armed EQs). Returns when to call again: at once
    /// (`Duration::ZERO`, the budget ran out), at a retry deadline (RNR, ACK timeout), every
    /// [`DATAPATH_POLL`] while QPs exist, or `None` when nothing can happen without a guest
    /// access.
    pub fn poll_datapath(&mut self, mem: &dyn GuestMemory) -> Option<Duration> {
        let now = self.elapsed();
        let now_ns = u64::try_from(now.as_nanos()).unwrap_or(u64::MAX);
        let rm = Remapped {
            mem,
            map: &self.iova,
        };
        let dma = Dma(&rm);
        // The function's port 1 is at switch port 1 (InfiniBand; an Ethernet port has no
        // switch).
        let wire = (self.model == Model::Cx7Ib).then_some(Wire {
            switch: &mut self.switch,
            first_ports: &[1],
        });
        let r = {
            let mut nodes = [Node {
                fw: &mut self.fw,
                mem: &dma,
                wire,
            }];
            // One thread runs the function's commands and its data path in turn: no command
            // can be waiting during a pass.
            engine::run(&mut nodes, now_ns, ENGINE_BUDGET, &|| false)
        };
        self.stats.wqes += u64::from(r.wqes);
        self.deliver_events(mem);
        let again = if r.more {
            Some(Duration::ZERO)
        } else {
            let poll = (self.fw.counts().qp != 0).then_some(DATAPATH_POLL);
            let deadline = r
                .next_deadline_ns
                .map(|d| Duration::from_nanos(d.saturating_sub(now_ns)));
            match (poll, deadline) {
                (Some(p), Some(d)) => Some(p.min(d)),
                (p, d) => p.or(d),
            }
        };
        self.next_run = again.map(|d| now + d);
        again
    }

    /// How long until the data path wants [`CxFunction::poll_datapath`] again (zero if that
    /// is overdue); `None`: not before the next guest access.
    pub fn datapath_timeout(&self) -> Option<Duration> {
        self.next_run.map(|t| t.saturating_sub(self.elapsed()))
    }

    /// Writes the events the firmware queued as EQEs.
    fn deliver_events(&mut self, mem: &dyn GuestMemory) {
        // EQs are guest-physical (their page lists are kept by the model itself).
        let dma = Dma(mem);
        while let Some(ev) = self.fw.next_event() {
            match self.fw.post_event(&dma, ev) {
                Ok(Some(EqePosted::Interrupt(v))) => {
                    self.stats.eqes += 1;
                    self.raise(v);
                }
                Ok(Some(EqePosted::Quiet)) => self.stats.eqes += 1,
                // The object is gone.
                Ok(None) => {}
                Err(_) => self.stats.eqe_errors += 1,
            }
        }
    }

    fn cmdq_base(&self) -> u64 {
        (u64::from(self.cmdq_h) << 32) | u64::from(self.cmdq_l & !0xfff)
    }

    /// The command doorbell: runs every rung slot the hardware owns, lowest first.
    fn doorbell(&mut self, mem: &dyn GuestMemory, slots: u32) {
        let base = self.cmdq_base();
        if base == 0 {
            self.stats.ignored_writes += 1;
            return;
        }
        let mut done = 0u32;
        for slot in 0..(1u32 << CMDQ_LOG_SIZE) {
            if slots & (1 << slot) == 0 {
                continue;
            }
            let addr = base + u64::from(slot) * (1 << CMDQ_LOG_STRIDE);
            match self.run_slot(mem, addr) {
                Some(true) => done |= 1 << slot,
                Some(false) => {}
                None => self.stats.spurious_doorbells += 1,
            }
        }
        // Events the commands raised (a flush's completions).
        self.deliver_events(mem);
        if done != 0 {
            // After the command EQ exists, completions are also events (`mlx5_cmd_comp_handler`
            // via the EQ); before that the driver polls the ownership bit.
            if let Ok(EqePosted::Interrupt(v)) = self.fw.post_cmd_eqe(&Dma(mem), done) {
                self.raise(v);
            }
        }
    }

    /// Executes one entry. `None`: not hardware-owned; `Some(event)`: completed, and whether
    /// to report it on the command EQ.
    fn run_slot(&mut self, mem: &dyn GuestMemory, addr: u64) -> Option<bool> {
        let mut e = Entry::read(mem, addr)?;
        if !e.hw_owned() {
            return None;
        }
        // An EQE is reported only if the command EQ existed before and after the command (the
        // CREATE_EQ that makes it and the DESTROY_EQ that ends it complete by polling).
        let had_eq = self.cmd_eq_exists();
        let status = match (e.gather_input(mem), e.output_blocks(mem)) {
            (Ok(mut inb), Ok(blocks)) => {
                let mut out = vec![0u8; e.outlen().max(crate::cmdq::INLINE)];
                self.stats.commands += 1;
                // A page list that is not one run is kept here (`iova.rs`).
                let pending = self.iova.get_mut().rewrite(&mut inb);
                // The host memory the command may read: a resize reads the CQ's doorbell
                // record (the CQEs it still holds).
                let rm = Remapped {
                    mem,
                    map: &self.iova,
                };
                let mut result = self.fw.exec_with_mem(&inb, &mut out, &Dma(&rm));
                // The fabric's embedded subnet manager (`fwsim/sm.rs`) brings up a port
                // whose link came up (after a reset or a PAOS write); ACTIVE ports cost it
                // two Gets.
                self.sm_pass();
                self.cap_uar(&inb, &mut out, &mut result);
                let resized = self.settle_iova(&inb, &out, pending, &result);
                match result {
                    Ok(c) => {
                        // What the command leaves for the data path before it is reported
                        // complete (the RESIZE CQE, the flush of a QP moved to ERR).
                        let rm = Remapped {
                            mem,
                            map: &self.iova,
                        };
                        self.fw.complete_commands(&Dma(&rm));
                        // The resized CQ writes to its new buffer from now on.
                        if let Some(cqn) = resized {
                            self.iova.get_mut().resized(cqn);
                        }
                        if self.log.len() < LOG_MAX {
                            self.log.push(CommandRecord {
                                opcode: u16::from_be_bytes([inb[0], inb[1]]),
                                op_mod: u16::from_be_bytes([inb[6], inb[7]]),
                                status: c.status.0,
                                syndrome: c.syndrome,
                            });
                        }
                        if !e.complete(mem, addr, &out, &blocks, Delivery::Ok) {
                            self.stats.dma_errors += 1;
                        }
                        return Some(had_eq && self.cmd_eq_exists());
                    }
                    // An injected timeout: the command does not complete (until the test
                    // window releases it).
                    Err(ExecError::Timeout) => {
                        if self.held.len() < 1 << CMDQ_LOG_SIZE {
                            self.held.push(addr);
                        }
                        return Some(false);
                    }
                    Err(ExecError::OutboxTooShort) => Delivery::FwErr,
                }
            }
            (Err(d), _) | (_, Err(d)) => d,
        };
        self.stats.delivery_errors += 1;
        if !e.complete(mem, addr, &[], &[], status) {
            self.stats.dma_errors += 1;
        }
        Some(had_eq && self.cmd_eq_exists())
    }

    /// Binds or releases the device ranges of an executed command (`iova.rs`). Returns the
    /// CQ of a resize the model accepted: its old range goes once the model switched buffers.
    fn settle_iova(
        &mut self,
        inb: &[u8],
        out: &[u8],
        pending: Option<crate::iova::Pending>,
        result: &Result<crate::fwsim::Completion, ExecError>,
    ) -> Option<u32> {
        let ok = matches!(result, Ok(c) if c.status.0 == 0);
        let number = |b: &[u8]| {
            b.get(8..12)
                .map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]) & 0x00ff_ffff)
        };
        if let Some(p) = pending {
            self.iova.get_mut().settle(p, ok, number(out));
        }
        if !ok {
            return None;
        }
        let opcode = u16::from_be_bytes([inb[0], inb[1]]);
        if let Some(n) = number(inb) {
            self.iova.get_mut().destroyed(opcode, n);
        }
        if opcode == crate::prm::opcode::TEARDOWN_HCA {
            self.iova.get_mut().clear();
        }
        let op_mod = inb
            .get(6..8)
            .map(|b| u32::from(u16::from_be_bytes([b[0], b[1]])));
        (opcode == crate::prm::opcode::MODIFY_CQ
            && op_mod == Some(crate::prm::consts::CQ_OPMOD_RESIZE))
        .then(|| number(inb))
        .flatten()
    }

    /// Device ranges in use (`iova.rs`; tests).
    pub fn iova_ranges(&self) -> usize {
        self.iova.borrow().ranges()
    }

    /// ALLOC_UAR past the UAR pages of BAR 0 (the test window's page and above): undone and
    /// refused as a full table, so no UAR page is ever the test window.
    fn cap_uar(
        &mut self,
        inb: &[u8],
        out: &mut [u8],
        result: &mut Result<crate::fwsim::Completion, ExecError>,
    ) {
        use crate::prm::opcode as op;
        let Ok(c) = result else {
            return;
        };
        let opcode = inb.get(..2).map(|b| u16::from_be_bytes([b[0], b[1]]));
        if opcode != Some(op::ALLOC_UAR) || c.status != Status::OK {
            return;
        }
        let Some(w) = out.get(8..12) else {
            return;
        };
        let uar = u32::from_be_bytes([w[0], w[1], w[2], w[3]]) & 0x00ff_ffff;
        if uar < UAR_LIMIT {
            return;
        }
        // DEALLOC_UAR with the same uid (`dealloc_uar_in`: uid at byte 2, uar at 8).
        let mut din = [0u8; 16];
        din[..2].copy_from_slice(&op::DEALLOC_UAR.to_be_bytes());
        if let Some(uid) = inb.get(2..4) {
            din[2..4].copy_from_slice(uid);
        }
        din[8..12].copy_from_slice(&uar.to_be_bytes());
        let mut dout = [0u8; 16];
        let _ = self.fw.exec(&din, &mut dout);
        out.fill(0);
        let syndrome = crate::fwsim::syndrome::TABLE_FULL;
        if let Some(h) = out.get_mut(..8) {
            h[0] = Status::NO_RES_ERR.0;
            h[4..8].copy_from_slice(&syndrome.to_be_bytes());
        }
        c.status = Status::NO_RES_ERR;
        c.syndrome = syndrome;
    }

    /// A read of the test window (`off` 4-byte aligned, from the window's start).
    fn tw_read(&self, off: u64) -> u32 {
        match off {
            TW_ID => TW_MAGIC,
            TW_ARG0 => self.tw_args[0],
            TW_ARG1 => self.tw_args[1],
            TW_ARG2 => self.tw_args[2],
            TW_CMD => self.tw_last,
            TW_RESULT => self.tw_result,
            TW_HELD => self.held.len() as u32,
            TW_NIC_STATE => self.nic_state,
            _ => 0,
        }
    }

    /// A 32-bit write to the test window (little-endian `value`).
    fn tw_write(&mut self, mem: &dyn GuestMemory, off: u64, value: u32) {
        match off {
            TW_ARG0 => self.tw_args[0] = value,
            TW_ARG1 => self.tw_args[1] = value,
            TW_ARG2 => self.tw_args[2] = value,
            TW_CMD => {
                self.stats.window_commands += 1;
                self.tw_last = value;
                self.tw_result = self.tw_command(mem, value);
            }
            _ => self.stats.ignored_writes += 1,
        }
    }

    /// Runs a test-window command ([`tw_cmd`]); returns its [`tw_result`].
    pub fn tw_command(&mut self, mem: &dyn GuestMemory, cmd: u32) -> u32 {
        let [a0, a1, a2] = self.tw_args;
        let opcode = || u16::try_from(a0).ok().filter(|&o| o != 0);
        match cmd {
            tw_cmd::FAIL => {
                let (Some(op), Ok(st)) = (opcode(), u8::try_from(a1)) else {
                    return tw_result::BAD_ARG;
                };
                if st == 0 {
                    return tw_result::BAD_ARG;
                }
                self.fw.faults_mut().fail_opcode(
                    op,
                    FaultAction::Fail {
                        status: Status(st),
                        syndrome: a2,
                    },
                );
                tw_result::OK
            }
            tw_cmd::HANG => {
                let Some(op) = opcode() else {
                    return tw_result::BAD_ARG;
                };
                self.fw.faults_mut().fail_opcode(op, FaultAction::Timeout);
                tw_result::OK
            }
            tw_cmd::CLEAR => {
                self.fw.faults_mut().clear();
                tw_result::OK
            }
            tw_cmd::RELEASE => {
                self.release_held(mem);
                tw_result::OK
            }
            tw_cmd::STALL_HEALTH => {
                self.stall_health(a0 != 0);
                tw_result::OK
            }
            tw_cmd::EQE => {
                let at = a1 as usize;
                if at > 24 || !at.is_multiple_of(4) {
                    return tw_result::BAD_ARG;
                }
                let mut data = [0u8; 28];
                data[at..at + 4].copy_from_slice(&a2.to_be_bytes());
                self.tw_post_eqe(mem, a0 as u8, (a0 >> 8) as u8, &data)
            }
            tw_cmd::FATAL => {
                self.fatal();
                tw_result::OK
            }
            tw_cmd::PORT => {
                let up = a0 != 0;
                if !self.fw.set_port_up(1, up) {
                    return tw_result::BAD_ARG;
                }
                self.sm_pass();
                let mut data = [0u8; 28];
                // struct mlx5_eqe_port_state: `port` (bits 7:4) at byte 8.
                data[8] = 1 << 4;
                let sub = if up {
                    PORT_CHANGE_SUBTYPE_ACTIVE
                } else {
                    PORT_CHANGE_SUBTYPE_DOWN
                };
                self.tw_post_eqe(mem, EVENT_TYPE_PORT_CHANGE, sub, &data)
            }
            tw_cmd::SM => {
                if a0 > 1 {
                    return tw_result::BAD_ARG;
                }
                self.embedded_sm = a0 == 1;
                if !self.embedded_sm {
                    // No SMInfo from the switch any more: a host SM finds no other SM.
                    self.switch.set_is_sm(false);
                }
                self.sm_pass();
                tw_result::OK
            }
            _ => tw_result::UNKNOWN,
        }
    }

    /// After a link may have changed: the switch's ports follow the function's links, and
    /// the embedded subnet manager, if it runs, sweeps the ports that came up.
    fn sm_pass(&mut self) {
        if self.embedded_sm {
            crate::fwsim::sm::sweep(&mut self.fw, &mut self.switch, 1);
        } else {
            crate::fwsim::sm::links(&self.fw, &mut self.switch, 1);
        }
    }

    /// Writes an EQE for the test window; returns its [`tw_result`].
    fn tw_post_eqe(&mut self, mem: &dyn GuestMemory, t: u8, sub: u8, data: &[u8; 28]) -> u32 {
        match self.fw.post_eqe(&Dma(mem), t, sub, data) {
            Ok(EqePosted::Interrupt(v)) => {
                self.stats.eqes += 1;
                self.raise(v);
                tw_result::OK
            }
            Ok(EqePosted::Quiet) => {
                self.stats.eqes += 1;
                tw_result::OK
            }
            Err(_) => {
                self.stats.eqe_errors += 1;
                tw_result::NO_EQ
            }
        }
    }

    /// A firmware fatal error ([`tw_cmd::FATAL`]): the firmware is reset to its power-on
    /// state (no object, EQ or UAR; the health counter keeps ticking, so `wait_vital()`
    /// passes), held commands are dropped, and the NIC interface reads "disabled", which
    /// mlx5_core's health poll reports as a fatal sensor and recovers from by reloading
    /// the function.
    pub fn fatal(&mut self) {
        self.fw.cold_boot();
        self.iova.get_mut().clear();
        self.nic_state = NIC_IFC_DISABLED;
        self.init_reads_left = INIT_READS;
        self.held.clear();
        self.db_half = None;
        self.next_run = None;
    }

    /// Completes the commands a hang fault held ([`tw_cmd::RELEASE`]): late, not executed,
    /// status `INT_ERR` in the entry's inline output (the mailboxes are not written: the
    /// driver gave up on the command and may have reused them), and one command EQE.
    pub fn release_held(&mut self, mem: &dyn GuestMemory) {
        let base = self.cmdq_base();
        let mut done = 0u32;
        for addr in std::mem::take(&mut self.held) {
            let Some(mut e) = Entry::read(mem, addr) else {
                continue;
            };
            if !e.hw_owned() {
                continue;
            }
            let mut out = [0u8; crate::cmdq::INLINE];
            out[0] = Status::INT_ERR.0;
            if !e.complete(mem, addr, &out, &[], Delivery::Ok) {
                self.stats.dma_errors += 1;
            }
            self.stats.late_completions += 1;
            let slot = addr.wrapping_sub(base) >> CMDQ_LOG_STRIDE;
            if slot < 1 << CMDQ_LOG_SIZE {
                done |= 1 << slot;
            }
        }
        if done != 0 && self.cmd_eq_exists() {
            if let Ok(EqePosted::Interrupt(v)) = self.fw.post_cmd_eqe(&Dma(mem), done) {
                self.raise(v);
            }
        }
    }

    /// Commands a hang fault holds.
    pub fn held_commands(&self) -> usize {
        self.held.len()
    }

    fn cmd_eq_exists(&self) -> bool {
        (0..=255u32).any(|n| {
            self.fw
                .eq(n)
                .is_some_and(|q| q.wants(crate::prm::consts::EVENT_TYPE_CMD))
        })
    }

    /// The health syndrome byte the guest sees (0: healthy).
    pub fn health_syndrome(&mut self) -> u8 {
        let mut b = [0u8; 1];
        self.bar0_read(HEALTH_SYND, &mut b);
        b[0]
    }

    /// The commands executed so far (the first 65,536), oldest first.
    pub fn command_log(&self) -> &[CommandRecord] {
        &self.log
    }

    /// Configuration space, for transports that need the raw bytes.
    pub fn config(&self) -> &ConfigSpace {
        &self.config
    }
}
