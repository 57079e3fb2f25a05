//! Cutting a dump back to a fork point: what a reorg does to the ExEx's dump.

mod common;

use bal_replay_dump::{BlockRecord, DumpReader, DumpWriter, Manifest, WriterOptions};
use common::{meta, read_manifest, record};
use std::path::Path;

fn numbers(dir: &Path) -> Vec<u64> {
    DumpReader::open(dir)
        .expect("dump opens")
        .records()
        .map(|r| r.map(|r: BlockRecord| r.number()))
        .collect::<Result<Vec<_>, _>>()
        .expect("every record reads")
}

/// Small segments, so cuts land inside a segment, on a boundary, and across several.
fn small_segments() -> WriterOptions {
    let one = bal_replay_dump::encode_record(&record(100)).len() as u64;
    WriterOptions {
        // About three records a segment (frames are compressed, so a bit more).
        segment_max_bytes: one * 2,
        ..WriterOptions::default()
    }
}

fn write(dir: &Path, range: std::ops::RangeInclusive<u64>) -> DumpWriter {
    let mut writer = DumpWriter::create(dir, meta(true), small_segments()).expect("create");
    for n in range {
        writer.append(&record(n)).expect("append");
    }
    writer.flush().expect("flush");
    writer
}

#[test]
fn truncating_inside_a_segment_keeps_the_prefix_and_appends_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = write(dir.path(), 100..=120);
    let segments_before = writer.manifest().segments.len();
    assert!(
        segments_before > 3,
        "test needs several segments, got {segments_before}"
    );

    // Pick a cut strictly inside a segment.
    let inside = writer
        .manifest()
        .segments
        .iter()
        .find(|s| s.last_block - s.first_block >= 1 && s.first_block > 100)
        .map(|s| s.first_block)
        .expect("a segment with two records");
    assert_eq!(writer.truncate_after(Some(inside)).unwrap(), 120 - inside);
    assert_eq!(writer.last_block(), Some(inside));
    assert_eq!(numbers(dir.path()), (100..=inside).collect::<Vec<_>>());

    // The other branch: appended right after the cut, and the dump reads whole.
    for n in inside + 1..=inside + 5 {
        writer.append(&record(n)).unwrap();
    }
    let manifest = writer.finish().unwrap();
    assert_eq!(manifest.record_count, inside + 5 - 100 + 1);
    assert_eq!(numbers(dir.path()), (100..=inside + 5).collect::<Vec<_>>());
    DumpReader::open(dir.path())
        .unwrap()
        .verify_checksums()
        .unwrap();
    // No segment file left over past the manifest's.
    let files = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("segment-")
        })
        .count();
    assert_eq!(files, manifest.segments.len());
}

#[test]
fn truncating_at_a_segment_boundary_and_to_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = write(dir.path(), 100..=110);
    let boundary = writer.manifest().segments[1].last_block;
    writer.truncate_after(Some(boundary)).unwrap();
    let manifest: Manifest = read_manifest(dir.path());
    assert_eq!(manifest.segments.len(), 2);
    assert_eq!(manifest.last_block, Some(boundary));
    assert_eq!(numbers(dir.path()), (100..=boundary).collect::<Vec<_>>());

    // Keeping a block past the end changes nothing.
    assert_eq!(writer.truncate_after(Some(500)).unwrap(), 0);

    assert_eq!(writer.truncate_after(None).unwrap(), boundary - 100 + 1);
    let manifest: Manifest = read_manifest(dir.path());
    assert_eq!(
        (
            manifest.record_count,
            manifest.first_block,
            manifest.last_block
        ),
        (0, None, None)
    );
    assert!(manifest.segments.is_empty());
    assert!(numbers(dir.path()).is_empty());
    // An emptied dump starts again at any block.
    writer.append(&record(7)).unwrap();
    writer.finish().unwrap();
    assert_eq!(numbers(dir.path()), vec![7]);
}

#[test]
fn truncation_covers_unflushed_records_and_survives_resume() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = write(dir.path(), 100..=104);
    for n in 105..=108 {
        writer.append(&record(n)).unwrap();
    }
    assert_eq!(writer.unflushed(), 4);
    assert_eq!(writer.truncate_after(Some(106)).unwrap(), 2);
    drop(writer);
    let mut resumed = DumpWriter::resume_with_options(dir.path(), small_segments()).unwrap();
    assert_eq!(resumed.last_block(), Some(106));
    resumed.append(&record(107)).unwrap();
    resumed.finish().unwrap();
    assert_eq!(numbers(dir.path()), (100..=107).collect::<Vec<_>>());
}

#[test]
fn a_crash_after_the_manifest_is_rewritten_is_finished_by_resume() {
    // Simulate the crash window: the manifest is the truncated one, but the bytes and segment
    // files past it are still there.
    let dir = tempfile::tempdir().unwrap();
    let mut writer = write(dir.path(), 100..=112);
    let full = read_manifest(dir.path());
    let saved: Vec<(std::path::PathBuf, Vec<u8>)> = full
        .segments
        .iter()
        .map(|s| {
            let path = dir.path().join(&s.file);
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect();
    writer.truncate_after(Some(103)).unwrap();
    drop(writer);
    for (path, bytes) in &saved {
        std::fs::write(path, bytes).unwrap();
    }
    let resumed = DumpWriter::resume_with_options(dir.path(), small_segments()).unwrap();
    assert_eq!(resumed.last_block(), Some(103));
    drop(resumed);
    assert_eq!(numbers(dir.path()), (100..=103).collect::<Vec<_>>());
    DumpReader::open(dir.path())
        .unwrap()
        .verify_checksums()
        .unwrap();
}

#[test]
fn last_record_reads_the_last_segment_only() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        DumpWriter::create(dir.path(), meta(true), small_segments())
            .unwrap()
            .finish()
            .unwrap()
            .record_count,
        0
    );
    assert_eq!(
        DumpReader::open(dir.path()).unwrap().last_record().unwrap(),
        None
    );

    let dir = tempfile::tempdir().unwrap();
    let mut writer = write(dir.path(), 100..=111);
    assert!(writer.manifest().segments.len() > 2);
    assert_eq!(
        DumpReader::open(dir.path()).unwrap().last_record().unwrap(),
        Some(record(111))
    );
    writer.truncate_after(Some(105)).unwrap();
    assert_eq!(
        DumpReader::open(dir.path()).unwrap().last_record().unwrap(),
        Some(record(105))
    );
}
