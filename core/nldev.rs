// SPDX-License-Identifier: GPL-2.0

//! The nldev client of `NETLINK_RDMA` (upstream `drivers/infiniband/core/nldev.c`).
//!
//! So far: `RDMA_NLDEV_CMD_SYS_GET` (`rdma system show`), which needs no device, and
//! `RDMA_NLDEV_CMD_GET` answering an empty device list (the dump ends at once, a `doit` finds
//! no device). The device-model work (issue 3) replaces the empty answers with the registry.

use crate::netlink::{
    codec::{MsgWriter, NLM_F_MULTI},
    nldev_uapi::*,
    DumpCursor, NlHandler, NlOp, Request,
};
use kernel::prelude::*;

/// The state of the nldev client.
pub(crate) struct NlDev;

impl NlHandler for NlDev {
    const OPS: &'static [NlOp<Self>] = &[
        NlOp {
            client: RDMA_NL_NLDEV,
            op: RDMA_NLDEV_CMD_GET,
            doit: Some(get_doit),
            dump: Some(get_dump),
            admin: false,
        },
        NlOp {
            client: RDMA_NL_NLDEV,
            op: RDMA_NLDEV_CMD_SYS_GET,
            doit: Some(sys_get_doit),
            dump: None,
            admin: false,
        },
    ];
}

/// upstream `nldev_get_doit()`: `EINVAL` without `DEV_INDEX` or for an unknown index; there
/// are no devices yet.
fn get_doit(_: &NlDev, _req: &Request<'_>, _w: &mut MsgWriter<'_>) -> Result {
    Err(EINVAL)
}

/// upstream `nldev_get_dumpit()`: one `NLM_F_MULTI` message per device; none yet.
fn get_dump(
    _: &NlDev,
    _req: &Request<'_>,
    _cur: &mut DumpCursor<'_>,
    _w: &mut MsgWriter<'_>,
) -> Result {
    let _ = NLM_F_MULTI;
    Ok(())
}

/// Builds the `SYS_GET` reply (upstream `nldev_sys_get_doit()`): netns mode shared (1),
/// privileged Q_Key mode off (0), monitor supported (1), copy-on-fork supported (1).
pub(crate) fn sys_get_reply(w: &mut MsgWriter<'_>, seq: u32, portid: u32) -> Result {
    w.begin(
        rdma_nl_get_type(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET),
        0,
        seq,
        portid,
    )?;
    w.put_u8(RDMA_NLDEV_SYS_ATTR_NETNS_MODE, 1)?;
    w.put_u8(RDMA_NLDEV_SYS_ATTR_PRIVILEGED_QKEY_MODE, 0)?;
    w.put_u8(RDMA_NLDEV_SYS_ATTR_MONITOR_MODE, 1)?;
    w.put_u8(RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1)?;
    w.end()?;
    Ok(())
}

fn sys_get_doit(_: &NlDev, req: &Request<'_>, w: &mut MsgWriter<'_>) -> Result {
    sys_get_reply(w, req.seq(), req.portid)
}
