// SPDX-License-Identifier: GPL-2.0

//! The legacy `write()` ABI (`ib_uverbs_write()` in uverbs_main.c) and its
//! ioctl tunnel DEVICE/INVOKE_WRITE: command headers, upstream's size checks
//! (`verify_hdr()`), the layout of the core and driver (udata) buffers, and
//! the request copy rule of `uverbs_request()`.

use super::ids::cmd;
use super::layout::AbiField;
use super::uapi::{UapiTree, WriteMethod};
use super::Errno;

pub(crate) use super::structs::{CmdHdr, ExCmdHdr};

/// Where the response buffer's address comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Response {
    /// No response buffer (NULL).
    None,
    /// The first `u64` of the core request (`get_user(response, buf)` at
    /// write-buffer offset 8; `EFAULT` if that faults).
    InRequest,
    /// `ex_hdr.response`.
    Addr(u64),
}

/// The buffers of a write command, as `ib_uverbs_write()` sets up
/// `bundle.ucore` and `bundle.driver_udata`. Input offsets are into the
/// user's write buffer; outputs are `(offset from the response address,
/// length)`. A zero length means a NULL buffer
/// (`ib_uverbs_init_udata_buf_or_null()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WritePlan {
    pub(crate) method: WriteMethod,
    /// `(offset, len)` of the core request.
    pub(crate) core_in: (usize, usize),
    /// `(offset, len)` of the driver's request.
    pub(crate) udata_in: (usize, usize),
    pub(crate) response: Response,
    /// `(offset, len)` of the core response.
    pub(crate) core_out: (usize, usize),
    /// `(offset, len)` of the driver's response.
    pub(crate) udata_out: (usize, usize),
}

/// upstream: `verify_hdr()`. `count` is the write() length; `hdr` may be
/// changed by the DESTROY_CQ compatibility rule.
fn verify_hdr(hdr: &mut CmdHdr, ex: &ExCmdHdr, count: usize, m: &WriteMethod) -> Result<(), Errno> {
    if m.is_ex() {
        // ib_uverbs_write() checked count >= 24.
        let count = count.saturating_sub(CmdHdr::SIZE + ExCmdHdr::SIZE);
        let in_words = usize::from(hdr.in_words) + usize::from(ex.provider_in_words);
        if in_words * 8 != count {
            return Err(Errno::EINVAL);
        }
        if usize::from(hdr.in_words) * 8 < m.req_size() {
            return Err(Errno::ENOSPC);
        }
        if ex.cmd_hdr_reserved != 0 {
            return Err(Errno::EINVAL);
        }
        if ex.response != 0 {
            if hdr.out_words == 0 && ex.provider_out_words == 0 {
                return Err(Errno::EINVAL);
            }
            if usize::from(hdr.out_words) * 8 < m.resp_size() {
                return Err(Errno::ENOSPC);
            }
            // access_ok() of the response range is the kernel side's
            // (EFAULT).
        } else if hdr.out_words != 0 || ex.provider_out_words != 0 {
            return Err(Errno::EINVAL);
        }
        return Ok(());
    }

    if usize::from(hdr.in_words) * 4 != count {
        return Err(Errno::EINVAL);
    }
    if count < m.req_size() + CmdHdr::SIZE {
        // rdma-core v18/v19 send DESTROY_CQ as a 16-byte write.
        if hdr.command == cmd::DESTROY_CQ && count == 16 {
            hdr.in_words = 6;
            return Ok(());
        }
        return Err(Errno::ENOSPC);
    }
    if usize::from(hdr.out_words) * 4 < m.resp_size() {
        return Err(Errno::ENOSPC);
    }
    Ok(())
}

/// Checks a `write()` and lays out its buffers, errno for errno with
/// upstream. `head` is the start of the user's buffer (at least the first
/// 24 bytes when `count` allows; the kernel side copies them, `EFAULT` on a
/// fault), `count` the write length.
///
/// upstream: `ib_uverbs_write()`, `uapi_get_method()`, `verify_hdr()`.
///
/// # Errors
///
/// * `EINVAL`: `count < 8`; command bits outside `FLAG_EXTENDED |
///   COMMAND_MASK`; an extended command with `count < 24`; a length that
///   does not match `in_words`; non-zero `cmd_hdr_reserved`; an ex response
///   pointer without output words, or output words without a pointer.
/// * `EOPNOTSUPP`: a command number past the device's highest one.
/// * `ENOSPC`: a request or response below the command's core size.
/// * `EFAULT`: `head` shorter than the headers `count` promises.
pub(crate) fn plan_write(tree: &UapiTree, head: &[u8], count: usize) -> Result<WritePlan, Errno> {
    if count < CmdHdr::SIZE {
        return Err(Errno::EINVAL);
    }
    let hb: &[u8; CmdHdr::SIZE] = head
        .get(..CmdHdr::SIZE)
        .and_then(|b| b.try_into().ok())
        .ok_or(Errno::EFAULT)?;
    let mut hdr = CmdHdr::from_bytes(hb);

    let method = tree.write_method(hdr.command)?;

    let mut ex = ExCmdHdr::default();
    if method.is_ex() {
        if count < CmdHdr::SIZE + ExCmdHdr::SIZE {
            return Err(Errno::EINVAL);
        }
        let eb: &[u8; ExCmdHdr::SIZE] = head
            .get(CmdHdr::SIZE..CmdHdr::SIZE + ExCmdHdr::SIZE)
            .and_then(|b| b.try_into().ok())
            .ok_or(Errno::EFAULT)?;
        ex = ExCmdHdr::from_bytes(eb);
    }

    verify_hdr(&mut hdr, &ex, count, &method)?;

    let buf = CmdHdr::SIZE;
    if !method.is_ex() {
        // verify_hdr() guarantees in_words * 4 >= 8 + req_size and
        // out_words * 4 >= resp_size; saturate anyway.
        let mut in_len = (usize::from(hdr.in_words) * 4).saturating_sub(CmdHdr::SIZE);
        let mut out_len = usize::from(hdr.out_words) * 4;
        let mut udata_in = (0, 0);
        let mut udata_out = (0, 0);
        if method.has_udata() {
            let inlen = in_len.saturating_sub(method.req_size());
            in_len = method.req_size();
            udata_in = (if inlen != 0 { buf + in_len } else { 0 }, inlen);
        }
        let response = if method.has_resp() {
            if method.has_udata() {
                let outlen = out_len.saturating_sub(method.resp_size());
                out_len = method.resp_size();
                udata_out = (if outlen != 0 { out_len } else { 0 }, outlen);
            }
            Response::InRequest
        } else {
            Response::None
        };
        return Ok(WritePlan {
            method,
            core_in: (if in_len != 0 { buf } else { 0 }, in_len),
            udata_in,
            response,
            core_out: (0, out_len),
            udata_out,
        });
    }

    let buf = buf + ExCmdHdr::SIZE;
    let core_in_len = usize::from(hdr.in_words) * 8;
    let core_out_len = usize::from(hdr.out_words) * 8;
    let drv_in_len = usize::from(ex.provider_in_words) * 8;
    let drv_out_len = usize::from(ex.provider_out_words) * 8;
    Ok(WritePlan {
        method,
        core_in: (if core_in_len != 0 { buf } else { 0 }, core_in_len),
        udata_in: (
            if drv_in_len != 0 {
                buf + core_in_len
            } else {
                0
            },
            drv_in_len,
        ),
        response: if ex.response != 0 {
            Response::Addr(ex.response)
        } else {
            Response::None
        },
        core_out: (0, core_out_len),
        udata_out: (if drv_out_len != 0 { core_out_len } else { 0 }, drv_out_len),
    })
}

/// The checks of the DEVICE/INVOKE_WRITE handler before it calls the write
/// handler: the command number from the mandatory WRITE_CMD const, the
/// lookup, and the core buffer sizes from CORE_IN / CORE_OUT (absent = 0).
///
/// upstream: `UVERBS_HANDLER(UVERBS_METHOD_INVOKE_WRITE)`.
///
/// # Errors
///
/// * `EINVAL` for a WRITE_CMD above `u32::MAX` or with undefined command
///   bits, `EOPNOTSUPP` past the highest command (`uapi_get_method()`).
/// * `ENOSPC` if CORE_IN is shorter than the command's request or CORE_OUT
///   shorter than its response (rdma-core probes with QUERY_DEVICE and no
///   buffers and takes `ENOSPC` as "INVOKE_WRITE works").
pub(crate) fn invoke_write_method(
    tree: &UapiTree,
    write_cmd: u64,
    core_in_len: usize,
    core_out_len: usize,
) -> Result<WriteMethod, Errno> {
    // uverbs_get_const(&cmd (u32), ...): _uverbs_get_const_unsigned()
    let command = u32::try_from(write_cmd).map_err(|_| Errno::EINVAL)?;
    let m = tree.write_method(command)?;
    if core_in_len < m.req_size() || core_out_len < m.resp_size() {
        return Err(Errno::ENOSPC);
    }
    Ok(m)
}

/// Copies a core request of `src.len()` user bytes into the kernel struct
/// `dst`: a shorter request is zero-extended, a longer one must be zero
/// past `dst.len()`.
///
/// upstream: `uverbs_request()` = `copy_struct_from_user()` with `E2BIG`
/// turned into `EOPNOTSUPP`.
///
/// # Errors
///
/// `EOPNOTSUPP` if a byte past `dst.len()` is non-zero.
#[cfg_attr(MODULE, expect(dead_code, reason = "used by the host tests only"))]
pub(crate) fn uverbs_request(dst: &mut [u8], src: &[u8]) -> Result<(), Errno> {
    let n = dst.len().min(src.len());
    if let Some(extra) = src.get(n..) {
        if extra.iter().any(|b| *b != 0) {
            return Err(Errno::EOPNOTSUPP);
        }
    }
    let (head, tail) = dst.split_at_mut(n);
    if let Some(s) = src.get(..n) {
        head.copy_from_slice(s);
    }
    tail.fill(0);
    Ok(())
}

/// [`uverbs_request()`] into the typed request `T`.
///
/// # Errors
///
/// `EOPNOTSUPP` if a byte past `sizeof(T)` is non-zero.
pub(crate) fn request<T: AbiField>(src: &[u8]) -> Result<T, Errno> {
    if src.iter().skip(T::SIZE).any(|b| *b != 0) {
        return Err(Errno::EOPNOTSUPP);
    }
    Ok(T::read(src))
}

/// The write_ex `response_length` protocol: the number of response bytes
/// the kernel actually wrote.
///
/// upstream: `uverbs_response_length()`.
pub(crate) fn uverbs_response_length(outlen: usize, resp_len: usize) -> usize {
    outlen.min(resp_len)
}
