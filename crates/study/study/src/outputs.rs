//! Where a study's outputs go, and how they land. A study writes only into a directory that is
//! new, empty, or holds nothing but an earlier study's own files: each listed by its manifest
//! ([`MANIFEST`]) with the hash it was written with. A file the manifest does not list, or lists
//! with another hash (edited since), makes the study refuse the directory before its first run,
//! naming the file; nothing in it is deleted or replaced. The directory is locked (`flock` on the
//! directory itself) from the claim until the files have landed, so a second study into it at
//! once is refused. The files are written whole into a staging directory inside it, then moved
//! into place, the manifest last; the staged manifest lists every file, so a study killed while
//! landing leaves a staging directory whose manifest names the files already moved, and the
//! next study into the directory recognises them and removes the staging directory.
//!
//! `bal-replay report` claims its `--out` by the same rule, with a manifest of its own
//! ([`REPORT`]).

use alloy_primitives::{B256, keccak256};
use std::{
    fs::{File, TryLockError},
    io,
    os::unix::fs::MetadataExt,
    path::{Path, PathBuf},
};

/// The study's manifest: written last, it names the files of one study and marks the directory
/// as a study's own.
pub const MANIFEST: &str = "study.json";
/// The bench's runs.
pub const BENCH_JSON: &str = "bench.json";
/// The disk's fio table measured when the runs ran (fio): it goes with the runs.
pub const DISK_TABLE: &str = "disk.txt";
/// A disk table the user gave (`--disk-table`): not measured here, kept apart from a measured one.
pub const GIVEN_DISK_TABLE: &str = "disk-given.txt";
/// The findings page.
pub const PAGE: &str = "findings.md";
/// The page's frontier chart.
pub const FRONTIER_CHART: &str = "frontier.svg";
/// The regime sweep's runs.
pub const SWEEP_JSON: &str = "sweep.json";
/// The regime sweep's chart.
pub const SWEEP_CHART: &str = "sweep.svg";
/// The chart of each reading run's share of full BAL against its CPU per key read.
pub const READ_COST_CHART: &str = "read-cost.svg";

/// Who writes a directory of outputs, by the rule of this module: its manifest's name and
/// `written_by`, and its staging directories' prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    /// The command, as messages name it ("study").
    pub who: &'static str,
    /// What its manifest's `written_by` says.
    pub written_by: &'static str,
    /// Its manifest's name in the directory.
    pub manifest: &'static str,
    /// Its staging directories' prefix: one it left (killed while landing) is its own.
    pub staging_prefix: &'static str,
}

/// `bal-replay study`'s directories.
pub const STUDY: Owner = Owner {
    who: "study",
    written_by: "bal-replay study",
    manifest: MANIFEST,
    staging_prefix: ".study-staging.",
};

/// `bal-replay report`'s directories.
pub const REPORT: Owner = Owner {
    who: "report",
    written_by: "bal-replay report",
    manifest: "report-files.json",
    staging_prefix: ".report-staging.",
};

/// Why a study's (or a report's) outputs could not be claimed, read or written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// `--out` names what is not a directory, or lies under a file.
    #[error("--out {}: not a directory a {who} can write into: {source}", path.display())]
    NotADirectory {
        /// The path.
        path: PathBuf,
        /// The command.
        who: &'static str,
        /// Why.
        source: io::Error,
    },
    /// `--out` is a symbolic link, which is not written through.
    #[error("--out {}: a symbolic link; a {who} writes only into a directory itself", path.display())]
    Link {
        /// The path.
        path: PathBuf,
        /// The command.
        who: &'static str,
    },
    /// Another process holds the directory's lock: a study (or report) writing into it now.
    #[error(
        "--out {}: another {who} is writing into it now (it holds the directory's lock); wait for it to end or give another --out",
        path.display()
    )]
    Busy {
        /// The directory.
        path: PathBuf,
        /// The command.
        who: &'static str,
    },
    /// The directory holds what its manifest does not list.
    #[error(
        "--out {}: holds {} that no {who} wrote (its {manifest} does not list {}); a {who} writes only into a new or empty directory, or over its own earlier files: move {} or give another --out",
        path.display(),
        entries.join(", "),
        if entries.len() == 1 { "it" } else { "them" },
        if entries.len() == 1 { "it" } else { "them" },
    )]
    Foreign {
        /// The directory.
        path: PathBuf,
        /// The command.
        who: &'static str,
        /// Its manifest's name.
        manifest: &'static str,
        /// What it holds that is not the command's.
        entries: Vec<String>,
    },
    /// The directory holds a file of the manifest's, changed since it was written.
    #[error(
        "--out {}: {} changed since the {who} wrote {} (not the hash its {manifest} lists); a {who} replaces only its own files as it wrote them: move {} or give another --out",
        path.display(),
        entries.join(", "),
        if entries.len() == 1 { "it" } else { "them" },
        if entries.len() == 1 { "it" } else { "them" },
    )]
    Changed {
        /// The directory.
        path: PathBuf,
        /// The command.
        who: &'static str,
        /// Its manifest's name.
        manifest: &'static str,
        /// The files changed.
        entries: Vec<String>,
    },
    /// A study's file is not the one its manifest lists.
    #[error(
        "{}: not the file its study's {MANIFEST} lists (a study interrupted while writing, or the file changed since): run that study again",
        path.display()
    )]
    NotAsListed {
        /// The file.
        path: PathBuf,
    },
    /// A manifest that is not a study's (or a report's).
    #[error("{}: not a {who}'s manifest: {reason}", path.display())]
    BadManifest {
        /// The manifest.
        path: PathBuf,
        /// The command.
        who: &'static str,
        /// Why.
        reason: String,
    },
    /// Reading or writing failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> OutputError + '_ {
    move |source| OutputError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One file of a study, as its manifest lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OutputFile {
    /// Its name in the study's directory.
    pub name: String,
    /// Its length.
    pub bytes: u64,
    /// The keccak-256 of its bytes.
    pub keccak256: B256,
}

impl OutputFile {
    fn of(name: &str, bytes: &[u8]) -> Self {
        Self {
            name: name.into(),
            bytes: bytes.len() as u64,
            keccak256: keccak256(bytes),
        }
    }

    /// The file `name` in `dir` as it is now.
    fn read(dir: &Path, name: &str) -> Result<Self, OutputError> {
        let path = dir.join(name);
        let bytes = std::fs::read(&path).map_err(io_error(&path))?;
        Ok(Self::of(name, &bytes))
    }
}

/// The schema version of [`StudyManifest`] this build writes. Version 1 (written before manifests
/// carried one) holds the same fields and is read too.
pub const MANIFEST_VERSION: u32 = 2;

/// The files of one study, written last into its directory.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StudyManifest {
    /// [`MANIFEST_VERSION`] when written by this build; 1 where the manifest has none.
    #[serde(default = "first_version")]
    pub schema_version: u32,
    /// "bal-replay study".
    pub written_by: String,
    /// Every file the study left, with its hash.
    pub files: Vec<OutputFile>,
    /// Where the disk table the page used came from when the user gave it (`--disk-table`): it is
    /// [`GIVEN_DISK_TABLE`], not a measurement.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk_given_from: Option<String>,
}

fn first_version() -> u32 {
    1
}

impl bal_replay_bench::VersionedResult for StudyManifest {
    const KIND: &'static str = "study manifest";
    const SCHEMA_VERSION: u32 = MANIFEST_VERSION;
    /// Version 2 only added `schema_version`.
    const ALSO_READS: &'static [u32] = &[1];
}

impl StudyManifest {
    /// The manifest of the study in `dir`, if it holds one.
    pub fn read(dir: &Path) -> Result<Option<Self>, OutputError> {
        Self::read_of(&STUDY, dir)
    }

    /// The manifest `owner` wrote in `dir`, if it holds one.
    pub fn read_of(owner: &Owner, dir: &Path) -> Result<Option<Self>, OutputError> {
        let path = dir.join(owner.manifest);
        let bad = |reason: String| OutputError::BadManifest {
            path: path.clone(),
            who: owner.who,
            reason,
        };
        // The reader's errors name the file first; the manifest's error names it once.
        let prefix = format!("{}: ", path.display());
        let unread = |e: bal_replay_bench::ResultReadError| {
            let text = e.to_string();
            bad(text.strip_prefix(&prefix).unwrap_or(&text).to_owned())
        };
        let bytes = match bal_replay_bench::read_result_bytes(&path) {
            Ok(bytes) => bytes,
            Err(bal_replay_bench::ResultReadError::Read { source, .. })
                if source.kind() == io::ErrorKind::NotFound =>
            {
                return Ok(None);
            }
            Err(bal_replay_bench::ResultReadError::Read { source, .. }) => {
                return Err(OutputError::Io {
                    path: path.clone(),
                    source,
                });
            }
            Err(other) => return Err(unread(other)),
        };
        let manifest: Self = bal_replay_bench::parse_result(&path, &bytes).map_err(unread)?;
        if manifest.written_by != owner.written_by {
            return Err(bad(format!("written by {:?}", manifest.written_by)));
        }
        Ok(Some(manifest))
    }

    /// The bytes of `name` in `dir`, checked against this manifest; `None` where it lists no
    /// such file (a file of that name there is not this study's).
    pub fn read_listed(&self, dir: &Path, name: &str) -> Result<Option<Vec<u8>>, OutputError> {
        let Some(listed) = self.files.iter().find(|f| f.name == name) else {
            return Ok(None);
        };
        let path = dir.join(name);
        let bytes = std::fs::read(&path).map_err(io_error(&path))?;
        if OutputFile::of(name, &bytes) != *listed {
            return Err(OutputError::NotAsListed { path });
        }
        Ok(Some(bytes))
    }

    /// Whether it lists `name`.
    fn lists(&self, name: &str) -> bool {
        self.files.iter().any(|f| f.name == name)
    }
}

/// The directory a study (or report) writes into, claimed before its first run and locked
/// until its files have landed.
#[derive(Debug)]
pub struct OutDir {
    path: PathBuf,
    owner: &'static Owner,
    /// This process made it: a command that fails removes it again (if nothing else is in it).
    created: bool,
    /// The files in it when it was claimed, each the owner's (listed with its hash): the only
    /// files a landing may remove.
    own: Vec<OutputFile>,
    /// The directory opened and `flock`ed, held while this lives; none where the filesystem has
    /// no `flock`.
    _lock: Option<File>,
}

impl OutDir {
    /// Claims `path` for a study's outputs ([`OutDir::claim_for`] [`STUDY`]).
    pub fn claim(path: &Path) -> Result<Self, OutputError> {
        Self::claim_for(&STUDY, path)
    }

    /// Claims `path` for `owner`'s outputs: creates it where it does not exist; otherwise it must
    /// be a directory (not a link to one) whose every entry is `owner`'s manifest, a file that
    /// manifest lists with the hash it has now, or a staging directory `owner` left. It is locked
    /// first: another process holding it is refused. A staging directory left by one killed
    /// while landing is removed, after the manifest is written again to list the files it had
    /// already moved into place. Nothing else is touched, refused or not.
    pub fn claim_for(owner: &'static Owner, path: &Path) -> Result<Self, OutputError> {
        let not_a_dir = |source| OutputError::NotADirectory {
            path: path.to_path_buf(),
            who: owner.who,
            source,
        };
        let mut created = false;
        match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent).map_err(not_a_dir)?;
                }
                match std::fs::create_dir(path) {
                    Ok(()) => created = true,
                    // Made by another process since: claimed below as any existing directory.
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(not_a_dir(e)),
                }
            }
            Err(e) => return Err(not_a_dir(e)),
            Ok(_) => {}
        }
        match std::fs::symlink_metadata(path) {
            Err(e) => return Err(not_a_dir(e)),
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(OutputError::Link {
                    path: path.to_path_buf(),
                    who: owner.who,
                });
            }
            Ok(meta) if !meta.is_dir() => {
                return Err(not_a_dir(io::Error::from(io::ErrorKind::NotADirectory)));
            }
            Ok(_) => {}
        }
        let dir = File::open(path).map_err(io_error(path))?;
        let lock = match dir.try_lock() {
            Ok(()) => Some(dir),
            Err(TryLockError::WouldBlock) => {
                return Err(OutputError::Busy {
                    path: path.to_path_buf(),
                    who: owner.who,
                });
            }
            // A filesystem without `flock` (some network mounts): claimed without the lock.
            Err(TryLockError::Error(e)) if e.kind() == io::ErrorKind::Unsupported => None,
            Err(TryLockError::Error(e)) => return Err(io_error(path)(e)),
        };
        let own = claim_entries(owner, path)?;
        Ok(Self {
            path: path.to_path_buf(),
            owner,
            created,
            own,
            _lock: lock,
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether `file` is this directory's `name`: the very file, not a copy.
    pub fn holds(&self, name: &str, file: &Path) -> bool {
        let id = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
        id(file).is_some_and(|f| id(&self.path.join(name)) == Some(f))
    }

    /// Removes the directory if this process made it and it is empty: a command that failed
    /// leaves nothing behind.
    pub fn release_if_unused(&self) {
        if self.created {
            // Fails, and leaves it, unless it is empty.
            let _ = std::fs::remove_dir(&self.path);
        }
    }

    /// A staging directory for one study's files, inside this one.
    pub fn stage(&self) -> Result<Staged<'_>, OutputError> {
        let dir = tempfile::Builder::new()
            .prefix(self.owner.staging_prefix)
            .tempdir_in(&self.path)
            .map_err(io_error(&self.path))?;
        Ok(Staged {
            out: self,
            dir,
            staged: Vec::new(),
            kept: Vec::new(),
        })
    }
}

/// The files in `path` (locked), each `owner`'s, or why it is not `owner`'s; staging
/// directories `owner` left are removed once the manifest lists what they had landed.
fn claim_entries(owner: &Owner, path: &Path) -> Result<Vec<OutputFile>, OutputError> {
    let manifest = StudyManifest::read_of(owner, path)?;
    let mut staging = Vec::new();
    let mut files = Vec::new();
    let mut foreign = Vec::new();
    for entry in std::fs::read_dir(path).map_err(io_error(path))? {
        let entry = entry.map_err(io_error(path))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let kind = entry.file_type().map_err(io_error(&entry.path()))?;
        if kind.is_file() && name == owner.manifest {
            continue;
        }
        if kind.is_dir()
            && name.starts_with(owner.staging_prefix)
            && let Some(staged) = left_staging(owner, &entry.path())?
        {
            staging.push((entry.path(), staged));
            continue;
        }
        if kind.is_file() && entry.file_name().to_str().is_some() {
            files.push(name);
        } else {
            foreign.push(name);
        }
    }
    // A file is the owner's where the manifest lists it with the hash it has, or where the
    // manifest a killed landing staged does (it was moved into place before that manifest).
    let listings = || {
        manifest
            .iter()
            .chain(staging.iter().filter_map(|(_, m)| m.as_ref()))
    };
    let mut own = Vec::new();
    let mut changed = Vec::new();
    for name in files {
        if !listings().any(|m| m.lists(&name)) {
            foreign.push(name);
            continue;
        }
        let now = OutputFile::read(path, &name)?;
        if listings().any(|m| m.files.contains(&now)) {
            own.push(now);
        } else {
            changed.push(name);
        }
    }
    if !foreign.is_empty() {
        foreign.sort();
        return Err(OutputError::Foreign {
            path: path.to_path_buf(),
            who: owner.who,
            manifest: owner.manifest,
            entries: foreign,
        });
    }
    if !changed.is_empty() {
        changed.sort();
        return Err(OutputError::Changed {
            path: path.to_path_buf(),
            who: owner.who,
            manifest: owner.manifest,
            entries: changed,
        });
    }
    if staging.iter().any(|(_, m)| m.is_some()) {
        // Listed before the staging directories go, so a kill between leaves them listed still.
        own.sort_by(|a, b| a.name.cmp(&b.name));
        let staged = staging.iter().rev().find_map(|(_, m)| m.as_ref());
        let given = |m: &StudyManifest| {
            m.disk_given_from.clone().filter(|_| {
                own.iter()
                    .any(|f| f.name == GIVEN_DISK_TABLE && m.files.contains(f))
            })
        };
        let repaired = StudyManifest {
            schema_version: MANIFEST_VERSION,
            written_by: owner.written_by.into(),
            files: own.clone(),
            disk_given_from: staged
                .and_then(given)
                .or_else(|| manifest.as_ref().and_then(given)),
        };
        let json = bal_replay_bench::encode_result(&repaired, bal_replay_bench::Layout::Pretty)
            .expect("a manifest serializes");
        let at = path.join(owner.manifest);
        bal_replay_bench::write_result_file(&at, &json).map_err(io_error(&at))?;
    }
    for (dir, _) in &staging {
        remove_staging(dir)?;
    }
    Ok(own)
}

/// The manifest in `dir`, a staging directory of `owner`'s by its name, where it holds one:
/// `Some(None)` where it holds none (killed before landing), `None` where `dir` is not one
/// `owner` left (it holds more than files, or a manifest of another's).
fn left_staging(owner: &Owner, dir: &Path) -> Result<Option<Option<StudyManifest>>, OutputError> {
    for entry in std::fs::read_dir(dir).map_err(io_error(dir))? {
        let entry = entry.map_err(io_error(dir))?;
        if !entry
            .file_type()
            .map_err(io_error(&entry.path()))?
            .is_file()
        {
            return Ok(None);
        }
    }
    match StudyManifest::read_of(owner, dir) {
        Ok(manifest) => Ok(Some(manifest)),
        Err(OutputError::BadManifest { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Removes a staging directory a killed study left (its files, then itself).
fn remove_staging(dir: &Path) -> Result<(), OutputError> {
    for entry in std::fs::read_dir(dir).map_err(io_error(dir))? {
        let path = entry.map_err(io_error(dir))?.path();
        std::fs::remove_file(&path).map_err(io_error(&path))?;
    }
    std::fs::remove_dir(dir).map_err(io_error(dir))
}

/// One study's files, written into a staging directory, then moved into place together.
#[derive(Debug)]
pub struct Staged<'a> {
    out: &'a OutDir,
    dir: tempfile::TempDir,
    staged: Vec<OutputFile>,
    kept: Vec<OutputFile>,
}

impl Staged<'_> {
    /// The staging directory (a writer of many files writes there, then [`Staged::written`]).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `name`, whole, into the staging directory.
    pub fn write(&mut self, name: &str, bytes: &[u8]) -> Result<(), OutputError> {
        let path = self.dir.path().join(name);
        bal_replay_bench::write_result_file(&path, bytes).map_err(io_error(&path))?;
        self.list(OutputFile::of(name, bytes));
        Ok(())
    }

    /// Where `name` is staged, for a writer of its own (then [`Staged::written`]).
    pub fn path_of(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Lists `name`, written at [`Staged::path_of`], as one of the study's files.
    pub fn written(&mut self, name: &str) -> Result<(), OutputError> {
        let file = OutputFile::read(self.dir.path(), name)?;
        self.list(file);
        Ok(())
    }

    /// Lists `file` once (a file written again is listed as last written).
    fn list(&mut self, file: OutputFile) {
        self.staged.retain(|f| f.name != file.name);
        self.staged.push(file);
    }

    /// Lists `name`, already in the output directory with these `bytes`, as this study's, and
    /// leaves it as it is (the runs a page is computed again from, read from there).
    pub fn keep(&mut self, name: &str, bytes: &[u8]) {
        self.kept.push(OutputFile::of(name, bytes));
    }

    /// Lists every file an earlier run left in the directory (as the claim found it) that this
    /// one has not written, as kept: a report adds its charts beside an earlier report's.
    pub fn keep_earlier(&mut self) {
        for earlier in &self.out.own {
            if !self
                .staged
                .iter()
                .chain(&self.kept)
                .any(|f| f.name == earlier.name)
            {
                self.kept.push(earlier.clone());
            }
        }
    }

    /// Moves the staged files into place, removes what an earlier study left that this one did
    /// not write (a disk table measured with other runs; only a file the claim found listed,
    /// still as listed), and moves the manifest, `disk_given_from` in it, into place last. The
    /// manifest is staged first: a kill on the way leaves it in the staging directory, naming
    /// the files already moved, for the next claim ([`OutDir::claim_for`]).
    pub fn land(self, disk_given_from: Option<String>) -> Result<(), OutputError> {
        let manifest = StudyManifest {
            schema_version: MANIFEST_VERSION,
            written_by: self.out.owner.written_by.into(),
            files: self.kept.iter().chain(&self.staged).cloned().collect(),
            disk_given_from,
        };
        let json = bal_replay_bench::encode_result(&manifest, bal_replay_bench::Layout::Pretty)
            .expect("a manifest serializes");
        let name = self.out.owner.manifest;
        let at = self.dir.path().join(name);
        bal_replay_bench::write_result_file(&at, &json).map_err(io_error(&at))?;
        for file in &self.staged {
            self.move_into_place(&file.name)?;
        }
        for earlier in &self.out.own {
            if manifest.lists(&earlier.name) {
                continue;
            }
            let path = self.out.path.join(&earlier.name);
            match OutputFile::read(&self.out.path, &earlier.name) {
                Ok(now) if now == *earlier => {
                    std::fs::remove_file(&path).map_err(io_error(&path))?
                }
                _ => {}
            }
        }
        self.move_into_place(name)
    }

    fn move_into_place(&self, name: &str) -> Result<(), OutputError> {
        let (from, to) = (self.dir.path().join(name), self.out.path.join(name));
        std::fs::rename(&from, &to).map_err(io_error(&to))
    }
}
