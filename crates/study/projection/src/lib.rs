//! `bal-replay project`'s work, free of the command line: bench results with task profiles
//! (`bal-replay bench --json --task-profile`) turned into a [`ProjectionReport`], and such a
//! report read back.
//!
//! Runs that differ only in their worker count form a group. Each group is calibrated on its
//! one-worker run (the model's one fitted factor, [`bal_replay_model::calibrate`]), checked
//! against its runs at other worker counts (predictions the fit did not see), and projected onto
//! a target machine ([`project`], [`project_benches`]). Every figure of a projection is the
//! model's, not a measurement. A report written by another schema version is refused whole
//! ([`read_projection`]).

#![cfg_attr(not(test), warn(unused_crate_dependencies))]

mod bench_run;
mod error;
mod project;
mod read;
mod target;

pub use bal_replay_model::{ProjectionReport, SCHEMA_VERSION};
pub use error::{ProjectionError, ReadProjectionError};
pub use project::{MeasuredMachine, ProjectOptions, ProjectionNote, project, project_benches};
pub use read::read_projection;
pub use target::{TargetDisk, TargetOptions};
