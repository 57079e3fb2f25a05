//! A dump written onto a filesystem that fills up: the writer stops with an error naming the file
//! and saying "No space left on device", the dump stays readable with exactly the records that
//! were flushed (no partial frame visible), and once space is added a new writer continues right
//! after them.
//!
//! The full filesystem is a real one: a tmpfs of 64 KiB mounted by the test, which needs root (as
//! CI runs). With `CI=true` a failure to mount fails the test; elsewhere the test says SKIPPED on
//! stderr and passes.

mod common;

use std::{
    io,
    path::{Path, PathBuf},
    process::Command,
};

use bal_replay_dump::{
    BlockRecord, DumpError, DumpReader, DumpWriter, MANIFEST_FILE, WriterOptions, encode_record,
};
use common::{meta, record};

/// A tmpfs mounted for the test's lifetime.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Result<Self, String> {
        std::fs::create_dir_all(at).map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output()
            .map_err(|e| format!("running mount: {e}"))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_owned());
        }
        Ok(Self(at.to_path_buf()))
    }

    /// Mounts one, or says why not: a failure in CI (`CI=true`), a skip elsewhere.
    fn mount_or_skip(at: &Path, size: &str) -> Option<Self> {
        match Self::mount(at, size) {
            Ok(fs) => Some(fs),
            Err(why) if std::env::var("CI").is_ok_and(|ci| ci == "true") => {
                panic!("CI=true, so the no-space test must run, but mounting a tmpfs failed: {why}")
            }
            Err(why) => {
                eprintln!(
                    "SKIPPED: mounting a tmpfs failed ({why}); the no-space test needs root \
                     (with CI=true this is a failure)"
                );
                None
            }
        }
    }

    fn resize(&self, size: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .unwrap();
        assert!(
            status.success(),
            "remounting {} at {size}",
            self.0.display()
        );
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn read_all(dir: &Path) -> Vec<BlockRecord> {
    DumpReader::open(dir)
        .expect("dump opens")
        .records()
        .collect::<Result<Vec<_>, _>>()
        .expect("every record reads")
}

#[test]
fn a_full_disk_stops_the_writer_clearly_and_a_new_writer_resumes_after_the_flushed_records() {
    let tmp = tempfile::tempdir().unwrap();
    // Declared after `tmp`, so unmounted before the temporary directory is removed.
    let Some(fs) = Tmpfs::mount_or_skip(&tmp.path().join("small"), "64k") else {
        return;
    };
    let dir = fs.0.join("dump");
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
    fs.resize("4m");
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
