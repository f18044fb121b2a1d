// SPDX-License-Identifier: GPL-2.0

//! The pure part of the uverbs user ABI: the ioctl object/method/attribute
//! protocol and the legacy `write()` protocol, as data (spec tables) and as
//! pure functions over byte slices (parsers of user bytes).
//!
//! Nothing here touches user memory, uobjects or devices: where upstream
//! does (`copy_from_user`, `uverbs_get_uobject_from_file`, ...) the parser
//! calls the [`parse::AttrEnv`] hooks at exactly upstream's point, so that
//! the order of the checks, and therefore the errno a user sees, is
//! upstream's. The same files are compiled into the kernel crate and, from
//! `host/uverbs-abi`, on the host for unit tests and fuzzing; they use
//! `core` only, never allocate, never panic on user input and contain no
//! `unsafe`.
//!
//! See `Documentation/uverbs-abi.md` for the errno table.
//!
//! Child modules are declared with explicit `#[path]`s (relative to this
//! file's directory) so that the module tree is the same whether this file
//! is mounted by the kernel crate or by the host crate.

#[path = "abi/errno.rs"]
pub(crate) mod errno;

#[path = "abi/ids.rs"]
pub(crate) mod ids;

#[path = "abi/layout.rs"]
pub(crate) mod layout;

#[path = "abi/structs.rs"]
pub(crate) mod structs;

#[path = "abi/ioctl.rs"]
pub(crate) mod ioctl;

#[path = "abi/spec.rs"]
pub(crate) mod spec;

#[path = "abi/std_types.rs"]
pub(crate) mod std_types;

#[path = "abi/uapi.rs"]
pub(crate) mod uapi;

#[path = "abi/parse.rs"]
pub(crate) mod parse;

#[path = "abi/write.rs"]
pub(crate) mod write;

#[cfg(test)]
#[path = "abi/tests.rs"]
mod tests;

pub(crate) use errno::Errno;
