// SPDX-License-Identifier: GPL-2.0

//! Readable names for the ids of the spec tables (the tables themselves
//! carry numbers only), as the uapi headers spell them.

use crate::abi::ids::cmd;

pub(crate) fn object(id: u16) -> &'static str {
    const NAMES: [&str; 20] = [
        "DEVICE",
        "PD",
        "COMP_CHANNEL",
        "CQ",
        "QP",
        "SRQ",
        "AH",
        "MR",
        "MW",
        "FLOW",
        "XRCD",
        "RWQ_IND_TBL",
        "WQ",
        "FLOW_ACTION",
        "DM",
        "COUNTERS",
        "ASYNC_EVENT",
        "DMAH",
        "DMABUF",
        "COMP_CNTR",
    ];
    NAMES.get(usize::from(id)).copied().unwrap_or("OBJ?")
}

pub(crate) fn method(obj: u16, id: u16) -> String {
    let n = match (object(obj), id) {
        ("DEVICE", 0) => "INVOKE_WRITE",
        ("DEVICE", 1) => "INFO_HANDLES",
        ("DEVICE", 2) => "QUERY_PORT",
        ("DEVICE", 3) => "GET_CONTEXT",
        ("DEVICE", 4) => "QUERY_CONTEXT",
        ("DEVICE", 5) => "QUERY_GID_TABLE",
        ("DEVICE", 6) => "QUERY_GID_ENTRY",
        ("PD", 0) | ("MR", 1) | ("MW", 0) => "DESTROY",
        ("CQ", 0) | ("QP", 0) | ("SRQ", 0) => "CREATE",
        ("CQ", 1) | ("QP", 1) | ("SRQ", 1) => "DESTROY",
        ("MR", 3) => "QUERY_MR",
        ("MR", 5) => "REG_MR",
        ("MR", 0) => "DM_MR_REG",
        ("DM", 0) => "ALLOC",
        ("DM", 1) => "FREE",
        ("ASYNC_EVENT", 0) => "ALLOC",
        _ => return format!("{}.{id}", object(obj)),
    };
    format!("{}.{n}", object(obj))
}

pub(crate) fn write_cmd(c: u32, ex: bool) -> String {
    let n = match (c, ex) {
        (cmd::GET_CONTEXT, false) => "GET_CONTEXT",
        (cmd::QUERY_DEVICE, false) => "QUERY_DEVICE",
        (cmd::QUERY_PORT, false) => "QUERY_PORT",
        (cmd::ALLOC_PD, false) => "ALLOC_PD",
        (cmd::DEALLOC_PD, false) => "DEALLOC_PD",
        (cmd::CREATE_AH, false) => "CREATE_AH",
        (cmd::DESTROY_AH, false) => "DESTROY_AH",
        (cmd::REG_MR, false) => "REG_MR",
        (cmd::REREG_MR, false) => "REREG_MR",
        (cmd::DEREG_MR, false) => "DEREG_MR",
        (cmd::ALLOC_MW, false) => "ALLOC_MW",
        (cmd::DEALLOC_MW, false) => "DEALLOC_MW",
        (cmd::CREATE_COMP_CHANNEL, false) => "CREATE_COMP_CHANNEL",
        (cmd::CREATE_CQ, false) => "CREATE_CQ",
        (cmd::RESIZE_CQ, false) => "RESIZE_CQ",
        (cmd::DESTROY_CQ, false) => "DESTROY_CQ",
        (cmd::POLL_CQ, false) => "POLL_CQ",
        (cmd::REQ_NOTIFY_CQ, false) => "REQ_NOTIFY_CQ",
        (cmd::CREATE_QP, false) => "CREATE_QP",
        (cmd::QUERY_QP, false) => "QUERY_QP",
        (cmd::MODIFY_QP, false) => "MODIFY_QP",
        (cmd::DESTROY_QP, false) => "DESTROY_QP",
        (cmd::POST_SEND, false) => "POST_SEND",
        (cmd::POST_RECV, false) => "POST_RECV",
        (cmd::CREATE_SRQ, false) => "CREATE_SRQ",
        (cmd::MODIFY_SRQ, false) => "MODIFY_SRQ",
        (cmd::QUERY_SRQ, false) => "QUERY_SRQ",
        (cmd::DESTROY_SRQ, false) => "DESTROY_SRQ",
        (cmd::POST_SRQ_RECV, false) => "POST_SRQ_RECV",
        (cmd::ATTACH_MCAST, false) => "ATTACH_MCAST",
        (cmd::DETACH_MCAST, false) => "DETACH_MCAST",
        (cmd::EX_QUERY_DEVICE, true) => "EX_QUERY_DEVICE",
        (cmd::EX_CREATE_CQ, true) => "EX_CREATE_CQ",
        (cmd::EX_CREATE_QP, true) => "EX_CREATE_QP",
        (cmd::EX_MODIFY_QP, true) => "EX_MODIFY_QP",
        (cmd::EX_MODIFY_CQ, true) => "EX_MODIFY_CQ",
        _ => return format!("{}{c}", if ex { "EX_" } else { "CMD_" }),
    };
    n.to_string()
}

pub(crate) fn errno(e: i32) -> String {
    let n = match e {
        0 => "ok",
        1 => "EPERM",
        2 => "ENOENT",
        5 => "EIO",
        9 => "EBADF",
        11 => "EAGAIN",
        12 => "ENOMEM",
        13 => "EACCES",
        14 => "EFAULT",
        16 => "EBUSY",
        17 => "EEXIST",
        19 => "ENODEV",
        22 => "EINVAL",
        24 => "EMFILE",
        25 => "ENOTTY",
        28 => "ENOSPC",
        34 => "ERANGE",
        38 => "ENOSYS",
        61 => "ENODATA",
        75 => "EOVERFLOW",
        93 => "EPROTONOSUPPORT",
        95 => "EOPNOTSUPP",
        97 => "EAFNOSUPPORT",
        98 => "EADDRINUSE",
        99 => "EADDRNOTAVAIL",
        101 => "ENETUNREACH",
        110 => "ETIMEDOUT",
        111 => "ECONNREFUSED",
        113 => "EHOSTUNREACH",
        524 => "ENOTSUPP",
        _ => return format!("E{e}"),
    };
    n.to_string()
}
