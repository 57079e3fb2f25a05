//! Behaviour of both stores through the public API, and their agreement with each other.

use std::{sync::Arc, thread};

use alloy_primitives::{Address, B256, Bytes, U256, address, b256, keccak256};
use bal_replay_rocks::{RocksOptions, RocksStore, TableLayout};
use bal_replay_state::{
    AppliedBlock, FlatAccount, FlatContents, KeyScheme, MemStore, StateChanges, StateDatabase,
    StateError, StateReader, StateWriter, cf,
};
use revm::{DatabaseRef, primitives::KECCAK_EMPTY};
use tempfile::TempDir;

const A: Address = address!("0x1000000000000000000000000000000000000001");
/// Differs from `A` only in the last byte, so its plain storage keys sort right after `A`'s.
const A_NEXT: Address = address!("0x1000000000000000000000000000000000000002");
const MAX: Address = address!("0xffffffffffffffffffffffffffffffffffffffff");
const MAX_PREV: Address = address!("0xfffffffffffffffffffffffffffffffffffffffe");

fn small_opts() -> RocksOptions {
    // Tests open many stores at once; a small cache keeps them light.
    RocksOptions {
        block_cache_bytes: 8 << 20,
        ..RocksOptions::default()
    }
}

fn rocks(scheme: KeyScheme) -> (TempDir, RocksStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = RocksStore::create(dir.path().join("db"), scheme, &small_opts()).unwrap();
    (dir, store)
}

fn account(nonce: u64, balance: u64, code_hash: B256) -> FlatAccount {
    FlatAccount {
        nonce,
        balance: U256::from(balance),
        code_hash,
    }
}

fn code_of(bytes: &'static [u8]) -> (B256, Bytes) {
    (keccak256(bytes), Bytes::from_static(bytes))
}

/// Storage of every test address at the slots that sit on range boundaries: 0, 1 and 2^256-1.
fn boundary_slots() -> Vec<U256> {
    vec![U256::ZERO, U256::from(1), U256::MAX]
}

/// A history exercising every kind of change; returns the expected reads after it.
fn history() -> Vec<(StateChanges, u64)> {
    let code = code_of(&[0x60, 0x00, 0x60, 0x00, 0xf3]);
    let mut first = StateChanges {
        accounts: vec![
            (A, Some(account(1, 100, KECCAK_EMPTY))),
            (A_NEXT, Some(account(2, 200, code.0))),
            (MAX, Some(account(3, 300, KECCAK_EMPTY))),
            (MAX_PREV, Some(account(4, 400, KECCAK_EMPTY))),
        ],
        codes: vec![code.clone()],
        block_hashes: vec![(9, B256::repeat_byte(9)), (10, B256::repeat_byte(10))],
        ..Default::default()
    };
    for (i, addr) in [A, A_NEXT, MAX, MAX_PREV].into_iter().enumerate() {
        for slot in boundary_slots() {
            first
                .storage
                .push((addr, slot, U256::from(1000 + i as u64)));
        }
        first.storage.push((addr, U256::from(0x1234), U256::MAX));
    }
    let second = StateChanges {
        // Deleting an account, overwriting one, writing a zero slot (= delete) and writing zero to
        // an absent slot (a no-op).
        accounts: vec![(MAX_PREV, None), (A, Some(account(5, 1, KECCAK_EMPTY)))],
        storage: vec![
            (A, U256::from(1), U256::ZERO),
            (A, U256::from(77), U256::ZERO),
            (A, U256::from(0x1234), U256::from(0x0100)),
        ],
        block_hashes: vec![(11, B256::repeat_byte(11))],
        ..Default::default()
    };
    let third = StateChanges {
        // Wipes of `A` and `MAX` (whose slot 2^256-1 is the very last storage key), with a slot of
        // `A` rewritten after the wipe in the same commit.
        wiped_storage: vec![A, MAX],
        storage: vec![(A, U256::from(5), U256::from(55))],
        ..Default::default()
    };
    vec![(first, 10), (second, 11), (third, 12)]
}

fn apply_history(store: &impl StateWriter) {
    for (changes, block) in history() {
        store.commit(&changes, block).unwrap();
    }
}

/// Checks the reads after `history()`.
fn check_history(store: &impl StateReader) {
    assert_eq!(store.applied_block().unwrap(), Some(12));
    let code = code_of(&[0x60, 0x00, 0x60, 0x00, 0xf3]);
    assert_eq!(store.account(A).unwrap(), Some(account(5, 1, KECCAK_EMPTY)));
    assert_eq!(
        store.account(A_NEXT).unwrap(),
        Some(account(2, 200, code.0))
    );
    assert_eq!(
        store.account(MAX).unwrap(),
        Some(account(3, 300, KECCAK_EMPTY))
    );
    assert_eq!(store.account(MAX_PREV).unwrap(), None);
    assert_eq!(store.account(Address::ZERO).unwrap(), None);

    // Wiped: only the slot written after the wipe is left.
    for slot in boundary_slots().into_iter().chain([U256::from(0x1234)]) {
        assert_eq!(store.storage(A, slot).unwrap(), U256::ZERO, "A slot {slot}");
        assert_eq!(
            store.storage(MAX, slot).unwrap(),
            U256::ZERO,
            "MAX slot {slot}"
        );
    }
    assert_eq!(store.storage(A, U256::from(5)).unwrap(), U256::from(55));
    // Neighbours untouched by the wipes (MAX_PREV's storage outlives its account deletion:
    // deleting an account does not wipe its storage; the caller wipes explicitly).
    for (i, addr) in [(1, A_NEXT), (3, MAX_PREV)] {
        for slot in boundary_slots() {
            assert_eq!(
                store.storage(addr, slot).unwrap(),
                U256::from(1000 + i),
                "{addr} slot {slot}"
            );
        }
        assert_eq!(store.storage(addr, U256::from(0x1234)).unwrap(), U256::MAX);
    }

    assert_eq!(store.code(code.0).unwrap(), Some(code.1));
    assert_eq!(store.code(B256::repeat_byte(1)).unwrap(), None);
    assert_eq!(store.block_hash(9).unwrap(), Some(B256::repeat_byte(9)));
    assert_eq!(store.block_hash(11).unwrap(), Some(B256::repeat_byte(11)));
    assert_eq!(store.block_hash(12).unwrap(), None);
}

#[test]
fn mem_store_round_trip() {
    let store = MemStore::new();
    assert_eq!(store.applied_block().unwrap(), None);
    apply_history(&store);
    check_history(&store);
}

#[test]
fn rocks_store_round_trip_both_schemes() {
    for scheme in [KeyScheme::Plain, KeyScheme::Hashed] {
        let (_dir, store) = rocks(scheme);
        assert_eq!(store.applied_block().unwrap(), None);
        apply_history(&store);
        check_history(&store);
    }
}

#[test]
fn intermediate_reads_after_first_commit() {
    let (_dir, store) = rocks(KeyScheme::Plain);
    let (first, block) = history().remove(0);
    store.commit(&first, block).unwrap();
    assert_eq!(store.applied_block().unwrap(), Some(10));
    assert_eq!(store.storage(MAX, U256::MAX).unwrap(), U256::from(1002));
    assert_eq!(store.storage(A, U256::from(1)).unwrap(), U256::from(1000));
    // Values are stored trimmed: 1000 = 0x03e8 takes two bytes.
    let raw = store
        .raw_db()
        .get_cf(
            store.raw_db().cf_handle(cf::STORAGE).unwrap(),
            KeyScheme::Plain.storage_key(A, U256::from(1)),
        )
        .unwrap();
    assert_eq!(raw.as_deref(), Some(&[0x03, 0xe8][..]));
}

#[test]
fn stores_agree_on_contents_and_digest() {
    for scheme in [KeyScheme::Plain, KeyScheme::Hashed] {
        let mem = MemStore::with_key_scheme(scheme);
        let (_dir, rocks) = rocks(scheme);
        assert_eq!(mem.dump_all().unwrap(), rocks.dump_all().unwrap());
        for (changes, block) in history() {
            mem.commit(&changes, block).unwrap();
            rocks.commit(&changes, block).unwrap();
            let (m, r) = (mem.dump_all().unwrap(), rocks.dump_all().unwrap());
            assert_eq!(m, r, "{scheme} after block {block}");
            assert_eq!(
                mem.content_digest().unwrap(),
                rocks.content_digest().unwrap()
            );
        }
        let dump = rocks.dump_all().unwrap();
        // 3 accounts, A: 1 slot, A_NEXT and MAX_PREV: 4 each.
        assert_eq!(
            (dump.accounts.len(), dump.storage.len(), dump.codes.len()),
            (3, 9, 1)
        );
        assert_eq!(
            dump.block_hashes
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>(),
            vec![9, 10, 11]
        );
        assert_eq!(dump.applied_block, Some(12));
    }
}

#[test]
fn digest_changes_with_any_value_and_plain_converts_to_hashed() {
    let (_d1, plain) = rocks(KeyScheme::Plain);
    let (_d2, hashed) = rocks(KeyScheme::Hashed);
    apply_history(&plain);
    apply_history(&hashed);
    let p = plain.dump_all().unwrap();
    let h = hashed.dump_all().unwrap();
    assert_ne!(p.digest(), h.digest());
    assert_eq!(p.to_hashed().unwrap(), h);
    assert_eq!(p.to_hashed().unwrap().digest(), h.digest());

    let mut changed = p.clone();
    changed.storage[0].1 += U256::from(1);
    assert_ne!(changed.digest(), p.digest());
    let mut changed = p.clone();
    changed.applied_block = Some(13);
    assert_ne!(changed.digest(), p.digest());
    assert_ne!(FlatContents::default().digest(), p.digest());
}

#[test]
fn from_changes_equals_commit_on_empty() {
    let (changes, block) = history().remove(0);
    let a = MemStore::from_changes(&changes, block);
    let b = MemStore::new();
    b.commit(&changes, block).unwrap();
    assert_eq!(a.dump_all().unwrap(), b.dump_all().unwrap());
}

#[test]
fn extended_changes_equal_sequential_commits() {
    let mut merged = StateChanges::default();
    let sequential = MemStore::new();
    for (changes, block) in history() {
        sequential.commit(&changes, block).unwrap();
        merged.extend(changes);
    }
    let once = MemStore::new();
    once.commit(&merged, 12).unwrap();
    assert_eq!(once.dump_all().unwrap(), sequential.dump_all().unwrap());
    let (_dir, rocks) = rocks(KeyScheme::Plain);
    rocks.commit(&merged, 12).unwrap();
    assert_eq!(rocks.dump_all().unwrap(), sequential.dump_all().unwrap());
}

#[test]
fn hashed_scheme_stores_keccak_keys() {
    let (_dir, store) = rocks(KeyScheme::Hashed);
    apply_history(&store);
    let db = store.raw_db();
    let accounts = db.cf_handle(cf::ACCOUNTS).unwrap();
    let storage = db.cf_handle(cf::STORAGE).unwrap();
    let value = db.get_cf(accounts, keccak256(A_NEXT)).unwrap().unwrap();
    assert_eq!(
        FlatAccount::from_bytes(&value),
        store.account(A_NEXT).unwrap()
    );
    assert_eq!(db.get_cf(accounts, A_NEXT).unwrap(), None);

    let mut key = keccak256(A_NEXT).to_vec();
    key.extend_from_slice(keccak256(B256::from(U256::from(0x1234))).as_slice());
    assert_eq!(
        db.get_cf(storage, &key).unwrap().as_deref(),
        Some(&[0xff; 32][..])
    );
    // Every stored key has the hashed length.
    assert!(
        db.iterator_cf(accounts, rocksdb::IteratorMode::Start)
            .all(|kv| kv.unwrap().0.len() == 32)
    );
    assert!(
        db.iterator_cf(storage, rocksdb::IteratorMode::Start)
            .all(|kv| kv.unwrap().0.len() == 64)
    );
    assert_eq!(
        store.meta(cf::META_KEY_SCHEME).unwrap().as_deref(),
        Some(&b"hashed"[..])
    );
}

#[test]
fn reopen_keeps_state_and_scheme() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let store = RocksStore::create(&path, KeyScheme::Hashed, &small_opts()).unwrap();
        apply_history(&store);
    }
    let store = RocksStore::open(&path, &small_opts()).unwrap();
    assert_eq!(store.key_scheme(), KeyScheme::Hashed);
    assert_eq!(store.path(), path);
    check_history(&store);
    drop(store);

    let ro = RocksStore::open(
        &path,
        &RocksOptions {
            read_only: true,
            ..small_opts()
        },
    )
    .unwrap();
    check_history(&ro);
    assert!(matches!(
        ro.commit(&StateChanges::default(), 13),
        Err(StateError::Commit {
            applied_block: 13,
            ..
        })
    ));
    assert!(matches!(
        ro.ensure_key_scheme(KeyScheme::Plain),
        Err(StateError::SchemeMismatch {
            expected: KeyScheme::Plain,
            found: KeyScheme::Hashed,
            ..
        })
    ));
}

#[test]
fn commits_without_wal_survive_close() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let opts = RocksOptions {
        write_without_wal: true,
        ..small_opts()
    };
    {
        let store = RocksStore::create(&path, KeyScheme::Plain, &opts).unwrap();
        apply_history(&store);
    }
    check_history(&RocksStore::open(&path, &small_opts()).unwrap());
}

#[test]
fn create_and_open_refuse_foreign_directories() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    drop(RocksStore::create(&path, KeyScheme::Plain, &small_opts()).unwrap());
    assert!(matches!(
        RocksStore::create(&path, KeyScheme::Plain, &small_opts()),
        Err(StateError::NotEmpty { path: p }) if p == path
    ));

    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("file"), b"x").unwrap();
    assert!(matches!(
        RocksStore::create(&other, KeyScheme::Plain, &small_opts()),
        Err(StateError::NotEmpty { .. })
    ));

    let missing = dir.path().join("missing");
    assert!(matches!(
        RocksStore::open(&missing, &small_opts()),
        Err(StateError::NotAState { .. })
    ));
    assert!(
        !missing.exists(),
        "a refused open created {}",
        missing.display()
    );
    let created = RocksStore::open(
        &missing,
        &RocksOptions {
            create_if_missing: true,
            ..small_opts()
        },
    )
    .unwrap();
    assert_eq!(created.key_scheme(), KeyScheme::Plain);
    drop(created);
    assert_eq!(
        RocksStore::open(&missing, &small_opts())
            .unwrap()
            .key_scheme(),
        KeyScheme::Plain
    );
}

/// A path that is no flat state (a user's directory, a file, another program's RocksDB database,
/// one with this crate's column families but not its metadata) is refused by name before RocksDB
/// opens it for writing, and is left exactly as it was: no `LOCK`, no `LOG`, no file created.
#[test]
fn open_refuses_what_is_not_a_state_and_writes_nothing_there() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("photos");
    std::fs::create_dir(&user).unwrap();
    std::fs::write(user.join("cat.jpg"), b"x").unwrap();
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, b"mine").unwrap();
    let foreign = dir.path().join("foreign");
    let other_program = rocksdb::DB::open_default(&foreign).unwrap();
    other_program.put(b"k", b"v").unwrap();
    drop(other_program);
    let listing = |path: &std::path::Path| -> Vec<(String, Vec<u8>)> {
        let mut entries: Vec<_> = std::fs::read_dir(path)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        entries.sort();
        entries
    };
    let (user_before, foreign_before) = (listing(&user), listing(&foreign));
    let cases = [
        (
            &user,
            "the directory holds no RocksDB database (no CURRENT file)",
        ),
        (&file, "it is a file, not a directory"),
        (
            &foreign,
            "its RocksDB database has no `accounts` column family (not made by bal-replay)",
        ),
    ];
    for (path, why) in cases {
        for read_only in [false, true] {
            let opts = RocksOptions {
                read_only,
                ..small_opts()
            };
            match RocksStore::open(path, &opts) {
                Err(e @ StateError::NotAState { .. }) => assert_eq!(
                    e.to_string(),
                    format!("{} is not a flat state: {why}", path.display())
                ),
                other => panic!("{}: expected NotAState, got {other:?}", path.display()),
            }
        }
    }
    assert_eq!(listing(&user), user_before);
    assert_eq!(listing(&foreign), foreign_before);
    assert_eq!(std::fs::read(&file).unwrap(), b"mine");

    // Another program's database with this crate's column families but none of its metadata: the
    // column families pass, the metadata is read before any read-write open, so it is refused
    // with nothing written there either (no new manifest, OPTIONS or LOG file).
    let look_alike = dir.path().join("look-alike");
    let mut opts = rocksdb::Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    let other_program = rocksdb::DB::open_cf(&opts, &look_alike, cf::ALL).unwrap();
    other_program.put(b"k", b"v").unwrap();
    drop(other_program);
    let before = listing(&look_alike);
    for read_only in [false, true] {
        let opts = RocksOptions {
            read_only,
            ..small_opts()
        };
        match RocksStore::open(&look_alike, &opts) {
            Err(StateError::MissingMetadata { key, .. }) => assert_eq!(key, "key_scheme"),
            other => panic!("expected MissingMetadata, got {other:?}"),
        }
        assert_eq!(listing(&look_alike), before, "read_only: {read_only}");
    }
}

#[test]
fn set_key_scheme_and_meta_persist() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let mut store = RocksStore::create(&path, KeyScheme::Plain, &small_opts()).unwrap();
        store.set_key_scheme(KeyScheme::Hashed).unwrap();
        store.set_applied_block(42).unwrap();
        store.put_meta(b"source_digest", &[7; 32]).unwrap();
    }
    let store = RocksStore::open(&path, &small_opts()).unwrap();
    assert_eq!(store.key_scheme(), KeyScheme::Hashed);
    assert_eq!(store.applied_block().unwrap(), Some(42));
    assert_eq!(store.meta(b"source_digest").unwrap(), Some(vec![7; 32]));
    assert_eq!(store.meta(b"absent").unwrap(), None);
}

#[test]
fn checkpoint_before_commit_shows_none_of_it_and_stays_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let (_d, store) = rocks(KeyScheme::Plain);
    let mut history = history().into_iter();
    let (first, block) = history.next().unwrap();
    store.commit(&first, block).unwrap();
    let before = store.dump_all().unwrap();

    let cp = dir.path().join("cp");
    store.checkpoint(&cp).unwrap();
    // A big commit: many slots plus the applied height.
    let mut big = StateChanges::default();
    for i in 0..5_000u64 {
        big.storage.push((
            Address::with_last_byte((i % 200) as u8),
            U256::from(i),
            U256::from(i + 1),
        ));
    }
    store.commit(&big, 11).unwrap();
    for (changes, block) in history {
        store.commit(&changes, block).unwrap();
    }
    store.flush().unwrap();
    store.compact().unwrap();

    let snapshot = RocksStore::open(
        &cp,
        &RocksOptions {
            read_only: true,
            ..small_opts()
        },
    )
    .unwrap();
    assert_eq!(snapshot.dump_all().unwrap(), before);
    assert_eq!(snapshot.applied_block().unwrap(), Some(10));
    assert_eq!(
        snapshot
            .storage(Address::with_last_byte(1), U256::from(1))
            .unwrap(),
        U256::ZERO
    );
    assert_eq!(
        store
            .storage(Address::with_last_byte(1), U256::from(1))
            .unwrap(),
        U256::from(2)
    );
    assert!(store.approximate_size_bytes().unwrap() > 0);
}

#[test]
fn readers_never_see_part_of_a_commit() {
    // Each commit sets 300 slots (spread over accounts) and the applied height to the same n; a
    // reader taking RocksDB snapshots must always find all slots equal to the applied height.
    let (_dir, store) = rocks(KeyScheme::Plain);
    let store = Arc::new(store);
    let slots: Vec<(Address, U256)> = (0..300u64)
        .map(|i| (Address::with_last_byte((i % 30) as u8), U256::from(i)))
        .collect();
    let writer = {
        let (store, slots) = (store.clone(), slots.clone());
        thread::spawn(move || {
            for n in 1..=60u64 {
                let changes = StateChanges {
                    storage: slots.iter().map(|(a, s)| (*a, *s, U256::from(n))).collect(),
                    ..Default::default()
                };
                store.commit(&changes, n).unwrap();
            }
        })
    };
    let mut observed = 0;
    loop {
        let done = writer.is_finished();
        let db = store.raw_db();
        let snap = db.snapshot();
        let applied = snap
            .get_cf(db.cf_handle(cf::META).unwrap(), cf::META_APPLIED_BLOCK)
            .unwrap()
            .map(|v| u64::from_be_bytes(v.as_slice().try_into().unwrap()));
        let storage = db.cf_handle(cf::STORAGE).unwrap();
        for (a, s) in &slots {
            let value = snap
                .get_cf(storage, KeyScheme::Plain.storage_key(*a, *s))
                .unwrap()
                .map(|v| U256::from_be_slice(&v));
            assert_eq!(value, applied.map(U256::from), "slot {s} of {a}");
        }
        observed += 1;
        if done {
            break;
        }
    }
    writer.join().unwrap();
    assert!(observed > 0);
    assert_eq!(store.applied_block().unwrap(), Some(60));
}

fn concurrent_reads(store: Arc<dyn ReadWrite>) {
    let mut changes = StateChanges::default();
    for i in 0..2_000u64 {
        let addr = Address::from_word(B256::from(U256::from(i)));
        changes
            .accounts
            .push((addr, Some(account(i, i * 3, KECCAK_EMPTY))));
        changes
            .storage
            .push((addr, U256::from(i), U256::from(i * 7 + 1)));
    }
    store.commit(&changes, 1).unwrap();
    let handles: Vec<_> = (0..8u64)
        .map(|t| {
            let store = store.clone();
            thread::spawn(move || {
                for round in 0..3u64 {
                    for i in ((t + round) % 8..2_000).step_by(8) {
                        let addr = Address::from_word(B256::from(U256::from(i)));
                        assert_eq!(
                            store.account(addr).unwrap(),
                            Some(account(i, i * 3, KECCAK_EMPTY))
                        );
                        assert_eq!(
                            store.storage(addr, U256::from(i)).unwrap(),
                            U256::from(i * 7 + 1)
                        );
                        assert_eq!(store.storage(addr, U256::from(i + 1)).unwrap(), U256::ZERO);
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

trait ReadWrite: StateReader + StateWriter {}
impl<T: StateReader + StateWriter> ReadWrite for T {}

#[test]
fn concurrent_reads_from_eight_threads() {
    concurrent_reads(Arc::new(MemStore::new()));
    let (_dir, store) = rocks(KeyScheme::Hashed);
    concurrent_reads(Arc::new(store));
}

#[test]
fn multi_get_matches_point_reads() {
    let (_dir, store) = rocks(KeyScheme::Plain);
    apply_history(&store);
    let addrs = [A, A_NEXT, MAX, MAX_PREV, Address::ZERO, A];
    let expected: Vec<_> = addrs.iter().map(|a| store.account(*a).unwrap()).collect();
    assert_eq!(store.multi_get_accounts(&addrs).unwrap(), expected);
    assert_eq!(
        expected[1],
        Some(account(2, 200, keccak256([0x60, 0x00, 0x60, 0x00, 0xf3])))
    );

    let slots: Vec<(Address, U256)> = addrs
        .iter()
        .flat_map(|a| [(*a, U256::ZERO), (*a, U256::from(5)), (*a, U256::MAX)])
        .collect();
    let expected: Vec<_> = slots
        .iter()
        .map(|(a, s)| store.storage(*a, *s).unwrap())
        .collect();
    assert_eq!(store.multi_get_storage(&slots).unwrap(), expected);
    assert_eq!(expected[1], U256::from(55));
    assert_eq!(store.multi_get_accounts(&[]).unwrap(), vec![]);
}

#[test]
fn corrupt_values_name_table_and_key() {
    let (_dir, store) = rocks(KeyScheme::Plain);
    apply_history(&store);
    let db = store.raw_db();
    db.put_cf(db.cf_handle(cf::ACCOUNTS).unwrap(), A, [1, 2, 3, 4, 5])
        .unwrap();
    let key = "0x1000000000000000000000000000000000000001";
    match store.account(A) {
        Err(StateError::Corrupt {
            table,
            key: k,
            reason,
        }) => {
            assert_eq!((table, k.as_str()), (cf::ACCOUNTS, key));
            assert!(reason.contains("5 bytes"), "{reason}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    let message = store.account(A).unwrap_err().to_string();
    assert!(
        message.contains("accounts") && message.contains(key),
        "{message}"
    );
    assert!(matches!(
        store.multi_get_accounts(&[A_NEXT, A]),
        Err(StateError::Corrupt { .. })
    ));
    assert!(matches!(
        store.dump_all(),
        Err(StateError::Corrupt {
            table: "accounts",
            ..
        })
    ));

    // An untrimmed slot value, and a short block hash.
    let slot_key = KeyScheme::Plain.storage_key(A_NEXT, U256::ZERO);
    db.put_cf(db.cf_handle(cf::STORAGE).unwrap(), slot_key, [0, 1])
        .unwrap();
    assert!(matches!(
        store.storage(A_NEXT, U256::ZERO),
        Err(StateError::Corrupt {
            table: "storage",
            ..
        })
    ));
    db.put_cf(
        db.cf_handle(cf::BLOCK_HASHES).unwrap(),
        9u64.to_be_bytes(),
        [9; 31],
    )
    .unwrap();
    assert!(matches!(
        store.block_hash(9),
        Err(StateError::Corrupt {
            table: "block_hashes",
            ..
        })
    ));
}

#[test]
fn state_database_serves_revm() {
    let store = MemStore::new();
    apply_history(&store);
    let db = StateDatabase::new(&store);
    let code = code_of(&[0x60, 0x00, 0x60, 0x00, 0xf3]);

    let empty = db.basic_ref(A).unwrap().unwrap();
    assert_eq!(
        (empty.nonce, empty.balance, empty.code_hash),
        (5, U256::from(1), KECCAK_EMPTY)
    );
    assert!(empty.code.unwrap().is_empty());
    let contract = db.basic_ref(A_NEXT).unwrap().unwrap();
    assert_eq!(contract.code_hash, code.0);
    assert!(contract.code.is_none(), "code is loaded lazily by hash");
    assert_eq!(db.basic_ref(MAX_PREV).unwrap(), None);

    assert!(db.code_by_hash_ref(KECCAK_EMPTY).unwrap().is_empty());
    assert_eq!(
        db.code_by_hash_ref(code.0).unwrap().original_bytes(),
        code.1
    );
    let unknown = b256!("0x00000000000000000000000000000000000000000000000000000000000000aa");
    assert!(
        matches!(db.code_by_hash_ref(unknown), Err(StateError::MissingCode { hash }) if hash == unknown)
    );

    assert_eq!(db.storage_ref(A, U256::from(5)).unwrap(), U256::from(55));
    assert_eq!(db.storage_ref(A, U256::from(6)).unwrap(), U256::ZERO);
    assert_eq!(db.block_hash_ref(10).unwrap(), B256::repeat_byte(10));
    assert!(matches!(
        db.block_hash_ref(12),
        Err(StateError::MissingBlockHash { number: 12 })
    ));

    // Also over RocksDB, via revm's `Database` (by value).
    let (_dir, rocks) = rocks(KeyScheme::Hashed);
    apply_history(&rocks);
    let mut db = StateDatabase::new(rocks);
    assert_eq!(
        revm::Database::storage(&mut db, A, U256::from(5)).unwrap(),
        U256::from(55)
    );
    assert_eq!(
        revm::Database::code_by_hash(&mut db, code.0)
            .unwrap()
            .original_bytes(),
        code.1
    );
}

/// A commit records the applied block's hash and chain in the same write as the height; a commit
/// that names no hash removes the old one (it belongs to another height), and a commit that names
/// no chain keeps the recorded chain. Both stores and the overlay agree, and RocksDB keeps it all
/// across a reopen.
#[test]
fn commits_record_the_applied_hash_and_chain_with_the_height() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let h10 = B256::repeat_byte(0x10);
    let rocks = RocksStore::create(&path, KeyScheme::Plain, &small_opts()).unwrap();
    let mem = MemStore::new();
    let base = MemStore::new();
    let overlay = bal_replay_state::MemOverlay::new(&base);
    let stores: [&dyn ReadWrite; 3] = [&rocks, &mem, &overlay];
    for store in stores {
        assert_eq!(store.applied_block_hash().unwrap(), None);
        assert_eq!(store.chain_id().unwrap(), None);
        store
            .commit_block(&StateChanges::default(), AppliedBlock::new(10, h10, 7))
            .unwrap();
        assert_eq!(store.applied_block().unwrap(), Some(10));
        assert_eq!(store.applied_block_hash().unwrap(), Some(h10));
        assert_eq!(store.chain_id().unwrap(), Some(7));
        // A plain commit: the height moves, the hash is no longer known, the chain stays.
        store.commit(&StateChanges::default(), 11).unwrap();
        assert_eq!(store.applied_block().unwrap(), Some(11));
        assert_eq!(store.applied_block_hash().unwrap(), None);
        assert_eq!(store.chain_id().unwrap(), Some(7));
        let h12 = B256::repeat_byte(0x12);
        store
            .commit_block(
                &StateChanges::default(),
                AppliedBlock {
                    number: 12,
                    hash: Some(h12),
                    chain_id: None,
                },
            )
            .unwrap();
        assert_eq!(store.applied_block_hash().unwrap(), Some(h12));
        assert_eq!(store.chain_id().unwrap(), Some(7));
    }
    drop(rocks);
    let reopened = RocksStore::open_read_only(&path).unwrap();
    assert_eq!(reopened.applied_block().unwrap(), Some(12));
    assert_eq!(
        reopened.applied_block_hash().unwrap(),
        Some(B256::repeat_byte(0x12))
    );
    assert_eq!(reopened.chain_id().unwrap(), Some(7));
}

/// A state written before the hash and chain were recorded (only `applied_block` in `meta`) opens,
/// and reads them as unknown; a malformed hash is a corruption naming the key.
#[test]
fn a_state_without_a_recorded_hash_opens_with_it_unknown() {
    let (_d, store) = rocks(KeyScheme::Plain);
    store
        .put_meta(cf::META_APPLIED_BLOCK, &5u64.to_be_bytes())
        .unwrap();
    assert_eq!(store.applied_block().unwrap(), Some(5));
    assert_eq!(store.applied_block_hash().unwrap(), None);
    assert_eq!(store.chain_id().unwrap(), None);
    store
        .put_meta(cf::META_APPLIED_BLOCK_HASH, &[1, 2, 3])
        .unwrap();
    match store.applied_block_hash() {
        Err(StateError::Corrupt { table, key, .. }) => {
            assert_eq!(table, cf::META);
            assert_eq!(key, "0x6170706c6965645f626c6f636b5f68617368");
        }
        other => panic!("expected a corruption, got {other:?}"),
    }
}

/// A checkpoint holds every commit, those still only in the write-ahead log included (a store
/// that was never flushed), and writing it leaves the original alone. A store opened read-only
/// refuses to checkpoint: RocksDB would make a copy without the WAL's commits, silently.
#[test]
fn a_checkpoint_holds_the_unflushed_commits_and_a_read_only_store_refuses_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let store = RocksStore::create(&path, KeyScheme::Plain, &small_opts()).unwrap();
    apply_history(&store);
    store
        .set_applied_block(AppliedBlock::new(12, B256::repeat_byte(3), 1))
        .unwrap();
    let digest = store.content_digest().unwrap();
    drop(store);

    let read_only = RocksStore::open_read_only(&path).unwrap();
    let refused = dir.path().join("refused");
    match read_only.checkpoint(&refused) {
        Err(StateError::CheckpointReadOnly { path: named }) => assert_eq!(named, path),
        other => panic!("expected CheckpointReadOnly, got {other:?}"),
    }
    assert!(!refused.exists());
    drop(read_only);

    let store = RocksStore::open(&path, &small_opts()).unwrap();
    let cp = dir.path().join("cp");
    store.checkpoint(&cp).unwrap();
    drop(store);
    let copy = RocksStore::open(&cp, &small_opts()).unwrap();
    assert_eq!(copy.content_digest().unwrap(), digest);
    assert_eq!(
        copy.applied_block_hash().unwrap(),
        Some(B256::repeat_byte(3))
    );
    copy.commit(&StateChanges::default(), 13).unwrap();
    drop(copy);
    let original = RocksStore::open_read_only(&path).unwrap();
    assert_eq!(original.content_digest().unwrap(), digest);
    assert_eq!(original.applied_block().unwrap(), Some(12));
}

/// A second read-write open of a store that is open is refused at once and reported as held
/// elsewhere (what a scratch copy waits on); a store that is missing is not.
#[test]
fn an_open_refused_for_the_lock_says_the_store_is_held_elsewhere() {
    let (dir, store) = rocks(KeyScheme::Plain);
    let path = dir.path().join("db");
    let held = RocksStore::open(&path, &small_opts()).unwrap_err();
    assert!(matches!(held, StateError::Open { .. }), "{held:?}");
    assert!(held.is_held_elsewhere(), "{held:?}");
    drop(store);
    RocksStore::open(&path, &small_opts()).unwrap();
    let missing = RocksStore::open(dir.path().join("nope"), &small_opts()).unwrap_err();
    assert!(!missing.is_held_elsewhere(), "{missing:?}");
}

/// A state made unpartitioned stays so: RocksDB's OPTIONS file says it, a reopen with the default
/// options keeps it (the files a commit flushes included), and its contents equal a partitioned
/// state's of the same history, read with the metadata pinned or not.
#[test]
fn the_table_layout_is_chosen_at_creation_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, flat) = (dir.path().join("partitioned"), dir.path().join("flat"));
    let unpartitioned = RocksOptions {
        table_layout: TableLayout::Unpartitioned,
        ..small_opts()
    };
    {
        let a = RocksStore::create(&plain, KeyScheme::Plain, &small_opts()).unwrap();
        let b = RocksStore::create(&flat, KeyScheme::Plain, &unpartitioned).unwrap();
        apply_history(&a);
        apply_history(&b);
        assert_eq!(a.table_layout(), TableLayout::Partitioned);
        assert_eq!(b.table_layout(), TableLayout::Unpartitioned);
        a.flush().unwrap();
        b.flush().unwrap();
    }
    assert_eq!(
        TableLayout::of_state(&plain),
        Some(TableLayout::Partitioned)
    );
    assert_eq!(
        TableLayout::of_state(&flat),
        Some(TableLayout::Unpartitioned)
    );
    // No RocksDB state there: no layout.
    assert_eq!(TableLayout::of_state(dir.path()), None);
    for pin_metadata in [false, true] {
        let opts = RocksOptions {
            pin_metadata,
            ..small_opts()
        };
        let a = RocksStore::open(&plain, &opts).unwrap();
        let b = RocksStore::open(&flat, &opts).unwrap();
        assert_eq!(b.table_layout(), TableLayout::Unpartitioned);
        check_history(&b);
        assert_eq!(a.dump_all().unwrap(), b.dump_all().unwrap());
    }
    // A commit's flushed files keep the state's layout.
    let b = RocksStore::open(&flat, &small_opts()).unwrap();
    b.commit(&StateChanges::default(), 13).unwrap();
    b.flush().unwrap();
    drop(b);
    assert_eq!(
        TableLayout::of_state(&flat),
        Some(TableLayout::Unpartitioned)
    );
    assert_eq!(
        "unpartitioned".parse::<TableLayout>(),
        Ok(TableLayout::Unpartitioned)
    );
    assert!("flat".parse::<TableLayout>().unwrap_err().contains("flat"));
}
