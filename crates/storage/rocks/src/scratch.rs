//! Repeatable runs: every run starts from the same pre-state, with a cold page cache on request.

use crate::{RocksOptions, RocksStore};
use bal_replay_state::StateError;
use std::{
    fs::File,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

/// A throwaway copy of a RocksDB flat state, for one run that must leave the state as it was
/// (`run --rewind`, each run of a bench).
///
/// The copy is a RocksDB checkpoint (table files hard-linked, so no data is copied) of the state
/// opened read-only, so the state is never written (`bench` and `study` promise as much), into a
/// directory this process creates fresh beside the state: on the
/// state's filesystem, so the hard links work, and under a unique name, so two runs (over
/// `state.v1` and `state.v2`, or twice over one state) never share it. Dropping it removes that
/// directory and nothing else: no path this process did not create is ever deleted, whatever the
/// state is called (`.`, `..`, `x.rewind`) and whatever lies beside it.
///
/// A process killed during a run leaves the directory behind (named after the state and the
/// purpose, e.g. `state.rewind-Ab12Cd`); it is never reused, so removing it is the user's call.
#[derive(Debug)]
pub struct ScratchState {
    /// Created by us; removed with everything in it on drop.
    dir: tempfile::TempDir,
    /// The checkpoint, inside `dir`.
    db: PathBuf,
}

/// Why a [`ScratchState`] could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ScratchError {
    /// A file-system step of the copy failed (resolving the state, its turn, the copy's directory).
    #[error("cannot copy the state at {path}: {source}")]
    Io {
        /// The directory.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Another handle kept the state open read-write past the wait.
    #[error(
        "cannot copy the state at {path}: another process has held it open read-write for {waited_s} s (a `run` without --rewind or an import writing it?); run again once it is done"
    )]
    InUse {
        /// The state.
        path: String,
        /// How long the copy waited.
        waited_s: u64,
    },
    /// Opening the state or taking its checkpoint failed.
    #[error(transparent)]
    State(#[from] StateError),
}

/// How long a scratch copy waits for a handle that holds the state open read-write outside these
/// copies (a `run` without `--rewind`, an import) before it gives up, naming the state.
const HELD_ELSEWHERE_WAIT: Duration = Duration::from_secs(60);

/// How often it tries again meanwhile.
const HELD_ELSEWHERE_POLL: Duration = Duration::from_millis(25);

impl ScratchState {
    /// Checkpoints the RocksDB state at `state` into a fresh directory next to it, named after the
    /// state and `purpose`. The state is only read: opened read-only, its table files hard-linked,
    /// its manifest and write-ahead log copied.
    ///
    /// Any number of runs and processes may copy one state at once; each waits for a handle that
    /// holds the state open read-write (whose flushes and compactions would change the files
    /// under the copy).
    pub fn checkpoint_of(state: &Path, purpose: &str) -> Result<Self, ScratchError> {
        Self::checkpoint_waiting(state, purpose, HELD_ELSEWHERE_WAIT)
    }

    /// [`ScratchState::checkpoint_of`], waiting at most `wait` for a handle that holds the state
    /// open read-write outside these copies.
    fn checkpoint_waiting(
        state: &Path,
        purpose: &str,
        wait: Duration,
    ) -> Result<Self, ScratchError> {
        let err = |path: &Path, source| ScratchError::Io {
            path: path.display().to_string(),
            source,
        };
        // `.` and `..` have no useful parent or name until resolved; symlinks resolve to the
        // directory that holds the data, whose filesystem the hard links must be on.
        let state = state.canonicalize().map_err(|e| err(state, e))?;
        let (Some(parent), Some(name)) = (state.parent(), state.file_name()) else {
            return Err(err(
                &state,
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "the state is a filesystem root, which has no directory beside it for a scratch copy",
                ),
            ));
        };
        let pristine = open_when_free(&state, wait)?;
        let prefix = format!("{}.{purpose}-", name.to_string_lossy());
        // `tempdir_in` creates the directory itself (mkdir, which fails rather than reuse an
        // existing path) under a random name, so it is ours alone.
        let dir = tempfile::Builder::new()
            .prefix(&prefix)
            .tempdir_in(parent)
            .map_err(|e| err(parent, e))?;
        let db = dir.path().join("state");
        // RocksDB creates `db` itself and refuses an existing path.
        read_only_checkpoint(&pristine, &db)?;
        drop(pristine);
        Ok(Self { dir, db })
    }

    /// The copy's database directory, to open read-write.
    pub fn path(&self) -> &Path {
        &self.db
    }

    /// The directory this process created to hold the copy (removed on drop).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// The state opened read-only for a checkpoint, once no handle holds it read-write: a handle
/// outside these copies (a `run` without `--rewind`, an import) is waited for up to `wait`, then
/// the copy is refused naming the state. A read-only open writes nothing (no `LOCK` taken, no
/// `LOG`, no flush, no new manifest or OPTIONS file), so the state's files stay as they were.
fn open_when_free(state: &Path, wait: Duration) -> Result<RocksStore, ScratchError> {
    let options = RocksOptions {
        // Nothing is read through it: a checkpoint only lists and links files.
        block_cache_bytes: 1 << 20,
        read_only: true,
        ..RocksOptions::default()
    };
    let lock = state.join("LOCK");
    let start = Instant::now();
    while lock_is_held(&lock) {
        if start.elapsed() >= wait {
            return Err(ScratchError::InUse {
                path: state.display().to_string(),
                waited_s: start.elapsed().as_secs(),
            });
        }
        std::thread::sleep(HELD_ELSEWHERE_POLL);
    }
    Ok(RocksStore::open(state, &options)?)
}

/// RocksDB's checkpoint of a read-only store, with the write-ahead logs it leaves out. A
/// read-only handle has replayed the logs into memory but cannot flush them, and RocksDB's
/// checkpoint only takes logs the handle itself writes, so the commits still only in the logs
/// would be silently missing: they are copied beside the checkpoint's manifest, whose recorded
/// log number tells the copy's read-write open which to replay. Copied, not linked: a read-write
/// open of the copy may rewrite its logs, which must never reach the state's.
fn read_only_checkpoint(store: &RocksStore, dst: &Path) -> Result<(), ScratchError> {
    let src = store.path();
    rocksdb::checkpoint::Checkpoint::new(store.db())
        .and_then(|c| c.create_checkpoint(dst))
        .map_err(|source| StateError::Checkpoint {
            path: dst.to_path_buf(),
            source: source.into(),
        })?;
    let io = |path: &Path, source| ScratchError::Io {
        path: path.display().to_string(),
        source,
    };
    for entry in std::fs::read_dir(src).map_err(|e| io(src, e))? {
        let entry = entry.map_err(|e| io(src, e))?;
        let name = entry.file_name();
        let is_log = name
            .to_str()
            .and_then(|n| n.strip_suffix(".log"))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        let to = dst.join(&name);
        if is_log && !to.exists() {
            // Not `fs::copy`, which would give the copy the state's permissions: a read-only
            // state's log would be a log the copy's own open could not rewrite.
            let mut from = File::open(entry.path()).map_err(|e| io(&entry.path(), e))?;
            let mut into = File::create_new(&to).map_err(|e| io(&to, e))?;
            std::io::copy(&mut from, &mut into).map_err(|e| io(&to, e))?;
        }
    }
    Ok(())
}

/// Whether a process (this one included) holds the `fcntl` lock RocksDB takes on a state's
/// `LOCK` file when it opens the state read-write, as `/proc/locks` lists it (device and inode).
/// Read from there rather than asked with `fcntl` on the file: this process closing a descriptor
/// of `LOCK` would drop a lock a handle of its own holds. Where `/proc/locks` cannot be read (not
/// Linux), or the state has no `LOCK` file, no holder is known and none is waited for.
fn lock_is_held(lock: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let (Ok(meta), Ok(locks)) = (
        std::fs::metadata(lock),
        std::fs::read_to_string("/proc/locks"),
    ) else {
        return false;
    };
    let dev = meta.dev();
    // glibc's `major` and `minor`; /proc/locks prints them in hex, the inode in decimal.
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let id = format!("{major:02x}:{minor:02x}:{}", meta.ino());
    locks
        .lines()
        .any(|line| line.split_whitespace().any(|field| field == id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bal_replay_state::{AppliedBlock, KeyScheme, StateChanges, StateReader, StateWriter};
    use std::collections::BTreeSet;

    fn names(dir: &Path) -> BTreeSet<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }

    fn state_with_a_commit(path: &Path) {
        let store = RocksStore::create(path, KeyScheme::Plain, &RocksOptions::default()).unwrap();
        let changes = StateChanges {
            block_hashes: vec![(4, alloy_primitives::B256::repeat_byte(4))],
            ..StateChanges::default()
        };
        store
            .commit_block(
                &changes,
                AppliedBlock::new(4, alloy_primitives::B256::repeat_byte(4), 1),
            )
            .unwrap();
    }

    /// Two scratch copies of one state are two fresh directories beside it, each holding the
    /// state's contents; writing one changes neither the state nor the other; dropping them leaves
    /// the parent directory exactly as it was.
    #[test]
    fn scratch_copies_are_fresh_unique_and_removed_on_drop() {
        let parent = tempfile::tempdir().unwrap();
        let state = parent.path().join("x.rewind");
        state_with_a_commit(&state);
        // A sibling with the name the old code used for its scratch copy, holding a user's file.
        let sibling = parent.path().join("x.rewind.rewind");
        std::fs::create_dir(&sibling).unwrap();
        std::fs::write(sibling.join("notes.txt"), b"mine").unwrap();
        let before = names(parent.path());
        let digest = RocksStore::open_read_only(&state)
            .unwrap()
            .content_digest()
            .unwrap();

        let a = ScratchState::checkpoint_of(&state, "rewind").unwrap();
        let b = ScratchState::checkpoint_of(&state, "rewind").unwrap();
        assert_ne!(a.dir(), b.dir());
        for scratch in [&a, &b] {
            assert_eq!(scratch.dir().parent().unwrap(), parent.path());
            let name = scratch.dir().file_name().unwrap().to_string_lossy();
            assert!(name.starts_with("x.rewind.rewind-"), "{name}");
            assert!(!before.contains(name.as_ref()), "{name} existed before");
        }
        let copy = RocksStore::open(a.path(), &RocksOptions::default()).unwrap();
        assert_eq!(copy.content_digest().unwrap(), digest);
        copy.commit(&StateChanges::default(), 5).unwrap();
        drop(copy);
        let other = RocksStore::open_read_only(b.path()).unwrap();
        assert_eq!(other.applied_block().unwrap(), Some(4));
        drop(other);

        let (dir_a, dir_b) = (a.dir().to_path_buf(), b.dir().to_path_buf());
        drop((a, b));
        assert!(!dir_a.exists() && !dir_b.exists());
        assert_eq!(names(parent.path()), before);
        assert_eq!(std::fs::read(sibling.join("notes.txt")).unwrap(), b"mine");
        let state = RocksStore::open_read_only(&state).unwrap();
        assert_eq!(state.content_digest().unwrap(), digest);
        assert_eq!(state.applied_block().unwrap(), Some(4));
    }

    /// Eight copies of one state taken at once (as two benches and a `run --rewind` over it do)
    /// all succeed, each holding the state's contents, and the state is unchanged.
    #[test]
    fn copies_of_one_state_taken_at_once_all_succeed() {
        let parent = tempfile::tempdir().unwrap();
        let state = parent.path().join("state");
        state_with_a_commit(&state);
        let digest = RocksStore::open_read_only(&state)
            .unwrap()
            .content_digest()
            .unwrap();
        let barrier = std::sync::Barrier::new(8);
        let copies: Vec<ScratchState> = std::thread::scope(|s| {
            let threads: Vec<_> = (0..8)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        ScratchState::checkpoint_of(&state, "bench-run")
                    })
                })
                .collect();
            threads
                .into_iter()
                .map(|t| t.join().unwrap().expect("a copy taken beside others"))
                .collect()
        });
        for copy in &copies {
            let store = RocksStore::open_read_only(copy.path()).unwrap();
            assert_eq!(store.content_digest().unwrap(), digest);
            assert_eq!(store.applied_block().unwrap(), Some(4));
        }
        drop(copies);
        assert_eq!(names(parent.path()), BTreeSet::from(["state".to_owned()]));
        let state = RocksStore::open_read_only(&state).unwrap();
        assert_eq!(state.content_digest().unwrap(), digest);
    }

    /// A state held open read-write outside the copies is waited for: released within the wait,
    /// the copy is taken; held past it, the copy is refused naming the state, and nothing is left
    /// beside it.
    #[test]
    fn a_state_held_open_elsewhere_is_waited_for_then_refused() {
        let parent = tempfile::tempdir().unwrap();
        let state = parent.path().join("state");
        state_with_a_commit(&state);
        let holder = RocksStore::open(&state, &RocksOptions::default()).unwrap();
        let copy = std::thread::scope(|s| {
            let copy = s.spawn(|| {
                ScratchState::checkpoint_waiting(&state, "rewind", Duration::from_secs(30))
            });
            std::thread::sleep(Duration::from_millis(300));
            drop(holder);
            copy.join().unwrap()
        })
        .expect("the copy once the holder closed");
        let store = RocksStore::open_read_only(copy.path()).unwrap();
        assert_eq!(store.applied_block().unwrap(), Some(4));
        drop((store, copy));

        let _holder = RocksStore::open(&state, &RocksOptions::default()).unwrap();
        let start = Instant::now();
        match ScratchState::checkpoint_waiting(&state, "rewind", Duration::from_millis(200)) {
            Err(ScratchError::InUse { path, .. }) => {
                assert_eq!(Path::new(&path), state.canonicalize().unwrap());
            }
            other => panic!("expected the state in use, got {other:?}"),
        }
        assert!(start.elapsed() >= Duration::from_millis(200));
        assert_eq!(names(parent.path()), BTreeSet::from(["state".to_owned()]));
    }

    /// Taking a copy of a state whose last commit is only in its write-ahead log reads the state
    /// and nothing more: every file keeps its contents and modification time, none is added (the
    /// read-write open it took before flushed the log into a new table file and rewrote the
    /// manifest, OPTIONS and LOG), and the copy holds the commit.
    #[test]
    fn a_copy_leaves_every_file_of_the_state_as_it_was() {
        let parent = tempfile::tempdir().unwrap();
        let state = parent.path().join("state");
        state_with_a_commit(&state);
        let files = || -> Vec<(String, std::time::SystemTime, Vec<u8>)> {
            let mut files: Vec<_> = std::fs::read_dir(&state)
                .unwrap()
                .map(|e| {
                    let e = e.unwrap();
                    (
                        e.file_name().to_string_lossy().into_owned(),
                        e.metadata().unwrap().modified().unwrap(),
                        std::fs::read(e.path()).unwrap(),
                    )
                })
                .collect();
            files.sort();
            files
        };
        let before = files();
        assert!(
            before
                .iter()
                .any(|(name, _, bytes)| name.ends_with(".log") && !bytes.is_empty())
        );

        let copy = ScratchState::checkpoint_of(&state, "bench-run").unwrap();
        let store = RocksStore::open(copy.path(), &RocksOptions::default()).unwrap();
        assert_eq!(store.applied_block().unwrap(), Some(4));
        store.commit(&StateChanges::default(), 5).unwrap();
        drop((store, copy));
        assert_eq!(files(), before);
    }

    /// A missing state is an error naming it, and nothing is created.
    #[test]
    fn a_missing_state_is_refused_naming_it() {
        let parent = tempfile::tempdir().unwrap();
        let missing = parent.path().join("nope");
        match ScratchState::checkpoint_of(&missing, "rewind") {
            Err(ScratchError::Io { path, .. }) => assert!(path.ends_with("nope"), "{path}"),
            other => panic!("expected a rewind error, got {other:?}"),
        }
        assert!(names(parent.path()).is_empty());
    }
}
