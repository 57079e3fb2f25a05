//! Repeatable runs: every run starts from the same pre-state, with a cold page cache on request.

use crate::EngineError;
use bal_replay_state::{RocksOptions, RocksStore};
use std::path::{Path, PathBuf};

/// A throwaway copy of a RocksDB flat state, for one run that must leave the state as it was
/// (`run --rewind`, each run of a bench).
///
/// The copy is a RocksDB checkpoint (table files hard-linked, so no data is copied) of the state,
/// into a directory this process creates fresh beside the state: on the
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

impl ScratchState {
    /// Checkpoints the RocksDB state at `state` into a fresh directory next to it, named after the
    /// state and `purpose`. The state's contents are never written; its memtables are flushed.
    pub fn checkpoint_of(state: &Path, purpose: &str) -> Result<Self, EngineError> {
        let err = |path: &Path, source| EngineError::Rewind {
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
        let prefix = format!("{}.{purpose}-", name.to_string_lossy());
        // `tempdir_in` creates the directory itself (mkdir, which fails rather than reuse an
        // existing path) under a random name, so it is ours alone.
        let dir = tempfile::Builder::new()
            .prefix(&prefix)
            .tempdir_in(parent)
            .map_err(|e| err(parent, e))?;
        let db = dir.path().join("state");
        // Opened read-write, yet never written to (no commit, no meta): a checkpoint of a
        // read-only open would silently miss the commits still only in the write-ahead log, so
        // the checkpoint flushes them into table files first. The contents stay the same.
        let pristine = RocksStore::open(
            &state,
            &RocksOptions {
                // Nothing is read through it: a checkpoint only flushes, lists and links files.
                block_cache_bytes: 1 << 20,
                ..RocksOptions::default()
            },
        )?;
        // RocksDB creates `db` itself and refuses an existing path.
        pristine.checkpoint(&db)?;
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

    /// A missing state is an error naming it, and nothing is created.
    #[test]
    fn a_missing_state_is_refused_naming_it() {
        let parent = tempfile::tempdir().unwrap();
        let missing = parent.path().join("nope");
        match ScratchState::checkpoint_of(&missing, "rewind") {
            Err(EngineError::Rewind { path, .. }) => assert!(path.ends_with("nope"), "{path}"),
            other => panic!("expected a rewind error, got {other:?}"),
        }
        assert!(names(parent.path()).is_empty());
    }
}
