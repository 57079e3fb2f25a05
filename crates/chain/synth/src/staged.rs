//! Outputs that appear whole or not at all, both of them or neither.
//!
//! A generated dump is written block by block; one interrupted part-way (Ctrl-C, a crash) would
//! otherwise be left at the path asked for, with a valid manifest of fewer blocks (or none), and
//! read later as the whole chain. So each output is built in a fresh directory beside its target,
//! `<target>.partial-<run>` (`<run>`: the process id and a random number, shared by the pair),
//! and renamed to the target once both are complete: the state first, then the dump. An
//! interrupted run leaves only directories named as partial; nothing at the targets.
//!
//! Two renames are not one: a run killed between them leaves its state in place and its finished
//! dump still under its partial name. So before landing, each staged directory gets a marker
//! ([`MARKER`]) naming the run, removed (the state's first) only once both are in place. A later
//! run to the same paths finds the state's marker, and with it the dump the run left: it finishes
//! the landing (a rename), or removes the state if that dump is gone. The marker is the proof that
//! the directory is a generated one; nothing without it is ever removed.

use std::{
    collections::hash_map::RandomState,
    fs, io,
    path::{Component, Path, PathBuf},
};

use crate::SynthError;

/// The file a staged output holds from just before its landing until both outputs are in place:
/// `run <id>` and, in the state's, `dump <the dump's target, resolved>`.
pub(crate) const MARKER: &str = ".bal-dump-generate-landing";

/// A dump and a state being built beside their targets. Dropped without [`land`](Self::land), it
/// removes what it built, and the parent directories it created.
#[derive(Debug)]
pub(crate) struct StagedPair {
    /// Names both staging directories and goes in their markers.
    run: String,
    state: StagedDir,
    dump: StagedDir,
    /// Ancestors of the targets this run created (outermost first): removed, if still empty,
    /// when the pair is dropped unlanded.
    created_parents: Vec<PathBuf>,
    landed: bool,
}

/// One output of a [`StagedPair`].
#[derive(Debug)]
struct StagedDir {
    /// The directory this process created, where the output is built.
    staging: PathBuf,
    /// Where the output goes once complete.
    target: PathBuf,
    /// The target was an empty directory (which the output replaces).
    was_empty_dir: bool,
}

impl StagedPair {
    /// Checks both targets and creates a fresh staging directory beside each.
    ///
    /// Refused before anything is created: targets that are the same directory or one inside the
    /// other (compared after resolving the ancestors that exist, links included), and a target
    /// that exists unless it is an empty directory of this process's user. A state at `state`
    /// that an earlier run placed without placing its dump (see the module doc) is first finished
    /// (its dump renamed into place, after which this run refuses the taken paths, saying so) or,
    /// with its dump gone, removed.
    pub(crate) fn begin(state: &Path, dump: &Path) -> Result<Self, SynthError> {
        let (resolved_state, resolved_dump) = (resolve(state)?, resolve(dump)?);
        if resolved_state.starts_with(&resolved_dump) || resolved_dump.starts_with(&resolved_state)
        {
            return Err(SynthError::OutputsOverlap {
                dump: dump.to_path_buf(),
                state: state.to_path_buf(),
            });
        }
        recover(state, dump, &resolved_dump)?;
        let state_existing = check_target(state)?;
        let dump_existing = check_target(dump)?;
        let mut pair = Self {
            run: format!("{}-{:016x}", std::process::id(), random_u64()),
            state: StagedDir::unstarted(state, state_existing.is_some()),
            dump: StagedDir::unstarted(dump, dump_existing.is_some()),
            created_parents: Vec::new(),
            landed: false,
        };
        for target in [state, dump] {
            create_parents(parent_of(target), &mut pair.created_parents)?;
        }
        for (staged, existing) in [
            (&mut pair.state, state_existing),
            (&mut pair.dump, dump_existing),
        ] {
            staged.staging = create_staging(&staged.target, &pair.run)?;
            if let Some(metadata) = &existing {
                check_same_owner(metadata, &staged.staging).map_err(|reason| {
                    SynthError::OutputExists {
                        path: staged.target.clone(),
                        reason,
                    }
                })?;
            }
        }
        Ok(pair)
    }

    /// Where to build the state.
    pub(crate) fn state_path(&self) -> &Path {
        &self.state.staging
    }

    /// Where to build the dump.
    pub(crate) fn dump_path(&self) -> &Path {
        &self.dump.staging
    }

    /// Places both finished outputs at their targets, or neither: marks both with the run, renames
    /// the state, then the dump (undoing the state's rename if the dump's fails), then removes the
    /// markers, the state's first. The kernel's rename replaces nothing but an empty directory, so
    /// a target that gained an entry, or became a link or a file, since [`begin`](Self::begin)
    /// fails this, and both outputs are removed.
    pub(crate) fn land(mut self) -> Result<(), SynthError> {
        let resolved_dump = resolve(&self.dump.target)?;
        write_marker(
            &self.state.staging,
            &format!("run {}\ndump {}\n", self.run, resolved_dump.display()),
        )?;
        write_marker(&self.dump.staging, &format!("run {}\n", self.run))?;
        self.state.place()?;
        if let Err(error) = self.dump.place() {
            // Back where it was built (it is ours: this run just put it there), then removed
            // with the rest on drop.
            if let Err(undo) = self.state.unplace() {
                tracing::warn!(state = %self.state.target.display(), %undo, "could not take back the placed state; it holds its landing marker, which the next run to these paths resolves");
                self.landed = true;
            }
            return Err(error);
        }
        self.landed = true;
        sync_parent(&self.state.target)?;
        sync_parent(&self.dump.target)?;
        // The state's marker first: a state without one is a landed pair's.
        remove_marker(&self.state.target)?;
        remove_marker(&self.dump.target)
    }
}

impl Drop for StagedPair {
    fn drop(&mut self) {
        if self.landed {
            return;
        }
        // Only the directories `begin` created, and what was built in them.
        for staged in [&self.state, &self.dump] {
            if staged.staging.as_os_str().is_empty() {
                continue;
            }
            if let Err(error) = fs::remove_dir_all(&staged.staging)
                && error.kind() != io::ErrorKind::NotFound
            {
                tracing::warn!(path = %staged.staging.display(), %error, "could not remove an unfinished output");
            }
        }
        // Innermost first; one that gained an entry since is not empty and stays.
        for parent in self.created_parents.iter().rev() {
            let _ = fs::remove_dir(parent);
        }
    }
}

impl StagedDir {
    /// `target`, its staging directory not created yet.
    fn unstarted(target: &Path, was_empty_dir: bool) -> Self {
        Self {
            staging: PathBuf::new(),
            target: target.to_path_buf(),
            was_empty_dir,
        }
    }

    /// Renames the built output to its target.
    fn place(&self) -> Result<(), SynthError> {
        fs::rename(&self.staging, &self.target).map_err(|source| SynthError::NotPlaced {
            built: self.staging.clone(),
            target: self.target.clone(),
            source,
        })
    }

    /// Undoes [`place`](Self::place): the output back under its staging name, and the empty
    /// directory it replaced, if any, back at the target.
    fn unplace(&self) -> Result<(), SynthError> {
        fs::rename(&self.target, &self.staging)
            .map_err(|source| output_io(&self.target, source))?;
        if self.was_empty_dir {
            fs::create_dir(&self.target).map_err(|source| output_io(&self.target, source))?;
        }
        Ok(())
    }
}

/// What a target holds now: nothing, or an empty directory (its metadata: the output replaces
/// it); anything else is refused.
fn check_target(target: &Path) -> Result<Option<fs::Metadata>, SynthError> {
    let refuse = |reason: String| SynthError::OutputExists {
        path: target.to_path_buf(),
        reason,
    };
    let metadata = match fs::symlink_metadata(target) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(output_io(target, source)),
    };
    if metadata.file_type().is_symlink() {
        return Err(refuse("it is a symbolic link".into()));
    }
    if !metadata.is_dir() {
        return Err(refuse("it is not a directory".into()));
    }
    let mut entries = fs::read_dir(target).map_err(|source| output_io(target, source))?;
    if entries.next().is_some() {
        return Err(refuse("it is a directory that is not empty".into()));
    }
    if target.file_name().is_none() {
        return Err(refuse("it names no directory of its own".into()));
    }
    Ok(Some(metadata))
}

/// A run killed between placing its state and clearing the markers left one of these; this puts
/// it right (see the module doc). `resolved_dump` is `dump` resolved ([`resolve`]).
fn recover(state: &Path, dump: &Path, resolved_dump: &Path) -> Result<(), SynthError> {
    let Some(marker) = read_marker(state)? else {
        // The state's marker goes first: a dump still marked is a landed pair's, left with its
        // marker only.
        if read_marker(dump)?.is_some() {
            remove_marker(dump)?;
        }
        return Ok(());
    };
    let refuse = |reason: String| SynthError::OutputExists {
        path: state.to_path_buf(),
        reason,
    };
    let (Some(run), Some(meant)) = (marker.field("run"), marker.field("dump")) else {
        return Err(refuse(format!(
            "it holds a landing marker ({MARKER}) that names no run or no dump; remove it"
        )));
    };
    if Path::new(meant) != resolved_dump {
        return Err(refuse(format!(
            "it is a state an earlier generate run placed without its dump, which was to go to {meant}; \
             rerun with that --out to finish placing it, or remove it"
        )));
    }
    let finished = |how: &str| {
        tracing::warn!(state = %state.display(), dump = %dump.display(), "{how}");
        SynthError::OutputExists {
            path: dump.to_path_buf(),
            reason: format!(
                "it holds the whole chain of an earlier generate run, stopped while placing it: {how}"
            ),
        }
    };
    if read_marker(dump)?.is_some_and(|m| m.field("run") == Some(run)) {
        remove_marker(state)?;
        remove_marker(dump)?;
        return Err(finished(
            "both were in place; this run removed their landing markers",
        ));
    }
    let staged = staging_name(dump, run);
    if vacant(dump)? && read_marker(&staged)?.is_some_and(|m| m.field("run") == Some(run)) {
        fs::rename(&staged, dump).map_err(|source| SynthError::NotPlaced {
            built: staged.clone(),
            target: dump.to_path_buf(),
            source,
        })?;
        sync_parent(dump)?;
        remove_marker(state)?;
        remove_marker(dump)?;
        return Err(finished(&format!(
            "its state was in place and its dump at {}; this run renamed the dump into place",
            staged.display()
        )));
    }
    if !vacant(dump)? {
        return Err(refuse(format!(
            "it is a state an earlier generate run placed without its dump, and {} holds something \
             else; remove one of them",
            dump.display()
        )));
    }
    // The state's dump is gone: the state (ours, by its marker) can never be completed.
    tracing::warn!(state = %state.display(), "removing a state an earlier generate run placed without its dump, which is gone");
    fs::remove_dir_all(state).map_err(|source| output_io(state, source))
}

/// The staging directory of `target` for `run`.
fn staging_name(target: &Path, run: &str) -> PathBuf {
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    parent_of(target).join(format!("{name}.partial-{run}"))
}

/// Creates `target`'s staging directory for `run`, new (never one already there).
fn create_staging(target: &Path, run: &str) -> Result<PathBuf, SynthError> {
    let path = staging_name(target, run);
    fs::create_dir(&path).map_err(|source| output_io(&path, source))?;
    Ok(path)
}

/// `target`'s parent, `.` for a bare name.
fn parent_of(target: &Path) -> &Path {
    match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// Creates `dir` and its missing ancestors, recording each one created (outermost first).
fn create_parents(dir: &Path, created: &mut Vec<PathBuf>) -> Result<(), SynthError> {
    let mut missing = Vec::new();
    let mut at = Some(dir);
    while let Some(path) = at.filter(|p| !p.as_os_str().is_empty()) {
        match fs::symlink_metadata(path) {
            Ok(_) => break,
            Err(error) if error.kind() == io::ErrorKind::NotFound => missing.push(path),
            Err(source) => return Err(output_io(path, source)),
        }
        at = path.parent();
    }
    for path in missing.into_iter().rev() {
        fs::create_dir(path).map_err(|source| output_io(path, source))?;
        created.push(path.to_path_buf());
    }
    Ok(())
}

/// `path` made absolute, its longest existing ancestor canonicalized (links resolved) and the
/// rest appended with `.` dropped and `..` taken lexically: two paths that resolve alike name the
/// same place once created.
pub(crate) fn resolve(path: &Path) -> Result<PathBuf, SynthError> {
    let absolute = std::path::absolute(path).map_err(|source| output_io(path, source))?;
    let components: Vec<Component> = absolute.components().collect();
    // The root always resolves, so some prefix does.
    let (mut resolved, rest) = (0..=components.len())
        .rev()
        .find_map(|split| {
            let prefix: PathBuf = components[..split].iter().collect();
            let base = prefix.canonicalize().ok()?;
            Some((base, &components[split..]))
        })
        .unwrap_or_else(|| (absolute.clone(), &[][..]));
    for part in rest {
        match part {
            Component::ParentDir => {
                resolved.pop();
            }
            Component::CurDir => {}
            other => resolved.push(other),
        }
    }
    Ok(resolved)
}

/// Whether an output may be placed at `path`: nothing is there, or an empty directory (which a
/// rename replaces).
fn vacant(path: &Path) -> Result<bool, SynthError> {
    match fs::symlink_metadata(path) {
        Ok(metadata) if metadata.is_dir() => fs::read_dir(path)
            .map(|mut entries| entries.next().is_none())
            .map_err(|source| output_io(path, source)),
        Ok(_) => Ok(false),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(true),
        Err(source) => Err(output_io(path, source)),
    }
}

/// The `key value` lines of the landing marker in `dir`, if `dir` is a directory (not a link)
/// holding one.
fn read_marker(dir: &Path) -> Result<Option<Vec<(String, String)>>, SynthError> {
    match fs::symlink_metadata(dir) {
        Ok(metadata) if metadata.is_dir() => {}
        Ok(_) => return Ok(None),
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(output_io(dir, source)),
    }
    let path = dir.join(MARKER);
    match fs::read_to_string(&path) {
        Ok(text) => Ok(Some(
            text.lines()
                .filter_map(|line| line.split_once(' '))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        )),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(output_io(&path, source)),
    }
}

/// A marker's value for `key`.
trait MarkerFields {
    fn field(&self, key: &str) -> Option<&String>;
}

impl MarkerFields for Vec<(String, String)> {
    fn field(&self, key: &str) -> Option<&String> {
        self.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

/// Writes the landing marker into `dir`, durably: it must be there before the rename is.
fn write_marker(dir: &Path, text: &str) -> Result<(), SynthError> {
    let path = dir.join(MARKER);
    let file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .and_then(|mut file| {
            io::Write::write_all(&mut file, text.as_bytes())?;
            file.sync_all()
        });
    file.map_err(|source| output_io(&path, source))
}

fn remove_marker(dir: &Path) -> Result<(), SynthError> {
    let path = dir.join(MARKER);
    match fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(output_io(&path, source)),
    }
}

/// Durable rename: without it, a power cut could bring back the partial name.
fn sync_parent(target: &Path) -> Result<(), SynthError> {
    let parent = parent_of(target);
    fs::File::open(parent)
        .and_then(|dir| dir.sync_all())
        .map_err(|source| output_io(parent, source))
}

/// A number no other process (or call) is likely to pick: the standard library's per-instance
/// random hash keys, over the time.
fn random_u64() -> u64 {
    use std::hash::BuildHasher;
    RandomState::new().hash_one(std::time::SystemTime::now())
}

/// An empty directory to be replaced must be this process's user's: the directory just created
/// says who that is.
#[cfg(unix)]
fn check_same_owner(existing: &fs::Metadata, created: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let uid = fs::metadata(created).map_err(|e| e.to_string())?.uid();
    if existing.uid() == uid {
        return Ok(());
    }
    Err(format!(
        "it is an empty directory owned by uid {}, not by this process's uid {uid}",
        existing.uid()
    ))
}

#[cfg(not(unix))]
fn check_same_owner(_existing: &fs::Metadata, _created: &Path) -> Result<(), String> {
    Ok(())
}

fn output_io(path: &Path, source: io::Error) -> SynthError {
    SynthError::Output {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pair built in `dir` with a file in each output, as a finished run leaves it.
    fn finished_pair(dir: &Path) -> StagedPair {
        let pair = StagedPair::begin(&dir.join("state"), &dir.join("dump")).unwrap();
        fs::write(pair.state_path().join("CURRENT"), b"state\n").unwrap();
        fs::write(pair.dump_path().join("manifest.json"), b"dump\n").unwrap();
        pair
    }

    fn names_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// What a run killed between its two renames leaves: the state placed, marked, and the dump
    /// finished and marked under its partial name.
    fn killed_between_renames(dir: &Path) -> PathBuf {
        let pair = finished_pair(dir);
        let resolved_dump = resolve(&pair.dump.target).unwrap();
        write_marker(
            &pair.state.staging,
            &format!("run {}\ndump {}\n", pair.run, resolved_dump.display()),
        )
        .unwrap();
        write_marker(&pair.dump.staging, &format!("run {}\n", pair.run)).unwrap();
        pair.state.place().unwrap();
        let staged_dump = pair.dump.staging.clone();
        // Killed: nothing of the process runs on.
        std::mem::forget(pair);
        staged_dump
    }

    #[test]
    fn landing_places_both_and_leaves_no_marker() {
        let dir = tempfile::tempdir().unwrap();
        finished_pair(dir.path()).land().unwrap();
        assert_eq!(names_in(dir.path()), ["dump", "state"]);
        assert_eq!(names_in(&dir.path().join("state")), ["CURRENT"]);
        assert_eq!(names_in(&dir.path().join("dump")), ["manifest.json"]);
    }

    #[test]
    fn a_rerun_finishes_a_landing_killed_between_the_renames() {
        let dir = tempfile::tempdir().unwrap();
        let staged_dump = killed_between_renames(dir.path());
        let partial = staged_dump
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert_eq!(names_in(dir.path()), [partial, "state".into()]);

        let error =
            StagedPair::begin(&dir.path().join("state"), &dir.path().join("dump")).unwrap_err();
        let message = error.to_string();
        assert!(
            message.contains("whole chain of an earlier generate run")
                && message.contains("renamed the dump into place"),
            "{message}"
        );
        // Both in place, unmarked, and nothing else.
        assert_eq!(names_in(dir.path()), ["dump", "state"]);
        assert_eq!(names_in(&dir.path().join("state")), ["CURRENT"]);
        assert_eq!(
            fs::read(dir.path().join("dump/manifest.json")).unwrap(),
            b"dump\n"
        );
        // And the run after that is refused as for any taken path.
        let error =
            StagedPair::begin(&dir.path().join("state"), &dir.path().join("dump")).unwrap_err();
        assert!(error.to_string().contains("not empty"), "{error}");
    }

    #[test]
    fn a_rerun_finishes_a_landing_into_an_empty_directory_it_was_to_replace() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("dump")).unwrap();
        killed_between_renames(dir.path());
        let error =
            StagedPair::begin(&dir.path().join("state"), &dir.path().join("dump")).unwrap_err();
        assert!(
            error.to_string().contains("renamed the dump into place"),
            "{error}"
        );
        assert_eq!(names_in(dir.path()), ["dump", "state"]);
        assert_eq!(names_in(&dir.path().join("dump")), ["manifest.json"]);
    }

    #[test]
    fn a_rerun_removes_a_placed_state_whose_dump_is_gone_and_starts_afresh() {
        let dir = tempfile::tempdir().unwrap();
        let staged_dump = killed_between_renames(dir.path());
        fs::remove_dir_all(&staged_dump).unwrap();
        let pair = StagedPair::begin(&dir.path().join("state"), &dir.path().join("dump")).unwrap();
        assert!(!dir.path().join("state").exists());
        drop(pair);
        assert!(
            names_in(dir.path()).is_empty(),
            "{:?}",
            names_in(dir.path())
        );
    }

    #[test]
    fn a_rerun_to_another_dump_leaves_the_placed_state_alone() {
        let dir = tempfile::tempdir().unwrap();
        killed_between_renames(dir.path());
        let error =
            StagedPair::begin(&dir.path().join("state"), &dir.path().join("other")).unwrap_err();
        assert!(
            error.to_string().contains("rerun with that --out"),
            "{error}"
        );
        assert_eq!(names_in(&dir.path().join("state")), [MARKER, "CURRENT"]);
    }

    #[test]
    fn a_state_without_a_marker_is_never_removed() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("state")).unwrap();
        fs::write(dir.path().join("state/CURRENT"), b"theirs\n").unwrap();
        let error =
            StagedPair::begin(&dir.path().join("state"), &dir.path().join("dump")).unwrap_err();
        assert!(error.to_string().contains("not empty"), "{error}");
        assert_eq!(names_in(dir.path()), ["state"]);
    }

    #[test]
    fn overlapping_targets_are_refused_before_anything_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path(), &link).unwrap();
        for (state, dump) in [
            (dir.path().join("x"), dir.path().join("x")),
            (dir.path().join("s"), dir.path().join("s/dump")),
            (dir.path().join("d/state"), dir.path().join("d")),
            (dir.path().join("a/./b"), dir.path().join("a/c/../b")),
            (dir.path().join("x"), link.join("x")),
        ] {
            let error = StagedPair::begin(&state, &dump).unwrap_err();
            assert!(
                matches!(error, SynthError::OutputsOverlap { .. }),
                "{error:?}"
            );
            assert_eq!(names_in(dir.path()), ["link"]);
        }
    }

    #[test]
    fn parents_it_created_are_removed_when_unlanded() {
        let dir = tempfile::tempdir().unwrap();
        let pair =
            StagedPair::begin(&dir.path().join("a/b/state"), &dir.path().join("a/b/dump")).unwrap();
        assert_eq!(names_in(&dir.path().join("a/b")).len(), 2);
        drop(pair);
        assert!(names_in(dir.path()).is_empty());
    }
}
