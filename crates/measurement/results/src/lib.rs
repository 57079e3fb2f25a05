//! Result files, the one home of their plumbing: a result replaces what its path held only once
//! it is complete ([`write_result_file`]); output paths are checked before a run starts
//! ([`check_output_file`], [`check_output_dir`]) and kept apart from the inputs ([`paths`]); and a JSON result carries its schema's version
//! and is read only by a build that reads that version ([`VersionedResult`], [`read_result`]),
//! at most [`MAX_RESULT_BYTES`] of it, with every number within [`bounds`].
//!
//! Every JSON result the project writes implements [`VersionedResult`]: a bench's
//! (`BenchResult`), a run's (`RunSummary`), the reference executor's (`ReferenceThroughput`),
//! `bench-db`'s (`BenchDbResult`), a projection (`ProjectionReport`) and a study's regime sweep
//! (`RegimeSweep`). Each format's crate keeps a golden file of a sample result at its version
//! (`tests/golden/<kind>-v<N>.json`, [`assert_golden`]): a field changed without raising the
//! version fails that test.

#![cfg_attr(not(test), warn(unused_crate_dependencies))]

pub mod bounds;
mod golden;
mod output_path;
pub mod paths;
mod result_file;

pub use golden::assert_golden;
pub use output_path::{OutputPathError, check_output_dir, check_output_file};
pub use result_file::{
    FieldError, Layout, MAX_RESULT_BYTES, ResultReadError, VersionedResult, encode_result,
    parse_result, read_result, read_result_bytes, schema_version, top_level_fields, write_result,
    write_result_file,
};
pub use result_file::{JSON_DEPTH_LIMIT, too_deep};
