// SPDX-License-Identifier: GPL-2.0

// The test driver shared by mlx5_core_init.rs and datapath.rs (`include!`d: each test
// binary uses a part of it). What it does is described at the top of mlx5_core_init.rs.

const MEM_BASE: u64 = 0x4000_0000;
const MEM_LEN: usize = 16 << 20;

/// `MLX5_SET(…, buf, field, v)` with the field's bit offset and width.
fn set(buf: &mut [u8], bit_off: usize, width: usize, v: u32) {
    assert!(width <= 32 && bit_off % 32 + width <= 32);
    let dw = bit_off / 32 * 4;
    let shift = 32 - (bit_off % 32 + width);
    let mask = if width == 32 {
        u32::MAX
    } else {
        (1 << width) - 1
    } << shift;
    let mut w = u32::from_be_bytes(buf[dw..dw + 4].try_into().unwrap());
    w = (w & !mask) | ((v << shift) & mask);
    buf[dw..dw + 4].copy_from_slice(&w.to_be_bytes());
}

/// `MLX5_GET`.
fn get(buf: &[u8], bit_off: usize, width: usize) -> u32 {
    let dw = bit_off / 32 * 4;
    let shift = 32 - (bit_off % 32 + width);
    let w = u32::from_be_bytes(buf[dw..dw + 4].try_into().unwrap());
    if width == 32 {
        w
    } else {
        (w >> shift) & ((1 << width) - 1)
    }
}

fn hdr(len: usize, opcode: u16, op_mod: u16) -> Vec<u8> {
    let mut b = vec![0u8; len];
    set(&mut b, 0, 16, u32::from(opcode));
    set(&mut b, 0x30, 16, u32::from(op_mod));
    b
}

struct Driver {
    dev: CxFunction,
    mem: VecMemory,
    next: u64,
    cmdq: u64,
    token: u8,
    /// Command completions are awaited as EQEs on this EQ (after `mlx5_cmd_use_events()`).
    cmd_eq: Option<Eq>,
    uar: u32,
}

#[derive(Clone, Copy)]
struct Eq {
    eqn: u32,
    buf: u64,
    log_size: u32,
    cons: u32,
}

/// Outcome of a posted command.
#[derive(Debug, PartialEq, Eq)]
enum Done {
    /// Delivery status 0: the output message.
    Out(Vec<u8>),
    /// A non-zero delivery status.
    Delivery(u8),
    /// Still owned by the device.
    Pending,
}

impl Driver {
    fn new(model: Model) -> Driver {
        Driver {
            dev: CxFunction::new(model, 1),
            mem: VecMemory::new(MEM_BASE, MEM_LEN),
            next: MEM_BASE,
            cmdq: 0,
            token: 0,
            cmd_eq: None,
            uar: 0,
        }
    }

    fn alloc(&mut self, len: usize, align: u64) -> u64 {
        let a = self.next.next_multiple_of(align);
        self.next = a + len as u64;
        assert!(self.next <= MEM_BASE + MEM_LEN as u64);
        a
    }

    fn rd32(&mut self, off: u64) -> u32 {
        let mut b = [0u8; 4];
        self.dev.bar0_read(off, &mut b);
        u32::from_be_bytes(b)
    }

    fn wr32(&mut self, off: u64, v: u32) {
        self.dev.bar0_write(&self.mem, off, &v.to_be_bytes());
    }

    fn cfg16(&self, off: usize) -> u16 {
        let mut b = [0u8; 2];
        self.dev.config_read(off, &mut b);
        u16::from_le_bytes(b)
    }

    /// `mlx5_alloc_cmd_msg()`: a chain of 1 KiB-aligned mailboxes for `len - 16` bytes,
    /// block numbers 0.., the entry's token. Returns the first mailbox (0 if none).
    fn chain(&mut self, data: &[u8], token: u8) -> (u64, Vec<u64>) {
        let n = data.len().saturating_sub(INLINE).div_ceil(BLOCK_DATA);
        let addrs: Vec<u64> = (0..n).map(|_| self.alloc(BLOCK_BYTES, 1024)).collect();
        for (i, &a) in addrs.iter().enumerate() {
            let mut blk = vec![0u8; BLOCK_BYTES];
            let off = INLINE + i * BLOCK_DATA;
            let end = data.len().min(off + BLOCK_DATA);
            if off < data.len() {
                blk[..end - off].copy_from_slice(&data[off..end]);
            }
            let next = addrs.get(i + 1).copied().unwrap_or(0);
            blk[0x230..0x238].copy_from_slice(&next.to_be_bytes());
            blk[0x238..0x23c].copy_from_slice(&(i as u32).to_be_bytes());
            blk[0x23d] = token;
            self.mem.write(a, &blk).unwrap();
        }
        (addrs.first().copied().unwrap_or(0), addrs)
    }

    /// `mlx5_cmd_invoke()` on slot 0 with a fresh token; returns the entry address and the
    /// output mailboxes.
    fn post(&mut self, slot: u32, inb: &[u8], outlen: usize) -> (u64, Vec<u64>) {
        self.token = self.token.wrapping_add(1).max(1);
        let token = self.token;
        let (in_ptr, _) = self.chain(inb, token);
        let (out_ptr, out_blocks) = self.chain(&vec![0u8; outlen], token);
        let mut lay = [0u8; 64];
        lay[0] = PCI_CMD_XPORT;
        lay[4..8].copy_from_slice(&(inb.len() as u32).to_be_bytes());
        lay[8..16].copy_from_slice(&in_ptr.to_be_bytes());
        let n = inb.len().min(INLINE);
        lay[16..16 + n].copy_from_slice(&inb[..n]);
        lay[0x30..0x38].copy_from_slice(&out_ptr.to_be_bytes());
        lay[0x38..0x3c].copy_from_slice(&(outlen as u32).to_be_bytes());
        lay[0x3c] = token;
        lay[0x3f] = OWNER_HW;
        let addr = self.cmdq + u64::from(slot) * 64;
        self.mem.write(addr, &lay).unwrap();
        self.wr32(CMD_DBELL, 1 << slot);
        (addr, out_blocks)
    }

    fn collect(&self, addr: u64, blocks: &[u64], outlen: usize) -> Done {
        let mut lay = [0u8; 64];
        self.mem.read(addr, &mut lay).unwrap();
        if lay[0x3f] & OWNER_HW != 0 {
            return Done::Pending;
        }
        if lay[0x3f] >> 1 != 0 {
            return Done::Delivery(lay[0x3f] >> 1);
        }
        let mut out = vec![0u8; outlen.max(INLINE)];
        out[..INLINE].copy_from_slice(&lay[0x20..0x30]);
        for (i, &b) in blocks.iter().enumerate() {
            let off = INLINE + i * BLOCK_DATA;
            let end = outlen.min(off + BLOCK_DATA);
            self.mem.read(b, &mut out[off..end]).unwrap();
        }
        Done::Out(out)
    }

    /// `mlx5_cmd_exec()`: posts, then waits by polling or, in events mode, for the command
    /// EQE and its interrupt. Returns the outbox; asserts status OK unless `expect_fail`.
    fn exec_status(&mut self, inb: &[u8], outlen: usize) -> (u8, Vec<u8>) {
        let (addr, blocks) = self.post(0, inb, outlen);
        if let Some(mut eq) = self.cmd_eq {
            let irqs = self.dev.take_interrupts();
            assert_eq!(irqs, vec![0], "command EQ interrupt on vector 0");
            let eqe = self.eqe(&eq).expect("command EQE");
            assert_eq!(eqe[1], 0x0a, "EQE type CMD");
            assert_eq!(u32::from_be_bytes(eqe[32..36].try_into().unwrap()), 1);
            eq.cons += 1;
            // eq_update_ci(eq, 1): consumed, re-arm.
            let uar_off = u64::from(self.uar) * UAR_PAGE + 0x40;
            self.wr32(uar_off, (eq.eqn << 24) | eq.cons);
            self.cmd_eq = Some(eq);
        }
        match self.collect(addr, &blocks, outlen) {
            Done::Out(out) => (out[0], out),
            other => panic!("command {:#x}: {other:?}", get(inb, 0, 16)),
        }
    }

    fn exec(&mut self, inb: &[u8], outlen: usize) -> Vec<u8> {
        let (status, out) = self.exec_status(inb, outlen);
        assert_eq!(
            status,
            0,
            "opcode {:#x} syndrome {:#x}",
            get(inb, 0, 16),
            get(&out, 0x20, 32)
        );
        out
    }

    /// `next_eqe_sw()`: the EQE at the consumer index if its owner bit says software owns it.
    fn eqe(&self, eq: &Eq) -> Option<[u8; 64]> {
        let idx = eq.cons & ((1 << eq.log_size) - 1);
        let mut e = [0u8; 64];
        self.mem.read(eq.buf + u64::from(idx) * 64, &mut e).unwrap();
        let sw = (e[63] & 1) ^ ((eq.cons >> eq.log_size) & 1) as u8;
        (sw == 0).then_some(e)
    }

    /// `create_map_eq()` with 4 KiB pages, then `mlx5_eq_enable()` (arm).
    fn create_eq(&mut self, nent: u32, mask: u64, vector: u32) -> Eq {
        let log_size = (nent + 0x80).next_power_of_two().trailing_zeros();
        let bytes = 64usize << log_size;
        let npages = bytes.div_ceil(4096);
        // Not contiguous: every other page, as a fragmented buffer would be.
        let pages: Vec<u64> = (0..npages).map(|_| self.alloc(8192, 4096)).collect();
        for &p in &pages {
            // init_eq_buf(): owner 1 in every EQE.
            for i in 0..64 {
                self.mem.write(p + i * 64 + 63, &[1]).unwrap();
            }
        }
        let mut inb = hdr(0x110 + npages * 8, 0x301, 0);
        set(&mut inb, 0x80 + 0x63, 5, log_size);
        set(&mut inb, 0x80 + 0x68, 24, self.uar);
        set(&mut inb, 0x80 + 0xb4, 12, vector);
        set(&mut inb, 0x2c0 + 32, 32, mask as u32);
        set(&mut inb, 0x2c0, 32, (mask >> 32) as u32);
        for (i, p) in pages.iter().enumerate() {
            inb[0x110 + i * 8..0x118 + i * 8].copy_from_slice(&p.to_be_bytes());
        }
        let out = self.exec(&inb, 16);
        let eqn = get(&out, 0x58, 8);
        // Paged EQ buffer: the test reads EQEs through the page list.
        let eq = Eq {
            eqn,
            buf: pages[0],
            log_size,
            cons: 0,
        };
        let uar_off = u64::from(self.uar) * UAR_PAGE + 0x40;
        self.wr32(uar_off, eqn << 24);
        eq
    }
}

/// `mlx5_pci_init()` + `mlx5_cmd_init()` + `wait_fw_init()`.
fn probe(d: &mut Driver) {
    assert_eq!(d.cfg16(0x00), 0x15b3);
    assert_eq!(d.cfg16(0x02), 0x1021);
    // BAR 0: 64-bit prefetchable memory, sized by writing all ones.
    d.dev.config_write(0x10, &u32::MAX.to_le_bytes());
    d.dev.config_write(0x14, &u32::MAX.to_le_bytes());
    let mut lo = [0u8; 4];
    d.dev.config_read(0x10, &mut lo);
    let lo = u32::from_le_bytes(lo);
    assert_eq!(lo & 0xf, 0xc);
    assert_eq!(u64::from(!(lo & !0xf)) + 1, BAR0_SIZE);
    d.dev.config_write(0x10, &0xe000_0000u32.to_le_bytes());
    d.dev.config_write(0x14, &0u32.to_le_bytes());
    assert_eq!(d.dev.config().bar0(), 0xe000_0000);
    d.dev.config_write(0x04, &0x0006u16.to_le_bytes());
    assert!(d.dev.config().memory_and_master());
    // MSI-X capability: 16 vectors, table at BAR 0 + 0x2000, PBA at + 0x3000.
    assert_eq!(d.cfg16(0x34) & 0xff, CAP_MSIX as u16);
    assert_eq!(d.cfg16(CAP_MSIX) & 0xff, 0x11);
    assert_eq!(d.cfg16(CAP_MSIX + 2) & 0x7ff, MSIX_VECTORS - 1);

    // firmware version: 28.43.1014; cmdif 5.
    let fw = d.rd32(FW_REV);
    assert_eq!((fw & 0xffff, fw >> 16), (28, 43));
    let cmdif = d.rd32(CMDIF_REV_FW_SUB);
    assert_eq!((cmdif >> 16, cmdif & 0xffff), (5, 1014));
    let l = d.rd32(CMDQ_ADDR_L_SZ) & 0xff;
    let (log_sz, log_stride) = (l >> 4 & 0xf, l & 0xf);
    assert!(1 << log_sz <= 32 && log_sz + log_stride <= 12);
    d.cmdq = d.alloc(4096, 4096);
    d.wr32(CMDQ_ADDR_H, (d.cmdq >> 32) as u32);
    d.wr32(CMDQ_ADDR_L_SZ, d.cmdq as u32);
    assert_eq!(d.rd32(CMDQ_ADDR_L_SZ) & !0xfff, d.cmdq as u32);
    // mlx5_tout_query_iseg(): timeouts in the init segment (10 s each, in seconds), so the
    // command timeout is 10 s, not the driver's 60 s, and DTOR is read below.
    assert_eq!(d.rd32(CMD_Q_INIT_TO), (1 << 29) | 10);
    assert_eq!(d.rd32(CMD_EXEC_TO), (1 << 29) | 10);
    let mut polls = 0;
    while d.rd32(INITIALIZING) >> 31 != 0 {
        polls += 1;
        assert!(polls < 10, "firmware stays initializing");
    }
    assert!(polls > 0, "initializing was set after reset");
}

/// `mlx5_function_enable()` + `mlx5_function_open()`.
fn function_setup(d: &mut Driver) {
    d.exec(&hdr(16, 0x104, 0), 12);
    let out = d.exec(&hdr(16, 0x10a, 0), 0x70);
    assert_eq!(get(&out, 0x360, 32) & 2, 2, "ISSI 1 supported");
    let mut inb = hdr(16, 0x10b, 0);
    set(&mut inb, 0x50, 16, 1);
    d.exec(&inb, 16);
    let out = d.exec(&hdr(16, 0x107, 1), 16);
    assert_eq!(get(&out, 0x60, 32), 0, "no boot pages");
    // mlx5_tout_query_dtor(): ACCESS_REG DTOR (0xc00e) read, 60 bytes of register.
    let mut inb = hdr(16 + 60, 0x805, 1);
    set(&mut inb, 0x50, 16, 0xc00e);
    let out = d.exec(&inb, 16 + 60);
    // pcie_toggle_to 2 s, health_poll_to 2 s, fw_reset_to 60 s (multiplier 1: seconds).
    assert_eq!(get(&out, 0x80 + 0x20, 32), (1 << 29) | 2);
    assert_eq!(get(&out, 0x80 + 0xa0, 32), (1 << 29) | 2);
    assert_eq!(get(&out, 0x80 + 0xe0, 32), (1 << 29) | 60);
    // set_hca_ctrl(): HOST_ENDIANNESS write.
    let mut inb = hdr(32, 0x805, 0);
    set(&mut inb, 0x50, 16, 0x7004);
    inb[16] = 0x80;
    d.exec(&inb, 32);
    // handle_hca_cap(): cur and max (4 KiB each: a multi-block output), then SET_HCA_CAP
    // (a multi-block input).
    let cur = d.exec(&hdr(16, 0x100, 1), 0x1010);
    let max = d.exec(&hdr(16, 0x100, 0), 0x1010);
    let cap = 0x80;
    let max_qp = get(&max, cap + 0x9b, 5);
    assert_eq!(get(&cur, cap + 0x1b8, 8), 1, "num_ports");
    let mut inb = hdr(0x1010, 0x109, 0);
    inb[16..].copy_from_slice(&cur[16..0x1010]);
    set(&mut inb, cap + 0x190, 16, 0);
    set(&mut inb, cap + 0x9b, 5, max_qp.min(18));
    set(&mut inb, cap + 0x210, 2, 0);
    set(&mut inb, cap + 0x490, 16, 0);
    d.exec(&inb, 16);
    // handle_hca_cap_atomic(): atomic is advertised with host endianness.
    assert_eq!(get(&cur, cap + 0x21e, 1), 1);
    d.exec(&hdr(16, 0x100, 3 << 1 | 1), 0x1010);
    let amax = d.exec(&hdr(16, 0x100, 3 << 1), 0x1010);
    assert_eq!(get(&amax, cap + 0x46, 1), 1);
    let mut inb = hdr(0x1010, 0x109, 3 << 1);
    set(&mut inb, cap + 0x40, 2, 1);
    d.exec(&inb, 16);
    let out = d.exec(&hdr(16, 0x107, 2), 16);
    assert_eq!(get(&out, 0x60, 32), 0, "no init pages");
    d.exec(&hdr(32, 0x102, 0), 16);
    assert_eq!(d.dev.lifecycle(), "initialized");
    // mlx5_query_hca_caps(): cur reflects SET_HCA_CAP.
    let cur = d.exec(&hdr(16, 0x100, 1), 0x1010);
    assert_eq!(get(&cur, cap + 0x9b, 5), 18);
    let acur = d.exec(&hdr(16, 0x100, 3 << 1 | 1), 0x1010);
    assert_eq!(
        get(&acur, cap + 0x40, 2),
        1,
        "atomic endianness mode as set"
    );
    // mlx5_query_board_id(): the PSID.
    let out = d.exec(&hdr(16, 0x101, 0), 0x110);
    assert!(out.len() == 0x110);
}

/// `mlx5_load()`: bfreg (ALLOC_UAR), MSI-X, the cmd EQ in polling mode, then events, the
/// async and page EQs.
fn load(d: &mut Driver) -> Vec<Eq> {
    let out = d.exec(&hdr(16, 0x802, 0), 16);
    d.uar = get(&out, 0x48, 24);
    assert!(u64::from(d.uar) * UAR_PAGE >= INIT_SEG_END);
    // pci_alloc_irq_vectors(): program vector 0, unmask, enable MSI-X.
    d.dev
        .bar0_write(&d.mem, MSIX_TABLE, &0xfee0_0000u32.to_le_bytes());
    d.dev
        .bar0_write(&d.mem, MSIX_TABLE + 8, &0x4021u32.to_le_bytes());
    d.dev
        .bar0_write(&d.mem, MSIX_TABLE + 12, &0u32.to_le_bytes());
    d.dev
        .config_write(CAP_MSIX + 2, &(MSIX_ENABLE | 15).to_le_bytes());
    assert_eq!(d.dev.msix_message(0), Some((0xfee0_0000, 0x4021)));
    let cmd = d.create_eq(32, 1 << 0x0a, 0);
    // CREATE_EQ of the command EQ completes by polling: no EQE, no interrupt.
    assert!(d.dev.take_interrupts().is_empty());
    assert!(d.eqe(&cmd).is_none());
    d.cmd_eq = Some(cmd);
    // mlx5_cmd_use_events(): from here every completion is an EQE + vector 0.
    let asy = d.create_eq(0x1000, (1 << 0x1) | (1 << 0x3) | (1 << 0x13), 0);
    let pages = d.create_eq(1, 1 << 0x0b, 0);
    vec![cmd, asy, pages]
}

/// `mlx5_unload()` + `mlx5_function_teardown()`.
fn teardown(d: &mut Driver, eqs: &[Eq]) {
    for eq in eqs[1..].iter().rev() {
        let mut inb = hdr(16, 0x302, 0);
        set(&mut inb, 0x58, 8, eq.eqn);
        d.exec(&inb, 16);
    }
    // mlx5_cmd_use_polling(), then the command EQ itself.
    d.cmd_eq = None;
    let mut inb = hdr(16, 0x302, 0);
    set(&mut inb, 0x58, 8, eqs[0].eqn);
    d.exec(&inb, 16);
    assert!(d.dev.take_interrupts().is_empty());
    let mut inb = hdr(16, 0x803, 0);
    set(&mut inb, 0x48, 24, d.uar);
    d.exec(&inb, 16);
    d.exec(&hdr(16, 0x103, 0), 16);
    d.exec(&hdr(16, 0x105, 0), 12);
    assert_eq!(d.dev.lifecycle(), "disabled");
    assert!(!d.dev.has_objects());
}

