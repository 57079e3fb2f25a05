//! End-to-end checks of generated chains: determinism, self-consistency under re-execution, the
//! mainnet-like mix, the worst-case reads, and the written dump and RocksDB state.

use alloy_consensus::{
    Transaction, proofs::calculate_transaction_root, transaction::SignerRecoverable,
};
use alloy_eips::eip1559::{BaseFeeParams, calc_next_block_base_fee};
use alloy_primitives::{Address, U256, map::HashMap};
use bal_replay_dump::{BlockRecord, DumpReader};
use bal_replay_executor::{ChainConfig, ExecOptions, execute_block};
use bal_replay_rocks::{RocksStore, TableLayout};
use bal_replay_state::{MemStore, StateChanges, StateDatabase, StateReader, StateWriter};
use bal_replay_synth::{
    GeneratorConfig, Profile, ProfileStats, SynthError, generate, generate_in_memory, profile_stats,
};
use std::collections::HashSet;

/// A chain small enough to re-execute several times in a test.
fn small() -> GeneratorConfig {
    GeneratorConfig {
        seed: 11,
        accounts: 1_000,
        tokens: 6,
        pools: 5,
        nfts: 2,
        holders_per_token: 200,
        blocks: 4,
        gas_per_block: 5_000_000,
        ..GeneratorConfig::default()
    }
}

#[test]
fn same_config_same_chain_other_seed_other_chain() {
    let (genesis_a, records_a) = generate_in_memory(&small()).unwrap();
    let (genesis_b, records_b) = generate_in_memory(&small()).unwrap();
    assert_eq!(genesis_a, genesis_b);
    assert_eq!(records_a, records_b);

    let other = GeneratorConfig {
        seed: 12,
        ..small()
    };
    let (genesis_c, records_c) = generate_in_memory(&other).unwrap();
    assert_ne!(genesis_a, genesis_c);
    assert_eq!(records_a.len(), records_c.len());
    for (a, c) in records_a.iter().zip(&records_c) {
        assert_eq!(a.number(), c.number());
        assert_ne!(a.block.header.hash_slow(), c.block.header.hash_slow());
        assert_ne!(a.senders, c.senders);
    }
}

/// Every header field execution fills, every BAL and pre-state, equals a fresh re-execution over
/// the genesis state advanced block by block; and every block also re-executes from its own
/// recorded pre-state alone.
#[test]
fn every_block_matches_a_fresh_re_execution_from_genesis() {
    let config = small();
    let (genesis, records) = generate_in_memory(&config).unwrap();
    assert_eq!(records.len() as u64, config.blocks);
    let chain = ChainConfig::mainnet();
    let state = MemStore::from_changes(&genesis, config.first_block - 1);
    let mut parent: Option<&BlockRecord> = None;

    for (i, record) in records.iter().enumerate() {
        let header = &record.block.header;
        assert_eq!(header.number, config.first_block + i as u64);
        assert_eq!(header.timestamp, 1_720_000_000 + 12 * i as u64);
        assert!(!record.block.body.transactions.is_empty());

        // The 256 hashes before the block, ascending, the last one its parent's.
        assert_eq!(record.block_hashes.len(), 256);
        assert!(
            record
                .block_hashes
                .windows(2)
                .all(|w| w[1].number == w[0].number + 1)
        );
        let last = record.block_hashes.last().unwrap();
        assert_eq!(last.number, header.number - 1);
        assert_eq!(last.hash, header.parent_hash);
        for entry in &record.block_hashes {
            assert_eq!(state.block_hash(entry.number).unwrap(), Some(entry.hash));
        }
        if let Some(parent) = parent {
            assert_eq!(header.parent_hash, parent.block.header.hash_slow());
            let expected = calc_next_block_base_fee(
                parent.block.header.gas_used,
                parent.block.header.gas_limit,
                parent.block.header.base_fee_per_gas.unwrap(),
                BaseFeeParams::ethereum(),
            );
            assert_eq!(header.base_fee_per_gas, Some(expected));
        }

        // Transactions: signed by their senders, chain id 1, nonces in order per sender.
        assert_eq!(
            header.transactions_root,
            calculate_transaction_root(&record.block.body.transactions)
        );
        let mut next_nonce: HashMap<Address, u64> = HashMap::default();
        for (tx, sender) in record.block.body.transactions.iter().zip(&record.senders) {
            assert_eq!(tx.recover_signer().unwrap(), *sender);
            assert_eq!(tx.chain_id(), Some(1));
            assert!(tx.max_fee_per_gas() >= u128::from(header.base_fee_per_gas.unwrap()));
            let expected = match next_nonce.get(sender) {
                Some(n) => *n,
                None => state.account(*sender).unwrap().unwrap().nonce,
            };
            assert_eq!(tx.nonce(), expected);
            next_nonce.insert(*sender, expected + 1);
        }

        let output = execute_block(
            &chain,
            StateDatabase::new(&state),
            &record.block,
            &record.senders,
            ExecOptions::for_dump(),
        )
        .unwrap();
        assert_eq!(output.gas_used, header.gas_used);
        assert_eq!(output.receipts_root, header.receipts_root);
        assert_eq!(output.logs_bloom, header.logs_bloom);
        assert_eq!(output.bal.as_ref(), Some(&record.bal));
        assert_eq!(output.pre_state.as_ref(), Some(&record.pre_state));
        assert!(
            output.receipts.iter().all(|r| r.status()),
            "block {}: a generated transaction reverted",
            header.number
        );

        // The record alone is enough to re-execute the block.
        let isolated = MemStore::from_changes(
            &StateChanges::from_pre_state(&record.pre_state, &record.block_hashes),
            header.number - 1,
        );
        let alone = execute_block(
            &chain,
            StateDatabase::new(&isolated),
            &record.block,
            &record.senders,
            ExecOptions::default(),
        )
        .unwrap();
        assert_eq!(alone.receipts_root, header.receipts_root);
        assert_eq!(alone.changes, output.changes);

        let mut changes = output.changes;
        changes
            .block_hashes
            .push((header.number, header.hash_slow()));
        state.commit(&changes, header.number).unwrap();
        parent = Some(record);
    }
}

#[test]
fn mainnet_like_mix_lands_within_a_quarter_of_recent_mainnet() {
    let config = GeneratorConfig {
        blocks: 5,
        ..GeneratorConfig::default()
    };
    let (_, records) = generate_in_memory(&config).unwrap();
    let stats = profile_stats(&records);
    let reference = ProfileStats::RECENT_MAINNET;
    println!("{}", stats.comparison_table(&reference));
    let near = |name: &str, ours: f64, theirs: f64| {
        let ratio = ours / theirs;
        assert!(
            (0.75..=1.25).contains(&ratio),
            "{name}: {ours:.3} is {ratio:.2} times mainnet's {theirs:.3}"
        );
    };
    near("gas / tx", stats.gas_per_tx, reference.gas_per_tx);
    near(
        "plain transfers",
        stats.plain_transfer_share,
        reference.plain_transfer_share,
    );
    near("ERC-20 calls", stats.erc20_share, reference.erc20_share);
    near(
        "state keys / Mgas",
        stats.state_keys_per_mgas,
        reference.state_keys_per_mgas,
    );
    near(
        "slots / Mgas",
        stats.slots_per_block / stats.mgas_per_block,
        reference.slots_per_block / reference.mgas_per_block,
    );
    // Blocks fill to the configured target (estimates are calibrated on executed gas).
    let target = config.gas_per_block as f64 / 1e6;
    assert!(
        (stats.mgas_per_block - target).abs() / target < 0.1,
        "{} Mgas per block for a {target} Mgas target",
        stats.mgas_per_block
    );
}

#[test]
fn worst_case_transactions_read_thousands_of_distinct_existing_slots() {
    let config = GeneratorConfig {
        profile: Profile::WorstCaseIo,
        accounts: 100,
        tokens: 2,
        pools: 1,
        nfts: 1,
        holders_per_token: 16,
        blocks: 2,
        worst_case_txs: 2,
        ..GeneratorConfig::default()
    };
    let (genesis, records) = generate_in_memory(&config).unwrap();
    let genesis_slots: HashMap<(Address, U256), U256> = genesis
        .storage
        .iter()
        .map(|(a, s, v)| ((*a, *s), *v))
        .collect();
    let mut seen: HashSet<U256> = HashSet::new();
    for record in &records {
        let txs = &record.block.body.transactions;
        assert_eq!(txs.len(), 2);
        let reader = txs[0].to().unwrap();
        assert!(txs.iter().all(|tx| tx.to() == Some(reader)));
        let gas_per_tx = record.gas_used() / txs.len() as u64;
        assert!(
            (16_000_000..17_500_000).contains(&gas_per_tx),
            "{gas_per_tx} gas per worst-case tx"
        );

        // Every slot the reader reads is in the BAL (read, never written), distinct from every
        // other block's, non-zero in genesis and recorded with that value in the pre-state.
        let account = record.bal.iter().find(|a| a.address == reader).unwrap();
        assert!(account.storage_changes.is_empty());
        let reads = &account.storage_reads;
        assert_eq!(reads.len() as u64, 2 * config.worst_case_slots);
        assert!(reads.len() >= 2 * 7_000);
        for slot in reads {
            assert!(seen.insert(*slot), "slot {slot} read twice");
            let value = genesis_slots[&(reader, *slot)];
            assert!(!value.is_zero());
        }
        let recorded: Vec<_> = record
            .pre_state
            .storage
            .iter()
            .filter(|s| s.address == reader)
            .collect();
        assert_eq!(recorded.len(), reads.len());
        assert!(
            recorded
                .iter()
                .all(|s| genesis_slots[&(reader, s.slot)] == s.value)
        );
    }
}

#[test]
fn generate_writes_the_dump_and_a_reopenable_genesis_state() {
    let config = small();
    let dir = tempfile::tempdir().unwrap();
    let (dump_dir, state_dir) = (dir.path().join("dump"), dir.path().join("state"));
    let summary = generate(&config, &dump_dir, &state_dir, None).unwrap();
    let (genesis, records) = generate_in_memory(&config).unwrap();

    assert_eq!(summary.blocks, config.blocks);
    assert_eq!(
        summary.txs,
        records.iter().map(|r| r.tx_count() as u64).sum::<u64>()
    );
    assert_eq!(summary.genesis_accounts, genesis.accounts.len());
    assert_eq!(summary.genesis_slots, genesis.storage.len());
    assert_eq!(summary.stats, profile_stats(&records));

    // The dump: chained, synthetic, chain 1, the same records.
    let reader = DumpReader::open(&dump_dir)
        .unwrap()
        .expect_chain_id(1)
        .unwrap();
    assert!(reader.manifest().chained);
    assert_eq!(reader.manifest().source, "synthetic");
    let read: Vec<BlockRecord> = reader.records().map(|r| r.unwrap()).collect();
    assert_eq!(read, records);

    // The state: exactly the genesis, at the first block's parent.
    let store = RocksStore::open_read_only(&state_dir).unwrap();
    assert_eq!(store.applied_block().unwrap(), Some(config.first_block - 1));
    let expected = MemStore::from_changes(&genesis, config.first_block - 1);
    assert_eq!(store.dump_all().unwrap(), expected.dump_all().unwrap());
    let first_eoa = genesis.accounts[0];
    assert_eq!(
        store.account(first_eoa.0).unwrap(),
        first_eoa.1,
        "genesis account readable"
    );

    // And the first block replays on it.
    let output = execute_block(
        &ChainConfig::mainnet(),
        StateDatabase::new(&store),
        &records[0].block,
        &records[0].senders,
        ExecOptions::default(),
    )
    .unwrap();
    assert_eq!(output.receipts_root, records[0].block.header.receipts_root);

    // A second run into the same directories refuses to overwrite them.
    assert!(matches!(
        generate(&config, &dump_dir, &state_dir, None),
        Err(SynthError::OutputExists { path, .. }) if path == state_dir
    ));
    // Built beside the targets and renamed into place: nothing named as partial is left.
    assert_eq!(names_in(dir.path()), ["dump", "state"]);
}

/// The names in `dir`, sorted.
/// A state generated unpartitioned, cold entries ingested included, is so in RocksDB's own
/// OPTIONS and holds the same contents as the default layout's.
#[test]
fn generate_writes_the_table_layout_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let mut states = Vec::new();
    for layout in [TableLayout::Partitioned, TableLayout::Unpartitioned] {
        let config = GeneratorConfig {
            blocks: 1,
            state_entries: 40_000,
            table_layout: layout,
            ..small()
        };
        let (dump, state) = (
            dir.path().join(format!("dump-{layout}")),
            dir.path().join(format!("state-{layout}")),
        );
        generate(&config, &dump, &state, None).unwrap();
        assert_eq!(TableLayout::of_state(&state), Some(layout));
        let store = RocksStore::open_read_only(&state).unwrap();
        assert_eq!(store.table_layout(), layout);
        states.push(store.dump_all().unwrap());
    }
    assert_eq!(states[0], states[1]);
}

fn names_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A taken path (a link, a file, a directory with something in it) is refused before anything is
/// generated, and what was begun for the other output is removed; an empty directory of this
/// user's is claimed.
#[test]
fn generate_refuses_taken_outputs_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let (dump_dir, state_dir) = (dir.path().join("dump"), dir.path().join("state"));
    let config = GeneratorConfig {
        blocks: 1,
        ..small()
    };
    std::fs::write(dir.path().join("file"), b"kept\n").unwrap();
    std::os::unix::fs::symlink(dir.path().join("file"), dir.path().join("link")).unwrap();
    std::fs::create_dir(&dump_dir).unwrap();
    std::fs::write(dump_dir.join("notes.txt"), b"kept\n").unwrap();
    for (taken, reason) in [
        (dump_dir.clone(), "not empty"),
        (dir.path().join("file"), "not a directory"),
        (dir.path().join("link"), "symbolic link"),
    ] {
        let error = generate(&config, &taken, &state_dir, None).unwrap_err();
        let message = error.to_string();
        assert!(
            matches!(&error, SynthError::OutputExists { path, .. } if *path == taken),
            "{error:?}"
        );
        assert!(message.contains(reason), "{message}");
        assert!(message.contains(&taken.display().to_string()), "{message}");
        assert_eq!(names_in(dir.path()), ["dump", "file", "link"]);
    }
    assert_eq!(
        std::fs::read(dump_dir.join("notes.txt")).unwrap(),
        b"kept\n"
    );
    assert_eq!(std::fs::read(dir.path().join("file")).unwrap(), b"kept\n");

    // An empty directory is claimed: the finished dump takes its place.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    generate(&config, &empty, &state_dir, None).unwrap();
    assert_eq!(DumpReader::open(&empty).unwrap().manifest().record_count, 1);
    assert_eq!(
        names_in(dir.path()),
        ["dump", "empty", "file", "link", "state"]
    );
}

#[test]
fn invalid_configs_are_rejected_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    for config in [
        GeneratorConfig {
            accounts: 3,
            ..small()
        },
        GeneratorConfig {
            pools: 100,
            ..small()
        },
        GeneratorConfig {
            holders_per_token: 5_000,
            ..small()
        },
        GeneratorConfig {
            first_block: 0,
            ..small()
        },
        GeneratorConfig {
            blocks: 0,
            ..small()
        },
        GeneratorConfig {
            first_block: 1_000_000,
            ..small()
        },
    ] {
        let err = generate(
            &config,
            &dir.path().join("dump"),
            &dir.path().join("state"),
            None,
        )
        .unwrap_err();
        assert!(matches!(err, SynthError::InvalidConfig { .. }), "{err}");
        assert!(!dir.path().join("dump").exists());
        assert!(!dir.path().join("state").exists());
    }
}

/// Few accounts, many blocks: senders run low on ETH, their transactions move to the hot wallets,
/// and every block stays valid.
#[test]
fn a_long_chain_over_few_accounts_stays_valid() {
    let config = GeneratorConfig {
        seed: 5,
        accounts: 16,
        holders_per_token: 16,
        tokens: 3,
        pools: 2,
        nfts: 1,
        blocks: 60,
        gas_per_block: 3_000_000,
        ..GeneratorConfig::default()
    };
    let (genesis, records) = generate_in_memory(&config).unwrap();
    assert_eq!(records.len(), 60);
    let state = MemStore::from_changes(&genesis, config.first_block - 1);
    for record in &records {
        let output = execute_block(
            &ChainConfig::mainnet(),
            StateDatabase::new(&state),
            &record.block,
            &record.senders,
            ExecOptions::default(),
        )
        .unwrap();
        assert!(output.receipts.iter().all(|r| r.status()));
        let mut changes = output.changes;
        changes
            .block_hashes
            .push((record.number(), record.block.header.hash_slow()));
        state.commit(&changes, record.number()).unwrap();
    }
}

#[test]
fn recent_mainnet_unshared_key_share_is_measured_from_the_fixtures() {
    let root = bal_replay_fixtures::default_mainnet_dir().expect("the mainnet fixtures");
    let recent: Vec<_> = bal_replay_fixtures::fixture_dirs(&root)
        .unwrap()
        .into_iter()
        .map(|dir| bal_replay_fixtures::Fixture::read(dir).unwrap())
        .filter(|f| f.number() >= 16_300_000)
        .collect();
    assert_eq!(recent.len(), 11);
    let share = bal_replay_synth::unshared_key_share(recent.iter().map(|f| &f.pre_state));
    assert!(
        (share - bal_replay_synth::RECENT_MAINNET_UNSHARED_KEY_SHARE).abs() < 0.0005,
        "{share}"
    );
    // Of the same 11 blocks, a block shares keys with others only through the hot set: a share
    // computed over one block alone is 1.
    assert_eq!(
        bal_replay_synth::unshared_key_share([&recent[0].pre_state]),
        1.0
    );
}

#[test]
fn a_generated_chain_reports_its_unshared_key_share() {
    let config = GeneratorConfig {
        blocks: 22,
        ..small()
    };
    let (_, records) = generate_in_memory(&config).unwrap();
    let stats = profile_stats(&records);
    let sampled: Vec<_> = records.iter().step_by(2).map(|r| &r.pre_state).collect();
    assert_eq!(sampled.len(), 11);
    assert_eq!(
        stats.unshared_key_share,
        bal_replay_synth::unshared_key_share(sampled)
    );
    assert!(
        stats.unshared_key_share > 0.0 && stats.unshared_key_share < 1.0,
        "{}",
        stats.unshared_key_share
    );
}
