// SPDX-License-Identifier: GPL-2.0

//! Probe as a table of stages with unwind (upstream `__mlx5_ib_add()` / `__mlx5_ib_remove()`
//! over a `struct mlx5_ib_profile`).
//!
//! A stage is an `init` and an optional `cleanup`. [`init_all`] runs the inits in order; when
//! one fails it runs the cleanups of the stages that completed, newest first, and returns the
//! error. [`cleanup_all`] runs the cleanups of completed stages newest first (remove). The
//! runner is generic over the state, so it is tested with a synthetic table as well as with the
//! driver's profile ([`crate::dev::profile`]).

use kernel::prelude::*;

/// One stage (upstream `struct mlx5_ib_stage`).
pub(crate) struct Stage<S> {
    /// Name for log lines (upstream `MLX5_IB_STAGE_*` without the prefix).
    pub(crate) name: &'static str,
    /// Brings the stage up.
    pub(crate) init: fn(&mut S) -> Result,
    /// Tears it down; `None` if it holds nothing.
    pub(crate) cleanup: Option<fn(&mut S)>,
}

/// Runs `stages` in order.
///
/// # Errors
///
/// The first stage error, after the completed stages were cleaned up in reverse order; one log
/// line names the stage.
pub(crate) fn init_all<S>(name: &CStr, stages: &[Stage<S>], s: &mut S) -> Result {
    for (i, st) in stages.iter().enumerate() {
        if let Err(e) = (st.init)(s) {
            pr_err!(
                "{}: probe stage {} failed ({:?}); unwinding {} stage(s)\n",
                name,
                st.name,
                e,
                i
            );
            cleanup_all(stages.get(..i).unwrap_or(&[]), s);
            return Err(e);
        }
    }
    Ok(())
}

/// Runs the cleanups of `stages`, last first.
pub(crate) fn cleanup_all<S>(stages: &[Stage<S>], s: &mut S) {
    for st in stages.iter().rev() {
        if let Some(c) = st.cleanup {
            c(s);
        }
    }
}

#[kunit_tests(mlx5_ib_rs_stages)]
mod tests {
    use super::*;

    /// A log of what ran, and which init fails.
    struct Log {
        events: [u8; 16],
        n: usize,
        fail_at: u8,
    }

    impl Log {
        fn push(&mut self, e: u8) {
            if let Some(slot) = self.events.get_mut(self.n) {
                *slot = e;
                self.n += 1;
            }
        }
        fn events(&self) -> &[u8] {
            self.events.get(..self.n).unwrap_or(&[])
        }
    }

    macro_rules! stage {
        ($id:expr) => {
            Stage {
                name: "test",
                init: |l: &mut Log| {
                    if l.fail_at == $id {
                        return Err(EAGAIN);
                    }
                    l.push($id);
                    Ok(())
                },
                cleanup: Some(|l: &mut Log| l.push(100 + $id)),
            }
        };
    }

    fn table() -> [Stage<Log>; 4] {
        [
            stage!(1),
            stage!(2),
            Stage {
                name: "no cleanup",
                init: |l: &mut Log| {
                    l.push(3);
                    Ok(())
                },
                cleanup: None,
            },
            stage!(4),
        ]
    }

    fn log(fail_at: u8) -> Log {
        Log {
            events: [0; 16],
            n: 0,
            fail_at,
        }
    }

    #[test]
    fn all_run_in_order_and_clean_up_in_reverse() {
        let t = table();
        let mut l = log(0);
        assert_eq!(init_all(c"kunit", &t, &mut l), Ok(()));
        cleanup_all(&t, &mut l);
        assert_eq!(l.events(), &[1, 2, 3, 4, 104, 102, 101]);
    }

    #[test]
    fn failure_unwinds_completed_stages_only() {
        let t = table();
        let mut l = log(4);
        assert_eq!(init_all(c"kunit", &t, &mut l), Err(EAGAIN));
        assert_eq!(l.events(), &[1, 2, 3, 102, 101]);
        let mut l = log(1);
        assert_eq!(init_all(c"kunit", &t, &mut l), Err(EAGAIN));
        assert_eq!(l.events(), &[]);
        let mut l = log(2);
        assert_eq!(init_all(c"kunit", &t, &mut l), Err(EAGAIN));
        assert_eq!(l.events(), &[1, 101]);
    }
}
