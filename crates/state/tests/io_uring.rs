//! A multi-get's data blocks, read from one file: one `pread` each in a default build, one
//! io_uring batch in a build with the `io-uring` feature ([`bal_replay_state::io_uring`]). Either
//! way every value is found.

use alloy_primitives::{Address, U256, address};
use bal_replay_state::{
    KeyScheme, RocksOptions, RocksStore, StateChanges, StateWriter, io_uring::IO_URING_BUILT,
};

const OWNER: Address = address!("0x2000000000000000000000000000000000000002");
/// Slots with 32-byte values: about 64 K entries, some 1,400 data blocks of 4 KiB.
const SLOTS: u64 = 65_536;
/// Slots read, spread over the whole range (1,024 apart) so that no two share a data block or
/// sit in adjacent ones (RocksDB merges reads of adjacent blocks).
const READS: u64 = 64;

#[test]
fn multi_get_reads_its_blocks_by_pread_or_by_one_io_uring_batch() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let value = |slot: U256| slot | (U256::MAX << 64);
    {
        let store = RocksStore::create(&path, KeyScheme::Plain, &RocksOptions::default()).unwrap();
        let changes = StateChanges {
            storage: (0..SLOTS)
                .map(|i| (OWNER, U256::from(i), value(U256::from(i))))
                .collect(),
            ..Default::default()
        };
        store.commit(&changes, 1).unwrap();
        store.flush().unwrap();
    }
    let wanted: Vec<(Address, U256)> = (0..READS)
        .map(|i| (OWNER, U256::from(i * (SLOTS / READS) + 7)))
        .collect();

    // Direct reads and a block cache too small for the data blocks: every block is read from
    // the file, by `pread` or through io_uring.
    let opts = RocksOptions {
        direct_io: true,
        block_cache_bytes: 64 << 10,
        read_only: true,
        ..RocksOptions::default()
    };
    let store = RocksStore::open(&path, &opts).unwrap();
    let before = thread_read_syscalls();
    let values = store.multi_get_storage(&wanted).unwrap();
    let read_syscalls = thread_read_syscalls() - before;
    eprintln!(
        "{read_syscalls} read syscalls for {READS} data blocks (io_uring built: {IO_URING_BUILT})"
    );
    assert_eq!(
        values,
        wanted
            .iter()
            .map(|(_, slot)| value(*slot))
            .collect::<Vec<_>>()
    );
    if IO_URING_BUILT {
        // io_uring's reads are not read system calls: what is left are the index and filter
        // blocks, a few.
        assert!(
            read_syscalls < READS / 4,
            "{read_syscalls} read syscalls for {READS} data blocks through io_uring"
        );
    } else {
        assert!(
            read_syscalls >= READS,
            "{read_syscalls} read syscalls for {READS} data blocks by pread"
        );
    }
}

/// This thread's read system calls (`/proc/thread-self/io` `syscr`): the multi-get runs on the
/// calling thread.
fn thread_read_syscalls() -> u64 {
    let text = std::fs::read_to_string("/proc/thread-self/io").unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix("syscr:"))
        .and_then(|value| value.trim().parse().ok())
        .unwrap()
}
