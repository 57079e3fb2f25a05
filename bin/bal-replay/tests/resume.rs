//! A `bal-replay run` killed with SIGKILL at any moment (mid-batch, mid-commit) leaves the state
//! exactly at a batch boundary, and running the same command again resumes from there and ends
//! with the state an uninterrupted run leaves. The kills are real: the binary is killed at random
//! points of the replay (after a random number of commits, plus a random part of a batch). A
//! record the state already holds that fails its checksum on resume stops the run with the
//! reader's error, naming the segment file and the frame's offset.

mod common;

use bal_replay_dump::{DumpReader, DumpWriter, FRAME_HEADER_LEN, FrameHeader, SEGMENT_HEADER_LEN};
use common::{
    Digest, assert_ok, boundary_digests, chain, copy_state, digest, run_command, small_config,
};
use std::{
    path::Path,
    process::ExitStatus,
    time::{Duration, Instant},
};

const BLOCKS: u64 = 12;
const BATCH: usize = 2;
const KILLS: usize = 5;

/// A small xorshift, seeded from the clock and printed, so a failing run can be repeated.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Bytes in the write-ahead log files of the RocksDB state at `state` (0 where unreadable): it
/// grows with each commit.
fn wal_bytes(state: &Path) -> u64 {
    std::fs::read_dir(state)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// The binary, uninterrupted, over the state at `state`: it must end at `last`. Most of a run is
/// its start (loading, warming up); the window worth killing in opens at the first write to the
/// state's write-ahead log. Returns the time a batch takes after that first write.
fn time_an_uninterrupted_run(dump: &Path, state: &Path, last: &Digest) -> Duration {
    let start = Instant::now();
    let mut child = run_command(dump, state, BATCH)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let (mut first_write, mut wal) = (None, None);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        let now = wal_bytes(state);
        match wal {
            None => wal = Some(now),
            Some(before) if first_write.is_none() && now != before => {
                first_write = Some(start.elapsed())
            }
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let duration = start.elapsed();
    assert!(status.success(), "uninterrupted run: {status}");
    assert_eq!(&digest(state), last);
    eprintln!("an uninterrupted run takes {duration:?}, its first write at {first_write:?}");
    duration.saturating_sub(first_write.unwrap_or_default()) / (BLOCKS as u32 / BATCH as u32)
}

/// Runs the binary over `state` and SIGKILLs it after `writes` writes to the write-ahead log
/// (commits) plus `extra`; returns whether it was still running when killed, and its status.
fn kill_a_run(dump: &Path, state: &Path, writes: u64, extra: Duration) -> (bool, ExitStatus) {
    let mut child = run_command(dump, state, BATCH)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let (mut seen, mut before) = (0, wal_bytes(state));
    while seen < writes && child.try_wait().unwrap().is_none() {
        let now = wal_bytes(state);
        if now != before {
            seen += 1;
            before = now;
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    std::thread::sleep(extra);
    let was_running = child.try_wait().unwrap().is_none();
    // SIGKILL on Unix: no destructor, no flush, no chance to finish the batch.
    child.kill().unwrap();
    (was_running, child.wait().unwrap())
}

/// Running the same command again over the state kill `kill` left at batch boundary `at` (of
/// `boundaries`, the last `last`) ends at `last`, saying what it skipped.
fn assert_resumes_to_the_end(
    dump: &Path,
    state: &Path,
    kill: usize,
    at: usize,
    boundaries: usize,
    last: &Digest,
) {
    let out = run_command(dump, state, BATCH).output().unwrap();
    let stdout = assert_ok(&out, &format!("resume after kill {kill}"));
    assert_eq!(
        &digest(state),
        last,
        "kill {kill}: resumed to another state"
    );
    if at == boundaries - 1 {
        assert!(stdout.contains("nothing to replay"), "{stdout}");
    } else if at > 0 {
        assert!(
            stdout.contains(&format!("skipped {} blocks", at * BATCH)),
            "{stdout}"
        );
    }
}

#[test]
fn a_killed_run_stops_at_a_batch_boundary_and_resumes_to_the_same_state() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump, pristine) = chain(tmp.path(), &small_config(BLOCKS, 3));
    // The uninterrupted run, in process: the state's digest at every batch boundary.
    let boundaries = boundary_digests(&dump, &pristine, &tmp.path().join("reference"), BATCH);
    assert_eq!(boundaries.len(), 1 + BLOCKS as usize / BATCH);
    let last = boundaries.last().unwrap().clone();

    // The binary, uninterrupted: the same end, and when it writes.
    let timed = tmp.path().join("timed");
    copy_state(&pristine, &timed);
    let per_batch = time_an_uninterrupted_run(&dump, &timed, &last);

    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    eprintln!("kill points seeded with {seed}");
    let mut rng = Rng(seed);
    let mut interrupted_between = 0;
    for i in 0..KILLS {
        let state = tmp.path().join(format!("killed-{i}"));
        copy_state(&pristine, &state);
        // A random point of the replay: after a random number of writes to the write-ahead log
        // (commits), plus a random part of a batch's time, so the kill lands during a batch's
        // execution or during a commit. Startup time varies too much for a plain delay.
        let writes = 1 + rng.next() % (boundaries.len() as u64 - 1);
        let extra = Duration::from_micros(rng.next() % per_batch.as_micros().max(1) as u64);
        let (was_running, status) = kill_a_run(&dump, &state, writes, extra);
        let delay = format!("{writes} writes + {extra:?}");

        let after_kill = digest(&state);
        let at = boundaries.iter().position(|b| *b == after_kill);
        assert!(
            at.is_some(),
            "kill {i} after {delay} (status {status}) left the state at {after_kill:?}, not at a batch boundary"
        );
        let at = at.unwrap();
        eprintln!(
            "kill {i} after {delay}: was running {was_running}, state at boundary {at} (block {:?})",
            after_kill.1
        );
        if was_running && 0 < at && at < boundaries.len() - 1 {
            interrupted_between += 1;
        }
        assert_resumes_to_the_end(&dump, &state, i, at, boundaries.len(), &last);
    }
    eprintln!("{interrupted_between} of {KILLS} kills stopped a run between two batches");
    // Kills that all landed before the first commit or after the last would prove nothing about
    // a stop mid-replay.
    assert!(
        interrupted_between > 0,
        "no kill landed between two batches (seed {seed})"
    );
}

/// The offset of each frame of the segment file at `path`, in order.
fn frame_offsets(path: &Path) -> Vec<u64> {
    let bytes = std::fs::read(path).unwrap();
    let mut offsets = Vec::new();
    let mut at = SEGMENT_HEADER_LEN;
    while at < bytes.len() as u64 {
        let start = at as usize;
        let header: [u8; FRAME_HEADER_LEN as usize] = bytes
            [start..start + FRAME_HEADER_LEN as usize]
            .try_into()
            .unwrap();
        offsets.push(at);
        at += FRAME_HEADER_LEN + u64::from(FrameHeader::from_bytes(header).compressed_len);
    }
    offsets
}

#[test]
fn a_held_record_that_fails_its_checksum_on_resume_is_named_by_its_file_and_offset() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump, pristine) = chain(tmp.path(), &small_config(6, 4));
    let reader = DumpReader::open(&dump).unwrap();
    let first = reader.manifest().first_block.unwrap();
    let segment = dump.join(&reader.manifest().segments[0].file);
    drop(reader);

    // The state replays the dump's first four blocks: a copy of the dump cut back to them.
    let partial = tmp.path().join("partial");
    std::fs::create_dir(&partial).unwrap();
    for entry in std::fs::read_dir(&dump).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, partial.join(path.file_name().unwrap())).unwrap();
    }
    let mut writer = DumpWriter::resume(&partial).unwrap();
    assert_eq!(writer.truncate_after(Some(first + 3)).unwrap(), 2);
    drop(writer);
    let state = tmp.path().join("state");
    copy_state(&pristine, &state);
    assert_ok(
        &run_command(&partial, &state, BATCH).output().unwrap(),
        "replaying the first four blocks",
    );
    assert_eq!(digest(&state).1, Some(first + 3));

    // A byte inside the payload of the third record, one the state already holds, changes.
    let offsets = frame_offsets(&segment);
    assert_eq!(offsets.len(), 6, "{offsets:?}");
    let corrupt_at = offsets[2] + FRAME_HEADER_LEN + 5;
    let mut bytes = std::fs::read(&segment).unwrap();
    bytes[corrupt_at as usize] ^= 0xff;
    std::fs::write(&segment, bytes).unwrap();

    let out = run_command(&dump, &state, BATCH).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "the resume read a corrupt record: {stderr}"
    );
    let named = format!(
        "{}: frame at byte {}: checksum mismatch",
        segment.display(),
        offsets[2]
    );
    assert!(stderr.contains(&named), "expected {named:?} in: {stderr}");
    assert!(!stderr.contains("does not build on this state"), "{stderr}");
    // The state is where the partial replay left it.
    assert_eq!(digest(&state).1, Some(first + 3));
}
