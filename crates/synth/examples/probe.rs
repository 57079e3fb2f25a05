use alloy_consensus::Transaction;
use bal_replay_exec::*;
use bal_replay_state::*;
use bal_replay_synth::*;
use std::collections::BTreeMap;
fn main() {
    let t = std::time::Instant::now();
    let env = |k: &str, d: usize| std::env::var(k).map(|v| v.parse().unwrap()).unwrap_or(d);
    let config = GeneratorConfig {
        blocks: env("BLOCKS", 20) as u64,
        tokens: env("TOKENS", 20),
        pools: env("POOLS", 10),
        nfts: env("NFTS", 5),
        gas_per_block: env("GAS", 30_000_000) as u64,
        seed: env("SEED", 1) as u64,
        ..GeneratorConfig::default()
    };
    let (genesis, records) = generate_in_memory(&config).unwrap();
    println!(
        "generated in {:?}: {} accounts {} slots",
        t.elapsed(),
        genesis.accounts.len(),
        genesis.storage.len()
    );
    let stats = profile_stats(&records);
    println!("{}", stats.comparison_table(&ProfileStats::RECENT_MAINNET));
    let store = MemStore::from_changes(&genesis, config.first_block - 1);
    let mut per: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
    for r in &records {
        let out = execute_block(
            &ChainConfig::mainnet(),
            StateDatabase::new(&store),
            &r.block,
            &r.senders,
            ExecOptions::default(),
        )
        .unwrap();
        let mut cum = 0;
        for (tx, rc) in r.block.body.transactions.iter().zip(&out.receipts) {
            let used = rc.cumulative_gas_used() - cum;
            cum = rc.cumulative_gas_used();
            let key = if tx.input().is_empty() {
                "eth".to_string()
            } else {
                format!(
                    "{}-{}",
                    alloy_primitives::hex::encode(&tx.input()[..4]),
                    if tx.input().len() > 200 { "multi" } else { "" }
                )
            };
            let e = per.entry(key).or_default();
            e.0 += 1;
            e.1 += used;
            if !rc.status() {
                e.2 += 1;
            }
        }
        let mut ch = out.changes;
        ch.block_hashes
            .push((r.number(), r.block.header.hash_slow()));
        store.commit(&ch, r.number()).unwrap();
    }
    for (k, (n, g, f)) in per {
        println!("{k:20} n={n:6} avg={:8} failed={f}", g / n);
    }
}
