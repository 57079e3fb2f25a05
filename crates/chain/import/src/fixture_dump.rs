//! Many fixtures at once: into one dump with a seeded state per block, or verified one by one.

use crate::{ImportError, import_fixture, seed_rocks_state, verify_fixture};
use bal_replay_dump::{BlockRecord, DumpMeta, DumpReader, DumpWriter, Manifest, WriterOptions};
use bal_replay_executor::{BlockCheck, BlockOutput, ChainConfig};
use bal_replay_fixtures::{Fixture, fixture_dirs};
use bal_replay_rocks::RocksOptions;
use std::path::{Path, PathBuf};

/// Reads the fixtures in `dirs`, in block order. Two directories of one block are an error.
pub fn read_fixtures(dirs: &[PathBuf]) -> Result<Vec<Fixture>, ImportError> {
    let mut fixtures = dirs
        .iter()
        .map(Fixture::read)
        .collect::<Result<Vec<_>, _>>()?;
    fixtures.sort_by_key(|f| f.number());
    if let Some(pair) = fixtures.windows(2).find(|w| w[0].number() == w[1].number()) {
        return Err(ImportError::DuplicateBlock {
            block: pair[0].number(),
            first: pair[0].dir.clone(),
            second: pair[1].dir.clone(),
        });
    }
    Ok(fixtures)
}

/// Imports every fixture ([`import_fixture`]), calling `on_block` after each with its record and
/// whether it wipes an existing account's storage ([`wipes_existing_storage`]): all of them
/// before anything is written, so that a bad fixture leaves no half-written dump.
pub fn import_fixtures(
    config: &ChainConfig,
    fixtures: &[Fixture],
    mut on_block: impl FnMut(&BlockRecord, bool),
) -> Result<Vec<BlockRecord>, ImportError> {
    fixtures
        .iter()
        .map(|fixture| {
            let (record, output) = import_fixture(config, fixture)?;
            on_block(&record, wipes_existing_storage(&record, &output));
            Ok(record)
        })
        .collect()
}

/// Whether executing `record`'s block wiped the storage of an account that existed before it
/// (SELFDESTRUCT before Cancun, EIP-6780). A BAL lists only the slots a block touched, so it
/// cannot express such a wipe: a later transaction's read of an untouched slot of the account
/// would see the old storage. Such a block replays correctly only sequentially.
pub fn wipes_existing_storage(record: &BlockRecord, output: &BlockOutput) -> bool {
    output.changes.wiped_storage.iter().any(|wiped| {
        record
            .pre_state
            .accounts
            .iter()
            .any(|pre| pre.address == *wiped)
    })
}

/// Writes `records` as a dump of independent blocks in `out` (source `"fixture"`) and, per block,
/// a RocksDB state seeded with its pre-state in `state/<number>` ([`seed_rocks_state`]), calling
/// `on_record` after each. Returns the dump's manifest.
///
/// The dump appears whole or not at all: it is written in a fresh directory beside `out`
/// (`<out>.partial-<random>`) and renamed to `out` only once every record and state is written and
/// the finished dump reads back with all of them. `out` must not exist, or be an empty directory
/// ([`ImportError::AlreadyExists`] otherwise). On error nothing is left at `out`, and the block
/// states, and `state` itself, that this call created are removed.
pub fn write_fixture_dump(
    config: &ChainConfig,
    records: &[BlockRecord],
    out: &Path,
    state: &Path,
    mut on_record: impl FnMut(),
) -> Result<Manifest, ImportError> {
    check_new_output(out)?;
    let meta = DumpMeta {
        chain_id: config.chain_id,
        chained: false,
        source: "fixture".into(),
        schedule: None,
    };
    let name = out
        .file_name()
        .ok_or_else(|| ImportError::AlreadyExists { path: out.into() })?
        .to_string_lossy();
    let parent = match out.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let mut created = CreatedStates::default();
    std::fs::create_dir_all(parent).map_err(|source| output_io(parent, source))?;
    // Removed on drop, with everything written in it, unless renamed into place.
    let staging = tempfile::Builder::new()
        .prefix(&format!("{name}.partial-"))
        .tempdir_in(parent)
        .map_err(|source| output_io(parent, source))?;
    let result = (|| {
        let mut writer = DumpWriter::create(staging.path(), meta, WriterOptions::default())?;
        if !state.exists() {
            std::fs::create_dir_all(state).map_err(|source| output_io(state, source))?;
            created.root = Some(state.to_path_buf());
        }
        for record in records {
            writer.append(record)?;
            let db = state.join(record.number().to_string());
            if !db.exists() {
                created.blocks.push(db.clone());
            }
            seed_rocks_state(&db, record, config.chain_id, &RocksOptions::default())?;
            on_record();
        }
        let manifest = writer.finish()?;
        let read_back = DumpReader::open(staging.path())?.manifest().record_count;
        if read_back != records.len() as u64 {
            return Err(ImportError::Incomplete {
                dir: staging.path().to_path_buf(),
                expected: records.len() as u64,
                found: read_back,
            });
        }
        Ok(manifest)
    })();
    let placed = result.and_then(|manifest| {
        let built = staging.keep();
        std::fs::rename(&built, out).map_err(|source| {
            let _ = std::fs::remove_dir_all(&built);
            output_io(out, source)
        })?;
        Ok(manifest)
    });
    if placed.is_ok() {
        created.keep();
    }
    placed
}

/// An import's output must not exist, or be an empty directory (which the output replaces).
fn check_new_output(out: &Path) -> Result<(), ImportError> {
    let taken = || ImportError::AlreadyExists { path: out.into() };
    match std::fs::symlink_metadata(out) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(output_io(out, source)),
        Ok(metadata) if !metadata.is_dir() => Err(taken()),
        Ok(_) => {
            let mut entries = std::fs::read_dir(out).map_err(|source| output_io(out, source))?;
            match entries.next() {
                None => Ok(()),
                Some(_) => Err(taken()),
            }
        }
    }
}

fn output_io(path: &Path, source: std::io::Error) -> ImportError {
    ImportError::Output {
        path: path.into(),
        source,
    }
}

/// The block states (and the states directory) a fixture import created: removed if it fails.
#[derive(Debug, Default)]
struct CreatedStates {
    root: Option<PathBuf>,
    blocks: Vec<PathBuf>,
}

impl CreatedStates {
    /// The import succeeded: its states stay.
    fn keep(&mut self) {
        self.root = None;
        self.blocks.clear();
    }
}

impl Drop for CreatedStates {
    fn drop(&mut self) {
        // Only what this import created: a block state that was there before is not ours.
        for path in self.blocks.iter().chain(&self.root) {
            // Best effort, as the staged dump's removal: the import's own error is what is
            // reported.
            let _ = std::fs::remove_dir_all(path);
        }
    }
}

/// Every fixture under a directory, verified one by one ([`verify_fixture`]): an iterator of the
/// fixture directory's name and its outcome.
#[derive(Debug)]
pub struct FixtureChecks {
    config: ChainConfig,
    dirs: std::vec::IntoIter<PathBuf>,
    /// Holds each block's RocksDB state while it is verified.
    scratch: tempfile::TempDir,
}

impl FixtureChecks {
    /// The fixtures under `dir` (see [`fixture_dirs`]); none is an error.
    pub fn new(config: ChainConfig, dir: &Path) -> Result<Self, ImportError> {
        let dirs = fixture_dirs(dir)?;
        if dirs.is_empty() {
            return Err(ImportError::NoFixtures { dir: dir.into() });
        }
        Ok(Self {
            config,
            dirs: dirs.into_iter(),
            scratch: tempfile::tempdir().map_err(ImportError::Scratch)?,
        })
    }
}

impl Iterator for FixtureChecks {
    type Item = (String, Result<BlockCheck, ImportError>);

    fn next(&mut self) -> Option<Self::Item> {
        let dir = self.dirs.next()?;
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let outcome = Fixture::read(&dir)
            .map_err(ImportError::from)
            .and_then(|fixture| {
                let db = self.scratch.path().join(fixture.number().to_string());
                verify_fixture(&self.config, &fixture, &db).map(|(_, check)| check)
            });
        Some((name, outcome))
    }
}
