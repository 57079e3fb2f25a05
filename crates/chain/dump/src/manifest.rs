//! `manifest.json`: what a dump holds, and the durable end of every segment.
//!
//! The manifest is the dump's commit record. Segment files may hold bytes past what the manifest
//! records (a crash between appending and flushing), and those bytes do not count: the manifest's
//! `bytes` and `crc32` of each segment say exactly which prefix of the file is the dump. It is
//! rewritten atomically (temporary file, fsync, rename), so a reader sees either the old or the new
//! version, never a mix.

use std::{
    fs::{self, File, OpenOptions},
    io::Write,
    path::{Path, PathBuf},
};

use serde::{Deserialize, Serialize};

use crate::{
    ChainSchedule, DumpError,
    frame::{FORMAT_VERSION, FRAME_HEADER_LEN, SEGMENT_HEADER_LEN, segment_file_name},
    owned::{already_exists, open_for_writing, unsafe_reason},
};

/// File name of the manifest inside a dump directory.
pub const MANIFEST_FILE: &str = "manifest.json";

/// File name the manifest is written to before being renamed over [`MANIFEST_FILE`].
const MANIFEST_TMP_FILE: &str = "manifest.json.tmp";

/// The manifest's own version, apart from the segments' [`FORMAT_VERSION`]. Version 2 writes
/// `schedule` in every manifest (`null` for a dump without one) and says so in
/// `manifest_version`. Version 1 manifests have no `manifest_version` key and carry `schedule`
/// only where their dump has one; [`Manifest::parse`] reads them as version 2 with that key made
/// explicit, and a dump that grows rewrites its manifest as version 2.
pub const MANIFEST_VERSION: u32 = 2;

/// What a dump is about: fixed when it is created, kept in its manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpMeta {
    /// Chain the blocks belong to (1 for mainnet).
    pub chain_id: u64,
    /// `true`: consecutive blocks of one chain, each starting from the previous one's post-state,
    /// so numbers must go up by exactly one. `false`: independent blocks (e.g. imported test
    /// fixtures), numbers only strictly ascending.
    pub chained: bool,
    /// Free text saying where the records came from, e.g. `"fixture"`, `"synthetic"`, `"reth-exex"`.
    pub source: String,
    /// The chain's fork schedule. `None` for dumps of a chain the replay side knows by its id
    /// (mainnet, reth's `--dev` chain through Osaka) and for dumps written before schedules were.
    pub schedule: Option<ChainSchedule>,
}

/// One segment file, as the manifest records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentInfo {
    /// File name inside the dump directory; segment `i` is always [`segment_file_name`]`(i)`.
    pub file: String,
    /// Number of the first block in the segment.
    pub first_block: u64,
    /// Number of the last block in the segment.
    pub last_block: u64,
    /// Number of records (frames) in the segment; at least one.
    pub records: u64,
    /// Size of the segment in bytes, header included.
    pub bytes: u64,
    /// CRC-32 of those `bytes` bytes of the file.
    pub crc32: u32,
}

/// The contents of `manifest.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Format version of every segment; [`FORMAT_VERSION`].
    pub format_version: u32,
    /// The manifest's own version: [`MANIFEST_VERSION`] (a version 1 manifest is read as it).
    pub manifest_version: u32,
    /// Chain the blocks belong to.
    pub chain_id: u64,
    /// Whether the records are consecutive blocks of one chain (see [`DumpMeta::chained`]).
    pub chained: bool,
    /// Where the records came from (see [`DumpMeta::source`]).
    pub source: String,
    /// The chain's fork schedule (see [`DumpMeta::schedule`]); `null` where the dump has none.
    /// Required: a version 2 manifest without the key is refused, not read as having none.
    #[serde(deserialize_with = "Option::deserialize")]
    pub schedule: Option<ChainSchedule>,
    /// Number of the first block; `None` when the dump is empty.
    pub first_block: Option<u64>,
    /// Number of the last block; `None` when the dump is empty.
    pub last_block: Option<u64>,
    /// Number of records in all segments.
    pub record_count: u64,
    /// The segment files, in order.
    pub segments: Vec<SegmentInfo>,
}

/// Just enough of a manifest to read its versions, so a manifest from another version is reported
/// as such rather than as whatever field it fails to parse.
#[derive(Deserialize)]
struct VersionProbe {
    format_version: u32,
    /// Absent from version 1 manifests.
    manifest_version: Option<u32>,
}

impl Manifest {
    /// The manifest of an empty dump.
    pub fn empty(meta: &DumpMeta) -> Self {
        Self {
            format_version: FORMAT_VERSION,
            manifest_version: MANIFEST_VERSION,
            chain_id: meta.chain_id,
            chained: meta.chained,
            source: meta.source.clone(),
            schedule: meta.schedule.clone(),
            first_block: None,
            last_block: None,
            record_count: 0,
            segments: Vec::new(),
        }
    }

    /// The dump's metadata.
    pub fn meta(&self) -> DumpMeta {
        DumpMeta {
            chain_id: self.chain_id,
            chained: self.chained,
            source: self.source.clone(),
            schedule: self.schedule.clone(),
        }
    }

    /// Whether the dump holds no records.
    pub fn is_empty(&self) -> bool {
        self.record_count == 0
    }

    /// Path of the manifest inside `dir`.
    pub fn path_in(dir: &Path) -> PathBuf {
        dir.join(MANIFEST_FILE)
    }

    /// Reads `dir/manifest.json` and checks it with [`Manifest::validate`].
    pub fn load(dir: &Path) -> Result<Self, DumpError> {
        let path = Self::path_in(dir);
        let text = fs::read_to_string(&path).map_err(|source| DumpError::io(&path, source))?;
        Self::parse(&text, &path)
    }

    /// Parses a manifest's JSON and checks it with [`Manifest::validate`]; `path` only labels
    /// errors. The format version is read first, so a manifest of another version is reported as
    /// that, not as whatever field it lacks.
    pub fn parse(text: &str, path: &Path) -> Result<Self, DumpError> {
        let path = path.to_path_buf();
        let probe: VersionProbe =
            serde_json::from_str(text).map_err(|error| DumpError::Manifest {
                path: path.clone(),
                reason: error.to_string(),
            })?;
        if probe.format_version != FORMAT_VERSION {
            return Err(DumpError::UnsupportedVersion {
                path,
                found: probe.format_version,
                supported: FORMAT_VERSION,
            });
        }
        let invalid = |error: serde_json::Error| DumpError::Manifest {
            path: path.clone(),
            reason: error.to_string(),
        };
        let manifest: Self = match probe.manifest_version {
            Some(MANIFEST_VERSION) => serde_json::from_str(text).map_err(invalid)?,
            None => {
                // Version 1: the same fields, `schedule` only where the dump has one.
                let mut value: serde_json::Value = serde_json::from_str(text).map_err(invalid)?;
                if let Some(fields) = value.as_object_mut() {
                    fields.insert("manifest_version".into(), MANIFEST_VERSION.into());
                    fields.entry("schedule").or_insert(serde_json::Value::Null);
                }
                serde_json::from_value(value).map_err(invalid)?
            }
            Some(found) => {
                return Err(DumpError::UnsupportedManifestVersion {
                    path,
                    found,
                    supported: MANIFEST_VERSION,
                });
            }
        };
        manifest.validate(&path)?;
        Ok(manifest)
    }

    /// Checks that the manifest agrees with itself: `path` only labels errors.
    ///
    /// Segment `i` is named `segment-{i:06}.bin` (so a manifest cannot point outside its
    /// directory); each holds at least one record, within its block range and size; segments
    /// ascend without overlap (and, for a chained dump, without gaps); and the totals and the
    /// dump's first and last block match the segments.
    pub fn validate(&self, path: &Path) -> Result<(), DumpError> {
        let invalid = |reason: String| DumpError::Manifest {
            path: path.to_path_buf(),
            reason,
        };
        if self.format_version != FORMAT_VERSION {
            return Err(DumpError::UnsupportedVersion {
                path: path.to_path_buf(),
                found: self.format_version,
                supported: FORMAT_VERSION,
            });
        }
        if self.manifest_version != MANIFEST_VERSION {
            return Err(DumpError::UnsupportedManifestVersion {
                path: path.to_path_buf(),
                found: self.manifest_version,
                supported: MANIFEST_VERSION,
            });
        }

        let mut total_records: u64 = 0;
        let mut previous: Option<&SegmentInfo> = None;
        for (index, segment) in self.segments.iter().enumerate() {
            self.check_segment(index, segment, previous)
                .map_err(invalid)?;
            total_records = total_records.saturating_add(segment.records);
            previous = Some(segment);
        }

        if total_records != self.record_count {
            return Err(invalid(format!(
                "record_count is {} but the segments hold {total_records} records",
                self.record_count
            )));
        }
        let first = self.segments.first().map(|segment| segment.first_block);
        let last = self.segments.last().map(|segment| segment.last_block);
        if self.first_block != first || self.last_block != last {
            return Err(invalid(format!(
                "block range {:?}..={:?} disagrees with the segments' {first:?}..={last:?}",
                self.first_block, self.last_block
            )));
        }
        Ok(())
    }

    /// Checks one segment's entry on its own and against the one before it; the reason it is
    /// invalid, if it is.
    fn check_segment(
        &self,
        index: usize,
        segment: &SegmentInfo,
        previous: Option<&SegmentInfo>,
    ) -> Result<(), String> {
        let expected_name = segment_file_name(index);
        if segment.file != expected_name {
            return Err(format!(
                "segment {index} is named {:?}, expected {expected_name:?}",
                segment.file
            ));
        }
        let name = &segment.file;
        if segment.records == 0 {
            return Err(format!("{name} holds no records"));
        }
        if segment.first_block > segment.last_block {
            return Err(format!(
                "{name}: first block {} is after last block {}",
                segment.first_block, segment.last_block
            ));
        }
        // Numbers strictly ascend, so a range of n numbers holds at most n records; a chained
        // range holds exactly n. (Computed as `last - first` to stay clear of overflow.)
        let span_minus_one = segment.last_block - segment.first_block;
        let records_minus_one = segment.records - 1;
        if records_minus_one > span_minus_one
            || (self.chained && records_minus_one != span_minus_one)
        {
            return Err(format!(
                "{name}: {} records cannot span blocks {}..={} in a {} dump",
                segment.records,
                segment.first_block,
                segment.last_block,
                if self.chained {
                    "chained"
                } else {
                    "non-chained"
                }
            ));
        }
        let min_bytes = segment
            .records
            .saturating_mul(FRAME_HEADER_LEN)
            .saturating_add(SEGMENT_HEADER_LEN);
        if segment.bytes < min_bytes {
            return Err(format!(
                "{name}: {} bytes cannot hold {} records (at least {min_bytes} needed)",
                segment.bytes, segment.records
            ));
        }
        if let Some(previous) = previous {
            let ascending = segment.first_block > previous.last_block;
            let contiguous = previous.last_block.checked_add(1) == Some(segment.first_block);
            if !ascending || (self.chained && !contiguous) {
                return Err(format!(
                    "{name} starts at block {} but {} ends at block {}",
                    segment.first_block, previous.file, previous.last_block
                ));
            }
        }
        Ok(())
    }

    /// Writes the manifest to `dir/manifest.json` atomically and durably.
    ///
    /// Writes a temporary file, fsyncs it, renames it over the manifest and fsyncs the directory:
    /// after a crash at any point, `manifest.json` is either the previous version or this one. The
    /// temporary file is created new, never through a link.
    pub(crate) fn write_atomic(&self, dir: &Path) -> Result<(), DumpError> {
        let tmp_path = dir.join(MANIFEST_TMP_FILE);
        let path = Self::path_in(dir);
        let mut json = serde_json::to_vec_pretty(self).map_err(|error| DumpError::Manifest {
            path: path.clone(),
            reason: error.to_string(),
        })?;
        json.push(b'\n');

        let mut file = create_tmp(&tmp_path)?;
        let written = file.write_all(&json).and_then(|()| file.sync_all());
        drop(file);
        if let Err(source) = written {
            // The file this call created, and no other: a retried flush creates it anew.
            let _ = fs::remove_file(&tmp_path);
            return Err(DumpError::io(&tmp_path, source));
        }
        if let Err(source) = fs::rename(&tmp_path, &path) {
            let _ = fs::remove_file(&tmp_path);
            return Err(DumpError::io(&path, source));
        }
        sync_dir(dir)
    }
}

/// Creates the manifest's temporary file, new: never one already there, which could be a link to
/// a file outside the dump. The one exception is a writer's own leftover, a regular file of this
/// user's with one name, left by a writer stopped between creating it and renaming it (the caller
/// holds the dump's lock, so no live writer is using it): it is removed and created anew.
fn create_tmp(tmp_path: &Path) -> Result<File, DumpError> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    match open_for_writing(tmp_path, &mut options) {
        Err(error) if already_exists(&error) => {}
        result => return result,
    }
    let metadata =
        fs::symlink_metadata(tmp_path).map_err(|source| DumpError::io(tmp_path, source))?;
    if let Some(reason) = unsafe_reason(&metadata) {
        return Err(DumpError::UnsafeFile {
            path: tmp_path.to_path_buf(),
            reason,
        });
    }
    tracing::warn!(path = %tmp_path.display(), "removing a temporary manifest left by an interrupted writer");
    fs::remove_file(tmp_path).map_err(|source| DumpError::io(tmp_path, source))?;
    open_for_writing(tmp_path, &mut options)
}

/// Makes a directory's entries (new files, renames) durable.
#[cfg(unix)]
pub(crate) fn sync_dir(dir: &Path) -> Result<(), DumpError> {
    File::open(dir)
        .and_then(|handle| handle.sync_all())
        .map_err(|source| DumpError::io(dir, source))
}

/// Directories cannot be opened for syncing on this platform; renames are as durable as it offers.
#[cfg(not(unix))]
pub(crate) fn sync_dir(_dir: &Path) -> Result<(), DumpError> {
    Ok(())
}
