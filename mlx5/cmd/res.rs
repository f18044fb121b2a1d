// SPDX-License-Identifier: GPL-2.0

//! Simple objects: PD, UAR, transport domain, mkey; and SET_ROCE_ADDRESS (upstream
//! `mlx5_cmd_alloc_pd()`, `mlx5_cmd_alloc_uar()`, `mlx5_cmd_alloc_transport_domain()`,
//! `mlx5_core_create_mkey()`, `mlx5_core_roce_gid_set()`).

use super::{alloc_cmd, free_cmd, Command, InBox, OutBox};
use crate::prm::cmd::{alloc_memic_in, alloc_memic_out, dealloc_memic_in};
use crate::prm::cmd::{
    alloc_pd_out, alloc_transport_domain_out, alloc_uar_out, create_mkey_in, create_mkey_out,
    dealloc_pd_in, dealloc_transport_domain_in, dealloc_uar_in, destroy_mkey_in,
    set_roce_address_in,
};
use crate::prm::cmd::{
    alloc_q_counter_out, dealloc_q_counter_in, query_q_counter_in, query_q_counter_out,
};
use crate::prm::cmd::{alloc_xrcd_out, attach_to_mcg_in, dealloc_xrcd_in, detach_from_mcg_in};
use crate::prm::command as pc;
use crate::prm::consts::{
    MKC_ACCESS_MODE_KLMS, MKC_ACCESS_MODE_MEMIC, MKC_ACCESS_MODE_MTT, MKC_ACCESS_MODE_PA,
};
use crate::prm::ctx::{mkc, roce_addr_layout};
use crate::prm::layout::{Member, PrmError};
use kernel::prelude::*;

/// The objects with no parameters but the uid, one row each: the command that allocates one
/// with the outbox member holding its number ([`alloc_cmd!`]), and the command that frees it
/// with the inbox member taking the number ([`free_cmd!`], the number is `id`).
macro_rules! simple_objects {
    ($($(#[$doc:meta])* $alloc:ident($out:expr), $free:ident($in:expr);)*) => {
        $(
            alloc_cmd!($(#[$doc])* $alloc, $out);
            free_cmd!($(#[$doc])* $free, id: $in);
        )*
    };
}

simple_objects! {
    /// ALLOC_XRCD, DEALLOC_XRCD (upstream `mlx5_cmd_xrcd_alloc()`, `mlx5_cmd_xrcd_dealloc()`).
    AllocXrcd(alloc_xrcd_out::xrcd), DeallocXrcd(dealloc_xrcd_in::xrcd);
    /// ALLOC_PD, DEALLOC_PD.
    AllocPd(alloc_pd_out::pd), DeallocPd(dealloc_pd_in::pd);
    /// ALLOC_UAR, DEALLOC_UAR.
    AllocUar(alloc_uar_out::uar), DeallocUar(dealloc_uar_in::uar);
    /// ALLOC_TRANSPORT_DOMAIN, DEALLOC_TRANSPORT_DOMAIN.
    AllocTransportDomain(alloc_transport_domain_out::transport_domain),
        DeallocTransportDomain(dealloc_transport_domain_in::transport_domain);
    /// ALLOC_Q_COUNTER, DEALLOC_Q_COUNTER (upstream `mlx5_ib_alloc_counters()`,
    /// `mlx5_ib_dealloc_counters()`): a counter set.
    AllocQCounter(alloc_q_counter_out::counter_set_id),
        DeallocQCounter(dealloc_q_counter_in::counter_set_id);
}

/// The groups of Q counters upstream counters.c lists (`mlx5_ib_fill_counters()`), each
/// shown when the device has its capability.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum QCntGroup {
    /// `basic_q_cnts`: always.
    Basic,
    /// `out_of_seq_q_cnts`: with `out_of_seq_cnt`.
    OutOfSeq,
    /// `retrans_q_cnts`: with `retransmission_q_counters`.
    Retrans,
    /// `roce_accl_cnts`: always (7.3 adds them unconditionally).
    Accl,
}

/// The Q counters mlx5_ib 7.3 exposes for a port, in its order, with their
/// `query_q_counter_out` members and groups: `basic_q_cnts`, `out_of_seq_q_cnts`,
/// `retrans_q_cnts`, `roce_accl_cnts`. Not read: `extended_err_cnts`
/// (`enhanced_error_q_counters`), the congestion (`cc_query_allowed`) and PPCNT counters.
pub(crate) const Q_COUNTERS: [(&CStr, Member<query_q_counter_out::Bits>, QCntGroup); 16] = {
    use query_q_counter_out as o;
    use QCntGroup::{Accl, Basic, OutOfSeq, Retrans};
    [
        (c"rx_write_requests", o::rx_write_requests, Basic),
        (c"rx_read_requests", o::rx_read_requests, Basic),
        (c"rx_atomic_requests", o::rx_atomic_requests, Basic),
        (c"rx_dct_connect", o::rx_dct_connect, Basic),
        (c"out_of_buffer", o::out_of_buffer, Basic),
        (c"out_of_sequence", o::out_of_sequence, OutOfSeq),
        (c"duplicate_request", o::duplicate_request, Retrans),
        (c"rnr_nak_retry_err", o::rnr_nak_retry_err, Retrans),
        (c"packet_seq_err", o::packet_seq_err, Retrans),
        (c"implied_nak_seq_err", o::implied_nak_seq_err, Retrans),
        (c"local_ack_timeout_err", o::local_ack_timeout_err, Retrans),
        (c"roce_adp_retrans", o::roce_adp_retrans, Accl),
        (c"roce_adp_retrans_to", o::roce_adp_retrans_to, Accl),
        (c"roce_slow_restart", o::roce_slow_restart, Accl),
        (c"roce_slow_restart_cnps", o::roce_slow_restart_cnps, Accl),
        (c"roce_slow_restart_trans", o::roce_slow_restart_trans, Accl),
    ]
};

/// QUERY_Q_COUNTER of set `id` (upstream `mlx5_ib_query_q_counters()`): the values of every
/// [`Q_COUNTERS`] member, in that order.
pub(crate) struct QueryQCounter {
    /// The counter set.
    pub(crate) id: u32,
}

impl Command for QueryQCounter {
    type Prm = pc::QueryQCounter;
    type Reply = [u32; 16];

    fn fill(&self, inbox: &mut InBox<'_, Self>) -> Result<(), PrmError> {
        inbox.set(query_q_counter_in::counter_set_id, self.id)
    }

    fn reply(&self, out: OutBox<'_, Self>) -> Result<[u32; 16]> {
        let mut v = [0u32; 16];
        for (x, (_, f, _)) in v.iter_mut().zip(Q_COUNTERS.iter()) {
            *x = out.get(*f);
        }
        Ok(v)
    }
}

free_cmd!(
    /// DESTROY_MKEY (`id` is the mkey index, `key >> 8`).
    DestroyMkey, id: destroy_mkey_in::mkey_index
);

/// Access rights of a memory key (`mkc.a/rw/rr/lw/lr`; local read is always on).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct MkeyAccess {
    /// Remote atomic.
    pub(crate) remote_atomic: bool,
    /// Remote write.
    pub(crate) remote_write: bool,
    /// Remote read.
    pub(crate) remote_read: bool,
    /// Local write.
    pub(crate) local_write: bool,
}

/// How an mkey translates addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MkeyTranslation<'a> {
    /// Physical addresses, the whole address space (a DMA MR: `MLX5_MKC_ACCESS_MODE_PA`,
    /// `length64`).
    Pa,
    /// A page list (`MLX5_MKC_ACCESS_MODE_MTT`): DMA addresses of pages of `1 << log_page_size`
    /// bytes, covering `[start, start + len)`.
    Mtt {
        /// Virtual start address.
        start: u64,
        /// Length in bytes.
        len: u64,
        /// log2 of the page size.
        log_page_size: u8,
        /// The pages' DMA addresses.
        pages: &'a [u64],
        /// The entries the mkey has room for (`translations_octword_size`), at least
        /// `pages.len()`: a UMR WQE may load that many later.
        room: usize,
    },
    /// Device memory (upstream `mlx5_ib_get_dm_mr()` with `MLX5_MKC_ACCESS_MODE_MEMIC`): `len`
    /// bytes of the MEMIC window from BAR offset `start`, addressed zero-based.
    Memic {
        /// `start_addr`: the BAR offset of the first byte.
        start: u64,
        /// Length in bytes.
        len: u64,
    },
    /// A memory window (upstream `mlx5_ib_alloc_mw()`): a free KLM mkey with UMR enabled and
    /// room for `ndescs` descriptors, filled by the bind WQEs the provider posts.
    Window {
        /// `translations_octword_size`.
        ndescs: u32,
        /// `en_rinval`: a type 2 window may be invalidated by a remote SEND with invalidate.
        remote_inval: bool,
    },
}

/// CREATE_MKEY.
pub(crate) struct CreateMkey<'a> {
    /// Owner uid.
    pub(crate) uid: u16,
    /// Protection domain.
    pub(crate) pd: u32,
    /// Access rights.
    pub(crate) access: MkeyAccess,
    /// The variant byte of the key (`mkey_7_0`).
    pub(crate) key_byte: u8,
    /// Translation.
    pub(crate) translation: MkeyTranslation<'a>,
}

/// A created mkey.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Mkey {
    /// `mkey_index` from firmware.
    pub(crate) index: u32,
    /// lkey/rkey: `index << 8 | key_byte` (upstream `mlx5_idx_to_mkey()`).
    pub(crate) key: u32,
}

impl CreateMkey<'_> {
    fn pages(&self) -> &[u64] {
        match self.translation {
            MkeyTranslation::Pa
            | MkeyTranslation::Window { .. }
            | MkeyTranslation::Memic { .. } => &[],
            MkeyTranslation::Mtt { pages, .. } => pages,
        }
    }
}

impl Command for CreateMkey<'_> {
    type Prm = pc::CreateMkey;
    type Reply = Mkey;

    fn uid(&self) -> u16 {
        self.uid
    }

    fn in_len(&self) -> usize {
        // MTT entries are 8 bytes, padded to whole 16-byte octowords.
        let n = self.pages().len().div_ceil(2) * 2;
        Self::in_len_with_addrs(n)
    }

    fn fill(&self, inbox: &mut InBox<'_, Self>) -> Result<(), PrmError> {
        let m = |f| create_mkey_in::memory_key_mkey_entry.inner(f);
        let a = self.access;
        inbox.set(m(mkc::a), u32::from(a.remote_atomic))?;
        inbox.set(m(mkc::rw), u32::from(a.remote_write))?;
        inbox.set(m(mkc::rr), u32::from(a.remote_read))?;
        inbox.set(m(mkc::lw), u32::from(a.local_write))?;
        inbox.set(m(mkc::lr), 1)?;
        // Not bound to a QP (memory windows are).
        inbox.set(m(mkc::qpn), 0xff_ffff)?;
        inbox.set(m(mkc::mkey_7_0), u32::from(self.key_byte))?;
        inbox.set(m(mkc::pd), self.pd)?;
        match self.translation {
            MkeyTranslation::Pa => {
                inbox.set(m(mkc::access_mode_1_0), MKC_ACCESS_MODE_PA)?;
                inbox.set(m(mkc::length64), 1)
            }
            MkeyTranslation::Window {
                ndescs,
                remote_inval,
            } => {
                inbox.set(m(mkc::free), 1)?;
                inbox.set(m(mkc::umr_en), 1)?;
                inbox.set(m(mkc::access_mode_1_0), MKC_ACCESS_MODE_KLMS)?;
                inbox.set(m(mkc::en_rinval), u32::from(remote_inval))?;
                inbox.set(m(mkc::translations_octword_size), ndescs)
            }
            MkeyTranslation::Memic { start, len } => {
                inbox.set(m(mkc::access_mode_1_0), MKC_ACCESS_MODE_MEMIC & 0x3)?;
                inbox.set(m(mkc::access_mode_4_2), (MKC_ACCESS_MODE_MEMIC >> 2) & 0x7)?;
                inbox.set64(m(mkc::start_addr), start)?;
                inbox.set64(m(mkc::len), len)
            }
            MkeyTranslation::Mtt {
                start,
                len,
                log_page_size,
                pages,
                room,
            } => {
                // upstream reg_create() and _mlx5_alloc_mkey_descs(): `umr_en`, so that a UMR
                // WQE may change the MR's access and PD.
                inbox.set(m(mkc::umr_en), 1)?;
                inbox.set(m(mkc::access_mode_1_0), MKC_ACCESS_MODE_MTT)?;
                inbox.set64(m(mkc::start_addr), start)?;
                inbox.set64(m(mkc::len), len)?;
                inbox.set(m(mkc::log_page_size), u32::from(log_page_size))?;
                let octowords =
                    |n: usize| u32::try_from(n.div_ceil(2)).map_err(|_| PrmError::ValueTooWide);
                inbox.set(
                    m(mkc::translations_octword_size),
                    octowords(room.max(pages.len()))?,
                )?;
                inbox.set(
                    create_mkey_in::translations_octword_actual_size,
                    octowords(pages.len())?,
                )?;
                super::set_addrs(inbox, pages)?;
                Ok(())
            }
        }
    }

    fn reply(&self, out: OutBox<'_, Self>) -> Result<Mkey> {
        let index = out.get(create_mkey_out::mkey_index);
        Ok(Mkey {
            index,
            key: index << 8 | u32::from(self.key_byte),
        })
    }
}

/// `roce_addr_layout.roce_version` values (`MLX5_ROCE_VERSION_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RoceVersion {
    /// RoCE v1 (`MLX5_ROCE_VERSION_1` 0).
    V1 = 0,
    /// RoCE v2 (`MLX5_ROCE_VERSION_2` 2).
    V2 = 2,
}

/// `roce_addr_layout.roce_l3_type` values (`MLX5_ROCE_L3_TYPE_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RoceL3Type {
    /// IPv4 (0).
    Ipv4 = 0,
    /// IPv6 (1).
    Ipv6 = 1,
}

/// One RoCE address table entry; `None` in [`SetRoceAddress::entry`] clears it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RoceAddr {
    /// The GID.
    pub(crate) gid: [u8; 16],
    /// Source MAC.
    pub(crate) mac: [u8; 6],
    /// VLAN id, if tagged.
    pub(crate) vlan: Option<u16>,
    /// RoCE version.
    pub(crate) version: RoceVersion,
    /// L3 type (RoCE v2 only).
    pub(crate) l3_type: RoceL3Type,
}

/// SET_ROCE_ADDRESS (upstream `mlx5_core_roce_gid_set()`).
pub(crate) struct SetRoceAddress {
    /// Table index.
    pub(crate) index: u16,
    /// `vhca_port_num`: 0 on single-port functions.
    pub(crate) vhca_port: u8,
    /// The entry, or `None` to clear it (all-zero GID).
    pub(crate) entry: Option<RoceAddr>,
}

impl Command for SetRoceAddress {
    type Prm = pc::SetRoceAddress;
    type Reply = ();

    fn fill(&self, inbox: &mut InBox<'_, Self>) -> Result<(), PrmError> {
        inbox.set(
            set_roce_address_in::roce_address_index,
            u32::from(self.index),
        )?;
        inbox.set(
            set_roce_address_in::vhca_port_num,
            u32::from(self.vhca_port),
        )?;
        let Some(e) = self.entry else {
            return Ok(());
        };
        let a = |f| set_roce_address_in::roce_address.inner(f);
        inbox.set_bytes(a(roce_addr_layout::source_l3_address), &e.gid)?;
        let mac_hi = u32::from(u16::from_be_bytes([e.mac[0], e.mac[1]]));
        let mac_lo = u32::from_be_bytes([e.mac[2], e.mac[3], e.mac[4], e.mac[5]]);
        inbox.set(a(roce_addr_layout::source_mac_47_32), mac_hi)?;
        inbox.set(a(roce_addr_layout::source_mac_31_0), mac_lo)?;
        if let Some(vlan) = e.vlan {
            inbox.set(a(roce_addr_layout::vlan_valid), 1)?;
            inbox.set(a(roce_addr_layout::vlan_id), u32::from(vlan))?;
        }
        inbox.set(a(roce_addr_layout::roce_version), e.version as u32)?;
        if e.version == RoceVersion::V2 {
            inbox.set(a(roce_addr_layout::roce_l3_type), e.l3_type as u32)?;
        }
        Ok(())
    }

    fn reply(&self, _out: OutBox<'_, Self>) -> Result<()> {
        Ok(())
    }
}

/// ATTACH_TO_MCG (upstream `mlx5_cmd_attach_mcg()`): QP `qpn` joins group `gid`.
pub(crate) struct AttachToMcg {
    /// The group's GID.
    pub(crate) gid: [u8; 16],
    /// The QP.
    pub(crate) qpn: u32,
    /// The QP's PD's uid.
    pub(crate) uid: u16,
}

impl Command for AttachToMcg {
    type Prm = pc::AttachToMcg;
    type Reply = ();

    fn uid(&self) -> u16 {
        self.uid
    }

    fn fill(&self, inbox: &mut InBox<'_, Self>) -> Result<(), PrmError> {
        inbox.set(attach_to_mcg_in::qpn, self.qpn)?;
        inbox.set_bytes(attach_to_mcg_in::multicast_gid, &self.gid)
    }

    fn reply(&self, _out: OutBox<'_, Self>) -> Result<()> {
        Ok(())
    }
}

/// DETACH_FROM_MCG (upstream `mlx5_cmd_detach_mcg()`): QP `qpn` leaves group `gid`.
pub(crate) struct DetachFromMcg {
    /// The group's GID.
    pub(crate) gid: [u8; 16],
    /// The QP.
    pub(crate) qpn: u32,
    /// The QP's PD's uid.
    pub(crate) uid: u16,
}

impl Command for DetachFromMcg {
    type Prm = pc::DetachFromMcg;
    type Reply = ();

    fn uid(&self) -> u16 {
        self.uid
    }

    fn fill(&self, inbox: &mut InBox<'_, Self>) -> Result<(), PrmError> {
        inbox.set(detach_from_mcg_in::qpn, self.qpn)?;
        inbox.set_bytes(detach_from_mcg_in::multicast_gid, &self.gid)
    }

    fn reply(&self, _out: OutBox<'_, Self>) -> Result<()> {
        Ok(())
    }
}

/// CREATE_UCTX (upstream `mlx5_ib_devx_create()`): a DEVX user context with capability bits
/// `cap` (`MLX5_UCTX_CAP_*`); the reply is its uid.
pub(crate) struct CreateUctx {
    /// `uctx.cap`.
    pub(crate) cap: u32,
}

impl Command for CreateUctx {
    type Prm = pc::CreateUctx;
    type Reply = u16;

    fn fill(&self, inbox: &mut InBox<'_, Self>) -> Result<(), PrmError> {
        use crate::prm::cmd::create_uctx_in;
        inbox.set(
            create_uctx_in::uctx.inner(crate::prm::ctx::uctx::cap),
            self.cap,
        )
    }

    fn reply(&self, out: OutBox<'_, Self>) -> Result<u16> {
        u16::try_from(out.get(crate::prm::cmd::create_uctx_out::uid)).map_err(|_| EIO)
    }
}

/// DESTROY_UCTX (upstream `mlx5_ib_devx_destroy()`): issued by the kernel (uid 0) with the
/// uid in the body.
pub(crate) struct DestroyUctx {
    /// The user context's uid.
    pub(crate) uid: u16,
}

impl Command for DestroyUctx {
    type Prm = pc::DestroyUctx;
    type Reply = ();

    fn fill(&self, inbox: &mut InBox<'_, Self>) -> Result<(), PrmError> {
        inbox.set(crate::prm::cmd::destroy_uctx_in::uid, self.uid.into())
    }

    fn reply(&self, _out: OutBox<'_, Self>) -> Result<()> {
        Ok(())
    }
}

/// ALLOC_MEMIC (upstream `mlx5_cmd_alloc_memic()`): `size` bytes of on-chip memory aligned to
/// `64 << log_align`, somewhere in the window range `[range_start, range_start + range_size)`.
pub(crate) struct AllocMemic {
    /// `range_start_addr` (a BAR offset).
    pub(crate) range_start: u64,
    /// `range_size`.
    pub(crate) range_size: u32,
    /// `memic_size`.
    pub(crate) size: u32,
    /// `log_memic_addr_alignment`.
    pub(crate) log_align: u32,
}

impl Command for AllocMemic {
    type Prm = pc::AllocMemic;
    /// `memic_start_addr`: the BAR offset of the allocation.
    type Reply = u64;

    fn fill(&self, inbox: &mut InBox<'_, Self>) -> Result<(), PrmError> {
        inbox.set(alloc_memic_in::range_size, self.range_size)?;
        inbox.set(alloc_memic_in::memic_size, self.size)?;
        inbox.set(alloc_memic_in::log_memic_addr_alignment, self.log_align)?;
        inbox.set64(alloc_memic_in::range_start_addr, self.range_start)
    }

    fn reply(&self, out: OutBox<'_, Self>) -> Result<u64> {
        Ok(out.get64(alloc_memic_out::memic_start_addr))
    }
}

/// DEALLOC_MEMIC (upstream `mlx5_cmd_dealloc_memic()`).
pub(crate) struct DeallocMemic {
    /// `memic_start_addr` as ALLOC_MEMIC answered it.
    pub(crate) start: u64,
    /// `memic_size` as allocated.
    pub(crate) size: u32,
}

impl Command for DeallocMemic {
    type Prm = pc::DeallocMemic;
    type Reply = ();

    fn fill(&self, inbox: &mut InBox<'_, Self>) -> Result<(), PrmError> {
        inbox.set64(dealloc_memic_in::memic_start_addr, self.start)?;
        inbox.set(dealloc_memic_in::memic_size, self.size)
    }

    fn reply(&self, _out: OutBox<'_, Self>) -> Result<()> {
        Ok(())
    }
}
