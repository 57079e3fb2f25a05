//! What stops a projection, and what stops reading one back.

use bal_replay_model::DiskModelError;
use std::path::PathBuf;

/// Why a projection could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ProjectionError {
    /// An input could not be read as a `bal-replay bench --json` result of this build's schema.
    #[error(transparent)]
    Bench(#[from] bal_replay_bench::ResultReadError),
    /// A disk (measured, or the target's) could not be modelled.
    #[error(transparent)]
    Disk(#[from] DiskModelError),
    /// A target machine was named by only one of its cores and its disk.
    #[error(
        "a target machine needs both its cores (--target-cores) and its disk (--target-disk, or \
         --target-iops with --target-latency-us), or --research-machine"
    )]
    IncompleteTarget,
    /// A figure of the target machine no machine has.
    #[error(
        "{option} {}: expected a number from {} to {} ({what})",
        short(*value),
        short(*low),
        short(*high)
    )]
    TargetFigure {
        /// The option that gave it.
        option: &'static str,
        /// What it gave.
        value: f64,
        /// The lowest a machine has.
        low: f64,
        /// The highest.
        high: f64,
        /// What it is.
        what: &'static str,
    },
}

fn short(x: f64) -> String {
    bal_replay_results::bounds::short(x)
}

/// Why a file could not be read as a projection.
#[derive(Debug, thiserror::Error)]
pub enum ReadProjectionError {
    /// The file could not be read.
    #[error("reading {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error("{}: {}", path.display(), bal_replay_results::too_deep("projection", source).unwrap_or_else(|| "not JSON".into()))]
    NotJson {
        /// The file.
        path: PathBuf,
        /// Where it stops being JSON.
        #[source]
        source: serde_json::Error,
    },
    /// The file is a projection of another schema version than this build's.
    #[error(
        "{}: written with projection schema version {found}, this build reads version {expected}",
        path.display()
    )]
    SchemaVersion {
        /// The file.
        path: PathBuf,
        /// Its version (1 where it has none: files from before versions were written).
        found: u32,
        /// This build's ([`bal_replay_model::SCHEMA_VERSION`]).
        expected: u32,
    },
    /// The file could not be read as a result (see [`bal_replay_results::ResultReadError`]).
    #[error(transparent)]
    Result(bal_replay_results::ResultReadError),
    /// The file has a projection's calibrations but is not one.
    #[error("{}: not a `bal-replay project --json` output", path.display())]
    NotProjection {
        /// The file.
        path: PathBuf,
        /// Where its JSON differs.
        #[source]
        source: serde_json::Error,
    },
}
