//! The model's projection of the study's runs onto the research's machine (16 cores, NVMe at 960k
//! IOPS, 85 µs), as `bal-replay project --research-machine` makes it: each design calibrated on
//! its one-worker run's task profile and the input disk's curve. Every figure here is the
//! model's, not a measurement, and the page labels it so.

use bal_replay_bench::BenchResult;
use bal_replay_engine::IoDesign;
use bal_replay_model::DiskModel;
use bal_replay_projection::{MeasuredMachine, TargetOptions, project_benches};
use std::num::NonZeroUsize;

/// The worker count projected: the research's headline thread count.
pub const PROJECTED_WORKERS: usize = 16;

/// One design's projected figures.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProjectedRow {
    /// The design.
    pub design: IoDesign,
    /// Blocks per batch.
    pub batch: usize,
    /// Workers on the research's machine.
    pub workers: usize,
    /// The model's throughput there, Mgas/s.
    pub mgas_per_s: f64,
    /// That over full BAL's projected throughput; `None` where full BAL was not projected.
    pub share_of_full: Option<f64>,
}

/// Why the projection is not on the page.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum LeftOut {
    /// Neither fio nor `--disk` gave the input disk's curve, on which the model calibrates.
    NoDiskCurve,
    /// No design has a one-worker run with a task profile at the batch projected.
    NoProfile {
        /// The batch.
        batch: usize,
    },
    /// The research's machine could not be modelled.
    Model(String),
}

impl std::fmt::Display for LeftOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoDiskCurve => write!(
                f,
                "no disk curve (fio did not measure the state's disk and no --disk table was \
                 given; the model calibrates on it)"
            ),
            Self::NoProfile { batch } => write!(
                f,
                "no one-worker run with a task profile at batch {batch} (a bench.json of an \
                 older study?)"
            ),
            Self::Model(reason) => write!(f, "the research's machine: {reason}"),
        }
    }
}

/// The projection onto the research's machine, or why it was left out.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Projected {
    /// One row per design projected, in the order of [`IoDesign::ALL`].
    Made(Vec<ProjectedRow>),
    /// Left out, and why.
    LeftOut(LeftOut),
}

impl Projected {
    /// The projected row of `design`.
    pub fn row(&self, design: IoDesign) -> Option<&ProjectedRow> {
        match self {
            Self::Made(rows) => rows.iter().find(|r| r.design == design),
            Self::LeftOut(_) => None,
        }
    }
}

/// `bench`'s runs at `batch` projected onto the research's machine at [`PROJECTED_WORKERS`]
/// workers, calibrated on `disk` (the curve of the disk they ran on). What starting a worker
/// costs is the bench's record of it (none: the model leaves it out), so the same bench gives
/// the same projection wherever it is read.
pub fn project_onto_research_machine(
    bench: &BenchResult,
    disk: Option<&DiskModel>,
    batch: usize,
) -> Projected {
    let Some(disk) = disk else {
        return Projected::LeftOut(LeftOut::NoDiskCurve);
    };
    let research = TargetOptions {
        research_machine: true,
        ..TargetOptions::default()
    };
    let target = match research.machine(bench.worker_start) {
        Ok(Some(target)) => target,
        Ok(None) => return Projected::LeftOut(LeftOut::Model("not named".into())),
        Err(error) => return Projected::LeftOut(LeftOut::Model(error.to_string())),
    };
    let measured_on = MeasuredMachine {
        disk: disk.clone(),
        cores: None,
        worker_start: bench.worker_start,
    };
    // Only what the projection needs: each design's one-worker run at `batch`, which it
    // calibrates on. The model's checks against the other runs (which the page does not show)
    // and the other batch sizes took most of a minute over a study of 120 runs.
    let calibration_runs = bench.with_runs_where(|r| r.batch == batch && r.threads == 1);
    let workers = NonZeroUsize::new(PROJECTED_WORKERS).expect("16 is not 0");
    let report = project_benches(
        std::slice::from_ref(&calibration_runs),
        &measured_on,
        Some(&target),
        &[workers],
        // A design left uncalibrated is missing from the rows, and the page shows "-" for it.
        &mut |_| {},
    );
    let mgas = |design: IoDesign| {
        report
            .projections
            .iter()
            .find(|p| p.design == design && p.batch == batch && p.workers == PROJECTED_WORKERS)
            .map(|p| p.predicted.mgas_per_s(p.gas))
    };
    let full = mgas(IoDesign::Full);
    let rows: Vec<ProjectedRow> = IoDesign::ALL
        .into_iter()
        .filter_map(|design| {
            let mgas_per_s = mgas(design)?;
            Some(ProjectedRow {
                design,
                batch,
                workers: PROJECTED_WORKERS,
                mgas_per_s,
                share_of_full: full.filter(|f| *f > 0.0).map(|f| mgas_per_s / f),
            })
        })
        .collect();
    if rows.is_empty() {
        Projected::LeftOut(LeftOut::NoProfile { batch })
    } else {
        Projected::Made(rows)
    }
}

/// One design's projected throughput beside what the research measured on its machine.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProjectionError {
    /// The design.
    pub design: IoDesign,
    /// The model's figure, Mgas/s.
    pub projected: f64,
    /// The research's, Mgas/s.
    pub measured: f64,
}

impl ProjectionError {
    /// Projected over measured, less one: +0.30 is 30% too high.
    pub fn error(&self) -> f64 {
        self.projected / self.measured - 1.0
    }
}

/// The projection checked against the research's own measurements at 16 threads, batch 50 (a
/// different chain, its machine): the one held-out check a projection onto that machine has.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum ProjectionCheck {
    /// Each design the research measured and the model projected.
    Checked(Vec<ProjectionError>),
    /// Not checked: why.
    NotChecked(String),
}

impl ProjectionCheck {
    /// The check of `projected`, made at `batch`.
    pub fn against_research(projected: &Projected, batch: usize) -> Self {
        let Projected::Made(rows) = projected else {
            return Self::NotChecked("nothing was projected".into());
        };
        if batch != 50 {
            return Self::NotChecked(format!(
                "projected at batch {batch}; the research measured its machine at batch 50"
            ));
        }
        let errors: Vec<ProjectionError> = rows
            .iter()
            .filter(|r| r.workers == PROJECTED_WORKERS)
            .filter_map(|r| {
                let measured =
                    bal_replay_report::research::throughput(r.design, 50, PROJECTED_WORKERS)?;
                Some(ProjectionError {
                    design: r.design,
                    projected: r.mgas_per_s,
                    measured,
                })
            })
            .collect();
        if errors.is_empty() {
            Self::NotChecked("no projected design is one the research measured".into())
        } else {
            Self::Checked(errors)
        }
    }

    /// Why the projection stays out of the answer at a largest error of `max` (0.30: 30%), or
    /// `None` where it was checked and every design's error is within it.
    pub fn kept_out(&self, max: f64) -> Option<String> {
        match self {
            Self::NotChecked(why) => Some(format!(
                "it could not be checked against the research's own measurements ({why})"
            )),
            Self::Checked(errors) if errors.iter().any(|e| e.error().abs() > max) => Some(format!(
                "set beside the research's own measurements on its machine (16 threads, batch 50) it errs by {} (more than {:.0}% either way)",
                self.errors_label(),
                100.0 * max
            )),
            Self::Checked(_) => None,
        }
    }

    /// "+225% on full BAL, -50% on parallel I/O".
    pub fn errors_label(&self) -> String {
        match self {
            Self::Checked(errors) => errors
                .iter()
                .map(|e| {
                    format!(
                        "{:+.0}% on {} ({:.0} Mgas/s projected, {:.0} measured)",
                        100.0 * e.error(),
                        crate::names::design_name(e.design),
                        e.projected,
                        e.measured
                    )
                })
                .collect::<Vec<_>>()
                .join(", "),
            Self::NotChecked(why) => format!("not checked ({why})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn made(full: f64, parallel: f64) -> Projected {
        let row = |design, mgas_per_s| ProjectedRow {
            design,
            batch: 50,
            workers: PROJECTED_WORKERS,
            mgas_per_s,
            share_of_full: None,
        };
        Projected::Made(vec![
            row(IoDesign::Full, full),
            row(IoDesign::Parallel, parallel),
        ])
    }

    #[test]
    fn a_projection_far_from_the_research_stays_out_of_the_answer() {
        // The research measured full BAL at 13,881 and parallel I/O at 10,842 Mgas/s.
        let check = ProjectionCheck::against_research(&made(45_149.0, 5_466.0), 50);
        let why = check.kept_out(0.30).unwrap();
        assert!(why.contains("+225% on full BAL"), "{why}");
        assert!(why.contains("-50% on parallel I/O"), "{why}");
        let close = ProjectionCheck::against_research(&made(14_500.0, 10_000.0), 50);
        assert_eq!(close.kept_out(0.30), None);
        let other_batch = ProjectionCheck::against_research(&made(14_500.0, 10_000.0), 10);
        assert!(
            other_batch
                .kept_out(0.30)
                .unwrap()
                .contains("projected at batch 10")
        );
        assert!(
            ProjectionCheck::against_research(&Projected::LeftOut(LeftOut::NoDiskCurve), 50)
                .kept_out(0.30)
                .is_some()
        );
    }
}
