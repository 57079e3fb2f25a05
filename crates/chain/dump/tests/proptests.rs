//! Property tests: the segment parser, the record decoder and `DumpReader` never panic on hostile
//! input (every input is records or a typed `DumpError`), and random pre-states and block-hash
//! lists survive a round trip through a dump. These run the `fuzz/` targets' properties on stable
//! Rust, in CI.
//!
//! `PROPTEST_CASES` overrides every test's number of cases (see fuzz/README.md for the long run).

mod common;

use alloy_primitives::{Address, B256, Bytes, U256, keccak256};
use bal_replay_dump::{
    AccountPre, BlockHashEntry, BlockRecord, CodePre, DumpReader, DumpWriter, PreState, StoragePre,
    WriterOptions, check_bal, check_code, decode_record, decode_segment_bytes, encode_record,
};
use bal_replay_test_utils::proptest_config as cases;
use common::{
    edit_manifest, frame_from_raw, meta, record, segment_from_frames, segment_from_records,
};
use proptest::prelude::*;
use std::path::Path;

/// A valid dump of blocks 1..=4, one segment each (so the manifest lists several), copied into
/// `dir`. Written once and copied per case: the writer syncs every file, which would cost a case
/// far more than the reading it tests.
fn write_dump(dir: &Path) {
    static TEMPLATE: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let template = TEMPLATE.get_or_init(|| {
        let template = tempfile::tempdir().expect("tempdir");
        let options = WriterOptions {
            segment_max_bytes: 1,
            ..WriterOptions::default()
        };
        let mut writer = DumpWriter::create(template.path(), meta(true), options).expect("create");
        for number in 1..=4 {
            writer.append(&record(number)).expect("append");
        }
        writer.finish().expect("finish");
        template
    });
    for entry in std::fs::read_dir(template.path()).expect("template") {
        let entry = entry.expect("entry");
        if entry.file_type().expect("type").is_file() {
            std::fs::copy(entry.path(), dir.join(entry.file_name())).expect("copy");
        }
    }
}

/// Everything a reader of `dir` can be asked, each answer a value or a typed error.
fn read_everything(dir: &Path) {
    if let Ok(reader) = DumpReader::open(dir) {
        let _ = reader.verify_checksums();
        let _ = reader.last_record();
        for record in reader.records() {
            if record.is_err() {
                break;
            }
        }
    }
}

fn valid_segment() -> Vec<u8> {
    segment_from_records(&[record(1), record(2), record(3)])
}

fn address() -> impl Strategy<Value = Address> {
    any::<[u8; 20]>().prop_map(Address::from)
}

fn b256() -> impl Strategy<Value = B256> {
    any::<[u8; 32]>().prop_map(B256::from)
}

fn u256() -> impl Strategy<Value = U256> {
    prop_oneof![
        any::<u64>().prop_map(U256::from),
        any::<[u8; 32]>().prop_map(U256::from_be_bytes),
        Just(U256::ZERO),
        Just(U256::MAX),
    ]
}

fn pre_state() -> impl Strategy<Value = PreState> {
    let account = (address(), any::<u64>(), u256(), b256()).prop_map(
        |(address, nonce, balance, code_hash)| AccountPre {
            address,
            nonce,
            balance,
            code_hash,
        },
    );
    let slot = (address(), u256(), u256()).prop_map(|(address, slot, value)| StoragePre {
        address,
        slot,
        value,
    });
    // A writer refuses a code no EVM can load (0xef01 not as a 23-byte EIP-7702 delegation),
    // which random bytes start with once in 65,536 codes: those are the malformed-input tests'.
    let code = proptest::collection::vec(any::<u8>(), 0..200)
        .prop_filter("a loadable code", |code| check_code(code).is_ok())
        .prop_map(|code| CodePre {
            hash: keccak256(&code),
            code: Bytes::from(code),
        });
    (
        proptest::collection::vec(account, 0..8),
        proptest::collection::vec(address(), 0..8),
        proptest::collection::vec(slot, 0..16),
        proptest::collection::vec(code, 0..4),
    )
        .prop_map(|(accounts, absent, storage, codes)| PreState {
            accounts,
            absent,
            storage,
            codes,
        })
}

fn block_hashes() -> impl Strategy<Value = Vec<BlockHashEntry>> {
    proptest::collection::vec(
        (any::<u64>(), b256()).prop_map(|(number, hash)| BlockHashEntry { number, hash }),
        0..40,
    )
}

/// The case proptest found (one byte set to 4, then a cut), which decodes as RLP but not as a
/// segment's record: the property's oracle must check what the reader checks.
#[test]
fn a_mutation_the_reader_rejects_past_the_rlp_is_rejected_alike() {
    // proptest's `Index::index`: the index scaled into `0..len`.
    let scaled = |index: u64, len: usize| ((len as u128 * index as u128) >> 64) as usize;
    let mut raw = encode_record(&record(1));
    let at = scaled(14158627804271753650, raw.len());
    raw[at] = 4;
    raw.truncate(scaled(18433679807368397543, raw.len() + 1).max(1));
    let bytes = segment_from_frames(&[frame_from_raw(&raw)]);
    let result = decode_segment_bytes(&bytes);
    match decode_record(&raw) {
        Ok(record) if a_reader_accepts(&record) => {
            assert_eq!(result.ok(), Some(vec![record]));
        }
        Ok(_) => {
            // Index 4 in a block of two transactions (indices 0 to 3).
            let error = result.unwrap_err().to_string();
            assert!(
                error.contains("frame at byte 12") && error.contains("malformed BAL"),
                "{error}"
            );
        }
        Err(_) => assert!(result.is_err()),
    }
}

/// What the segment reader checks of a decoded record: one sender per transaction, a BAL of the
/// shape EIP-7928 requires, and loadable pre-state codes. (A mutation can keep the RLP valid and
/// break one of these: a BAL index past the last transaction, a code byte.)
fn a_reader_accepts(record: &BlockRecord) -> bool {
    record.senders.len() == record.tx_count()
        && check_bal(record.tx_count(), &record.bal).is_ok()
        && record
            .pre_state
            .codes
            .iter()
            .all(|c| check_code(&c.code).is_ok())
}

proptest! {
    #![proptest_config(cases(1_500))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let _ = decode_segment_bytes(&bytes);
    }

    #[test]
    fn random_frames_after_a_valid_header_never_panic(frames in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let mut bytes = segment_from_frames(&[]);
        bytes.extend_from_slice(&frames);
        let _ = decode_segment_bytes(&bytes);
    }

    #[test]
    fn mutated_segments_never_panic(
        edits in proptest::collection::vec((any::<proptest::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<proptest::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let mut bytes = valid_segment();
        for (at, value) in edits {
            let at = at.index(bytes.len());
            bytes[at] = value;
        }
        if truncate {
            bytes.truncate(cut.index(bytes.len() + 1));
        }
        let _ = decode_segment_bytes(&bytes);
    }

    /// Mutations behind a correct checksum, so they reach zstd and the RLP decoder.
    #[test]
    fn mutated_records_behind_valid_checksums_never_panic(
        edits in proptest::collection::vec((any::<proptest::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<proptest::sample::Index>(),
    ) {
        let mut raw = encode_record(&record(1));
        for (at, value) in edits {
            let at = at.index(raw.len());
            raw[at] = value;
        }
        raw.truncate(cut.index(raw.len() + 1).max(1));
        let bytes = segment_from_frames(&[frame_from_raw(&raw)]);
        let result = decode_segment_bytes(&bytes);
        // Whatever decodes must be what decode_record makes of the same bytes, where the record
        // holds what a segment's reader checks of it.
        match decode_record(&raw) {
            Ok(record) if a_reader_accepts(&record) => {
                prop_assert_eq!(result.ok(), Some(vec![record]));
            }
            _ => prop_assert!(result.is_err()),
        }
    }

    /// Arbitrary bytes straight into the RLP decoder, as `fuzz/fuzz_targets/record_rlp.rs` does:
    /// whatever decodes re-encodes to a canonical form that decodes to itself.
    #[test]
    fn random_record_bytes_decode_or_fail_typed(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        if let Ok(record) = decode_record(&bytes) {
            let canonical = encode_record(&record);
            let again = decode_record(&canonical).map(|r| encode_record(&r));
            prop_assert_eq!(again.as_deref(), Ok(canonical.as_slice()));
        }
    }
}

proptest! {
    // Each case copies a dump on disk: fewer cases.
    #![proptest_config(cases(500))]

    /// `DumpReader` over a dump directory with one file (the manifest or a segment) edited or cut.
    #[test]
    fn dump_reader_over_mutated_files_never_panics(
        which in 0usize..3,
        edits in proptest::collection::vec((any::<proptest::sample::Index>(), any::<u8>()), 0..6),
        cut in proptest::option::of(any::<proptest::sample::Index>()),
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        write_dump(dir.path());
        let name = match which {
            0 => "manifest.json".to_string(),
            i => common::read_manifest(dir.path()).segments[i - 1].file.clone(),
        };
        let path = dir.path().join(name);
        let mut bytes = std::fs::read(&path).expect("read");
        let unchanged = edits.is_empty() && cut.is_none();
        for (at, value) in edits {
            let at = at.index(bytes.len());
            bytes[at] = value;
        }
        if let Some(cut) = cut {
            bytes.truncate(cut.index(bytes.len() + 1));
        }
        std::fs::write(&path, &bytes).expect("write");
        read_everything(dir.path());
        if unchanged {
            let read = DumpReader::open(dir.path()).expect("open").records().count();
            prop_assert_eq!(read, 4);
        }
    }

    /// A manifest whose numbers say anything at all (counts, block numbers, sizes near `u64::MAX`).
    #[test]
    fn manifests_with_any_numbers_never_panic(
        record_count in prop_oneof![0u64..8, any::<u64>()],
        first_block in proptest::option::of(prop_oneof![0u64..8, any::<u64>()]),
        last_block in proptest::option::of(prop_oneof![0u64..8, any::<u64>()]),
        segments in proptest::collection::vec(
            (prop_oneof![0u64..8, any::<u64>()], prop_oneof![0u64..8, any::<u64>()],
             prop_oneof![0u64..4, any::<u64>()], prop_oneof![0u64..4096, any::<u64>()]),
            0..4,
        ),
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        write_dump(dir.path());
        edit_manifest(dir.path(), |m| {
            m.record_count = record_count;
            m.first_block = first_block;
            m.last_block = last_block;
            for (i, (first, last, records, bytes)) in segments.into_iter().enumerate() {
                if let Some(s) = m.segments.get_mut(i) {
                    s.first_block = first;
                    s.last_block = last;
                    s.records = records;
                    s.bytes = bytes;
                }
            }
        });
        read_everything(dir.path());
    }
}

proptest! {
    #![proptest_config(cases(64))]

    #[test]
    fn pre_state_and_block_hashes_round_trip(pre_state in pre_state(), hashes in block_hashes()) {
        let mut original = record(42);
        original.pre_state = pre_state;
        original.block_hashes = hashes;
        prop_assert_eq!(decode_record(&encode_record(&original)), Ok(original.clone()));

        let dir = tempfile::tempdir().expect("tempdir");
        let mut writer = DumpWriter::create(dir.path(), meta(true), WriterOptions::default()).expect("create");
        writer.append(&original).expect("append");
        writer.finish().expect("finish");
        let read: Vec<_> = DumpReader::open(dir.path())
            .expect("open")
            .records()
            .collect::<Result<_, _>>()
            .expect("read");
        prop_assert_eq!(read, vec![original]);
    }
}
