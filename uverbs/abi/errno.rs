// SPDX-License-Identifier: GPL-2.0

//! The errnos the pure uverbs ABI code returns, with their Linux values.
//!
//! The kernel side converts them with [`Errno::to_errno`] (negative, as the
//! C ABI returns them) into `kernel::error::Error::from_errno`.

/// An errno returned by the uverbs ABI parsers (Linux numeric values,
/// `include/uapi/asm-generic/errno-base.h` / `errno.h`, and
/// `include/linux/errno.h` for the kernel-internal `ENOIOCTLCMD`).
#[allow(clippy::upper_case_acronyms)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "used by the host tests and the fuzzer only")
)]
pub(crate) enum Errno {
    /// An attribute the handler asked for is not present.
    ENOENT = 2,
    /// The device was disassociated (hot unplug): the method has no handler.
    EIO = 5,
    /// An FD attribute that is not a file of the object type (kernel side).
    EBADF = 9,
    /// The user supplied more bytes than the kernel knows (mapped to
    /// `EOPNOTSUPP` by `uverbs_request()` before it reaches the user).
    E2BIG = 7,
    /// An allocation failed (or, in the pure code, a fixed capacity ran out).
    ENOMEM = 12,
    /// A user address could not be read or written.
    EFAULT = 14,
    /// No free file descriptor (an FD attribute with NEW access).
    EMFILE = 24,
    /// A spec table declares the same key twice (`radix_tree_insert`).
    EEXIST = 17,
    /// Malformed request.
    EINVAL = 22,
    /// A buffer is smaller than the command's core structure.
    ENOSPC = 28,
    /// An id does not fit the uapi key space (`UVERBS_API_KEY_ERR`).
    EOVERFLOW = 75,
    /// The kernel does not know the object, method or a mandatory attribute.
    EPROTONOSUPPORT = 93,
    /// Known but unsupported value (non-zero trailing bytes, unknown write
    /// command, enum element out of range).
    EOPNOTSUPP = 95,
    /// Not our ioctl number; the VFS turns this into `ENOTTY`.
    ENOIOCTLCMD = 515,
}

impl Errno {
    /// The negative errno the C ABI returns (`-EINVAL` is `-22`).
    pub(crate) const fn to_errno(self) -> i32 {
        -(self as i32)
    }

    /// The positive errno value (`EINVAL` is `22`).
    #[cfg_attr(
        MODULE,
        expect(dead_code, reason = "used by the host tests and the fuzzer only")
    )]
    pub(crate) const fn value(self) -> i32 {
        self as i32
    }
}

#[cfg(test)]
mod tests {
    use super::Errno;

    #[test]
    fn linux_values() {
        let expect = [
            (Errno::ENOENT, 2),
            (Errno::EIO, 5),
            (Errno::EBADF, 9),
            (Errno::E2BIG, 7),
            (Errno::ENOMEM, 12),
            (Errno::EFAULT, 14),
            (Errno::EEXIST, 17),
            (Errno::EMFILE, 24),
            (Errno::EINVAL, 22),
            (Errno::ENOSPC, 28),
            (Errno::EOVERFLOW, 75),
            (Errno::EPROTONOSUPPORT, 93),
            (Errno::EOPNOTSUPP, 95),
            (Errno::ENOIOCTLCMD, 515),
        ];
        for (e, v) in expect {
            assert_eq!(e.value(), v);
            assert_eq!(e.to_errno(), -v);
        }
    }
}
