//! One writer per dump directory (in this process or another), and readers alongside a writer.

mod common;

use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Command, Stdio},
    sync::{Arc, Barrier},
};

use bal_replay_dump::{
    BlockRecord, DumpError, DumpReader, DumpWriter, LOCK_FILE, WriterOptions, encode_record,
};
use common::{meta, read_all, record};

fn numbers(dir: &Path) -> Vec<u64> {
    read_all(dir).iter().map(BlockRecord::number).collect()
}

/// Asserts `result` is [`DumpError::Locked`] for `dir`, held by `pid`.
fn assert_locked<T>(result: Result<T, DumpError>, dir: &Path, pid: u32) {
    match result {
        Err(DumpError::Locked { path, holder }) => {
            assert_eq!(path, dir);
            assert_eq!(holder, Some(pid));
            let message = DumpError::Locked { path, holder }.to_string();
            assert!(
                message.contains(&dir.display().to_string()),
                "the error does not name the directory: {message}"
            );
            assert!(
                message.contains(&format!("process {pid}")),
                "the error does not name the holder: {message}"
            );
        }
        Err(other) => panic!("expected Locked, got {other:?}"),
        Ok(_) => panic!("expected Locked, got a second writer"),
    }
}

#[test]
fn a_second_writer_in_the_same_process_is_refused_and_touches_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = DumpWriter::create(dir.path(), meta(true), WriterOptions::default()).unwrap();
    first.append(&record(1)).unwrap();
    first.flush().unwrap();
    first.append(&record(2)).unwrap();

    // Locked, not AlreadyExists: the lock is taken before anything is looked at.
    let pid = std::process::id();
    assert_locked(
        DumpWriter::create(dir.path(), meta(true), WriterOptions::default()),
        dir.path(),
        pid,
    );
    assert_locked(DumpWriter::resume(dir.path()), dir.path(), pid);
    // A resume that went ahead would have cut the unflushed record 2 off the file under the first
    // writer; the first writer carries on as if nothing happened.
    first.append(&record(3)).unwrap();
    let manifest = first.finish().unwrap();
    assert_eq!(manifest.record_count, 3);
    assert_eq!(numbers(dir.path()), [1, 2, 3]);

    // Released with the writer.
    let mut second = DumpWriter::resume(dir.path()).unwrap();
    second.append(&record(4)).unwrap();
    second.finish().unwrap();
    assert_eq!(numbers(dir.path()), [1, 2, 3, 4]);
    // The lock file stays (deleting it could let two writers lock two different files).
    assert!(dir.path().join(LOCK_FILE).exists());
}

#[test]
fn two_threads_creating_one_dump_get_one_writer() {
    let dir = tempfile::tempdir().unwrap();
    let at = dir.path().join("dump");
    let barrier = Arc::new(Barrier::new(2));
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let (at, barrier) = (at.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                DumpWriter::create(&at, meta(true), WriterOptions::default())
            })
        })
        .collect();
    // Both results are held until both threads are done, so the winner's lock is held throughout.
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let writers = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(writers, 1, "{results:?}");
    for result in &results {
        if let Err(error) = result {
            assert!(
                matches!(error, DumpError::Locked { path, .. } if *path == at),
                "{error:?}"
            );
        }
    }
}

/// Environment variable that makes [`a_writer_in_another_process_holds_the_dump_until_it_dies`]
/// the child process it starts (this test binary, run again on that test alone).
const CHILD_DIR: &str = "BAL_REPLAY_DUMP_TEST_CHILD_WRITER_DIR";
/// What the child prints once it holds the lock.
const CHILD_READY: &str = "child writer holds the dump";
/// The test that is also the child, so the child is no test of its own.
const CHILD_TEST: &str = "a_writer_in_another_process_holds_the_dump_until_it_dies";

/// The child's side: resumes the dump, appends block 2, flushes and holds the writer until killed
/// (or until its stdin closes).
fn hold_the_dump_as_the_child(dir: &str) {
    let mut writer = DumpWriter::resume(dir).expect("the child resumes the dump");
    writer.append(&record(2)).expect("append");
    writer.flush().expect("flush");
    println!("{CHILD_READY}");
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
    drop(writer);
}

#[test]
fn a_writer_in_another_process_holds_the_dump_until_it_dies() {
    if let Ok(dir) = std::env::var(CHILD_DIR) {
        hold_the_dump_as_the_child(&dir);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut writer = DumpWriter::create(dir.path(), meta(true), WriterOptions::default()).unwrap();
    writer.append(&record(1)).unwrap();
    writer.finish().unwrap();

    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([CHILD_TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_DIR, dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let ready = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        // libtest may print `test a_writer_in_another_process_... ` on the same line first.
        .any(|line| line.ends_with(CHILD_READY));
    assert!(
        ready,
        "the child writer did not start: {:?}",
        child.wait().unwrap()
    );

    assert_locked(DumpWriter::resume(dir.path()), dir.path(), child.id());
    assert_locked(
        DumpWriter::create(dir.path(), meta(true), WriterOptions::default()),
        dir.path(),
        child.id(),
    );
    // Readers take no lock: what the child flushed is there.
    assert_eq!(numbers(dir.path()), [1, 2]);

    // A writer that dies (SIGKILL: no destructor runs) leaves no stale lock: the kernel releases it.
    child.kill().unwrap();
    child.wait().unwrap();
    let mut writer = DumpWriter::resume(dir.path()).unwrap();
    writer.append(&record(3)).unwrap();
    writer.finish().unwrap();
    assert_eq!(numbers(dir.path()), [1, 2, 3]);
}

/// Records the writer appends while readers read (several segments of them).
const RECORDS: u64 = 60;

/// What one read of a dump that is being written saw.
struct ReadStats {
    reads: u64,
    /// Reads during which a segment file the manifest listed was longer than the manifest said
    /// (frames appended or flushed past the reader's manifest): what used to be `SizeMismatch`.
    with_tail: u64,
    /// Reads whose manifest listed more than one segment (rotation happened under readers).
    multi_segment: u64,
}

#[test]
fn a_reader_sees_exactly_the_flushed_records_while_a_writer_appends() {
    let dir = tempfile::tempdir().unwrap();
    // Small segments, so that segments rotate under the readers too.
    let options = WriterOptions {
        segment_max_bytes: encode_record(&record(1)).len() as u64 * 4,
        ..WriterOptions::default()
    };
    let mut writer = DumpWriter::create(dir.path(), meta(true), options).unwrap();
    // The reader needs a manifest to open; the writer made it. Everything after is concurrent.
    let writer_thread = {
        std::thread::spawn(move || {
            let mut number = 0;
            while number < RECORDS {
                // Flushes after 1, 2 or 3 appends: unflushed frames sit in the file between them.
                for _ in 0..1 + number % 3 {
                    number += 1;
                    writer.append(&record(number)).unwrap();
                }
                writer.flush().unwrap();
            }
            writer.finish().unwrap();
            number
        })
    };

    let mut stats = ReadStats {
        reads: 0,
        with_tail: 0,
        multi_segment: 0,
    };
    while !writer_thread.is_finished() {
        let reader = DumpReader::open(dir.path())
            .unwrap_or_else(|e| panic!("read {}: open: {e}", stats.reads));
        let manifest = reader.manifest().clone();
        let records: Vec<BlockRecord> = reader
            .records()
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("read {}: {e}", stats.reads));
        // Exactly the manifest's records, in order, each whole.
        assert_eq!(records.len() as u64, manifest.record_count);
        for (index, got) in records.iter().enumerate() {
            assert_eq!(got.number(), index as u64 + 1);
        }
        if let Some(last) = records.last() {
            assert_eq!(last, &record(last.number()));
        }
        stats.reads += 1;
        let longer = manifest.segments.iter().any(|segment| {
            std::fs::metadata(dir.path().join(&segment.file)).is_ok_and(|m| m.len() > segment.bytes)
        });
        stats.with_tail += u64::from(longer);
        stats.multi_segment += u64::from(manifest.segments.len() > 1);
    }
    let written = writer_thread.join().unwrap();
    eprintln!(
        "{} reads, {} with segment bytes past their manifest, {} over several segments; {written} records written",
        stats.reads, stats.with_tail, stats.multi_segment
    );
    assert!(
        stats.with_tail > 0,
        "no read overlapped a write, so the test proved nothing ({} reads)",
        stats.reads
    );
    assert!(stats.multi_segment > 0, "no read saw a rotated segment");
    assert!(written >= RECORDS);
    assert_eq!(numbers(dir.path()), (1..=written).collect::<Vec<_>>());
}
