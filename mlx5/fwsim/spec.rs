// SPDX-License-Identifier: GPL-2.0

//! The `sim=` module parameter: which simulated functions to create at load time.
//!
//! A comma-separated list, one entry per function, in function order (function N becomes the
//! auxiliary device `<module>.rdma.N`):
//!
//! * `ib` — an InfiniBand port on a ConnectX-7 (the only simulated model that runs IB);
//! * `eth` (or `roce`) — an Ethernet/RoCE port on a ConnectX-6 Dx (the common RoCE NIC);
//! * `ib:cx7`, `eth:cx7`, `eth:cx6dx` — the model spelled out;
//! * any of them followed by `@N` (1..=65535) — the function's serial, which its GUIDs and MAC
//!   derive from, instead of its position in the list (1, 2, ...): functions in different
//!   hosts on one wire (`make wire PEER=ours`) need different MACs.
//!
//! Pure code, so the grammar is tested on the host.

use super::profile::{LinkLayer, Profile, CONNECTX6_DX, CONNECTX7};
use super::Config;

/// Most functions one `sim=` list may create: enough for multi-device tests, small enough that
/// a typo (`sim=ib,ib,ib,...`) cannot eat memory (each function is about 230 KiB).
pub(crate) const MAX_FUNCTIONS: usize = 8;

/// Why a `sim=` list was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SpecError {
    /// An entry is not one of the spellings above (index of the entry).
    UnknownEntry(usize),
    /// More than [`MAX_FUNCTIONS`] entries.
    TooMany,
}

/// Parses one entry into its configuration; `serial` tells functions apart (GUIDs, MACs)
/// unless the entry names its own (`@N`).
fn entry(word: &str, serial: u32) -> Option<Config> {
    let (word, serial) = match word.split_once('@') {
        Some((w, n)) => (
            w,
            n.parse::<u32>().ok().filter(|n| (1..=0xffff).contains(n))?,
        ),
        None => (word, serial),
    };
    let (link_layer, profile): (LinkLayer, Profile) = match word {
        "ib" | "ib:cx7" => (LinkLayer::Ib, CONNECTX7),
        "eth" | "roce" | "eth:cx6dx" => (LinkLayer::Ethernet, CONNECTX6_DX),
        "eth:cx7" => (LinkLayer::Ethernet, CONNECTX7),
        _ => return None,
    };
    Some(Config {
        profile,
        link_layer,
        // A ConnectX function has one port (a dual-port card is two functions).
        num_ports: 1,
        serial,
        // The simulated function owns its on-chip memory (`SimFunction::new`).
        memic: true,
    })
}

/// Parses a `sim=` list and calls `f(index, config)` for each function, in order. Nothing is
/// called unless the whole list parses. An empty list (the default) creates no function.
/// Surrounding whitespace and a trailing newline are ignored; empty entries are not allowed.
///
/// # Errors
///
/// [`SpecError`] for a bad list; `f`'s own error is returned as `Ok(Err(e))`.
pub(crate) fn parse<E>(
    list: &[u8],
    mut f: impl FnMut(usize, Config) -> Result<(), E>,
) -> Result<Result<(), E>, SpecError> {
    let s = core::str::from_utf8(list).map_err(|_| SpecError::UnknownEntry(0))?;
    let s = s.trim();
    if s.is_empty() {
        return Ok(Ok(()));
    }
    let mut count = 0;
    for (i, w) in s.split(',').enumerate() {
        let serial = u32::try_from(i).map_err(|_| SpecError::TooMany)? + 1;
        entry(w.trim(), serial).ok_or(SpecError::UnknownEntry(i))?;
        count += 1;
    }
    if count > MAX_FUNCTIONS {
        return Err(SpecError::TooMany);
    }
    for (i, w) in s.split(',').enumerate() {
        let serial = u32::try_from(i).map_err(|_| SpecError::TooMany)? + 1;
        let cfg = entry(w.trim(), serial).ok_or(SpecError::UnknownEntry(i))?;
        if let Err(e) = f(i, cfg) {
            return Ok(Err(e));
        }
    }
    Ok(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn list(s: &str) -> Result<Vec<(usize, &'static str, LinkLayer, u32)>, SpecError> {
        let mut v = Vec::new();
        parse::<()>(s.as_bytes(), |i, c| {
            v.push((i, c.profile.name, c.link_layer, c.serial));
            Ok(())
        })?
        .unwrap();
        Ok(v)
    }

    #[test]
    fn sim_list_grammar() {
        assert_eq!(list(""), Ok(Vec::new()));
        assert_eq!(list("\n"), Ok(Vec::new()));
        assert_eq!(
            list("ib,eth\n"),
            Ok(std::vec![
                (0, "ConnectX-7", LinkLayer::Ib, 1),
                (1, "ConnectX-6 Dx", LinkLayer::Ethernet, 2)
            ])
        );
        assert_eq!(
            list("eth:cx7, roce"),
            Ok(std::vec![
                (0, "ConnectX-7", LinkLayer::Ethernet, 1),
                (1, "ConnectX-6 Dx", LinkLayer::Ethernet, 2)
            ])
        );
        assert_eq!(
            list("eth@2,ib@65535"),
            Ok(std::vec![
                (0, "ConnectX-6 Dx", LinkLayer::Ethernet, 2),
                (1, "ConnectX-7", LinkLayer::Ib, 65535)
            ])
        );
        for bad in ["eth@0", "eth@65536", "eth@", "eth@x", "@2"] {
            assert_eq!(list(bad), Err(SpecError::UnknownEntry(0)), "{bad}");
        }
        assert_eq!(list("ib,,eth"), Err(SpecError::UnknownEntry(1)));
        assert_eq!(list("ib:cx6dx"), Err(SpecError::UnknownEntry(0)));
        assert_eq!(list("ib,ib,ib,ib,ib,ib,ib,ib,ib"), Err(SpecError::TooMany));
        assert_eq!(list("ib,ib,ib,ib,ib,ib,ib,ib").map(|v| v.len()), Ok(8));
    }

    #[test]
    fn every_entry_builds_a_device() {
        for w in ["ib", "ib:cx7", "eth", "roce", "eth:cx6dx", "eth:cx7"] {
            let cfg = entry(w, 1).unwrap();
            assert!(super::super::Fw::new(cfg).is_ok(), "{w}");
        }
    }
}
