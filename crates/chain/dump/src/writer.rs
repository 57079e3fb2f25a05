//! Appending records to a dump, durably and resumably.

use std::{
    fs::{self, File, OpenOptions},
    io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write},
    path::{Path, PathBuf},
};

use crate::{
    BlockRecord, DumpError,
    frame::{
        DEFAULT_ZSTD_LEVEL, FrameCursor, SEGMENT_HEADER_LEN, check_block_order, check_record_bal,
        check_record_codes, check_sender_count, encode_frame, segment_file_name, segment_header,
    },
    lock::WriterLock,
    manifest::{DumpMeta, Manifest, SegmentInfo},
    owned::{check_dir_owner, open_for_writing},
};

/// How a [`DumpWriter`] lays out its files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriterOptions {
    /// A segment is closed and the next one started when appending a frame would take the segment
    /// past this many bytes. A segment always takes at least one frame, so a single record larger
    /// than this gets a segment of its own. Default: 256 MiB.
    pub segment_max_bytes: u64,
    /// zstd compression level for payloads. Readers do not need to know it. Default: 3.
    pub zstd_level: i32,
}

impl Default for WriterOptions {
    fn default() -> Self {
        Self {
            segment_max_bytes: 256 * 1024 * 1024,
            zstd_level: DEFAULT_ZSTD_LEVEL,
        }
    }
}

/// The segment currently being appended to.
struct OpenSegment {
    path: PathBuf,
    out: BufWriter<File>,
    /// CRC-32 of every byte written to the segment, so the manifest's checksum costs no re-read.
    hasher: crc32fast::Hasher,
    /// Bytes written to the segment, header included.
    bytes: u64,
}

/// Appends [`BlockRecord`]s to a dump directory.
///
/// Records become durable at [`flush`](Self::flush) (or [`finish`](Self::finish)): the segment is
/// fsynced, then the manifest is rewritten to cover it. A crash between flushes loses the records
/// appended since the last one and nothing else; [`resume`](Self::resume) cuts the partial tail off
/// and carries on. Dropping the writer flushes it on a best-effort basis (errors are only logged),
/// so call `finish` to see them.
///
/// A writer holds the directory's lock ([`LOCK_FILE`](crate::LOCK_FILE)) for as long as it lives:
/// a second writer on the same directory, in this process or another, fails with
/// [`DumpError::Locked`]. Readers take no lock; they read what the manifest names.
///
/// A writer writes only in a directory of its own user ([`DumpError::ForeignDirectory`]
/// otherwise), and never through a link: a lock file, manifest or segment that is a symbolic or
/// hard link, or another user's file, fails with [`DumpError::UnsafeFile`], its target untouched.
///
/// ```no_run
/// # fn records() -> Vec<bal_replay_dump::BlockRecord> { Vec::new() }
/// use bal_replay_dump::{DumpMeta, DumpWriter, WriterOptions};
///
/// let meta = DumpMeta { chain_id: 1, chained: true, source: "reth-exex".into(), schedule: None };
/// let mut writer = DumpWriter::create("dump/", meta, WriterOptions::default())?;
/// for record in records() {
///     writer.append(&record)?;
/// }
/// let manifest = writer.finish()?;
/// println!("{} records", manifest.record_count);
/// # Ok::<(), bal_replay_dump::DumpError>(())
/// ```
pub struct DumpWriter {
    dir: PathBuf,
    options: WriterOptions,
    /// Describes everything appended so far; the open segment's `crc32` is brought up to date at
    /// each flush.
    manifest: Manifest,
    /// `None` until the first record after creation or a rotation: segments are created lazily so
    /// that none is ever empty.
    open: Option<OpenSegment>,
    /// Records appended since the manifest was last written.
    unflushed: u64,
    /// Set when a write to the open segment failed part-way: the file may end in a partial frame,
    /// so nothing more may be appended to it or recorded in the manifest. Holds the path the
    /// failed write went to, for [`DumpError::WriterPoisoned`].
    poisoned: Option<PathBuf>,
    /// The directory's writer lock. Declared last so that it is released last, after the open
    /// segment's file is closed: no other writer may touch the files before this one is done.
    _lock: WriterLock,
}

impl DumpWriter {
    /// Creates a new, empty dump in `dir` (creating the directory if needed) and writes its
    /// manifest.
    ///
    /// Fails with [`DumpError::ForeignDirectory`] if the directory belongs to another user, with
    /// [`DumpError::UnsafeFile`] if its lock file is a link or another user's, with
    /// [`DumpError::Locked`] if another writer holds the directory, with
    /// [`DumpError::AlreadyExists`] if `dir` already holds a manifest, and with
    /// [`DumpError::OrphanedSegments`] if it holds segment files without one (a dump whose
    /// manifest was lost: a new dump would start writing `segment-000000.bin` over its records).
    pub fn create(
        dir: impl AsRef<Path>,
        meta: DumpMeta,
        options: WriterOptions,
    ) -> Result<Self, DumpError> {
        let dir = dir.as_ref().to_path_buf();
        fs::create_dir_all(&dir).map_err(|source| DumpError::io(&dir, source))?;
        check_dir_owner(&dir)?;
        // Locked before looking for a manifest, so that of two writers creating the same dump one
        // creates it and the other is told the directory is in use.
        let lock = WriterLock::acquire(&dir)?;
        let manifest_path = Manifest::path_in(&dir);
        if manifest_path.exists() {
            return Err(DumpError::AlreadyExists {
                path: manifest_path,
            });
        }
        if let Some(file) = first_segment_file(&dir)? {
            return Err(DumpError::OrphanedSegments { path: dir, file });
        }
        let manifest = Manifest::empty(&meta);
        manifest.write_atomic(&dir)?;
        tracing::debug!(dir = %dir.display(), chain_id = meta.chain_id, chained = meta.chained, "created dump");
        Ok(Self {
            dir,
            options,
            manifest,
            open: None,
            unflushed: 0,
            poisoned: None,
            _lock: lock,
        })
    }

    /// Reopens the dump in `dir` to append more records, with default [`WriterOptions`].
    ///
    /// See [`resume_with_options`](Self::resume_with_options).
    pub fn resume(dir: impl AsRef<Path>) -> Result<Self, DumpError> {
        Self::resume_with_options(dir, WriterOptions::default())
    }

    /// Reopens the dump in `dir` to append more records.
    ///
    /// Reads the manifest; cuts the last segment back to the size the manifest records (dropping
    /// whatever a crash left after the last flush) and checks the kept bytes against the manifest's
    /// CRC-32; deletes segment files past the manifest's last (started after the last flush); and
    /// positions the writer after the last record, so the next [`append`](Self::append) continues
    /// the block sequence. Fails with [`DumpError::Locked`], touching nothing, if another writer
    /// holds the directory.
    pub fn resume_with_options(
        dir: impl AsRef<Path>,
        options: WriterOptions,
    ) -> Result<Self, DumpError> {
        let dir = dir.as_ref().to_path_buf();
        if !Manifest::path_in(&dir).exists() {
            // Reported as the missing manifest it is, and without leaving a lock file in a
            // directory that holds no dump.
            Manifest::load(&dir)?;
        }
        check_dir_owner(&dir)?;
        // Locked before anything is read: another writer may be appending.
        let lock = WriterLock::acquire(&dir)?;
        let manifest = Manifest::load(&dir)?;
        remove_unrecorded_segments(&dir, manifest.segments.len())?;

        let open = match manifest.segments.last() {
            Some(last) => Some(reopen_segment(&dir, last)?),
            None => None,
        };
        tracing::debug!(
            dir = %dir.display(),
            records = manifest.record_count,
            last_block = ?manifest.last_block,
            "resumed dump"
        );
        Ok(Self {
            dir,
            options,
            manifest,
            open,
            unflushed: 0,
            poisoned: None,
            _lock: lock,
        })
    }

    /// The dump directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The manifest as of the last append (the open segment's `crc32` is current as of the last
    /// flush).
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Number of the last record appended, if any: the next must be above it (exactly one above
    /// in a chained dump).
    pub fn last_block(&self) -> Option<u64> {
        self.manifest.last_block
    }

    /// Records appended since the last flush: what a crash now would lose.
    pub fn unflushed(&self) -> u64 {
        self.unflushed
    }

    /// Appends a record.
    ///
    /// Checks first, writing nothing if any fails: the block number follows the last one
    /// ([`DumpError::Gap`] or [`DumpError::OutOfOrder`]), there is one sender per transaction
    /// ([`DumpError::SenderCountMismatch`]), its BAL has EIP-7928's shape
    /// ([`DumpError::MalformedBal`]), and the record fits in a frame
    /// ([`DumpError::FrameTooLarge`]). Then starts a new segment if this frame would take the
    /// current one past `segment_max_bytes`, and writes the frame. The record is durable after the
    /// next [`flush`](Self::flush).
    pub fn append(&mut self, record: &BlockRecord) -> Result<(), DumpError> {
        self.check_not_poisoned()?;
        let (path, offset) = self.next_frame_position();
        check_block_order(
            self.manifest.chained,
            self.manifest.last_block,
            record.number(),
            &path,
            offset,
        )?;
        check_sender_count(record, &path, offset)?;
        check_record_bal(record, &path, offset)?;
        check_record_codes(record, &path, offset)?;
        let frame = encode_frame(record, self.options.zstd_level, &path, offset)?;

        let result = self.write_frame(record.number(), &frame);
        if let Err(error) = &result {
            self.poison(error.path());
        }
        result
    }

    /// Makes everything appended so far durable: flushes and fsyncs the open segment, then
    /// rewrites the manifest atomically to cover it.
    pub fn flush(&mut self) -> Result<(), DumpError> {
        self.check_not_poisoned()?;
        if let Some(open) = &mut self.open {
            if let Err(source) = open
                .out
                .flush()
                .and_then(|()| open.out.get_ref().sync_data())
            {
                let error = DumpError::io(&open.path, source);
                self.poison(error.path());
                return Err(error);
            }
            if let Some(info) = self.manifest.segments.last_mut() {
                info.crc32 = open.hasher.clone().finalize();
            }
        }
        // A failed manifest write leaves the segment intact and the old manifest in place, so the
        // writer stays usable and the flush can be retried.
        self.manifest.write_atomic(&self.dir)?;
        self.unflushed = 0;
        Ok(())
    }

    /// Removes every record numbered above `keep_through` (all of them for `None`), durably, and
    /// returns how many were removed. Appending then continues after `keep_through`.
    ///
    /// This is how a dump follows a chain reorganisation: cut back to the fork point, then append
    /// the new branch. The rewritten manifest is the commit point: a crash before it leaves the old
    /// dump, a crash after it leaves bytes past the manifest that [`resume`](Self::resume) cuts off,
    /// so a reader never sees a half-truncated dump.
    pub fn truncate_after(&mut self, keep_through: Option<u64>) -> Result<u64, DumpError> {
        self.check_not_poisoned()?;
        let keeps = |number: u64| keep_through.is_some_and(|keep| number <= keep);
        match self.manifest.last_block {
            Some(last) if !keeps(last) => {}
            _ => return Ok(0),
        }
        // The cut is computed over bytes on disk, so make everything appended so far durable.
        self.flush()?;
        self.open = None;

        let mut manifest = self.manifest.clone();
        while manifest
            .segments
            .last()
            .is_some_and(|segment| !keeps(segment.first_block))
        {
            manifest.segments.pop();
        }
        if let (Some(keep), Some(segment)) = (keep_through, manifest.segments.last_mut())
            && segment.last_block > keep
        {
            cut_segment(&self.dir, segment, keep)?;
        }
        let before = manifest.record_count;
        manifest.record_count = manifest.segments.iter().map(|s| s.records).sum();
        manifest.first_block = manifest.segments.first().map(|s| s.first_block);
        manifest.last_block = manifest.segments.last().map(|s| s.last_block);
        manifest.write_atomic(&self.dir)?;
        self.manifest = manifest;

        // Past the commit point: what follows is what `resume` would do after a crash here.
        remove_unrecorded_segments(&self.dir, self.manifest.segments.len())?;
        self.open = match self.manifest.segments.last() {
            Some(last) => {
                Some(reopen_segment(&self.dir, last).inspect_err(|e| self.poison(e.path()))?)
            }
            None => None,
        };
        let removed = before - self.manifest.record_count;
        tracing::debug!(dir = %self.dir.display(), ?keep_through, removed, "truncated dump");
        Ok(removed)
    }

    /// Flushes and closes the writer, returning the final manifest.
    pub fn finish(mut self) -> Result<Manifest, DumpError> {
        self.flush()?;
        Ok(self.manifest.clone())
    }

    fn check_not_poisoned(&self) -> Result<(), DumpError> {
        match &self.poisoned {
            None => Ok(()),
            Some(path) => Err(DumpError::WriterPoisoned { path: path.clone() }),
        }
    }

    /// Refuses all further work after a failed write, and closes the open segment without writing
    /// what is still buffered: after a failure the file's end is not known to be a frame boundary,
    /// so writing more (as `BufWriter`'s drop would) could only add to a partial frame. The bytes
    /// past the manifest's are cut off by the next [`resume`](Self::resume). `failed` is the
    /// file the failure was about; later errors name it.
    fn poison(&mut self, failed: &Path) {
        if let Some(open) = self.open.take() {
            let (_file, _buffered) = open.out.into_parts();
        }
        self.poisoned.get_or_insert_with(|| failed.to_path_buf());
    }

    /// Where the next frame would go: the end of the open segment, or just past the header of the
    /// segment that the next append will create. (Used to label errors.)
    fn next_frame_position(&self) -> (PathBuf, u64) {
        match &self.open {
            Some(open) => (open.path.clone(), open.bytes),
            None => (
                self.dir
                    .join(segment_file_name(self.manifest.segments.len())),
                SEGMENT_HEADER_LEN,
            ),
        }
    }

    /// Writes an encoded frame, rotating segments as needed, and records it in the manifest.
    fn write_frame(&mut self, number: u64, frame: &[u8]) -> Result<(), DumpError> {
        let frame_len = frame.len() as u64;
        let full = self.open.as_ref().is_some_and(|open| {
            open.bytes.saturating_add(frame_len) > self.options.segment_max_bytes
        });
        if full {
            self.close_segment()?;
        }
        if self.open.is_none() {
            self.start_segment(number)?;
        }
        let (Some(open), Some(info)) = (&mut self.open, self.manifest.segments.last_mut()) else {
            // start_segment just made both; reaching here would be a bug, reported rather than
            // panicking.
            return Err(DumpError::io(
                &self.dir,
                io::Error::other("no open segment after starting one"),
            ));
        };

        open.out
            .write_all(frame)
            .map_err(|source| DumpError::io(&open.path, source))?;
        open.hasher.update(frame);
        open.bytes += frame_len;

        info.records += 1;
        info.last_block = number;
        info.bytes = open.bytes;
        self.manifest.record_count += 1;
        self.manifest.first_block.get_or_insert(number);
        self.manifest.last_block = Some(number);
        self.unflushed += 1;
        Ok(())
    }

    /// Creates the next segment file, writes its header and adds it to the manifest (in memory).
    fn start_segment(&mut self, first_block: u64) -> Result<(), DumpError> {
        let file_name = segment_file_name(self.manifest.segments.len());
        let path = self.dir.join(&file_name);
        // Never over an existing file: `create` refuses a directory holding segments and `resume`
        // removes those past the manifest, so one found here is not this dump's to overwrite.
        let file = open_for_writing(&path, OpenOptions::new().write(true).create_new(true))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        let header = segment_header();
        out.write_all(&header)
            .map_err(|source| DumpError::io(&path, source))?;
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&header);

        self.manifest.segments.push(SegmentInfo {
            file: file_name,
            first_block,
            last_block: first_block,
            records: 0,
            bytes: SEGMENT_HEADER_LEN,
            crc32: 0,
        });
        tracing::debug!(path = %path.display(), first_block, "started segment");
        self.open = Some(OpenSegment {
            path,
            out,
            hasher,
            bytes: SEGMENT_HEADER_LEN,
        });
        Ok(())
    }

    /// Flushes, fsyncs and closes the open segment, fixing its checksum in the manifest.
    ///
    /// The segment is complete on disk before the manifest can mention its successor.
    fn close_segment(&mut self) -> Result<(), DumpError> {
        let Some(mut open) = self.open.take() else {
            return Ok(());
        };
        if let Err(source) = open
            .out
            .flush()
            .and_then(|()| open.out.get_ref().sync_data())
        {
            // As in `poison`: what is still buffered is not written.
            let (_file, _buffered) = open.out.into_parts();
            let error = DumpError::io(&open.path, source);
            self.poisoned.get_or_insert(open.path);
            return Err(error);
        }
        if let Some(info) = self.manifest.segments.last_mut() {
            info.crc32 = open.hasher.finalize();
        }
        Ok(())
    }
}

impl std::fmt::Debug for DumpWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DumpWriter")
            .field("dir", &self.dir)
            .field("options", &self.options)
            .field("record_count", &self.manifest.record_count)
            .field("last_block", &self.manifest.last_block)
            .field("segments", &self.manifest.segments.len())
            .field("unflushed", &self.unflushed)
            .field("poisoned", &self.poisoned)
            .finish_non_exhaustive()
    }
}

impl Drop for DumpWriter {
    fn drop(&mut self) {
        if self.unflushed == 0 || self.poisoned.is_some() {
            return;
        }
        if let Err(error) = self.flush() {
            tracing::warn!(%error, "could not flush dump writer on drop; resume the dump to continue from its last flush");
        }
    }
}

/// Deletes segment files numbered `recorded` and up: started after the last manifest write, so
/// not part of the dump.
/// The name of the first file in `dir` named as a segment is (`segment-NNNNNN.bin`), if any.
fn first_segment_file(dir: &Path) -> Result<Option<String>, DumpError> {
    let entries = fs::read_dir(dir).map_err(|source| DumpError::io(dir, source))?;
    let mut found: Vec<String> = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| DumpError::io(dir, source))?;
        if let Some(name) = entry.file_name().to_str()
            && is_segment_file_name(name)
        {
            found.push(name.to_owned());
        }
    }
    found.sort();
    Ok(found.into_iter().next())
}

/// Whether `name` is one [`segment_file_name`] gives.
fn is_segment_file_name(name: &str) -> bool {
    name.strip_prefix("segment-")
        .and_then(|rest| rest.strip_suffix(".bin"))
        .is_some_and(|digits| digits.len() >= 6 && digits.bytes().all(|b| b.is_ascii_digit()))
}

fn remove_unrecorded_segments(dir: &Path, recorded: usize) -> Result<(), DumpError> {
    let mut index = recorded;
    loop {
        let path = dir.join(segment_file_name(index));
        match fs::remove_file(&path) {
            Ok(()) => {
                tracing::warn!(path = %path.display(), "removed segment file not in the manifest")
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(source) => return Err(DumpError::io(path, source)),
        }
        index += 1;
    }
}

/// Opens the manifest's last segment for appending: truncates it to the recorded size and checks
/// the CRC-32 of what is kept.
/// Shrinks `segment` (whose first block is kept) to its records numbered up to `keep`: finds the
/// first frame past `keep` and records the prefix before it, with that prefix's CRC-32. The file
/// itself is cut later, by [`reopen_segment`], once the manifest says so.
fn cut_segment(dir: &Path, segment: &mut SegmentInfo, keep: u64) -> Result<(), DumpError> {
    let path = dir.join(&segment.file);
    let file = File::open(&path).map_err(|source| DumpError::io(&path, source))?;
    let source = BufReader::with_capacity(1 << 20, (&file).take(segment.bytes));
    let mut cursor = FrameCursor::open(source, path.clone(), segment.bytes)?;
    let (mut records, mut last_block, mut cut) = (0, segment.first_block, segment.bytes);
    while !cursor.at_end() {
        let (record, offset) = cursor.next_record()?;
        if record.number() > keep {
            cut = offset;
            break;
        }
        records += 1;
        last_block = record.number();
    }
    drop(cursor);
    segment.crc32 = crc32_of_prefix(&file, cut)
        .map_err(|source| DumpError::io(&path, source))?
        .finalize();
    segment.records = records;
    segment.last_block = last_block;
    segment.bytes = cut;
    Ok(())
}

/// CRC-32 of the first `len` bytes of `file`, read from its start.
fn crc32_of_prefix(mut file: &File, len: u64) -> io::Result<crc32fast::Hasher> {
    let mut hasher = crc32fast::Hasher::new();
    file.seek(SeekFrom::Start(0))?;
    let mut kept = BufReader::with_capacity(1 << 20, file.take(len));
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let read = kept.read(&mut chunk)?;
        if read == 0 {
            return Ok(hasher);
        }
        hasher.update(&chunk[..read]);
    }
}

fn reopen_segment(dir: &Path, info: &SegmentInfo) -> Result<OpenSegment, DumpError> {
    let path = dir.join(&info.file);
    let io_error = |source| DumpError::io(&path, source);
    // Cut and appended to: never through a link planted under the segment's name.
    let mut file = open_for_writing(&path, OpenOptions::new().read(true).write(true))?;
    let len = file.metadata().map_err(io_error)?.len();
    if len < info.bytes {
        // Bytes the manifest declared durable are gone: not something resuming can repair.
        return Err(DumpError::SizeMismatch {
            path,
            expected: info.bytes,
            found: len,
        });
    }
    if len > info.bytes {
        tracing::warn!(
            path = %path.display(),
            dropped_bytes = len - info.bytes,
            "cutting off bytes written after the last flush"
        );
        file.set_len(info.bytes).map_err(io_error)?;
        file.sync_data().map_err(io_error)?;
    }

    let hasher = crc32_of_prefix(&file, info.bytes).map_err(io_error)?;
    let found = hasher.clone().finalize();
    if found != info.crc32 {
        return Err(DumpError::SegmentChecksum {
            path,
            expected: info.crc32,
            found,
        });
    }

    file.seek(SeekFrom::End(0)).map_err(io_error)?;
    Ok(OpenSegment {
        path: path.clone(),
        out: BufWriter::with_capacity(1 << 20, file),
        hasher,
        bytes: info.bytes,
    })
}
