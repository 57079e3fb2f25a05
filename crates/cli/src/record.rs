//! The replay's reports recorded as metrics: the engine reports ([`BatchReport`], [`CacheStats`],
//! [`EngineError`]), `bal-replay-metrics` declares the metrics, and this module maps one to the
//! other, so neither of those crates knows the other.

use bal_replay_cache::{CacheStats, ReadKind};
use bal_replay_engine::{BatchReport, EngineError};
use bal_replay_metrics::{
    REPLAY_BATCH_GAS_PER_SECOND, REPLAY_BATCH_SECONDS, REPLAY_BATCHES, REPLAY_BLOCKS,
    REPLAY_CACHE_HITS, REPLAY_CACHE_MISSES, REPLAY_COMMIT_SECONDS, REPLAY_DB_READ_LATENCY,
    REPLAY_DB_READ_SECONDS, REPLAY_DB_READS, REPLAY_DEVICE_READ_BYTES, REPLAY_DEVICE_READS,
    REPLAY_DISK_RESIDENT, REPLAY_GAS, REPLAY_LONGEST_TX_SECONDS, REPLAY_MAJOR_FAULTS,
    REPLAY_PREFETCH_KEYS, REPLAY_PREFETCH_SECONDS, REPLAY_PROCESS_READ_BYTES,
    REPLAY_RESIDENT_MEMORY, REPLAY_STATE_SIZE, REPLAY_STORE_ERRORS, REPLAY_TX_SECONDS, REPLAY_TXS,
    REPLAY_VERIFICATION_FAILURES, REPLAY_WORKER_BUSY_SECONDS,
};
use bal_replay_probe::{DiskEvidence, device::IoDelta};
use metrics::{counter, gauge, histogram};

/// Makes the failure counters present from the first scrape, so "no failures" reads as 0, not as
/// no data.
pub fn record_start() {
    counter!(REPLAY_VERIFICATION_FAILURES).increment(0);
    counter!(REPLAY_STORE_ERRORS).increment(0);
}

/// Records one committed batch.
pub fn record_batch(batch: &BatchReport) {
    counter!(REPLAY_GAS).increment(batch.gas);
    counter!(REPLAY_TXS).increment(batch.txs as u64);
    // Saturating: the numbers come from a dump, and a metric must never be what panics.
    counter!(REPLAY_BLOCKS).increment(
        batch
            .last_block
            .saturating_sub(batch.first_block)
            .saturating_add(1),
    );
    counter!(REPLAY_BATCHES).increment(1);
    let secs = batch.exec_with_io().as_secs_f64();
    histogram!(REPLAY_BATCH_SECONDS).record(secs);
    if secs > 0.0 {
        gauge!(REPLAY_BATCH_GAS_PER_SECOND).set(batch.gas as f64 / secs);
    }
    gauge!(REPLAY_LONGEST_TX_SECONDS).set(batch.longest_tx.as_secs_f64());
    histogram!(REPLAY_COMMIT_SECONDS).record(batch.commit.as_secs_f64());
    if !batch.prefetch.is_zero() {
        histogram!(REPLAY_PREFETCH_SECONDS).record(batch.prefetch.as_secs_f64());
    }
    counter!(REPLAY_PREFETCH_KEYS).increment(batch.keys_prefetched);
    gauge!(REPLAY_WORKER_BUSY_SECONDS).increment(batch.busy.as_secs_f64());
    let tx_hist = histogram!(REPLAY_TX_SECONDS);
    for t in &batch.tx_times {
        tx_hist.record(t.as_secs_f64());
    }
    if let Some(rss) = bal_replay_probe::resident_memory_bytes() {
        gauge!(REPLAY_RESIDENT_MEMORY).set(rss as f64);
    }
}

/// Records the device and process reads since the last record (absent counters are not recorded).
pub fn record_io(delta: &IoDelta) {
    let add = |name: &'static str, value: Option<u64>| {
        if let Some(value) = value {
            counter!(name).increment(value);
        }
    };
    add(REPLAY_DEVICE_READS, delta.device_reads);
    add(REPLAY_DEVICE_READ_BYTES, delta.device_read_bytes);
    add(REPLAY_PROCESS_READ_BYTES, delta.process_read_bytes);
    add(REPLAY_MAJOR_FAULTS, delta.major_faults);
}

/// Records whether the finished replay was disk-resident.
pub fn record_disk_evidence(evidence: &DiskEvidence) {
    gauge!(REPLAY_DISK_RESIDENT).set(if evidence.residency.disk_resident {
        1.0
    } else {
        0.0
    });
}

/// Records the state's size on disk.
pub fn record_state_size(bytes: u64) {
    gauge!(REPLAY_STATE_SIZE).set(bytes as f64);
}

/// Records why a replay stopped, if it stopped on a verification failure or a store error: each
/// has its own counter, so an alert on failed verification never fires for a full disk.
pub fn record_replay_error(error: &EngineError) {
    if error.is_verification_failure() {
        counter!(REPLAY_VERIFICATION_FAILURES).increment(1);
    } else if error.is_store_error() {
        counter!(REPLAY_STORE_ERRORS).increment(1);
    }
}

/// Records the change of the shared cache's counters since `previous` (the counters are cumulative
/// in the cache; Prometheus counters must only go up by what happened since the last record).
pub fn record_cache(previous: &CacheStats, now: &CacheStats) {
    counter!(REPLAY_CACHE_HITS).increment(now.hits.saturating_sub(previous.hits));
    counter!(REPLAY_CACHE_MISSES).increment(now.misses.saturating_sub(previous.misses));
    for kind in ReadKind::ALL {
        let reads = now.reads(kind).saturating_sub(previous.reads(kind));
        counter!(REPLAY_DB_READS, "kind" => kind.name()).increment(reads);
        let nanos = now.read_time(kind).saturating_sub(previous.read_time(kind));
        gauge!(REPLAY_DB_READ_SECONDS, "kind" => kind.name()).increment(nanos.as_secs_f64());
    }
    let latency = histogram!(REPLAY_DB_READ_LATENCY);
    for (bucket, (n, p)) in now
        .latency
        .counts
        .iter()
        .zip(previous.latency.counts.iter().chain(std::iter::repeat(&0)))
        .enumerate()
    {
        let upper = (1u64 << bucket) as f64 * 1e-6;
        for _ in 0..n.saturating_sub(*p) {
            latency.record(upper);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metrics_exporter_prometheus::PrometheusBuilder;

    /// The counter of `name` in a Prometheus text rendering, if present.
    fn counter_value(rendered: &str, name: &str) -> Option<f64> {
        rendered
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
    }

    #[test]
    fn verification_failures_and_store_errors_are_counted_apart() {
        use bal_replay_executor::{ExecError, PreValueMissing};
        use bal_replay_state::StateError;
        let recorder = PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, || {
            bal_replay_metrics::describe_all();
            let verification = [
                EngineError::HeaderMismatch(bal_replay_executor::HeaderMismatch {
                    block: 5,
                    field: "gas used",
                    expected: "1".into(),
                    got: "2".into(),
                }),
                EngineError::Exec(ExecError::BalIndexOutOfRange {
                    block: 5,
                    address: Default::default(),
                    index: 9,
                    tx_count: 1,
                }),
                EngineError::Exec(ExecError::PreValueMissing {
                    block: 5,
                    bal_index: Some(1),
                    tx_count: 1,
                    source: PreValueMissing::BlockHash(4),
                }),
            ];
            let store = [
                EngineError::State(StateError::Poisoned),
                EngineError::Exec(ExecError::Store {
                    block: 5,
                    bal_index: None,
                    tx_count: 1,
                    source: StateError::MissingBlockHash { number: 4 },
                }),
            ];
            for e in verification.iter().chain(&store) {
                record_replay_error(e);
            }
            // Neither: a setup error.
            record_replay_error(&EngineError::ThreadStart("bal-worker-0: no threads".into()));
        });
        let rendered = handle.render();
        assert_eq!(
            counter_value(&rendered, REPLAY_VERIFICATION_FAILURES),
            Some(3.0),
            "{rendered}"
        );
        assert_eq!(
            counter_value(&rendered, REPLAY_STORE_ERRORS),
            Some(2.0),
            "{rendered}"
        );
        assert!(
            rendered.contains(&format!("# HELP {REPLAY_STORE_ERRORS} ")),
            "{rendered}"
        );
    }
}
