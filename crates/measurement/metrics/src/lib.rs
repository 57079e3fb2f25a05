//! Every metric the project exports, declared in one place, and the Prometheus exporter.
//!
//! Metrics go through the `metrics` facade: with no recorder installed a recording costs a branch, so
//! libraries record unconditionally and binaries decide with `--metrics <addr:port>` whether to serve
//! them. Names carry their unit (`_seconds`, `_bytes`, `_total` for counters) and each has a help text.
//! `bal_replay_*` are the replay's, `bal_migrate_*` the migration's, `bal_exex_*` the reth ExEx's
//! (registered into reth's own endpoint by the node).
//!
//! This crate knows no other crate of the workspace: the engine reports (its batch reports, cache
//! counters and errors are plain values), and the binaries record, mapping those reports to the
//! metrics declared here (`bal-replay-cli`'s `record` module for the replay). The replay records
//! per batch and per cache snapshot, never per read on the hot path, so recording cannot slow a
//! replay.

#![cfg_attr(not(test), warn(unused_crate_dependencies))]

use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use std::net::SocketAddr;

/// A metric: its name, unit and help text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricDef {
    /// Prometheus name.
    pub name: &'static str,
    /// Counter, gauge or histogram.
    pub kind: MetricKind,
    /// Unit.
    pub unit: Unit,
    /// Help text.
    pub help: &'static str,
}

/// The kind of a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    /// Monotonic.
    Counter,
    /// Goes up and down.
    Gauge,
    /// Distribution.
    Histogram,
}

macro_rules! metrics_table {
    ($($ident:ident = $name:literal, $kind:ident, $unit:ident, $help:literal;)*) => {
        $(
            #[doc = $help]
            pub const $ident: &str = $name;
        )*
        /// Every metric, in declaration order.
        pub const ALL: &[MetricDef] = &[
            $(MetricDef { name: $name, kind: MetricKind::$kind, unit: Unit::$unit, help: $help },)*
        ];
    };
}

metrics_table! {
    REPLAY_GAS = "bal_replay_gas_total", Counter, Count, "Gas executed and verified by the replay.";
    REPLAY_TXS = "bal_replay_transactions_total", Counter, Count, "Transactions executed and verified.";
    REPLAY_BLOCKS = "bal_replay_blocks_total", Counter, Count, "Blocks executed, verified and committed.";
    REPLAY_BATCHES = "bal_replay_batches_total", Counter, Count, "Batches (mega-blocks) committed.";
    REPLAY_BATCH_SECONDS = "bal_replay_batch_duration_seconds", Histogram, Seconds, "Execution with I/O (prefetch + execution) per batch.";
    REPLAY_BATCH_GAS_PER_SECOND = "bal_replay_batch_gas_per_second", Gauge, CountPerSecond, "Gas per second of the last batch, over its execution with I/O.";
    REPLAY_TX_SECONDS = "bal_replay_tx_duration_seconds", Histogram, Seconds, "Execution time of each transaction (parallel mode).";
    REPLAY_LONGEST_TX_SECONDS = "bal_replay_longest_tx_seconds", Gauge, Seconds, "Longest transaction (or block, sequentially) of the last batch.";
    REPLAY_COMMIT_SECONDS = "bal_replay_commit_duration_seconds", Histogram, Seconds, "Atomic commit of a batch to the state store.";
    REPLAY_DB_READS = "bal_replay_db_reads_total", Counter, Count, "State store reads by kind (account, storage, code, prefetch_account, prefetch_storage).";
    REPLAY_DB_READ_SECONDS = "bal_replay_db_read_seconds", Gauge, Seconds, "Cumulative time spent in state store reads, by kind.";
    REPLAY_DB_READ_LATENCY = "bal_replay_db_read_latency_seconds", Histogram, Seconds, "Latency of on-demand store reads (upper bound of their power-of-two bucket).";
    REPLAY_CACHE_HITS = "bal_replay_cache_hits_total", Counter, Count, "Shared-cache lookups answered from the cache.";
    REPLAY_CACHE_MISSES = "bal_replay_cache_misses_total", Counter, Count, "Shared-cache lookups that read the store.";
    REPLAY_PREFETCH_KEYS = "bal_replay_prefetch_keys_total", Counter, Count, "Keys loaded by prefetching (batched and hybrid designs).";
    REPLAY_PREFETCH_SECONDS = "bal_replay_prefetch_duration_seconds", Histogram, Seconds, "Prefetch time before a batch executes (batched design).";
    REPLAY_WORKER_BUSY_SECONDS = "bal_replay_worker_busy_seconds", Gauge, Seconds, "Cumulative sum of all task times across workers.";
    REPLAY_VERIFICATION_FAILURES = "bal_replay_verification_failures_total", Counter, Count, "Replays stopped because a block did not verify against its record (BAL, header or execution mismatch, invalid BAL, missing pre-value); not store errors.";
    REPLAY_STORE_ERRORS = "bal_replay_store_errors_total", Counter, Count, "Replays stopped by a state store error (I/O, RocksDB or MDBX, reading or committing); not verification failures.";
    REPLAY_RESIDENT_MEMORY = "bal_replay_resident_memory_bytes", Gauge, Bytes, "Resident memory of the replay process.";
    REPLAY_STATE_SIZE = "bal_replay_state_size_bytes", Gauge, Bytes, "Size of the RocksDB state on disk (SST files and memtables).";
    REPLAY_DEVICE_READS = "bal_replay_device_reads_total", Counter, Count, "Read requests the state's block device completed during the replay (every process's).";
    REPLAY_DEVICE_READ_BYTES = "bal_replay_device_read_bytes_total", Counter, Bytes, "Bytes the state's block device read during the replay (every process's).";
    REPLAY_PROCESS_READ_BYTES = "bal_replay_process_read_bytes_total", Counter, Bytes, "Bytes the replay process caused to be read from storage (/proc/self/io read_bytes).";
    REPLAY_MAJOR_FAULTS = "bal_replay_major_faults_total", Counter, Count, "Major page faults of the replay process (memory-mapped reads that waited for the disk).";
    REPLAY_DISK_RESIDENT = "bal_replay_disk_resident", Gauge, Count, "1 when at least 80% of the finished replay's key reads reached the device, else 0.";
    MIGRATE_ENTRIES = "bal_migrate_entries_total", Counter, Count, "Entries migrated, by table.";
    MIGRATE_BYTES = "bal_migrate_bytes_total", Counter, Bytes, "Bytes written to the flat state.";
    MIGRATE_RATE = "bal_migrate_entries_per_second", Gauge, CountPerSecond, "Migration rate over the last progress interval.";
    EXEX_BLOCKS_DUMPED = "bal_exex_blocks_dumped_total", Counter, Count, "Blocks the ExEx wrote to the dump.";
    EXEX_BYTES_WRITTEN = "bal_exex_bytes_written_total", Counter, Bytes, "Bytes the ExEx wrote to the dump.";
    EXEX_LAG_BLOCKS = "bal_exex_lag_blocks", Gauge, Count, "Blocks between the node's tip and the last dumped block.";
    EXEX_REEXECUTION_SECONDS = "bal_exex_reexecution_duration_seconds", Histogram, Seconds, "Re-execution time of a block to build its BAL and pre-state.";
}

/// Why the exporter could not start.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// Installing the recorder or binding the listener failed.
    #[error("cannot serve metrics on {addr}: {message}")]
    Install {
        /// The address asked for.
        addr: SocketAddr,
        /// The exporter's error.
        message: String,
    },
}

/// Registers the help text and unit of every metric with the installed recorder.
pub fn describe_all() {
    for m in ALL {
        match m.kind {
            MetricKind::Counter => describe_counter!(m.name, m.unit, m.help),
            MetricKind::Gauge => describe_gauge!(m.name, m.unit, m.help),
            MetricKind::Histogram => describe_histogram!(m.name, m.unit, m.help),
        }
    }
}

/// Serves every metric at `http://addr/metrics` (Prometheus text format) until the process ends.
/// Must be called from a context where starting the exporter's own runtime thread is fine (the
/// exporter brings its own).
pub fn install_exporter(addr: SocketAddr) -> Result<(), MetricsError> {
    let buckets = [
        1e-6, 4e-6, 16e-6, 64e-6, 256e-6, 1e-3, 4e-3, 16e-3, 64e-3, 0.25, 1.0, 4.0, 16.0, 64.0,
    ];
    PrometheusBuilder::new()
        .with_http_listener(addr)
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &buckets)
        .and_then(|b| b.install())
        .map_err(|e| MetricsError::Install {
            addr,
            message: e.to_string(),
        })?;
    describe_all();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_prefixed_and_carry_units() {
        let mut names: Vec<&str> = ALL.iter().map(|m| m.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALL.len(), "duplicate metric names");
        for m in ALL {
            assert!(
                m.name.starts_with("bal_replay_")
                    || m.name.starts_with("bal_migrate_")
                    || m.name.starts_with("bal_exex_"),
                "{}",
                m.name
            );
            if m.kind == MetricKind::Counter {
                assert!(
                    m.name.ends_with("_total"),
                    "counter {} must end in _total",
                    m.name
                );
            }
            assert!(!m.help.is_empty());
        }
    }
}
