//! Writing dumps and reading them back: records, manifests, segment rotation and resuming.

mod common;

use std::{fs, io::Write};

use bal_replay_dump::{
    BlockRecord, DumpError, DumpReader, DumpWriter, FORMAT_VERSION, MAGIC, MANIFEST_VERSION,
    Manifest, SEGMENT_HEADER_LEN, WriterOptions, decode_record, decode_segment_bytes,
    encode_record,
};
use common::{CHAIN_ID, meta, read_all, read_manifest, record};

fn write_dump(
    dir: &std::path::Path,
    numbers: impl IntoIterator<Item = u64>,
    chained: bool,
) -> Manifest {
    let mut writer =
        DumpWriter::create(dir, meta(chained), WriterOptions::default()).expect("create");
    for number in numbers {
        writer.append(&record(number)).expect("append");
    }
    writer.finish().expect("finish")
}

#[test]
fn record_rlp_round_trips_and_rejects_trailing_bytes() {
    let original = record(17);
    assert_eq!(original.tx_count(), 2);
    assert_eq!(original.bal.len(), 3);
    let encoded = encode_record(&original);
    assert_eq!(decode_record(&encoded), Ok(original));

    // The documented layout: a list of five items, the block first, typed transactions inside it
    // in their network form (an RLP string holding `type || payload`), legacy ones as plain lists.
    let mut rest = &encoded[..];
    let outer = alloy_rlp::Header::decode(&mut rest).expect("record header");
    assert!(outer.list);
    assert_eq!(outer.payload_length, rest.len());
    let typed = alloy_rlp::encode(common::eip1559_tx(1));
    let mut typed_rest = &typed[..];
    let typed_header = alloy_rlp::Header::decode(&mut typed_rest).expect("tx header");
    assert!(!typed_header.list);
    assert_eq!(typed_rest[0], 0x02);
    let legacy = alloy_rlp::encode(common::legacy_tx(1));
    assert!(
        alloy_rlp::Header::decode(&mut &legacy[..])
            .expect("legacy header")
            .list
    );

    let mut with_trailing = encoded;
    with_trailing.push(0x80);
    assert_eq!(
        decode_record(&with_trailing),
        Err(alloy_rlp::Error::Custom(
            "trailing bytes after block record"
        ))
    );
}

#[test]
fn several_records_round_trip_with_exact_manifest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = write_dump(dir.path(), 100..105, true);

    let originals: Vec<BlockRecord> = (100..105).map(record).collect();
    assert_eq!(read_all(dir.path()), originals);

    assert_eq!(manifest.format_version, FORMAT_VERSION);
    assert_eq!(manifest.chain_id, CHAIN_ID);
    assert!(manifest.chained);
    assert_eq!(manifest.source, "synthetic");
    assert_eq!(manifest.first_block, Some(100));
    assert_eq!(manifest.last_block, Some(104));
    assert_eq!(manifest.record_count, 5);
    assert_eq!(manifest.segments.len(), 1);
    let segment = &manifest.segments[0];
    assert_eq!(segment.file, "segment-000000.bin");
    assert_eq!(
        (segment.first_block, segment.last_block, segment.records),
        (100, 104, 5)
    );

    // The manifest on disk is what finish returned, and describes the file byte for byte.
    assert_eq!(read_manifest(dir.path()), manifest);
    let bytes = fs::read(dir.path().join("segment-000000.bin")).expect("segment readable");
    assert_eq!(bytes.len() as u64, segment.bytes);
    assert_eq!(crc32fast::hash(&bytes), segment.crc32);
    assert_eq!(bytes[..8], MAGIC);
    assert_eq!(bytes[8..12], 1u32.to_le_bytes());
    // The first frame's header: compressed length, raw length, crc of the payload.
    let compressed_len = u32::from_le_bytes(bytes[12..16].try_into().expect("4 bytes")) as usize;
    let raw_len = u32::from_le_bytes(bytes[16..20].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(bytes[20..24].try_into().expect("4 bytes"));
    let payload = &bytes[24..24 + compressed_len];
    assert_eq!(crc32fast::hash(payload), crc);
    assert_eq!(raw_len, encode_record(&record(100)).len());
    assert_eq!(
        zstd::bulk::decompress(payload, raw_len).expect("zstd"),
        encode_record(&record(100))
    );

    // The same file through the in-memory parser.
    assert_eq!(
        decode_segment_bytes(&bytes).expect("segment parses"),
        originals
    );

    let reader = DumpReader::open(dir.path()).expect("open");
    reader.verify_checksums().expect("checksums match");
    assert_eq!(reader.chain_id(), CHAIN_ID);
    assert_eq!(reader.manifest(), &manifest);
}

#[test]
fn manifest_is_pretty_json_with_documented_fields() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_dump(dir.path(), [7], false);
    let text = fs::read_to_string(dir.path().join("manifest.json")).expect("manifest");
    let json: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert!(
        text.contains("\n  \"format_version\": 1"),
        "pretty-printed: {text}"
    );
    assert_eq!(json["manifest_version"], MANIFEST_VERSION);
    assert_eq!(MANIFEST_VERSION, 2);
    // Version 2 writes the schedule's key for every dump, `null` where it has none.
    assert_eq!(json["schedule"], serde_json::Value::Null);
    assert!(text.contains("\n  \"schedule\": null"), "{text}");
    assert_eq!(json["chain_id"], 1);
    assert_eq!(json["chained"], false);
    assert_eq!(json["source"], "synthetic");
    assert_eq!(json["first_block"], 7);
    assert_eq!(json["last_block"], 7);
    assert_eq!(json["record_count"], 1);
    assert_eq!(json["segments"][0]["file"], "segment-000000.bin");
    assert_eq!(json["segments"][0]["records"], 1);
    assert!(!dir.path().join("manifest.json.tmp").exists());
}

#[test]
fn empty_dump_has_no_segments_and_reads_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = write_dump(dir.path(), [], true);
    assert_eq!(manifest.first_block, None);
    assert_eq!(manifest.last_block, None);
    assert_eq!(manifest.record_count, 0);
    assert!(manifest.segments.is_empty());
    assert!(!dir.path().join("segment-000000.bin").exists());
    assert!(read_all(dir.path()).is_empty());
}

#[test]
fn independent_dump_allows_gaps() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = write_dump(dir.path(), [3, 10, 11, 500], false);
    assert!(!manifest.chained);
    assert_eq!(
        (manifest.first_block, manifest.last_block),
        (Some(3), Some(500))
    );
    let numbers: Vec<u64> = read_all(dir.path())
        .iter()
        .map(BlockRecord::number)
        .collect();
    assert_eq!(numbers, [3, 10, 11, 500]);
}

#[test]
fn segments_rotate_and_round_trip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let frame_len = {
        let single = tempfile::tempdir().expect("tempdir");
        let manifest = write_dump(single.path(), [10], true);
        manifest.segments[0].bytes - SEGMENT_HEADER_LEN
    };
    // Room for two frames (blocks 10..=16 encode to within a few bytes of each other), not three.
    let options = WriterOptions {
        segment_max_bytes: SEGMENT_HEADER_LEN + 2 * frame_len + frame_len / 2,
        ..WriterOptions::default()
    };
    let mut writer = DumpWriter::create(dir.path(), meta(true), options).expect("create");
    for number in 10..=16 {
        writer.append(&record(number)).expect("append");
    }
    let manifest = writer.finish().expect("finish");

    let ranges: Vec<(String, u64, u64, u64)> = manifest
        .segments
        .iter()
        .map(|s| (s.file.clone(), s.first_block, s.last_block, s.records))
        .collect();
    assert_eq!(
        ranges,
        [
            ("segment-000000.bin".to_owned(), 10, 11, 2),
            ("segment-000001.bin".to_owned(), 12, 13, 2),
            ("segment-000002.bin".to_owned(), 14, 15, 2),
            ("segment-000003.bin".to_owned(), 16, 16, 1),
        ]
    );
    assert_eq!(
        (
            manifest.first_block,
            manifest.last_block,
            manifest.record_count
        ),
        (Some(10), Some(16), 7)
    );
    for segment in &manifest.segments {
        let bytes = fs::read(dir.path().join(&segment.file)).expect("segment");
        assert_eq!(bytes.len() as u64, segment.bytes);
        assert!(segment.bytes <= SEGMENT_HEADER_LEN + 2 * frame_len + frame_len / 2);
        assert_eq!(crc32fast::hash(&bytes), segment.crc32, "{}", segment.file);
    }
    assert_eq!(
        read_all(dir.path()),
        (10..=16).map(record).collect::<Vec<_>>()
    );
    DumpReader::open(dir.path())
        .expect("open")
        .verify_checksums()
        .expect("checksums");
}

#[test]
fn a_record_larger_than_the_segment_limit_gets_its_own_segment() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = WriterOptions {
        segment_max_bytes: 1,
        ..WriterOptions::default()
    };
    let mut writer = DumpWriter::create(dir.path(), meta(true), options).expect("create");
    for number in 1..=3 {
        writer.append(&record(number)).expect("append");
    }
    let manifest = writer.finish().expect("finish");
    assert_eq!(manifest.segments.len(), 3);
    assert!(manifest.segments.iter().all(|s| s.records == 1));
    assert_eq!(read_all(dir.path()).len(), 3);
}

#[test]
fn resume_continues_the_dump() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let mut writer =
            DumpWriter::create(dir.path(), meta(true), WriterOptions::default()).expect("create");
        for number in 1..=3 {
            writer.append(&record(number)).expect("append");
        }
        writer.flush().expect("flush");
        assert_eq!(writer.unflushed(), 0);
    }

    let mut writer = DumpWriter::resume(dir.path()).expect("resume");
    assert_eq!(writer.last_block(), Some(3));
    assert_eq!(writer.manifest().record_count, 3);
    // The block sequence continues across the resume.
    assert!(matches!(
        writer.append(&record(5)),
        Err(DumpError::Gap {
            expected: 4,
            found: 5,
            ..
        })
    ));
    for number in 4..=5 {
        writer.append(&record(number)).expect("append");
    }
    let manifest = writer.finish().expect("finish");
    assert_eq!(manifest.record_count, 5);
    assert_eq!(manifest.segments.len(), 1);
    assert_eq!(
        read_all(dir.path()),
        (1..=5).map(record).collect::<Vec<_>>()
    );
}

#[test]
fn resume_of_an_empty_dump_and_across_rotation() {
    let dir = tempfile::tempdir().expect("tempdir");
    drop(DumpWriter::create(dir.path(), meta(true), WriterOptions::default()).expect("create"));
    let options = WriterOptions {
        segment_max_bytes: 1,
        ..WriterOptions::default()
    };
    let mut writer =
        DumpWriter::resume_with_options(dir.path(), options.clone()).expect("resume empty");
    writer.append(&record(10)).expect("append");
    writer.finish().expect("finish");

    let mut writer = DumpWriter::resume_with_options(dir.path(), options).expect("resume");
    writer.append(&record(11)).expect("append");
    let manifest = writer.finish().expect("finish");
    assert_eq!(manifest.segments.len(), 2);
    assert_eq!(read_all(dir.path()), vec![record(10), record(11)]);
}

#[test]
fn resume_after_crash_discards_the_partial_frame() {
    let dir = tempfile::tempdir().expect("tempdir");
    let flushed_bytes = {
        let mut writer =
            DumpWriter::create(dir.path(), meta(true), WriterOptions::default()).expect("create");
        for number in 1..=3 {
            writer.append(&record(number)).expect("append");
        }
        writer.flush().expect("flush");
        writer.manifest().segments[0].bytes
    };

    // A crash in the middle of the next append: a frame header promising 5000 bytes, and 3 of them.
    let segment_path = dir.path().join("segment-000000.bin");
    let mut file = fs::OpenOptions::new()
        .append(true)
        .open(&segment_path)
        .expect("open segment");
    file.write_all(&5000u32.to_le_bytes()).expect("write");
    file.write_all(&9000u32.to_le_bytes()).expect("write");
    file.write_all(&0xdead_beefu32.to_le_bytes())
        .expect("write");
    file.write_all(&[1, 2, 3]).expect("write");
    drop(file);
    // ... and a segment file started by a rotation that was never flushed.
    fs::write(dir.path().join("segment-000001.bin"), b"BALDUMP\0junk").expect("write stray");

    // Until resumed, readers read the durable prefix the manifest names and nothing of the
    // partial frame or the stray segment.
    assert_eq!(
        fs::metadata(&segment_path).expect("metadata").len(),
        flushed_bytes + 15
    );
    assert_eq!(
        read_all(dir.path()),
        (1..=3).map(record).collect::<Vec<_>>()
    );

    let mut writer = DumpWriter::resume(dir.path()).expect("resume");
    assert_eq!(
        fs::metadata(&segment_path).expect("metadata").len(),
        flushed_bytes
    );
    assert!(!dir.path().join("segment-000001.bin").exists());
    writer.append(&record(4)).expect("append");
    writer.finish().expect("finish");

    assert_eq!(
        read_all(dir.path()),
        (1..=4).map(record).collect::<Vec<_>>()
    );
    DumpReader::open(dir.path())
        .expect("open")
        .verify_checksums()
        .expect("checksums");
}

#[test]
fn dropping_the_writer_flushes() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let mut writer =
            DumpWriter::create(dir.path(), meta(false), WriterOptions::default()).expect("create");
        writer.append(&record(1)).expect("append");
        writer.append(&record(2)).expect("append");
        assert_eq!(writer.unflushed(), 2);
    }
    assert_eq!(read_all(dir.path()), vec![record(1), record(2)]);
}

#[test]
fn reader_is_usable_after_records_iterator_moves_away() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_dump(dir.path(), 1..=2, true);
    let records = DumpReader::open(dir.path()).expect("open").records();
    let handle = std::thread::spawn(move || {
        records
            .map(|r| r.map(|r| r.number()))
            .collect::<Result<Vec<_>, _>>()
    });
    assert_eq!(handle.join().expect("thread").expect("records"), [1, 2]);
    // Loading the manifest directly gives the same validated manifest.
    assert_eq!(Manifest::load(dir.path()).expect("load").record_count, 2);
}

/// The manifest's JSON with one top-level key removed.
fn without_key(text: &str, key: &str) -> String {
    let mut json: serde_json::Value = serde_json::from_str(text).expect("json");
    json.as_object_mut().expect("object").remove(key);
    serde_json::to_string_pretty(&json).expect("json")
}

#[test]
fn a_version_1_manifest_reads_with_or_without_its_schedule() {
    let dir = tempfile::tempdir().expect("tempdir");
    let written = write_dump(dir.path(), [7], false);
    let path = dir.path().join("manifest.json");
    let text = fs::read_to_string(&path).expect("manifest");

    // Version 1, written before schedules: neither key.
    let v1 = without_key(&without_key(&text, "manifest_version"), "schedule");
    let read = Manifest::parse(&v1, &path).expect("a version 1 manifest reads");
    assert_eq!(read, written);
    assert_eq!(read.manifest_version, MANIFEST_VERSION);
    assert_eq!(read.schedule, None);

    // Version 1 with a schedule (written after schedules, before the manifest's version).
    let blobs = serde_json::json!({
        "target_blob_count": 3, "max_blob_count": 6, "update_fraction": 3338477,
        "min_blob_fee": 1, "max_blobs_per_tx": 6, "blob_base_cost": 0
    });
    let schedule: bal_replay_dump::ChainSchedule = serde_json::from_value(serde_json::json!({
        "forks": [{ "fork": "Frontier", "activation": { "block": 0 } }],
        "deposit_contract": null,
        "blob_params": { "cancun": blobs, "prague": blobs, "osaka": blobs, "scheduled": [] }
    }))
    .expect("a schedule");
    let mut json: serde_json::Value = serde_json::from_str(&v1).expect("json");
    json["schedule"] = serde_json::to_value(&schedule).expect("schedule");
    let read = Manifest::parse(&json.to_string(), &path).expect("reads");
    assert_eq!(read.schedule, Some(schedule));
    assert_eq!(read.manifest_version, MANIFEST_VERSION);
}

#[test]
fn a_version_2_manifest_without_its_schedule_or_of_a_later_version_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_dump(dir.path(), [7], false);
    let path = dir.path().join("manifest.json");
    let text = fs::read_to_string(&path).expect("manifest");

    let err = Manifest::parse(&without_key(&text, "schedule"), &path).unwrap_err();
    assert!(
        matches!(&err, DumpError::Manifest { reason, .. } if reason.contains("missing field `schedule`")),
        "{err:?}"
    );

    let later = text.replace("\"manifest_version\": 2", "\"manifest_version\": 3");
    assert_ne!(later, text);
    let err = Manifest::parse(&later, &path).unwrap_err();
    assert!(
        matches!(
            err,
            DumpError::UnsupportedManifestVersion {
                found: 3,
                supported: 2,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("unsupported manifest version 3"));
}
