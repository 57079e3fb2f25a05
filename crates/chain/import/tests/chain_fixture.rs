//! `import_chain` over the Amsterdam dev chain (`../shared/fixtures/amsterdam-dev`), as reth v2.5.1
//! made it, and over copies where the network says something else: each difference fails its
//! block, naming what differs, and the blocks after it are still checked.

use alloy_primitives::U256;
use bal_replay_dump::DumpReader;
use bal_replay_executor::{ExecError, decode_bal};
use bal_replay_fixtures::default_amsterdam_dev_dir;
use bal_replay_import::{ChainFixture, ImportError, import_chain};
use bal_replay_rocks::RocksStore;
use bal_replay_state::StateReader;

fn fixture() -> ChainFixture {
    ChainFixture::read(
        default_amsterdam_dev_dir()
            .expect("../shared/fixtures/amsterdam-dev must exist next to the workspace"),
    )
    .unwrap()
}

#[test]
fn every_block_matches_the_network_and_the_state_starts_at_genesis() {
    let fixture = fixture();
    let tmp = tempfile::tempdir().unwrap();
    let (out, state) = (tmp.path().join("dump"), tmp.path().join("state"));
    let mut seen = Vec::new();
    let imported = import_chain(&fixture, &out, &state, |n, r| seen.push((n, r.is_ok()))).unwrap();
    assert_eq!(seen, (1..=80).map(|n| (n, true)).collect::<Vec<_>>());
    let checks: Vec<_> = imported
        .blocks
        .iter()
        .map(|(_, r)| r.as_ref().unwrap())
        .collect();
    assert_eq!(checks.iter().map(|c| c.txs).sum::<usize>(), 185);
    assert_eq!(checks[59].gas_used, 6_849_108);
    assert_eq!(checks[59].bal_rlp_bytes, 2893);
    assert_eq!(imported.manifest.record_count, 80);
    let dump = DumpReader::open(&out).unwrap();
    assert!(dump.manifest().chained);
    let schedule = dump.manifest().schedule.as_ref().unwrap();
    assert_eq!(schedule.forks.last().unwrap().fork, "Amsterdam");

    let store = RocksStore::open_read_only(&state).unwrap();
    assert_eq!(store.applied_block().unwrap(), Some(0));
    assert_eq!(
        store.applied_block_hash().unwrap(),
        Some(fixture.genesis_hash())
    );
    assert_eq!(store.chain_id().unwrap(), Some(1337));
    let funded = fixture.genesis.alloc.keys().next().unwrap();
    assert_eq!(
        store.account(*funded).unwrap().unwrap().balance,
        U256::from(1_000_000u64) * U256::from(10u64).pow(U256::from(18u64))
    );
    drop(store);

    // A state seeded from the dump alone is at the same block: genesis, by its hash.
    let seeded_dir = tmp.path().join("seeded");
    let seeded = bal_replay_import::seed_chain_state(&dump, &seeded_dir).unwrap();
    assert_eq!(seeded.height, 0);
    let seeded = RocksStore::open_read_only(&seeded_dir).unwrap();
    assert_eq!(seeded.applied_block().unwrap(), Some(0));
    assert_eq!(
        seeded.applied_block_hash().unwrap(),
        Some(fixture.genesis_hash())
    );
    assert_eq!(seeded.chain_id().unwrap(), Some(1337));
    drop(seeded);

    // A second import into the same place is refused before anything is touched.
    let e = import_chain(&fixture, &out, &tmp.path().join("other"), |_, _| {}).unwrap_err();
    assert!(matches!(e, ImportError::AlreadyExists { .. }), "{e}");
    assert!(!tmp.path().join("other").exists());
}

#[test]
fn a_block_the_network_saw_otherwise_fails_naming_what_differs() {
    let mut fixture = fixture();
    // Block 40: the network's BAL with one balance changed; block 60: a receipt's gas.
    let mut bal = decode_bal(&fixture.blocks[39].bal_rlp).unwrap();
    let (account, change) = bal
        .iter_mut()
        .find_map(|a| {
            let address = a.address;
            a.balance_changes.first_mut().map(|c| (address, c))
        })
        .unwrap();
    change.post_balance += U256::from(1);
    let index = change.block_access_index.0;
    fixture.blocks[39].bal_rlp = alloy_rlp::encode(&bal).into();
    fixture.blocks[59].receipts[3].gas_used += 1;
    fixture.blocks[59].receipts[3].cumulative_gas_used += 1;

    let tmp = tempfile::tempdir().unwrap();
    let imported = import_chain(
        &fixture,
        &tmp.path().join("dump"),
        &tmp.path().join("state"),
        |_, _| {},
    )
    .unwrap();
    assert_eq!((imported.passed(), imported.failed()), (78, 2));
    match &imported.blocks[39].1 {
        Err(ImportError::Exec(ExecError::BalHash(m))) => {
            assert_eq!(m.block, 40);
            let d = m.first_difference.as_ref().unwrap();
            assert_eq!((d.account, d.slot, d.index), (account, None, Some(index)));
        }
        other => panic!("block 40: {other:?}"),
    }
    match &imported.blocks[59].1 {
        Err(ImportError::Receipt(m)) => {
            assert_eq!((m.block, m.tx, m.field), (60, 3, "gasUsed"));
        }
        other => panic!("block 60: {other:?}"),
    }
    // The dump stops before the first failed block; every block after it was still checked.
    assert_eq!(imported.manifest.last_block, Some(39));
    assert!(imported.blocks[79].1.is_ok());
}
