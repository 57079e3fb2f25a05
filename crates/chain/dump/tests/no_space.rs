//! A dump written onto a filesystem that fills up: the writer stops with an error naming the file
//! and saying "No space left on device", the dump stays readable with exactly the records that
//! were flushed (no partial frame visible), and once space is added a new writer continues right
//! after them.
//!
//! The full filesystem is a real one: a tmpfs of 64 KiB mounted by the test
//! (`bal_replay_test_utils::tmpfs`), which needs root, as CI runs. Under CI a failure to mount
//! fails the test; elsewhere the test says SKIPPED on stderr and passes.

mod common;

use std::io;

use bal_replay_dump::{
    BlockRecord, DumpError, DumpReader, DumpWriter, MANIFEST_FILE, WriterOptions, encode_record,
};
use bal_replay_test_utils::tmpfs::mount_tmpfs_or_skip;
use common::{meta, read_all, record};

#[test]
fn a_full_disk_stops_the_writer_clearly_and_a_new_writer_resumes_after_the_flushed_records() {
    let Some(fs) = mount_tmpfs_or_skip(64 << 10) else {
        return;
    };
    let dir = fs.path().join("dump");
    // A few records a segment, so the disk also fills across segment rotations.
    let options = WriterOptions {
        segment_max_bytes: encode_record(&record(1)).len() as u64 * 6,
        ..WriterOptions::default()
    };

    let mut writer = DumpWriter::create(&dir, meta(true), options.clone()).unwrap();
    let mut flushed = 0;
    let mut failure = None;
    for number in 1..=10_000 {
        match writer.append(&record(number)).and_then(|()| writer.flush()) {
            Ok(()) => flushed = number,
            Err(error) => {
                failure = Some(error);
                break;
            }
        }
    }
    let error = failure.expect("a 64 KiB filesystem held 10,000 records");
    assert!(flushed > 0, "not even one record fit: {error}");

    // The error names the file and says why.
    let DumpError::Io { path, source } = &error else {
        panic!("expected an I/O error, got {error:?}");
    };
    assert_eq!(source.kind(), io::ErrorKind::StorageFull, "{error}");
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(path.parent(), Some(dir.as_path()), "{error}");
    assert!(
        name.starts_with("segment-") || name == format!("{MANIFEST_FILE}.tmp"),
        "{error}"
    );
    let message = error.to_string();
    assert!(message.contains("No space left on device"), "{message}");
    assert!(message.contains(&path.display().to_string()), "{message}");
    eprintln!("{flushed} records flushed before: {message}");

    // Nothing more becomes durable: a retry fails the same way (or is refused outright once a
    // segment write failed part-way).
    match writer.flush() {
        Err(DumpError::WriterPoisoned { path: poisoned }) => {
            assert!(name.starts_with("segment-"), "poisoned after {error}");
            assert_eq!(&poisoned, path);
        }
        Err(DumpError::Io { source, .. }) => {
            assert_eq!(source.kind(), io::ErrorKind::StorageFull)
        }
        other => panic!("a flush on a full disk: {other:?}"),
    }

    // While the disk is still full, and the failed writer still holds the dump, a reader gets
    // exactly the flushed records: whatever part of the next frame reached the file is not part
    // of the dump.
    let expected: Vec<BlockRecord> = (1..=flushed).map(record).collect();
    assert_eq!(read_all(&dir), expected);
    let reader = DumpReader::open(&dir).unwrap();
    assert_eq!(reader.manifest().record_count, flushed);
    assert_eq!(reader.manifest().last_block, Some(flushed));
    reader.verify_checksums().unwrap();
    assert!(matches!(
        DumpWriter::resume(&dir),
        Err(DumpError::Locked { .. })
    ));
    drop(writer);
    assert_eq!(read_all(&dir), expected);

    // Space added: a new writer cuts the partial tail off and continues after the flushed records.
    fs.resize(4 << 20).unwrap();
    let mut writer = DumpWriter::resume_with_options(&dir, options).unwrap();
    let manifest = writer.manifest().clone();
    let last = manifest.segments.last().unwrap();
    assert_eq!(
        std::fs::metadata(dir.join(&last.file)).unwrap().len(),
        last.bytes,
        "resume leaves the last segment exactly as long as the manifest says"
    );
    assert_eq!(writer.last_block(), Some(flushed));
    for number in flushed + 1..=flushed + 40 {
        writer.append(&record(number)).unwrap();
    }
    writer.finish().unwrap();
    let all: Vec<BlockRecord> = (1..=flushed + 40).map(record).collect();
    assert_eq!(read_all(&dir), all);
    DumpReader::open(&dir).unwrap().verify_checksums().unwrap();
}
