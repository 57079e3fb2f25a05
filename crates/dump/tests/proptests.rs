//! Property tests: the segment parser never panics on hostile input, and random pre-states and
//! block-hash lists survive a round trip through a dump.

mod common;

use alloy_primitives::{Address, B256, Bytes, U256, keccak256};
use bal_replay_dump::{
    AccountPre, BlockHashEntry, CodePre, DumpReader, DumpWriter, PreState, StoragePre,
    WriterOptions, decode_record, decode_segment_bytes, encode_record,
};
use common::{frame_from_raw, meta, record, segment_from_frames, segment_from_records};
use proptest::prelude::*;

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
    let code = proptest::collection::vec(any::<u8>(), 0..200).prop_map(|code| CodePre {
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

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
        // Whatever decodes must be what decode_record makes of the same bytes.
        match decode_record(&raw) {
            Ok(record) if record.senders.len() == record.tx_count() => {
                prop_assert_eq!(result.ok(), Some(vec![record]));
            }
            _ => prop_assert!(result.is_err()),
        }
    }

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
