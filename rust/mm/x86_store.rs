// SPDX-License-Identifier: GPL-2.0

//! The x86-64 store instructions a [`TrapPage`](super::TrapPage) fault emulates: what the
//! faulting instruction writes, where, and how long it is, from its bytes and the user's
//! registers (as mmiotrace and KVM's MMIO emulation decode a faulting access).
//!
//! Only the forms a doorbell write compiles to are accepted: `MOV r/m32, r32` and
//! `MOV r/m64, r64` (opcode `89`, what libmlx5's `mmio_write64_be()` and its BlueFlame copy
//! `mlx5_bf_copy()` compile to in rdma-core 44) and `MOV r/m32, imm32` / `MOV r/m64, imm32`
//! (`C7 /0`), with an optional REX prefix and any 64-bit memory operand (ModRM, SIB,
//! displacement, RIP-relative). Anything else (a legacy prefix: operand or address size,
//! segment, `LOCK`, `REP`; another opcode; a register destination; fewer bytes than the
//! instruction needs) is refused with `None`, and the caller lets the CPU execute the store
//! on an installed page instead.
//!
//! Pure: no kernel types, so the host crate (`host/mm`) runs the tests below with `cargo`.

/// The general-purpose registers in encoding order: `rax`, `rcx`, `rdx`, `rbx`, `rsp`, `rbp`,
/// `rsi`, `rdi`, `r8` .. `r15`.
pub(crate) type Gprs = [u64; 16];

/// The longest x86 instruction (bytes).
pub(crate) const MAX_INSN: usize = 15;

/// A decoded store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Store {
    /// The address written (the effective address of the memory operand).
    pub(crate) addr: u64,
    /// The value stored; its low `len` bytes, little-endian, are what memory receives.
    pub(crate) value: u64,
    /// Bytes stored: 4 or 8.
    pub(crate) len: usize,
    /// The instruction's length: execution resumes at `ip + insn_len`.
    pub(crate) insn_len: usize,
}

/// Decodes the store at `insn` (the bytes at the user's instruction pointer `ip`, up to
/// [`MAX_INSN`]) with the registers `gpr`, or `None` for anything but the forms above.
pub(crate) fn decode(insn: &[u8], ip: u64, gpr: &Gprs) -> Option<Store> {
    // Displacement bytes by ModRM.mod (mod 00's exceptions are handled where they arise).
    let disp_of = |mode: u8| match mode {
        1 => 1,
        2 => 4,
        _ => 0,
    };
    let mut at = 0usize;
    let byte = |at: &mut usize| -> Option<u8> {
        let b = *insn.get(*at)?;
        *at += 1;
        Some(b)
    };
    let mut b = byte(&mut at)?;
    // REX (0100WRXB): must come right before the opcode.
    let rex = if b & 0xf0 == 0x40 {
        let r = b;
        b = byte(&mut at)?;
        r
    } else {
        0
    };
    let (w, r, x, bb) = (rex & 8 != 0, rex & 4 != 0, rex & 2 != 0, rex & 1 != 0);
    let imm = match b {
        0x89 => false,
        0xc7 => true,
        _ => return None,
    };
    let modrm = byte(&mut at)?;
    let mode = modrm >> 6;
    let reg = usize::from((modrm >> 3) & 7) | if r { 8 } else { 0 };
    let rm = modrm & 7;
    // `C7 /0` is the only MOV of that opcode; a register destination cannot fault.
    if mode == 3 || (imm && reg & 7 != 0) {
        return None;
    }
    let reg_of = |n: usize| gpr.get(n).copied();
    let mut rip_relative = false;
    let mut addr = 0u64;
    let disp_len = match (mode, rm) {
        (_, 4) => {
            let sib = byte(&mut at)?;
            let scale = sib >> 6;
            let index = usize::from((sib >> 3) & 7) | if x { 8 } else { 0 };
            let base = sib & 7;
            // Index 100 without REX.X is "no index".
            if index != 4 {
                addr = reg_of(index)? << scale;
            }
            // Base 101 with mod 00 is "no base, disp32".
            if mode == 0 && base == 5 {
                4
            } else {
                let base = usize::from(base) | if bb { 8 } else { 0 };
                addr = addr.wrapping_add(reg_of(base)?);
                disp_of(mode)
            }
        }
        (0, 5) => {
            rip_relative = true;
            4
        }
        _ => {
            let base = usize::from(rm) | if bb { 8 } else { 0 };
            addr = reg_of(base)?;
            disp_of(mode)
        }
    };
    let disp = match disp_len {
        1 => i64::from(byte(&mut at)? as i8),
        4 => i64::from(i32::from_le_bytes([
            byte(&mut at)?,
            byte(&mut at)?,
            byte(&mut at)?,
            byte(&mut at)?,
        ])),
        _ => 0,
    };
    addr = addr.wrapping_add(disp as u64);
    let len = if w { 8 } else { 4 };
    let value = if imm {
        let v = i32::from_le_bytes([
            byte(&mut at)?,
            byte(&mut at)?,
            byte(&mut at)?,
            byte(&mut at)?,
        ]);
        // Sign-extended to 64 bits with REX.W, as the CPU does.
        i64::from(v) as u64
    } else {
        reg_of(reg)?
    };
    let value = if w { value } else { value & 0xffff_ffff };
    if at > MAX_INSN {
        return None;
    }
    if rip_relative {
        // Relative to the next instruction, after the immediate of `C7`.
        addr = addr.wrapping_add(ip.wrapping_add(at as u64));
    }
    Some(Store {
        addr,
        value,
        len,
        insn_len: at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Registers whose values say which register they are: `rax` = 0x1000_0000_0000_0000 + 0,
    /// ..., `r15` = ... + 15 (each above any displacement's reach of the others).
    fn regs() -> Gprs {
        let mut g = [0u64; 16];
        for (i, r) in g.iter_mut().enumerate() {
            *r = 0x7f00_0000_0000 + ((i as u64) << 16);
        }
        g
    }

    const IP: u64 = 0x5555_5555_0000;

    fn reg(n: usize) -> u64 {
        regs()[n]
    }

    fn store(addr: u64, value: u64, len: usize, insn_len: usize) -> Option<Store> {
        Some(Store {
            addr,
            value,
            len,
            insn_len,
        })
    }

    // The doorbell stores of Debian's libmlx5.so.1.24.44.0 (rdma-core 44), from objdump.

    #[test]
    fn libmlx5_cq_arm() {
        // 48 89 42 20: mov %rax,0x20(%rdx) (mlx5_arm_cq's mmio_write64_be).
        let r = decode(&[0x48, 0x89, 0x42, 0x20], IP, &regs());
        assert_eq!(r, store(reg(2) + 0x20, reg(0), 8, 4));
    }

    #[test]
    fn libmlx5_send_doorbells() {
        // 48 89 0c 02: mov %rcx,(%rdx,%rax,1) (post_send_db: bf->reg + bf->offset).
        let r = decode(&[0x48, 0x89, 0x0c, 0x02], IP, &regs());
        assert_eq!(r, store(reg(2) + reg(0), reg(1), 8, 3 + 1));
        // 48 89 10: mov %rdx,(%rax).
        let r = decode(&[0x48, 0x89, 0x10], IP, &regs());
        assert_eq!(r, store(reg(0), reg(2), 8, 3));
        // 4c 89 08: mov %r9,(%rax).
        let r = decode(&[0x4c, 0x89, 0x08], IP, &regs());
        assert_eq!(r, store(reg(0), reg(9), 8, 3));
    }

    #[test]
    fn libmlx5_blueflame_copy() {
        // 48 89 50 c0: mov %rdx,-0x40(%rax); 48 89 71 38: mov %rsi,0x38(%rcx).
        let r = decode(&[0x48, 0x89, 0x50, 0xc0], IP, &regs());
        assert_eq!(r, store(reg(0) - 0x40, reg(2), 8, 4));
        let r = decode(&[0x48, 0x89, 0x71, 0x38], IP, &regs());
        assert_eq!(r, store(reg(1) + 0x38, reg(6), 8, 4));
    }

    #[test]
    fn trailing_bytes_are_not_read() {
        // The next instruction's bytes follow; the length stops at the store's end.
        let r = decode(&[0x48, 0x89, 0x10, 0x0f, 0xae, 0xf8], IP, &regs());
        assert_eq!(r.map(|s| s.insn_len), Some(3));
    }

    #[test]
    fn thirty_two_bit_stores() {
        // 89 42 24: mov %eax,0x24(%rdx): the low half of rax.
        let r = decode(&[0x89, 0x42, 0x24], IP, &regs());
        assert_eq!(r, store(reg(2) + 0x24, reg(0) & 0xffff_ffff, 4, 3));
        // 44 89 3e: mov %r15d,(%rsi) (REX.R without W).
        let r = decode(&[0x44, 0x89, 0x3e], IP, &regs());
        assert_eq!(r, store(reg(6), reg(15) & 0xffff_ffff, 4, 3));
    }

    #[test]
    fn addressing_forms() {
        // 49 89 84 24 00 08 00 00: mov %rax,0x800(%r12) (SIB base r12, disp32).
        let r = decode(&[0x49, 0x89, 0x84, 0x24, 0x00, 0x08, 0, 0], IP, &regs());
        assert_eq!(r, store(reg(12) + 0x800, reg(0), 8, 8));
        // 49 89 45 00: mov %rax,0x0(%r13) (r13 needs a disp8).
        let r = decode(&[0x49, 0x89, 0x45, 0x00], IP, &regs());
        assert_eq!(r, store(reg(13), reg(0), 8, 4));
        // 4a 89 04 f5 20 00 00 00: mov %rax,0x20(,%r14,8) (no base, scaled index).
        let r = decode(&[0x4a, 0x89, 0x04, 0xf5, 0x20, 0, 0, 0], IP, &regs());
        assert_eq!(r, store((reg(14) << 3) + 0x20, reg(0), 8, 8));
        // 48 89 04 24: mov %rax,(%rsp) (SIB with no index).
        let r = decode(&[0x48, 0x89, 0x04, 0x24], IP, &regs());
        assert_eq!(r, store(reg(4), reg(0), 8, 4));
        // 48 89 05 f9 ff ff ff: mov %rax,-0x7(%rip): relative to the next instruction.
        let r = decode(&[0x48, 0x89, 0x05, 0xf9, 0xff, 0xff, 0xff], IP, &regs());
        assert_eq!(r, store(IP + 7 - 7, reg(0), 8, 7));
    }

    #[test]
    fn immediate_stores() {
        // 48 c7 42 20 ff ff ff ff: movq $-1,0x20(%rdx): sign-extended.
        let r = decode(
            &[0x48, 0xc7, 0x42, 0x20, 0xff, 0xff, 0xff, 0xff],
            IP,
            &regs(),
        );
        assert_eq!(r, store(reg(2) + 0x20, u64::MAX, 8, 8));
        // c7 00 78 56 34 12: movl $0x12345678,(%rax).
        let r = decode(&[0xc7, 0x00, 0x78, 0x56, 0x34, 0x12], IP, &regs());
        assert_eq!(r, store(reg(0), 0x1234_5678, 4, 6));
        // 48 c7 05 10 00 00 00 01 00 00 00: movq $1,0x10(%rip): after the immediate.
        let r = decode(
            &[0x48, 0xc7, 0x05, 0x10, 0, 0, 0, 0x01, 0, 0, 0],
            IP,
            &regs(),
        );
        assert_eq!(r, store(IP + 11 + 0x10, 1, 8, 11));
    }

    #[test]
    fn refused_forms() {
        let g = regs();
        for bytes in [
            // 66 89 02: mov %ax,(%rdx) (operand-size prefix: a 16-bit store).
            &[0x66, 0x89, 0x02][..],
            // 88 02: mov %al,(%rdx) (8-bit).
            &[0x88, 0x02],
            // 67 48 89 02: address-size prefix.
            &[0x67, 0x48, 0x89, 0x02],
            // 64 48 89 02: %fs segment.
            &[0x64, 0x48, 0x89, 0x02],
            // f0 48 09 02: lock or.
            &[0xf0, 0x48, 0x09, 0x02],
            // 48 0f c3 02: movnti %rax,(%rdx).
            &[0x48, 0x0f, 0xc3, 0x02],
            // 0f 11 02: movups %xmm0,(%rdx).
            &[0x0f, 0x11, 0x02],
            // 66 0f e7 02: movntdq %xmm0,(%rdx).
            &[0x66, 0x0f, 0xe7, 0x02],
            // 48 8b 02: mov (%rdx),%rax (a load).
            &[0x48, 0x8b, 0x02],
            // 48 89 c2: mov %rax,%rdx (register destination).
            &[0x48, 0x89, 0xc2],
            // 48 c7 4a 20 00 00 00 00: C7 /1 (not a MOV).
            &[0x48, 0xc7, 0x4a, 0x20, 0, 0, 0, 0],
            // f3 48 a5: rep movsq.
            &[0xf3, 0x48, 0xa5],
            // 40 48 89 02: two REX prefixes (the first is ignored by the CPU; refused here).
            &[0x40, 0x48, 0x89, 0x02],
            // Nothing.
            &[],
        ] {
            assert_eq!(decode(bytes, IP, &g), None, "{bytes:02x?}");
        }
    }

    #[test]
    fn truncated_instructions_are_refused() {
        let g = regs();
        let full = [0x49, 0x89, 0x84, 0x24, 0x00, 0x08, 0, 0];
        assert!(decode(&full, IP, &g).is_some());
        for n in 0..full.len() {
            assert_eq!(decode(&full[..n], IP, &g), None, "{n} bytes");
        }
        let imm = [0x48, 0xc7, 0x42, 0x20, 0xff, 0xff, 0xff, 0xff];
        for n in 0..imm.len() {
            assert_eq!(decode(&imm[..n], IP, &g), None, "{n} bytes");
        }
    }

    #[test]
    fn every_modrm_of_opcode_89_decodes_or_is_refused() {
        // Exhaustive over REX and ModRM (and SIB where there is one), with enough bytes for any
        // displacement: a register destination is the only refusal, and the length is what
        // the addressing form needs.
        let g = regs();
        for rex in [0u8, 0x40, 0x41, 0x42, 0x44, 0x48, 0x4f] {
            for modrm in 0..=255u8 {
                for sib in [0x00u8, 0x24, 0x25, 0xe5, 0x9c] {
                    let mut b = [0u8; 12];
                    let mut n = 0;
                    if rex != 0 {
                        b[0] = rex;
                        n = 1;
                    }
                    b[n] = 0x89;
                    b[n + 1] = modrm;
                    b[n + 2] = sib;
                    let r = decode(&b, IP, &g);
                    let (m, rm) = (modrm >> 6, modrm & 7);
                    if m == 3 {
                        assert_eq!(r, None);
                        continue;
                    }
                    let s = r.expect("a memory operand decodes");
                    let sib_len = usize::from(rm == 4);
                    let disp = match (m, rm) {
                        (0, 5) => 4,
                        (0, 4) if sib & 7 == 5 => 4,
                        (0, _) => 0,
                        (1, _) => 1,
                        _ => 4,
                    };
                    assert_eq!(
                        s.insn_len,
                        n + 2 + sib_len + disp,
                        "{rex:x} {modrm:x} {sib:x}"
                    );
                    assert_eq!(s.len, if rex & 8 != 0 { 8 } else { 4 });
                }
            }
        }
    }
}
