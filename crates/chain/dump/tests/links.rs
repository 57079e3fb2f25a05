//! The writer writes only its own files, in its own user's directory: never through a symbolic or
//! hard link planted in the dump directory, never into another user's directory. And a dump with
//! no records is refused by readers that want something to replay.
#![cfg(unix)]

mod common;

use std::{
    fs,
    os::unix::fs::{chown, symlink},
    path::{Path, PathBuf},
};

use bal_replay_dump::{DumpError, DumpReader, DumpWriter, LOCK_FILE, WriterOptions};
use common::{meta, record};

const PRECIOUS: &[u8] = b"a file outside the dump that is not the writer's to touch\n";

/// A file outside the dump directory, with known contents.
fn outside_file(outside: &Path) -> PathBuf {
    let path = outside.join("precious");
    fs::write(&path, PRECIOUS).unwrap();
    path
}

/// Asserts `result` is [`DumpError::UnsafeFile`] about `path` for `reason`, with a message naming
/// the file.
fn assert_unsafe<T: std::fmt::Debug>(result: Result<T, DumpError>, path: &Path, reason: &str) {
    let error = result.expect_err("the writer wrote a file that is not its own");
    let message = error.to_string();
    assert!(
        matches!(&error, DumpError::UnsafeFile { path: p, .. } if p == path),
        "expected UnsafeFile for {}, got {error:?}",
        path.display()
    );
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains(reason), "{message}");
}

fn create(dir: &Path) -> Result<DumpWriter, DumpError> {
    DumpWriter::create(dir, meta(true), WriterOptions::default())
}

/// A dump of blocks 1 and 2 in `dir`, its writer closed.
fn two_block_dump(dir: &Path) {
    let mut writer = create(dir).unwrap();
    writer.append(&record(1)).unwrap();
    writer.append(&record(2)).unwrap();
    writer.finish().unwrap();
}

#[test]
fn a_lock_file_planted_as_a_symbolic_link_is_refused_and_its_target_kept() {
    let (dir, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let target = outside_file(outside.path());
    let lock = dir.path().join(LOCK_FILE);
    symlink(&target, &lock).unwrap();

    assert_unsafe(create(dir.path()), &lock, "symbolic link");
    assert_eq!(fs::read(&target).unwrap(), PRECIOUS);
    assert!(!dir.path().join("manifest.json").exists());

    // The same for a writer resuming a dump whose lock file was replaced by a link.
    let (dump, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let target = outside_file(outside.path());
    two_block_dump(dump.path());
    let lock = dump.path().join(LOCK_FILE);
    fs::remove_file(&lock).unwrap();
    symlink(&target, &lock).unwrap();
    assert_unsafe(DumpWriter::resume(dump.path()), &lock, "symbolic link");
    assert_eq!(fs::read(&target).unwrap(), PRECIOUS);
}

#[test]
fn a_dangling_link_as_the_lock_file_creates_nothing_at_its_target() {
    let (dir, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let target = outside.path().join("created-by-the-writer");
    let lock = dir.path().join(LOCK_FILE);
    symlink(&target, &lock).unwrap();

    assert_unsafe(create(dir.path()), &lock, "symbolic link");
    assert!(!target.exists());
}

#[test]
fn a_temporary_manifest_planted_as_a_symbolic_link_is_refused_and_its_target_kept() {
    let (dir, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let target = outside_file(outside.path());
    let tmp = dir.path().join("manifest.json.tmp");
    symlink(&target, &tmp).unwrap();

    assert_unsafe(create(dir.path()), &tmp, "symbolic link");
    assert_eq!(fs::read(&target).unwrap(), PRECIOUS);
    assert!(!dir.path().join("manifest.json").exists());

    // Planted beside a dump being appended to: the flush fails, the dump keeps its last manifest.
    let (dump, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let target = outside_file(outside.path());
    two_block_dump(dump.path());
    let mut writer = DumpWriter::resume(dump.path()).unwrap();
    writer.append(&record(3)).unwrap();
    let tmp = dump.path().join("manifest.json.tmp");
    symlink(&target, &tmp).unwrap();
    assert_unsafe(writer.flush(), &tmp, "symbolic link");
    drop(writer);
    assert_eq!(fs::read(&target).unwrap(), PRECIOUS);
    let reader = DumpReader::open(dump.path()).unwrap();
    assert_eq!(reader.manifest().record_count, 2);
}

#[test]
fn a_temporary_manifest_planted_as_a_hard_link_is_refused_and_its_target_kept() {
    // Both in one temporary directory: a hard link needs one filesystem.
    let base = tempfile::tempdir().unwrap();
    let (dir, outside) = (base.path().join("dump"), base.path().join("outside"));
    fs::create_dir(&dir).unwrap();
    fs::create_dir(&outside).unwrap();
    let target = outside_file(&outside);
    let tmp = dir.join("manifest.json.tmp");
    fs::hard_link(&target, &tmp).unwrap();

    assert_unsafe(create(&dir), &tmp, "hard links");
    assert_eq!(fs::read(&target).unwrap(), PRECIOUS);
    assert_eq!(fs::read(&tmp).unwrap(), PRECIOUS);
}

#[test]
fn a_temporary_manifest_left_by_an_interrupted_writer_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    two_block_dump(dir.path());
    let tmp = dir.path().join("manifest.json.tmp");
    fs::write(&tmp, b"{\"half a manif").unwrap();

    let mut writer = DumpWriter::resume(dir.path()).unwrap();
    writer.append(&record(3)).unwrap();
    writer.finish().unwrap();
    assert!(!tmp.exists());
    assert_eq!(
        DumpReader::open(dir.path())
            .unwrap()
            .manifest()
            .record_count,
        3
    );
}

fn effective_uid() -> u32 {
    // SAFETY: geteuid cannot fail and touches no memory.
    unsafe { libc::geteuid() }
}

#[test]
fn a_directory_of_another_user_is_refused_naming_both_owners() {
    let uid = effective_uid();
    let given_away = tempfile::tempdir().unwrap();
    let (dir, owner) = if uid == 0 {
        // As root: a directory given to `nobody`, as another user's dump directory would be.
        chown(given_away.path(), Some(65534), Some(65534)).unwrap();
        (given_away.path().to_path_buf(), 65534)
    } else {
        // As anyone else, the root directory is another user's.
        (PathBuf::from("/"), 0)
    };
    let error = create(&dir).expect_err("wrote a dump into another user's directory");
    let message = error.to_string();
    assert!(
        matches!(&error, DumpError::ForeignDirectory { path, owner: o, uid: u } if *path == dir && *o == owner && *u == uid),
        "{error:?}"
    );
    assert!(message.contains(&dir.display().to_string()), "{message}");
    assert!(message.contains(&format!("uid {owner}")), "{message}");
    assert!(message.contains(&format!("uid {uid}")), "{message}");
    assert!(!dir.join(LOCK_FILE).exists());
    assert!(!dir.join("manifest.json").exists());
}

#[test]
fn resuming_a_dump_in_another_users_directory_is_refused() {
    let dump = tempfile::tempdir().unwrap();
    two_block_dump(dump.path());
    let before = fs::read(dump.path().join("manifest.json")).unwrap();
    let other = if effective_uid() == 0 { 65534 } else { 0 };
    match chown(dump.path(), Some(other), None) {
        Ok(()) => {
            let error = DumpWriter::resume(dump.path()).unwrap_err();
            assert!(
                matches!(&error, DumpError::ForeignDirectory { owner, .. } if *owner == other),
                "{error:?}"
            );
        }
        // Not root: giving a directory away is refused, which is what this test needs root for;
        // the refusal of another user's directory is checked through `create` above.
        Err(error) => assert_eq!(error.kind(), std::io::ErrorKind::PermissionDenied),
    }
    assert_eq!(fs::read(dump.path().join("manifest.json")).unwrap(), before);
}

#[test]
fn a_dump_with_no_records_is_refused_by_expect_records_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    create(dir.path()).unwrap().finish().unwrap();

    let error = DumpReader::open(dir.path())
        .unwrap()
        .expect_records()
        .unwrap_err();
    assert!(
        matches!(&error, DumpError::NoRecords { path } if path == dir.path()),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        format!(
            "dump {} holds no block records (an interrupted write?)",
            dir.path().display()
        )
    );

    let dump = tempfile::tempdir().unwrap();
    two_block_dump(dump.path());
    let reader = DumpReader::open(dump.path())
        .unwrap()
        .expect_records()
        .unwrap();
    assert_eq!(reader.manifest().record_count, 2);
}
