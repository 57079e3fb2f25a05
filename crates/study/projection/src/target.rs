//! The machine a projection is onto, from what names it: the research's, or cores and a disk.

use crate::error::ProjectionError;
use bal_replay_engine::WorkerStartCost;
use bal_replay_model::{DiskModel, Machine, bounds};
use std::{num::NonZeroUsize, path::PathBuf};

/// The research's machine: 16 cores.
const RESEARCH_CORES: usize = 16;

/// A target machine's disk.
#[derive(Debug, Clone, PartialEq)]
pub enum TargetDisk {
    /// A measured curve: the table `scripts/fio-random-reads.sh` prints.
    Fio(PathBuf),
    /// A spec: best random-read IOPS, and latency at low queue depth, µs.
    Spec {
        /// Best random-read IOPS.
        iops: f64,
        /// Latency at low queue depth, µs.
        latency_us: f64,
    },
}

/// The machine to project onto, as named: none, the research's, or cores and a disk (each
/// named one overrides the research's).
#[derive(Debug, Clone, PartialEq)]
pub struct TargetOptions {
    /// The research's machine, where not named otherwise: 16 cores, and its RocksDB's random
    /// reads ([`DiskModel::research_rocksdb`]).
    pub research_machine: bool,
    /// Its cores.
    pub cores: Option<NonZeroUsize>,
    /// Its disk.
    pub disk: Option<TargetDisk>,
    /// One of its cores' speed relative to the profiled machine's (2.0: twice as fast).
    pub cpu_speed: f64,
    /// What a key read costs its CPU, µs, in place of what it cost in the profiles.
    pub read_cpu_us: Option<f64>,
    /// Prefetch readers there as the engine's `--io-threads` (it runs twice as many reader
    /// threads), in place of the profiles' own.
    pub io_threads: Option<NonZeroUsize>,
}

impl Default for TargetOptions {
    /// No target.
    fn default() -> Self {
        Self {
            research_machine: false,
            cores: None,
            disk: None,
            cpu_speed: 1.0,
            read_cpu_us: None,
            io_threads: None,
        }
    }
}

impl TargetOptions {
    /// The target machine, with workers started at `worker_start`, or `None` where none is
    /// named; an error where only its cores or only its disk are.
    pub fn machine(
        &self,
        worker_start: Option<WorkerStartCost>,
    ) -> Result<Option<Machine>, ProjectionError> {
        let figure = |option, value: f64, (low, high), what| {
            if (low..=high).contains(&value) {
                Ok(())
            } else {
                Err(ProjectionError::TargetFigure {
                    option,
                    value,
                    low,
                    high,
                    what,
                })
            }
        };
        // Before anything is simulated: a speed of 0 or NaN projects nonsense, not an error.
        figure(
            "--target-cpu-speed",
            self.cpu_speed,
            bounds::CPU_SPEED_RANGE,
            "a core's speed relative to the inputs'",
        )?;
        if let Some(us) = self.read_cpu_us {
            let (low, high) = bounds::READ_CPU_NS_RANGE;
            figure(
                "--target-read-cpu-us",
                us,
                (low / 1e3, high / 1e3),
                "µs of CPU per key read",
            )?;
        }
        let cores = self
            .cores
            .map(NonZeroUsize::get)
            .or(self.research_machine.then_some(RESEARCH_CORES));
        let disk = match &self.disk {
            Some(TargetDisk::Fio(path)) => Some(DiskModel::from_fio_file(path)?),
            Some(TargetDisk::Spec { iops, latency_us }) => {
                Some(DiskModel::from_spec(*iops, *latency_us)?)
            }
            None if self.research_machine => Some(DiskModel::research_rocksdb()),
            None => None,
        };
        match (cores, disk) {
            (None, None) => Ok(None),
            (Some(cores), Some(disk)) => Ok(Some(Machine {
                cores: cores as f64,
                cpu_speed: self.cpu_speed,
                disk,
                read_cpu_ns: self.read_cpu_us.map(|us| us * 1e3),
                // The engine's reader threads: 2 x --io-threads (what profiles record).
                readers: self.io_threads.map(|n| 2 * n.get()),
                worker_start,
            })),
            _ => Err(ProjectionError::IncompleteTarget),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_no_machine_has_are_refused_naming_the_option() {
        for (cpu_speed, read_cpu_us, expected) in [
            (
                0.0,
                None,
                "--target-cpu-speed 0: expected a number from 0.001 to 1000 (a core's speed relative to the inputs')",
            ),
            (f64::NAN, None, "--target-cpu-speed NaN: expected"),
            (f64::INFINITY, None, "--target-cpu-speed inf: expected"),
            (
                1.0,
                Some(f64::NAN),
                "--target-read-cpu-us NaN: expected a number from 0.001 to 1e6 (µs of CPU per key read)",
            ),
            (
                1.0,
                Some(f64::INFINITY),
                "--target-read-cpu-us inf: expected",
            ),
            (1.0, Some(1e300), "--target-read-cpu-us 1e300: expected"),
        ] {
            let err = TargetOptions {
                research_machine: true,
                cpu_speed,
                read_cpu_us,
                ..TargetOptions::default()
            }
            .machine(None)
            .unwrap_err();
            assert!(err.to_string().starts_with(expected), "{err}");
        }
    }

    #[test]
    fn the_research_machine_reads_as_its_rocksdb_did() {
        let machine = TargetOptions {
            research_machine: true,
            ..TargetOptions::default()
        }
        .machine(None)
        .unwrap()
        .unwrap();
        assert_eq!(machine.cores, 16.0);
        let disk = &machine.disk;
        // 180K reads/s with 16 in flight, 89 µs each; 320K with 32; 12K with 2, 167 µs.
        assert_eq!(disk.best_iops(), 320_000.0);
        assert!((disk.iops_at(16.0) - 180_000.0).abs() < 1e-6);
        assert!((disk.latency_ns(16.0) - 16.0 / 180_000.0 * 1e9).abs() < 1e-3);
        assert!((disk.latency_ns(2.0) - 2.0 / 12_000.0 * 1e9).abs() < 1e-3);
        assert!(
            disk.source
                .starts_with("the research's RocksDB random reads")
        );
    }
}
