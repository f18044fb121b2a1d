// SPDX-License-Identifier: GPL-2.0

//! The differential mode's comparison: two traces of the same seed, one
//! from our stack and one from upstream's, call by call.
//!
//! A call is compared when both traces hold it under the same number with
//! the same description: the same operation, the same mutation, and the
//! same state of every handle it names (live, stale, none, ...). Calls the
//! fuzzer does not trace (mmap offsets and driver data are the driver's;
//! threads and children interleave freely) never get here. Every other
//! difference of errno is a divergence: known ones (`KNOWN`, each with its
//! reason, also listed in `Documentation/testing.md`) are printed and
//! pass, unknown ones fail.

use std::collections::{BTreeMap, HashMap};

/// `(substring of the description, ours, upstream, why)`.
pub(crate) const KNOWN: &[(&str, &str, &str, &str)] = &[
    (
        "write CREATE_AH",
        "EOPNOTSUPP",
        "*",
        "the mock device has no create_ah (rxe has): the command is not in its mask",
    ),
    (
        "write DESTROY_AH",
        "EOPNOTSUPP",
        "*",
        "the mock device has no destroy_ah (rxe has)",
    ),
    (
        "write POLL_CQ",
        "EOPNOTSUPP",
        "*",
        "the mock has no kernel-side poll_cq (rxe polls in user space but registers the op)",
    ),
    (
        "write REQ_NOTIFY_CQ",
        "EOPNOTSUPP",
        "*",
        "the mock has no req_notify_cq (rxe has)",
    ),
    (
        "write POST_SEND",
        "EOPNOTSUPP",
        "*",
        "the mock has no post_send (rxe has)",
    ),
    (
        "write POST_RECV",
        "EOPNOTSUPP",
        "*",
        "the mock has no post_recv (rxe has)",
    ),
    (
        "write POST_SRQ_RECV",
        "EOPNOTSUPP",
        "*",
        "the mock has no post_srq_recv (rxe has): the command is not in its mask, so any request is EOPNOTSUPP before the header checks (upstream's EINVAL from verify_hdr())",
    ),
    (
        "write ATTACH_MCAST",
        "EOPNOTSUPP",
        "*",
        "the mock has no attach_mcast (rxe has): the command is not in its mask",
    ),
    (
        "write DETACH_MCAST",
        "EOPNOTSUPP",
        "*",
        "the mock has no detach_mcast (rxe has): the command is not in its mask",
    ),
    (
        "write RESIZE_CQ",
        "EOPNOTSUPP",
        "*",
        "the mock has no resize_cq (rxe has)",
    ),
    (
        "hdr.object_id 0x6",
        "EPROTONOSUPPORT",
        "*",
        "the AH object: the mock has no destroy_ah, so the object is not in its tree (upstream UAPI_DEF_OBJ_NEEDS_FN); and ours declares no AH_DESTROY ioctl method (libibverbs 44 destroys AHs by write)",
    ),
    (
        "ucma NOTIFY",
        "EOPNOTSUPP",
        "*",
        "IB_EVENT_COMM_EST and IB_EVENT_PATH_MIG on an id with an IB CM id: the IB CM's cm_establish() and cm_migrate() are not implemented (Documentation/cm.md)",
    ),
    (
        "write EX_MODIFY_CQ",
        "*",
        "*",
        "modify_cq is optional: neither the mock nor rxe implements it the same way",
    ),
];

/// A call's number in a trace: step and call within the step.
type Seq = (u64, u32);
/// One kind of divergence: description, our errno, upstream's.
type Kind = (String, String, String);

fn parse(text: &str) -> BTreeMap<(u64, u32), (String, String)> {
    let mut m = BTreeMap::new();
    for l in text.lines() {
        let mut it = l.splitn(3, '\t');
        let (Some(seq), Some(e), Some(d)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        let Some((a, b)) = seq.split_once('.') else {
            continue;
        };
        let (Ok(a), Ok(b)) = (a.parse::<u64>(), b.parse::<u32>()) else {
            continue;
        };
        m.insert((a, b), (e.to_string(), d.to_string()));
    }
    m
}

fn known(desc: &str, ours: &str, up: &str) -> Option<&'static str> {
    KNOWN
        .iter()
        .find(|(pat, o, u, _)| {
            desc.contains(pat) && (*o == "*" || *o == ours) && (*u == "*" || *u == up)
        })
        .map(|k| k.3)
}

/// Prints the comparison (`R ok`/`R fail` lines for the VM's KTAP) and
/// returns the number of unknown divergences.
pub(crate) fn compare(ours: &str, upstream: &str) -> usize {
    let a = parse(ours);
    let b = parse(upstream);
    let mut compared = 0u64;
    let mut alike = 0u64;
    let mut unmatched = 0u64;
    // (call without handle numbers, ours, upstream) -> (count, first seq)
    let mut groups: HashMap<Kind, (u64, Seq)> = HashMap::new();
    for (seq, (eo, d)) in &a {
        match b.get(seq) {
            Some((eu, du)) if du == d => {
                compared += 1;
                if eo == eu {
                    alike += 1;
                } else {
                    let g = groups
                        .entry((d.clone(), eo.clone(), eu.clone()))
                        .or_insert((0, *seq));
                    g.0 += 1;
                }
            }
            _ => unmatched += 1,
        }
    }
    println!(
        "diff: {} calls traced (ours), {} (upstream); {compared} compared, {alike} alike, {unmatched} described differently (state diverged) or missing",
        a.len(),
        b.len()
    );
    let mut list: Vec<_> = groups.into_iter().collect();
    list.sort_by_key(|x| (x.1).1);
    let mut unknown = 0;
    let mut known_n = 0;
    for ((d, eo, eu), (n, (s, t))) in &list {
        match known(d, eo, eu) {
            Some(why) => {
                known_n += 1;
                if known_n <= 40 {
                    println!("diff| known {s}.{t} x{n}: {d}: ours {eo} upstream {eu} ({why})");
                }
            }
            None => {
                unknown += 1;
                println!("DIVERGENCE {s}.{t} x{n}: {d}: ours {eo} upstream {eu}");
            }
        }
    }
    println!(
        "diff: {} divergent calls in {} kinds: {known_n} known, {unknown} unknown",
        list.iter().map(|g| (g.1).0).sum::<u64>(),
        list.len()
    );
    if compared > 0 {
        println!("R ok differential: {compared} calls compared");
    } else {
        println!("R fail differential: no call compared");
    }
    if unknown == 0 {
        println!("R ok differential: no divergence outside the documented ones");
    } else {
        println!("R fail differential: no divergence outside the documented ones: {unknown} kinds");
    }
    unknown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_desc_other_errno_is_a_divergence() {
        let a = "1.0\tok\twrite ALLOC_PD [] valid\n2.0\tEINVAL\tioctl X [] valid\n3.0\tok\topen\n";
        let b =
            "1.0\tok\twrite ALLOC_PD [] valid\n2.0\tENOSPC\tioctl X [] valid\n3.0\tok\topen x\n";
        assert_eq!(compare(a, b), 1);
        assert_eq!(compare(a, a), 0);
    }

    #[test]
    fn known_divergences_pass() {
        let a = "1.0\tEOPNOTSUPP\twrite CREATE_AH [16:live] valid\n";
        let b = "1.0\tok\twrite CREATE_AH [16:live] valid\n";
        assert_eq!(compare(a, b), 0);
    }
}
