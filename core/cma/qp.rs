// SPDX-License-Identifier: GPL-2.0

//! The QP of a kernel consumer's id (upstream `cma.c`: `rdma_create_qp()`,
//! `rdma_destroy_qp()`, `cma_init_conn_qp()`, `cma_init_ud_qp()`, `cma_modify_qp_rtr()`,
//! `cma_modify_qp_rts()`, `cma_modify_qp_err()`). An id with a QP moves it through the
//! connection itself: INIT at creation, RTR and RTS before the passive side's REP
//! ([`CmId::accept`]) and on the active side's REP received (then the RTU, and
//! `RDMA_CM_EVENT_ESTABLISHED` instead of `RDMA_CM_EVENT_CONNECT_RESPONSE`), ERR at
//! [`CmId::disconnect`]. ucma's ids have none: user space moves its QP with
//! [`CmId::init_qp_attr`], as librdmacm does.

use super::{CmId, QPT_UD};
use crate::driver::Driver;
use crate::restrack::Owner;
use crate::verbs::{Pd, Qp, QpAttr, QpAttrMask, QpInitAttr, QpState};
use kernel::prelude::*;
use kernel::sync::Arc;

/// The QP an id moves (upstream `id->qp`): a kernel QP of any driver.
pub trait CmQp: Send + Sync {
    /// Its number.
    fn qp_num(&self) -> u32;
    /// Whether it receives from an SRQ.
    fn has_srq(&self) -> bool;
    /// `ib_modify_qp()`.
    ///
    /// # Errors
    ///
    /// As [`Qp::modify`].
    fn modify_qp(&self, attr: &QpAttr, mask: u32) -> Result;
}

impl<D: Driver> CmQp for Qp<D> {
    fn qp_num(&self) -> u32 {
        Qp::qp_num(self)
    }

    fn has_srq(&self) -> bool {
        self.srq().is_some()
    }

    fn modify_qp(&self, attr: &QpAttr, mask: u32) -> Result {
        self.modify(attr, QpAttrMask(mask))
    }
}

impl CmId {
    /// Creates the id's QP on `pd` (upstream `rdma_create_qp()`): on the id's device, moved
    /// to INIT with the id's port, P_Key index and access (`cma_init_conn_qp()`); a UD QP on
    /// to RTS with the space's Q_Key (`cma_init_ud_qp()`). The id keeps it, and moves it
    /// through the connection from then on.
    ///
    /// # Errors
    ///
    /// `EINVAL` unless the id is bound to `pd`'s device; the QP's creation and modify errors
    /// (the QP is destroyed again).
    pub fn create_qp<D: Driver>(
        &self,
        pd: &Arc<Pd<D>>,
        attr: &QpInitAttr<'_, D>,
        owner: Owner,
    ) -> Result<Arc<Qp<D>>> {
        let dev = self.st.lock().dev.ok_or(EINVAL)?;
        if pd.device().index() != dev.dev_index {
            return Err(EINVAL);
        }
        let qp = Qp::create(pd, attr, owner)?;
        let r = if self.qp_type == QPT_UD {
            self.init_ud_qp(&*qp)
        } else {
            self.to_state(&*qp, QpState::Init, None)
        };
        if let Err(e) = r {
            if let Err(d) = Qp::destroy(qp) {
                pr_warn!(
                    "rdma_cm: destroying a QP that did not initialize: {:?}\n",
                    d.err
                );
            }
            return Err(e);
        }
        let held: Arc<dyn CmQp> = qp.clone();
        self.st.lock().qp = Some(held);
        Ok(qp)
    }

    /// Destroys the id's QP (upstream `rdma_destroy_qp()`).
    ///
    /// # Errors
    ///
    /// As [`Qp::destroy`] (`EBUSY` while the QP has users): the id has let it go.
    pub fn destroy_qp<D: Driver>(&self, qp: Arc<Qp<D>>) -> Result {
        self.st.lock().qp = None;
        Qp::destroy(qp).map_err(|e| e.err)
    }

    /// The id's QP (upstream `id->qp`).
    pub(super) fn qp(&self) -> Option<Arc<dyn CmQp>> {
        self.st.lock().qp.clone()
    }

    /// upstream `cma_init_ud_qp()`: INIT with the id's attributes, RTR, RTS with PSN 0.
    fn init_ud_qp(&self, qp: &dyn CmQp) -> Result {
        use crate::cm::service::{QP_SQ_PSN, QP_STATE};
        self.to_state(qp, QpState::Init, None)?;
        let mut a = QpAttr {
            qp_state: QpState::Rtr,
            ..Default::default()
        };
        qp.modify_qp(&a, QP_STATE)?;
        a.qp_state = QpState::Rts;
        a.sq_psn = 0;
        qp.modify_qp(&a, QP_STATE | QP_SQ_PSN)
    }

    /// `state` with the attributes [`CmId::init_qp_attr`] gives; `rd_atomic` the responder
    /// resources (RTR) or initiator depth (RTS) the consumer accepted with.
    fn to_state(&self, qp: &dyn CmQp, state: QpState, rd_atomic: Option<u8>) -> Result {
        let (mut a, mask) = self.init_qp_attr(state)?;
        if let Some(n) = rd_atomic {
            match state {
                QpState::Rtr => a.max_dest_rd_atomic = n,
                _ => a.max_rd_atomic = n,
            }
        }
        qp.modify_qp(&a, mask)
    }

    /// upstream `cma_modify_qp_rtr()` and `cma_modify_qp_rts()`: INIT again with the
    /// connection's attributes, RTR, RTS (nothing without a QP). `res` is the accepted
    /// (responder resources, initiator depth) on the passive side.
    pub(super) fn qp_to_rts(&self, res: Option<(u8, u8)>) -> Result {
        let Some(qp) = self.qp() else {
            return Ok(());
        };
        self.to_state(&*qp, QpState::Init, None)?;
        self.to_state(&*qp, QpState::Rtr, res.map(|r| r.0))?;
        self.to_state(&*qp, QpState::Rts, res.map(|r| r.1))
    }

    /// upstream `cma_modify_qp_err()` (nothing without a QP).
    pub(super) fn qp_to_err(&self) -> Result {
        let Some(qp) = self.qp() else {
            return Ok(());
        };
        let a = QpAttr {
            qp_state: QpState::Err,
            ..Default::default()
        };
        qp.modify_qp(&a, crate::cm::service::QP_STATE)
    }
}
