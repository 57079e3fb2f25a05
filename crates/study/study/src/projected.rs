//! The model's projection of the study's runs onto the research's machine: 16 cores, the disk
//! as the research's RocksDB read it (its random-read table), and cores as fast as the
//! research's executor, calibrated so full BAL projects to the research's 13,881 Mgas/s. Each
//! design is calibrated on its one-worker run's task profile and the input disk's curve, and
//! checked on this machine's runs at the other worker counts: each projected figure carries
//! that error. Every figure here is the model's, not a measurement, and the page labels it so.

use bal_replay_bench::BenchResult;
use bal_replay_engine::IoDesign;
use bal_replay_model::DiskModel;
use bal_replay_projection::{MeasuredMachine, TargetOptions, project_benches};
use bal_replay_report::research::FULL_BATCH_50_T16;
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
    /// The model's throughput error (predicted / measured - 1) on this design's runs here at
    /// the same batch and other worker counts, least and most; `None` without such runs.
    pub error_here: Option<(f64, f64)>,
}

/// Why the projection is not on the page.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum LeftOut {
    /// Neither fio nor `--disk-table` gave the input disk's curve, on which the model calibrates.
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
                "no disk curve (fio did not measure the state's disk and --disk-table gave no \
                 table; the model calibrates on it)"
            ),
            Self::NoProfile { batch } => write!(
                f,
                "no one-worker run with a task profile at batch {batch} (its runs come from a \
                 bench without one-worker `--task-profile` runs)"
            ),
            Self::Model(reason) => write!(f, "the research's machine: {reason}"),
        }
    }
}

/// The projection onto the research's machine, or why it was left out.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Projected {
    /// One row per design projected, in the order of [`IoDesign::ALL`], at cores `cpu_speed`
    /// times as fast as this machine's (calibrated on full BAL; `None`: full BAL had no
    /// one-worker profile, so the cores are this machine's).
    Made {
        /// The rows.
        rows: Vec<ProjectedRow>,
        /// The research's cores' speed against this machine's, as calibrated.
        cpu_speed: Option<f64>,
    },
    /// Left out, and why.
    LeftOut(LeftOut),
}

impl Projected {
    /// The machine projected onto, in words: "16 cores, the disk as the research's RocksDB read
    /// it (180K reads/s at 16 threads), cores 0.63x this machine's (full BAL calibrated to the
    /// research's 13,881 Mgas/s)".
    pub fn machine_label(&self) -> String {
        let speed = match self {
            Self::Made {
                cpu_speed: Some(speed),
                ..
            } => format!(
                ", cores {speed:.2}x as fast as this machine's (set so full BAL projects to the research's {FULL_BATCH_50_T16:.0} Mgas/s)"
            ),
            _ => ", cores as fast as this machine's (full BAL had no one-worker profile to set them by)".into(),
        };
        format!(
            "16 cores, the disk as the research's RocksDB read it ({:.0}K random reads/s at 16 threads, {:.0}-{:.0} µs){speed}",
            bal_replay_report::research::ROCKSDB_IOPS_T16 / 1e3,
            bal_replay_report::research::ROCKSDB_RANDOM_READS
                .iter()
                .map(|r| r.2)
                .fold(f64::INFINITY, f64::min),
            bal_replay_report::research::ROCKSDB_RANDOM_READS
                .iter()
                .map(|r| r.2)
                .fold(0.0, f64::max),
        )
    }

    /// "-9% to +28%": the model's error on `design`'s runs here, or "not checked here".
    pub fn error_here_label(&self, design: IoDesign) -> String {
        match self.row(design).and_then(|r| r.error_here) {
            Some((lo, hi)) if (100.0 * lo).round() == (100.0 * hi).round() => {
                format!("{:+.0}%", 100.0 * lo)
            }
            Some((lo, hi)) => format!("{:+.0}% to {:+.0}%", 100.0 * lo, 100.0 * hi),
            None => "not checked here".into(),
        }
    }

    /// The projected row of `design`.
    pub fn row(&self, design: IoDesign) -> Option<&ProjectedRow> {
        match self {
            Self::Made { rows, .. } => rows.iter().find(|r| r.design == design),
            Self::LeftOut(_) => None,
        }
    }
}

/// `bench`'s runs at `batch` projected onto the research's machine at [`PROJECTED_WORKERS`]
/// workers, calibrated on `disk` (the curve of the disk they ran on), with the cores' speed set
/// so that full BAL projects to the research's own figure. What starting a worker costs is the
/// bench's record of it (none: the model leaves it out), so the same bench gives the same
/// projection wherever it is read.
pub fn project_onto_research_machine(
    bench: &BenchResult,
    disk: Option<&DiskModel>,
    batch: usize,
) -> Projected {
    let Some(disk) = disk else {
        return Projected::LeftOut(LeftOut::NoDiskCurve);
    };
    let measured_on = MeasuredMachine {
        disk: disk.clone(),
        cores: None,
        worker_start: bench.worker_start,
    };
    let workers = NonZeroUsize::new(PROJECTED_WORKERS).expect("16 is not 0");
    let project = |runs: &BenchResult, cpu_speed: f64| {
        let target = TargetOptions {
            research_machine: true,
            cpu_speed,
            ..TargetOptions::default()
        };
        let target = target
            .machine(bench.worker_start)
            .map_err(|e| LeftOut::Model(e.to_string()))?
            .ok_or_else(|| LeftOut::Model("not named".into()))?;
        // A design left uncalibrated is missing from the rows, and the page shows "-" for it.
        Ok(project_benches(
            std::slice::from_ref(runs),
            &measured_on,
            Some(&target),
            &[workers],
            &mut |_| {},
        ))
    };
    let mgas = |report: &bal_replay_model::ProjectionReport, design: IoDesign| {
        report
            .projections
            .iter()
            .find(|p| p.design == design && p.batch == batch && p.workers == PROJECTED_WORKERS)
            .map(|p| p.predicted.mgas_per_s(p.gas))
    };
    // Full BAL executes from the BAL and reads nothing: its projection moves with the cores'
    // speed alone, so two steps bring it to the research's figure (the second takes up what
    // does not scale, such as starting workers).
    let full_alone =
        bench.with_runs_where(|r| r.batch == batch && r.threads == 1 && r.design == IoDesign::Full);
    let mut cpu_speed = None;
    for _ in 0..2 {
        let speed = cpu_speed.unwrap_or(1.0);
        let report = match project(&full_alone, speed) {
            Ok(report) => report,
            Err(why) => return Projected::LeftOut(why),
        };
        match mgas(&report, IoDesign::Full) {
            Some(full) if full > 0.0 => cpu_speed = Some(speed * FULL_BATCH_50_T16 / full),
            _ => break,
        }
    }
    // Every run at `batch`: the one-worker runs calibrate, the others check the model here.
    let at_batch = bench.with_runs_where(|r| r.batch == batch);
    let report = match project(&at_batch, cpu_speed.unwrap_or(1.0)) {
        Ok(report) => report,
        Err(why) => return Projected::LeftOut(why),
    };
    let error_here = |design: IoDesign| {
        report
            .checks
            .iter()
            .filter(|c| c.design == design && c.batch == batch)
            .map(|c| c.throughput_error())
            .fold(None, |band: Option<(f64, f64)>, e| {
                Some(band.map_or((e, e), |(lo, hi)| (lo.min(e), hi.max(e))))
            })
    };
    let full = mgas(&report, IoDesign::Full);
    let rows: Vec<ProjectedRow> = IoDesign::ALL
        .into_iter()
        .filter_map(|design| {
            let mgas_per_s = mgas(&report, design)?;
            Some(ProjectedRow {
                design,
                batch,
                workers: PROJECTED_WORKERS,
                mgas_per_s,
                share_of_full: full.filter(|f| *f > 0.0).map(|f| mgas_per_s / f),
                error_here: error_here(design),
            })
        })
        .collect();
    if rows.is_empty() {
        Projected::LeftOut(LeftOut::NoProfile { batch })
    } else {
        Projected::Made { rows, cpu_speed }
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
        let Projected::Made { rows, cpu_speed } = projected else {
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
            // Full BAL is what the cores' speed was calibrated on: no check of the model.
            .filter(|r| !(r.design == IoDesign::Full && cpu_speed.is_some()))
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

    fn made(full: f64, parallel: f64, cpu_speed: Option<f64>) -> Projected {
        let row = |design, mgas_per_s| ProjectedRow {
            design,
            batch: 50,
            workers: PROJECTED_WORKERS,
            mgas_per_s,
            share_of_full: None,
            error_here: Some((-0.1, 0.2)),
        };
        Projected::Made {
            rows: vec![row(IoDesign::Full, full), row(IoDesign::Parallel, parallel)],
            cpu_speed,
        }
    }

    #[test]
    fn a_projection_far_from_the_research_stays_out_of_the_answer() {
        // The research measured full BAL at 13,881 and parallel I/O at 10,842 Mgas/s.
        let check = ProjectionCheck::against_research(&made(45_149.0, 5_466.0, None), 50);
        let why = check.kept_out(0.30).unwrap();
        assert!(why.contains("+225% on full BAL"), "{why}");
        assert!(why.contains("-50% on parallel I/O"), "{why}");
        let close = ProjectionCheck::against_research(&made(14_500.0, 10_000.0, None), 50);
        assert_eq!(close.kept_out(0.30), None);
        let other_batch = ProjectionCheck::against_research(&made(14_500.0, 10_000.0, None), 10);
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

    #[test]
    fn full_bal_is_not_a_check_where_the_cores_were_calibrated_on_it() {
        let check = ProjectionCheck::against_research(&made(13_881.0, 2_846.0, Some(0.63)), 50);
        let ProjectionCheck::Checked(errors) = &check else {
            panic!("{check:?}")
        };
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].design, IoDesign::Parallel);
        assert!((errors[0].error() - (2_846.0 / 10_842.0 - 1.0)).abs() < 1e-12);
        assert!(
            check
                .kept_out(0.30)
                .unwrap()
                .contains("-74% on parallel I/O")
        );
    }
}
