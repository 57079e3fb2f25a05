//! Every way a dump can be damaged or misused, and the specific error each one produces.

mod common;

use std::{
    fs,
    path::{Path, PathBuf},
};

use bal_replay_dump::{
    BlockRecord, DumpError, DumpReader, DumpWriter, FramePart, LengthField, MAX_FRAME_BYTES,
    WriterOptions, decode_segment_bytes, encode_record,
};
use common::{
    edit_manifest, frame_from_payload, frame_from_raw, meta, record, segment_from_frames,
    segment_from_records,
};

/// Offset of the first frame in a segment, and of its payload.
const FIRST_FRAME: u64 = 12;
const FIRST_PAYLOAD: usize = 24;

/// A finished dump of blocks 1..=3 in one segment; returns the directory and the segment path.
fn three_block_dump(chained: bool) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut writer =
        DumpWriter::create(dir.path(), meta(chained), WriterOptions::default()).expect("create");
    for number in 1..=3 {
        writer.append(&record(number)).expect("append");
    }
    writer.finish().expect("finish");
    let segment = dir.path().join("segment-000000.bin");
    (dir, segment)
}

/// Reads the dump, expecting exactly `good` records and then an error, after which the iterator ends.
fn read_until_error(dir: &Path, good: usize) -> DumpError {
    let mut records = DumpReader::open(dir).expect("dump opens").records();
    for index in 0..good {
        match records.next() {
            Some(Ok(_)) => {}
            other => panic!("record {index}: expected a record, got {other:?}"),
        }
    }
    let error = match records.next() {
        Some(Err(error)) => error,
        other => panic!("expected an error after {good} records, got {other:?}"),
    };
    assert!(records.next().is_none(), "the iterator ends after an error");
    error
}

/// Overwrites bytes of a file in place, keeping its size (so the manifest's size check passes).
fn patch(path: &Path, at: usize, bytes: &[u8]) {
    let mut contents = fs::read(path).expect("read");
    contents[at..at + bytes.len()].copy_from_slice(bytes);
    fs::write(path, contents).expect("write");
}

/// Rewrites the manifest's record of segment 0 to match the file as it now is.
fn accept_segment_as_is(dir: &Path, segment: &Path) {
    let contents = fs::read(segment).expect("read");
    edit_manifest(dir, |manifest| {
        manifest.segments[0].bytes = contents.len() as u64;
        manifest.segments[0].crc32 = crc32fast::hash(&contents);
    });
}

fn first_frame_crc(segment: &Path) -> u32 {
    let contents = fs::read(segment).expect("read");
    u32::from_le_bytes(contents[20..24].try_into().expect("4 bytes"))
}

#[test]
fn flipped_payload_byte_is_a_checksum_mismatch() {
    let (dir, segment) = three_block_dump(true);
    let expected_crc = first_frame_crc(&segment);
    let original = fs::read(&segment).expect("read")[FIRST_PAYLOAD + 5];
    patch(&segment, FIRST_PAYLOAD + 5, &[original ^ 0x01]);

    let error = read_until_error(dir.path(), 0);
    match &error {
        DumpError::Checksum {
            path,
            offset,
            expected,
            found,
        } => {
            assert_eq!(path, &segment);
            assert_eq!(*offset, FIRST_FRAME);
            assert_eq!(*expected, expected_crc);
            assert_ne!(*found, expected_crc);
        }
        other => panic!("expected Checksum, got {other:?}"),
    }
    let message = error.to_string();
    assert!(
        message.starts_with(&format!(
            "{}: frame at byte 12: checksum mismatch (expected 0x",
            segment.display()
        )),
        "{message}"
    );
    // The whole-file checksum catches it too, without decoding.
    let reader = DumpReader::open(dir.path()).expect("open");
    assert!(matches!(
        reader.verify_checksums(),
        Err(DumpError::SegmentChecksum { .. })
    ));
}

#[test]
fn huge_compressed_length_is_refused_before_allocating() {
    let (dir, segment) = three_block_dump(true);
    patch(&segment, 12, &u32::MAX.to_le_bytes());
    let error = read_until_error(dir.path(), 0);
    assert!(
        matches!(
            error,
            DumpError::FrameTooLarge { offset: FIRST_FRAME, field: LengthField::Compressed, len, max, .. }
                if len == u64::from(u32::MAX) && max == u64::from(MAX_FRAME_BYTES)
        ),
        "{error:?}"
    );
}

#[test]
fn huge_raw_length_is_refused_before_allocating() {
    let (dir, segment) = three_block_dump(true);
    patch(&segment, 16, &u32::MAX.to_le_bytes());
    let error = read_until_error(dir.path(), 0);
    assert!(
        matches!(
            error,
            DumpError::FrameTooLarge {
                offset: FIRST_FRAME,
                field: LengthField::Raw,
                ..
            }
        ),
        "{error:?}"
    );
}

#[test]
fn compressed_length_past_the_end_of_the_file_is_truncation() {
    let (dir, segment) = three_block_dump(true);
    let file_len = fs::metadata(&segment).expect("metadata").len();
    // Within the frame limit, but more than the file holds.
    patch(&segment, 12, &MAX_FRAME_BYTES.to_le_bytes());
    let error = read_until_error(dir.path(), 0);
    match error {
        DumpError::Truncated {
            offset,
            part,
            needed,
            available,
            ..
        } => {
            assert_eq!(offset, FIRST_FRAME);
            assert_eq!(part, FramePart::Payload);
            assert_eq!(needed, u64::from(MAX_FRAME_BYTES));
            assert_eq!(available, file_len - 24);
        }
        other => panic!("expected Truncated, got {other:?}"),
    }
}

#[test]
fn truncated_file_is_a_size_mismatch_at_open() {
    let (dir, segment) = three_block_dump(true);
    let len = fs::metadata(&segment).expect("metadata").len();
    fs::OpenOptions::new()
        .write(true)
        .open(&segment)
        .expect("open")
        .set_len(len - 10)
        .expect("truncate");
    match DumpReader::open(dir.path()) {
        Err(DumpError::SizeMismatch {
            path,
            expected,
            found,
        }) => {
            assert_eq!(path, segment);
            assert_eq!(expected, len);
            assert_eq!(found, len - 10);
        }
        other => panic!("expected SizeMismatch, got {other:?}"),
    }
    // Resuming cannot repair lost committed bytes either.
    assert!(matches!(
        DumpWriter::resume(dir.path()),
        Err(DumpError::SizeMismatch { .. })
    ));
}

#[test]
fn truncated_mid_payload_with_matching_manifest_is_truncation() {
    let (dir, segment) = three_block_dump(true);
    let manifest = common::read_manifest(dir.path());
    // Cut 10 bytes into the last frame's payload.
    let contents = fs::read(&segment).expect("read");
    let first_len = 12 + u32::from_le_bytes(contents[12..16].try_into().expect("4")) as usize;
    let second_at = 12 + first_len;
    let second_len =
        12 + u32::from_le_bytes(contents[second_at..second_at + 4].try_into().expect("4")) as usize;
    let third_at = second_at + second_len;
    assert!(third_at < manifest.segments[0].bytes as usize);
    fs::write(&segment, &contents[..third_at + 12 + 10]).expect("write");
    accept_segment_as_is(dir.path(), &segment);

    let error = read_until_error(dir.path(), 2);
    assert!(
        matches!(
            error,
            DumpError::Truncated { offset, part: FramePart::Payload, available: 10, .. } if offset == third_at as u64
        ),
        "{error:?}"
    );
}

#[test]
fn truncated_frame_header_is_truncation() {
    let bytes = segment_from_records(&[record(1)]);
    let mut cut = bytes.clone();
    cut.extend_from_slice(&[0x10, 0x00, 0x00]); // three bytes of a next frame header
    match decode_segment_bytes(&cut) {
        Err(DumpError::Truncated {
            offset,
            part: FramePart::FrameHeader,
            needed: 12,
            available: 3,
            ..
        }) => {
            assert_eq!(offset, bytes.len() as u64);
        }
        other => panic!("expected Truncated frame header, got {other:?}"),
    }
    assert!(matches!(
        decode_segment_bytes(&bytes[..7]),
        Err(DumpError::Truncated {
            offset: 0,
            part: FramePart::SegmentHeader,
            needed: 12,
            available: 7,
            ..
        })
    ));
}

#[test]
fn bad_magic() {
    let (dir, segment) = three_block_dump(true);
    patch(&segment, 0, b"X");
    match read_until_error(dir.path(), 0) {
        DumpError::BadMagic { path, found } => {
            assert_eq!(path, segment);
            assert_eq!(&found, b"XALDUMP\0");
        }
        other => panic!("expected BadMagic, got {other:?}"),
    }
}

#[test]
fn unsupported_segment_version() {
    let (dir, segment) = three_block_dump(true);
    patch(&segment, 8, &2u32.to_le_bytes());
    let error = read_until_error(dir.path(), 0);
    assert!(
        matches!(
            error,
            DumpError::UnsupportedVersion {
                found: 2,
                supported: 1,
                ..
            }
        ),
        "{error:?}"
    );
}

#[test]
fn unsupported_manifest_version() {
    let (dir, _) = three_block_dump(true);
    // A future manifest may have other fields too: the version is reported, not the parse error.
    let path = dir.path().join("manifest.json");
    fs::write(&path, r#"{"format_version": 9, "something_new": []}"#).expect("write");
    match DumpReader::open(dir.path()) {
        Err(DumpError::UnsupportedVersion {
            path: reported,
            found: 9,
            supported: 1,
        }) => assert_eq!(reported, path),
        other => panic!("expected UnsupportedVersion, got {other:?}"),
    }
}

#[test]
fn raw_length_disagreeing_with_payload() {
    let (dir, segment) = three_block_dump(true);
    let contents = fs::read(&segment).expect("read");
    let raw_len = u32::from_le_bytes(contents[16..20].try_into().expect("4"));
    patch(&segment, 16, &(raw_len + 1).to_le_bytes());
    let error = read_until_error(dir.path(), 0);
    assert!(
        matches!(error, DumpError::RawLenMismatch { offset: FIRST_FRAME, expected, found, .. }
            if expected == u64::from(raw_len + 1) && found == u64::from(raw_len)),
        "{error:?}"
    );
}

#[test]
fn raw_length_mismatch_without_zstd_content_size() {
    // A zstd frame without a declared content size: caught after decompression instead.
    let raw = encode_record(&record(1));
    let mut encoder = zstd::stream::Encoder::new(Vec::new(), 3).expect("encoder");
    encoder.include_contentsize(false).expect("option");
    std::io::Write::write_all(&mut encoder, &raw).expect("compress");
    let payload = encoder.finish().expect("finish");
    assert!(matches!(
        zstd::zstd_safe::get_frame_content_size(&payload),
        Ok(None)
    ));

    // Declared one byte short: zstd runs out of room.
    let short = segment_from_frames(&[frame_from_payload(raw.len() as u32 - 1, &payload)]);
    assert!(matches!(
        decode_segment_bytes(&short),
        Err(DumpError::Decompress {
            offset: FIRST_FRAME,
            ..
        })
    ));
    // Declared one byte long: decompresses, to fewer bytes than promised.
    let long = segment_from_frames(&[frame_from_payload(raw.len() as u32 + 1, &payload)]);
    assert!(matches!(
        decode_segment_bytes(&long),
        Err(DumpError::RawLenMismatch { expected, found, .. }) if expected == raw.len() as u64 + 1 && found == raw.len() as u64
    ));
    // Declared right: fine.
    let exact = segment_from_frames(&[frame_from_payload(raw.len() as u32, &payload)]);
    assert_eq!(
        decode_segment_bytes(&exact).expect("decodes"),
        vec![record(1)]
    );
}

#[test]
fn payload_that_is_not_zstd() {
    let bytes = segment_from_frames(&[frame_from_payload(100, &[0xaa; 40])]);
    let error = decode_segment_bytes(&bytes).expect_err("not zstd");
    assert!(
        matches!(
            error,
            DumpError::Decompress {
                offset: FIRST_FRAME,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .starts_with("<memory>: frame at byte 12: zstd failed: "),
        "{error}"
    );
}

#[test]
fn payload_that_is_not_a_record() {
    let bytes = segment_from_frames(&[frame_from_raw(&[0xc0])]);
    assert!(matches!(
        decode_segment_bytes(&bytes),
        Err(DumpError::Decode {
            offset: FIRST_FRAME,
            ..
        })
    ));

    let mut trailing = encode_record(&record(1));
    trailing.extend_from_slice(&[0x01, 0x02]);
    let bytes = segment_from_frames(&[frame_from_raw(&trailing)]);
    match decode_segment_bytes(&bytes) {
        Err(DumpError::Decode { source, .. }) => {
            assert_eq!(
                source,
                alloy_rlp::Error::Custom("trailing bytes after block record")
            );
        }
        other => panic!("expected Decode, got {other:?}"),
    }
}

#[test]
fn record_with_wrong_sender_count() {
    let mut bad = record(1);
    bad.senders.pop();
    let bytes = segment_from_records(&[bad.clone()]);
    assert!(matches!(
        decode_segment_bytes(&bytes),
        Err(DumpError::SenderCountMismatch {
            offset: FIRST_FRAME,
            block: 1,
            transactions: 2,
            senders: 1,
            ..
        })
    ));

    let dir = tempfile::tempdir().expect("tempdir");
    let mut writer =
        DumpWriter::create(dir.path(), meta(true), WriterOptions::default()).expect("create");
    assert!(matches!(
        writer.append(&bad),
        Err(DumpError::SenderCountMismatch {
            block: 1,
            transactions: 2,
            senders: 1,
            ..
        })
    ));
    // Nothing was written: the good record still goes first.
    writer.append(&record(1)).expect("append");
    assert_eq!(writer.finish().expect("finish").record_count, 1);
}

#[test]
fn writer_enforces_block_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut chained = DumpWriter::create(
        dir.path().join("chained"),
        meta(true),
        WriterOptions::default(),
    )
    .expect("create");
    chained.append(&record(1)).expect("append");
    chained.append(&record(2)).expect("append");
    let error = chained.append(&record(4)).expect_err("gap");
    assert!(
        matches!(
            error,
            DumpError::Gap {
                expected: 3,
                found: 4,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .contains("gap in chained dump (expected block 3, found 4)"),
        "{error}"
    );
    assert!(matches!(
        chained.append(&record(2)),
        Err(DumpError::OutOfOrder {
            previous: 2,
            found: 2,
            ..
        })
    ));
    assert!(matches!(
        chained.append(&record(1)),
        Err(DumpError::OutOfOrder {
            previous: 2,
            found: 1,
            ..
        })
    ));
    chained
        .append(&record(3))
        .expect("the right block still goes");
    assert_eq!(chained.finish().expect("finish").record_count, 3);

    let mut independent = DumpWriter::create(
        dir.path().join("independent"),
        meta(false),
        WriterOptions::default(),
    )
    .expect("create");
    independent.append(&record(5)).expect("append");
    independent.append(&record(9)).expect("gaps are fine");
    assert!(matches!(
        independent.append(&record(7)),
        Err(DumpError::OutOfOrder {
            previous: 9,
            found: 7,
            ..
        })
    ));
    assert!(matches!(
        independent.append(&record(9)),
        Err(DumpError::OutOfOrder {
            previous: 9,
            found: 9,
            ..
        })
    ));
}

#[test]
fn reader_finds_a_gap_in_a_chained_dump() {
    // Frames 1, 3, 4 under a manifest claiming chained blocks 2..=4 (consistent in itself).
    let dir = tempfile::tempdir().expect("tempdir");
    let mut writer =
        DumpWriter::create(dir.path(), meta(false), WriterOptions::default()).expect("create");
    for number in [1, 3, 4] {
        writer.append(&record(number)).expect("append");
    }
    writer.finish().expect("finish");
    edit_manifest(dir.path(), |manifest| {
        manifest.chained = true;
        manifest.first_block = Some(2);
        manifest.segments[0].first_block = 2;
    });
    let second_frame = 12
        + fs::read(dir.path().join("segment-000000.bin")).expect("read")[12..16]
            .try_into()
            .map(u32::from_le_bytes)
            .expect("4") as u64
        + 12;
    let error = read_until_error(dir.path(), 1);
    assert!(
        matches!(error, DumpError::Gap { expected: 2, found: 3, offset, .. } if offset == second_frame),
        "{error:?}"
    );
}

#[test]
fn in_memory_segment_must_ascend() {
    let bytes = segment_from_records(&[record(5), record(3)]);
    let error = decode_segment_bytes(&bytes).expect_err("out of order");
    assert!(
        matches!(
            error,
            DumpError::OutOfOrder {
                previous: 5,
                found: 3,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(
        decode_segment_bytes(&segment_from_records(&[record(5), record(8)]))
            .expect("gaps ok")
            .len(),
        2
    );
}

#[test]
fn wrong_chain_id() {
    let (dir, _) = three_block_dump(true);
    match DumpReader::open(dir.path())
        .expect("open")
        .expect_chain_id(10)
    {
        Err(DumpError::WrongChain {
            path,
            expected: 10,
            found: 1,
        }) => {
            assert_eq!(path, dir.path().join("manifest.json"));
        }
        other => panic!("expected WrongChain, got {other:?}"),
    }
    assert!(
        DumpReader::open(dir.path())
            .expect("open")
            .expect_chain_id(1)
            .is_ok()
    );
}

#[test]
fn manifest_record_count_disagreeing_with_its_segments() {
    let (dir, _) = three_block_dump(true);
    edit_manifest(dir.path(), |manifest| manifest.record_count = 4);
    match DumpReader::open(dir.path()) {
        Err(DumpError::Manifest { reason, .. }) => {
            assert_eq!(reason, "record_count is 4 but the segments hold 3 records");
        }
        other => panic!("expected Manifest, got {other:?}"),
    }
}

#[test]
fn manifest_record_count_disagreeing_with_the_files() {
    // A manifest that agrees with itself (4 chained records in 1..=4) but not with the 3 frames.
    let (dir, segment) = three_block_dump(true);
    edit_manifest(dir.path(), |manifest| {
        manifest.record_count = 4;
        manifest.last_block = Some(4);
        manifest.segments[0].records = 4;
        manifest.segments[0].last_block = 4;
    });
    match read_until_error(dir.path(), 3) {
        DumpError::CountMismatch {
            path,
            expected: 4,
            found: 3,
        } => assert_eq!(path, segment),
        other => panic!("expected CountMismatch, got {other:?}"),
    }
}

#[test]
fn manifest_block_range_disagreeing_with_the_files() {
    let (dir, segment) = three_block_dump(false);
    edit_manifest(dir.path(), |manifest| {
        manifest.first_block = Some(0);
        manifest.segments[0].first_block = 0;
    });
    match read_until_error(dir.path(), 3) {
        DumpError::BlockRangeMismatch {
            path,
            which: "first",
            expected: Some(0),
            found: Some(1),
        } => {
            assert_eq!(path, segment);
        }
        other => panic!("expected BlockRangeMismatch, got {other:?}"),
    }
}

#[test]
fn manifest_checksum_disagreeing_with_the_file() {
    let (dir, segment) = three_block_dump(true);
    let real = crc32fast::hash(&fs::read(&segment).expect("read"));
    edit_manifest(dir.path(), |manifest| manifest.segments[0].crc32 = real ^ 1);
    let reader = DumpReader::open(dir.path()).expect("open");
    match reader.verify_checksums() {
        Err(DumpError::SegmentChecksum {
            path,
            expected,
            found,
        }) => {
            assert_eq!(path, segment);
            assert_eq!((expected, found), (real ^ 1, real));
        }
        other => panic!("expected SegmentChecksum, got {other:?}"),
    }
    // Streaming the records checks it too, once the segment's last frame is read.
    assert!(matches!(
        read_until_error(dir.path(), 3),
        DumpError::SegmentChecksum { .. }
    ));
    // And resuming refuses to append to a segment it cannot vouch for.
    assert!(matches!(
        DumpWriter::resume(dir.path()),
        Err(DumpError::SegmentChecksum { .. })
    ));
}

#[test]
fn bytes_past_the_manifest_are_not_part_of_the_dump() {
    // What a writer leaves between flushes, or a crash after an append: a partial frame past the
    // manifest's bytes. Readers read exactly the recorded prefix and never see it.
    let (dir, segment) = three_block_dump(true);
    let manifest = common::read_manifest(dir.path());
    let mut contents = fs::read(&segment).expect("read");
    let len = contents.len() as u64;
    assert_eq!(len, manifest.segments[0].bytes);
    contents.extend_from_slice(&5000u32.to_le_bytes());
    contents.extend_from_slice(&[0xff; 7]);
    fs::write(&segment, contents).expect("write");

    let reader = DumpReader::open(dir.path()).expect("open");
    assert_eq!(reader.manifest(), &manifest);
    let numbers: Vec<u64> = reader
        .records()
        .map(|r| r.map(|r| r.number()))
        .collect::<Result<_, _>>()
        .expect("the recorded prefix reads whole");
    assert_eq!(numbers, [1, 2, 3]);
    reader
        .verify_checksums()
        .expect("the checksum covers the recorded bytes only");
    assert_eq!(
        reader.last_record().expect("last").map(|r| r.number()),
        Some(3)
    );
}

#[test]
fn missing_segment_file() {
    let (dir, segment) = three_block_dump(true);
    fs::remove_file(&segment).expect("remove");
    match DumpReader::open(dir.path()) {
        Err(DumpError::Io { path, source }) => {
            assert_eq!(path, segment);
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        }
        other => panic!("expected Io, got {other:?}"),
    }
}

#[test]
fn malformed_manifests() {
    let (dir, _) = three_block_dump(true);
    let manifest_path = dir.path().join("manifest.json");
    let original = fs::read_to_string(&manifest_path).expect("read");

    fs::write(&manifest_path, "{ not json").expect("write");
    assert!(matches!(
        DumpReader::open(dir.path()),
        Err(DumpError::Manifest { .. })
    ));

    fs::write(&manifest_path, &original).expect("write");
    edit_manifest(dir.path(), |manifest| {
        manifest.segments[0].file = "../elsewhere.bin".to_owned()
    });
    match DumpReader::open(dir.path()) {
        Err(DumpError::Manifest { reason, .. }) => {
            assert_eq!(
                reason,
                r#"segment 0 is named "../elsewhere.bin", expected "segment-000000.bin""#
            );
        }
        other => panic!("expected Manifest, got {other:?}"),
    }

    fs::write(&manifest_path, &original).expect("write");
    edit_manifest(dir.path(), |manifest| manifest.segments[0].records = 0);
    assert!(matches!(
        DumpReader::open(dir.path()),
        Err(DumpError::Manifest { .. })
    ));

    fs::remove_file(&manifest_path).expect("remove");
    assert!(matches!(
        DumpReader::open(dir.path()),
        Err(DumpError::Io { .. })
    ));
}

#[test]
fn creating_over_an_existing_dump() {
    let (dir, _) = three_block_dump(true);
    match DumpWriter::create(dir.path(), meta(true), WriterOptions::default()) {
        Err(DumpError::AlreadyExists { path }) => {
            assert_eq!(path, dir.path().join("manifest.json"))
        }
        Err(other) => panic!("expected AlreadyExists, got {other:?}"),
        Ok(_) => panic!("expected AlreadyExists, got a writer"),
    }
    // The existing dump is untouched.
    let numbers: Vec<u64> = DumpReader::open(dir.path())
        .expect("open")
        .records()
        .map(|r| r.map(|r| BlockRecord::number(&r)))
        .collect::<Result<_, _>>()
        .expect("read");
    assert_eq!(numbers, [1, 2, 3]);
}

#[test]
fn errors_name_their_file_and_frame() {
    let (dir, segment) = three_block_dump(true);
    patch(&segment, 12, &u32::MAX.to_le_bytes());
    let error = read_until_error(dir.path(), 0);
    assert_eq!(error.path(), segment);
    assert_eq!(error.frame_offset(), Some(FIRST_FRAME));
    assert_eq!(
        error.to_string(),
        format!(
            "{}: frame at byte 12: compressed length 4294967295 exceeds the limit of 268435456 bytes",
            segment.display()
        )
    );
}
