//! Dumps a crafted or unlucky input can produce, refused where they enter: a BAL that names an
//! account or a slot twice, a chained dump spliced from two chains, and a directory whose
//! manifest is gone (whose segments a new dump must not overwrite).

mod common;

use std::fs;

use alloy_eip7928::{AccountChanges, BalanceChange, BlockAccessIndex, SlotChanges, StorageChange};
use alloy_primitives::U256;
use bal_replay_dump::{
    BalDefect, BalList, BrokenLink, DumpError, DumpReader, DumpWriter, WriterOptions,
    decode_segment_bytes,
};
use common::{address, edit_manifest, meta, record, segment_from_records};

/// Record `number` with its BAL's sender account listed a second time: each copy well formed, the
/// second changing the balance at an earlier index (what a merge of the two would put last).
fn record_with_duplicate_account(number: u64) -> bal_replay_dump::BlockRecord {
    let mut record = record(number);
    let position = record
        .bal
        .iter()
        .position(|a| a.address == address(0xaa))
        .expect("the sender is in the BAL");
    let duplicate = AccountChanges::new(address(0xaa))
        .with_balance_change(BalanceChange::new(BlockAccessIndex::new(1), U256::from(1)));
    record.bal.insert(position + 1, duplicate);
    record
}

#[test]
fn a_bal_naming_an_account_twice_is_refused_by_the_writer_and_the_reader() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = DumpWriter::create(dir.path(), meta(true), WriterOptions::default()).unwrap();
    writer.append(&record(1)).unwrap();
    let err = writer
        .append(&record_with_duplicate_account(2))
        .unwrap_err();
    match &err {
        DumpError::MalformedBal {
            block: 2, defect, ..
        } => assert_eq!(
            **defect,
            BalDefect::AccountOrder {
                address: address(0xaa),
                previous: address(0xaa),
            }
        ),
        other => panic!("expected a malformed BAL, got {other:?}"),
    }
    // Nothing of the refused record was written: the dump goes on from block 1.
    writer.append(&record(2)).unwrap();
    writer.finish().unwrap();
    assert_eq!(common::read_all(dir.path()).len(), 2);

    // The same record, written by hand into a segment, is refused by the reader, which names the
    // file, the frame and the account.
    let bytes = segment_from_records(&[record(1), record_with_duplicate_account(2)]);
    let err = decode_segment_bytes(&bytes).unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(err, DumpError::MalformedBal { block: 2, .. }),
        "{err:?}"
    );
    assert_eq!(err.frame_offset(), Some(12 + frame_len(&bytes, 12)));
    assert!(
        message.contains(&address(0xaa).to_string()) && message.contains("block 2"),
        "{message}"
    );
}

#[test]
fn a_bal_naming_a_slot_twice_is_refused() {
    let mut record = record(3);
    let contract = record
        .bal
        .iter_mut()
        .find(|a| a.address == address(0xcc))
        .expect("the contract is in the BAL");
    // Slot 1 again, after itself: each list sorted on its own.
    contract.storage_changes.push(SlotChanges::new(
        U256::from(1),
        vec![StorageChange::new(BlockAccessIndex::new(1), U256::from(77))],
    ));
    let bytes = segment_from_records(&[record]);
    match decode_segment_bytes(&bytes).unwrap_err() {
        DumpError::MalformedBal {
            block: 3, defect, ..
        } => assert_eq!(
            *defect,
            BalDefect::SlotOrder {
                address: address(0xcc),
                list: BalList::StorageChanges,
                slot: U256::from(1),
                previous: U256::from(1),
            }
        ),
        other => panic!("expected a duplicate slot, got {other:?}"),
    }
}

/// The compressed length of the frame at `offset`, plus its header.
fn frame_len(segment: &[u8], offset: usize) -> u64 {
    12 + u64::from(u32::from_le_bytes(
        segment[offset..offset + 4].try_into().unwrap(),
    ))
}

#[test]
fn a_chained_dump_spliced_from_two_chains_is_refused_naming_both_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = DumpWriter::create(dir.path(), meta(true), WriterOptions::default()).unwrap();
    // Blocks 3 and 4 of another chain, whose blocks differ in their extra data: 4 links to 3, 3
    // links to that chain's block 2.
    let other = |number: u64, parent| {
        let mut record = record(number);
        record.block.header.extra_data = alloy_primitives::Bytes::from_static(b"other chain");
        if let Some(parent) = parent {
            record.block.header.parent_hash = parent;
        }
        record
    };
    let other_two = other(2, None);
    let other_three = other(3, Some(other_two.block.header.hash_slow()));
    let other_four = other(4, Some(other_three.block.header.hash_slow()));
    for record in [record(1), record(2), other_three.clone(), other_four] {
        writer.append(&record).unwrap();
    }
    writer.finish().unwrap();

    let mut records = DumpReader::open(dir.path()).unwrap().records();
    assert_eq!(records.next().unwrap().unwrap().number(), 1);
    assert_eq!(records.next().unwrap().unwrap().number(), 2);
    let err = records.next().unwrap().unwrap_err();
    let two = record(2).block.header.hash_slow();
    match &err {
        DumpError::BrokenLink { link, .. } => assert_eq!(
            **link,
            BrokenLink {
                block: 3,
                parent_hash: other_two.block.header.hash_slow(),
                previous: 2,
                previous_hash: two,
            }
        ),
        other => panic!("expected a broken link, got {other:?}"),
    }
    let message = err.to_string();
    assert!(
        message.contains("block 3")
            && message.contains("block 2")
            && message.contains(&two.to_string()),
        "{message}"
    );
    assert!(records.next().is_none());

    // A dump of independent blocks has no links to check.
    edit_manifest(dir.path(), |m| m.chained = false);
    assert_eq!(common::read_all(dir.path()).len(), 4);
}

#[test]
fn a_new_dump_is_never_created_over_segments_whose_manifest_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = DumpWriter::create(dir.path(), meta(true), WriterOptions::default()).unwrap();
    for number in 1..=3 {
        writer.append(&record(number)).unwrap();
    }
    writer.finish().unwrap();
    let segment = dir.path().join("segment-000000.bin");
    let before = fs::read(&segment).unwrap();
    fs::remove_file(dir.path().join("manifest.json")).unwrap();

    let err = match DumpWriter::create(dir.path(), meta(true), WriterOptions::default()) {
        Err(err) => err,
        Ok(_) => panic!("a dump was created over orphaned segments"),
    };
    match &err {
        DumpError::OrphanedSegments { path, file } => {
            assert_eq!(path, dir.path());
            assert_eq!(file, "segment-000000.bin");
        }
        other => panic!("expected orphaned segments, got {other:?}"),
    }
    assert_eq!(
        fs::read(&segment).unwrap(),
        before,
        "not a byte of the segment is lost"
    );
    assert!(!dir.path().join("manifest.json").exists());
}

#[test]
fn a_segment_file_that_appears_after_creation_is_never_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = DumpWriter::create(dir.path(), meta(true), WriterOptions::default()).unwrap();
    // Another process's file where the first segment goes, after the create's check.
    let segment = dir.path().join("segment-000000.bin");
    fs::write(&segment, b"not ours").unwrap();
    let err = writer.append(&record(1)).unwrap_err();
    assert!(
        matches!(&err, DumpError::Io { path, source } if *path == segment && source.kind() == std::io::ErrorKind::AlreadyExists),
        "{err:?}"
    );
    assert_eq!(fs::read(&segment).unwrap(), b"not ours");
}

/// Pre-state code starting with EIP-7702's marker that is no designation: revm's
/// `Bytecode::new_raw` panics on it, so the writer and the reader refuse it, naming the code.
#[test]
fn pre_state_code_that_revm_cannot_load_is_refused_by_the_writer_and_the_reader() {
    let mut bad = record(1);
    let code = alloy_primitives::Bytes::from_static(&[0xef, 0x01, 0x00, 0x60]);
    let hash = alloy_primitives::keccak256(&code);
    bad.pre_state.codes = vec![bal_replay_dump::CodePre { hash, code }];
    let expected = bal_replay_dump::MalformedCode {
        len: 4,
        version: Some(0),
    };

    let dir = tempfile::tempdir().unwrap();
    let mut writer = DumpWriter::create(dir.path(), meta(true), WriterOptions::default()).unwrap();
    match writer.append(&bad).unwrap_err() {
        DumpError::MalformedPreCode {
            block: 1,
            hash: h,
            defect,
            ..
        } => assert_eq!((h, defect), (hash, expected)),
        other => panic!("expected malformed pre-state code, got {other:?}"),
    }

    let bytes = segment_from_records(&[bad]);
    let err = decode_segment_bytes(&bytes).unwrap_err();
    assert_eq!(err.frame_offset(), Some(12));
    let message = err.to_string();
    assert!(
        message.contains(&hash.to_string()) && message.contains("4 bytes of code starting 0xef01"),
        "{message}"
    );
    match err {
        DumpError::MalformedPreCode { defect, .. } => assert_eq!(defect, expected),
        other => panic!("expected malformed pre-state code, got {other:?}"),
    }
    // A whole designation is loadable code.
    let mut designation = vec![0xef, 0x01, 0x00];
    designation.extend_from_slice(address(0xbb).as_slice());
    assert_eq!(bal_replay_dump::check_code(&designation), Ok(()));
}
