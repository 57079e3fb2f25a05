//! The ExEx dashboard against a real Prometheus: the dumper runs a synthetic chain with the
//! metrics recorder set up as reth's node sets up its own (every name prefixed `reth_`, histograms
//! rendered as summaries), Prometheus scrapes it, and every query of
//! `docker/grafana/dashboards/exex.json` must return data.

#![allow(clippy::result_large_err)]

use bal_replay_executor::{ChainConfig, ExecOptions, execute_block};
use bal_replay_exex::{BlockRange, ChainBlock, ChainDumper, record_block, record_lag};
use bal_replay_state::{MemStore, StateDatabase, StateWriter};
use bal_replay_synth::{GeneratorConfig, generate_in_memory};
use bal_replay_test_utils::prometheus::{Prometheus, free_port, unix_now};
use metrics_exporter_prometheus::PrometheusBuilder;
use metrics_util::layers::{Layer, PrefixLayer};

struct Block(bal_replay_dump::BlockRecord);

impl ChainBlock for Block {
    fn number(&self) -> u64 {
        self.0.number()
    }
    fn hash(&self) -> alloy_primitives::B256 {
        self.0.block.header.hash_slow()
    }
    fn parent_hash(&self) -> alloy_primitives::B256 {
        self.0.block.header.parent_hash
    }
}

#[test]
fn the_exex_dashboard_returns_data_from_a_recorder_set_up_as_reths() {
    let port = free_port();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (recorder, exporter) = {
        let _guard = runtime.enter();
        PrometheusBuilder::new()
            .with_http_listener(([127, 0, 0, 1], port))
            .build()
            .unwrap()
    };
    runtime.spawn(exporter);
    metrics::set_global_recorder(PrefixLayer::new("reth").layer(recorder)).unwrap();

    let config = GeneratorConfig {
        seed: 9,
        accounts: 400,
        tokens: 3,
        pools: 2,
        nfts: 1,
        holders_per_token: 60,
        blocks: 4,
        gas_per_block: 1_500_000,
        ..GeneratorConfig::default()
    };
    let (genesis, records) = generate_in_memory(&config).unwrap();
    let store = MemStore::from_changes(&genesis, records[0].number() - 1);
    let dir = tempfile::tempdir().unwrap();
    let mut dumper = ChainDumper::open(dir.path(), 1, BlockRange::default()).unwrap();
    let blocks: Vec<Block> = records.into_iter().map(Block).collect();
    let chain = ChainConfig::mainnet();
    let outcome = dumper
        .commit(&blocks, |block| {
            let record = record_block(
                &chain,
                StateDatabase::new(&store),
                block.0.block.clone(),
                block.0.senders.clone(),
                block.0.block_hashes.clone(),
                None,
            )?;
            // Advance the node's state to this block, as the node itself would have.
            let output = execute_block(
                &chain,
                StateDatabase::new(&store),
                &record.block,
                &record.senders,
                ExecOptions::default(),
            )?;
            store.commit(&output.changes, record.number()).unwrap();
            Ok(record)
        })
        .unwrap();
    assert_eq!(outcome.dumped, 4);
    record_lag(blocks[3].number() + 2, dumper.last_dumped().map(|l| l.0));

    let prometheus = Prometheus::start("reth-bal", port);
    prometheus.expect_last_value("reth_bal_exex_blocks_dumped_total", 4.0);
    prometheus.expect_last_value("reth_bal_exex_lag_blocks", 2.0);
    let bytes: u64 = dumper.manifest().segments.iter().map(|s| s.bytes).sum();
    prometheus.expect_last_value("reth_bal_exex_bytes_written_total", bytes as f64);
    // Rates need two samples of the counters.
    std::thread::sleep(std::time::Duration::from_secs(3));
    let dashboard = bal_replay_test_utils::workspace_root(env!("CARGO_MANIFEST_DIR"))
        .join("docker/grafana/dashboards/exex.json");
    assert_eq!(prometheus.check_dashboard(&dashboard, unix_now()), 5);
}
