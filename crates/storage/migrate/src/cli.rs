//! [`CopyArgs`]: a migration's options as `bal-migrate`'s command line gives them (`clap` feature).

use alloy_primitives::B256;

use crate::{MigrateOptions, parse_sample_fraction};

/// The command-line form of [`MigrateOptions`]: counts of at least 1, and the verification as a
/// flag and a sample fraction.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct CopyArgs {
    /// Worker threads (all reading one MDBX snapshot).
    #[arg(
        long,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..),
        default_value_t = MigrateOptions::default().threads
    )]
    pub threads: usize,
    /// Finish a migration that an earlier run left incomplete in --dst.
    #[arg(long)]
    pub resume: bool,
    /// Afterwards, compare source and destination (counts and entries) in the snapshot the
    /// migration read, and print the digest.
    #[arg(long)]
    pub verify: bool,
    /// Entries a worker copies between durable progress checkpoints (each one a flush): what a
    /// crash can lose and --resume re-copies.
    #[arg(
        long,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..),
        default_value_t = MigrateOptions::default().checkpoint_entries
    )]
    pub checkpoint_entries: usize,
    /// With --verify, the fraction of entries compared value by value (counts are always full).
    #[arg(long, default_value_t = 1.0, value_parser = parse_sample_fraction)]
    pub sample: f64,
    /// The source's chain id, recorded in --dst: required where the source's genesis is no known
    /// chain's (reth keeps no chain id in its database); refused if the genesis names another.
    #[arg(long = "chain")]
    pub chain_id: Option<u64>,
    /// The hash of the block the source's state is at, recorded in --dst: required where the
    /// source holds none (in CanonicalHeaders or HeaderNumbers); refused if it holds another.
    #[arg(long)]
    pub block_hash: Option<B256>,
    /// The new state's index and filter layout: partitioned, or unpartitioned (cheaper reads pinned).
    #[arg(long, value_name = "LAYOUT", default_value = "partitioned")]
    pub table_layout: bal_replay_rocks::TableLayout,
}

impl From<&CopyArgs> for MigrateOptions {
    fn from(args: &CopyArgs) -> Self {
        Self {
            threads: args.threads,
            resume: args.resume,
            checkpoint_entries: args.checkpoint_entries.max(1),
            // Verified within the migration's own snapshot: a source being written would
            // otherwise show its new writes as mismatches.
            verify: args.verify.then_some(args.sample),
            chain_id: args.chain_id,
            block_hash: args.block_hash,
            table_layout: args.table_layout,
            ..Self::default()
        }
    }
}
