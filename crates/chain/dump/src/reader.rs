//! Reading a dump back, checking everything on the way.

use std::{
    fs::{self, File},
    io::{BufReader, Read, Take},
    path::{Path, PathBuf},
};

use crate::{
    BlockHashEntry, BlockRecord, ChainLinks, DumpError,
    frame::{CrcReader, FrameCursor, check_block_order},
    manifest::{Manifest, SegmentInfo},
};

/// Read buffer per open segment: large enough that frame headers and small payloads come from
/// memory, small enough not to matter.
const READ_BUFFER_BYTES: usize = 256 * 1024;

/// An open dump directory.
///
/// Opening reads and validates the manifest and checks that every segment file exists and holds
/// at least the recorded bytes; [`records`](Self::records) then streams the records, verifying each
/// frame and the block sequence, and [`verify_checksums`](Self::verify_checksums) checks the
/// segments without decoding them.
///
/// A reader sees the dump as of the manifest it opened: exactly the first `bytes` bytes of each
/// listed segment. Bytes past them (frames a writer has appended but not yet flushed, or a crash's
/// leftovers) and segment files the manifest does not list are not part of the dump and are not
/// read. So a dump may be read while a [`DumpWriter`](crate::DumpWriter) appends to it: the reader
/// gets the durable prefix the manifest names, and the records flushed later are for the next
/// `open`. (A writer that cuts the dump back, on a reorg, shrinks files a reader may still be
/// reading: that reader fails with a typed error, and a new `open` reads the cut dump.)
///
/// ```no_run
/// use bal_replay_dump::DumpReader;
///
/// let reader = DumpReader::open("dump/")?.expect_chain_id(1)?;
/// for record in reader.records() {
///     let record = record?;
///     println!("block {} with {} transactions", record.number(), record.tx_count());
/// }
/// # Ok::<(), bal_replay_dump::DumpError>(())
/// ```
#[derive(Debug, Clone)]
pub struct DumpReader {
    dir: PathBuf,
    manifest: Manifest,
}

impl DumpReader {
    /// Opens the dump in `dir`: loads and validates `manifest.json` (version, internal
    /// consistency) and checks that each segment file exists and holds at least the recorded
    /// bytes.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, DumpError> {
        let dir = dir.as_ref().to_path_buf();
        let manifest = Manifest::load(&dir)?;
        for segment in &manifest.segments {
            check_segment_size(&dir, segment)?;
        }
        Ok(Self { dir, manifest })
    }

    /// Fails with [`DumpError::WrongChain`] unless the dump is for chain `expected`.
    pub fn expect_chain_id(self, expected: u64) -> Result<Self, DumpError> {
        if self.manifest.chain_id != expected {
            return Err(DumpError::WrongChain {
                path: Manifest::path_in(&self.dir),
                expected,
                found: self.manifest.chain_id,
            });
        }
        Ok(self)
    }

    /// Fails with [`DumpError::NoRecords`] if the manifest lists no records: a dump whose writer
    /// was stopped before its first flush reads as valid and empty, and a replay or a measurement
    /// over it would report on nothing.
    pub fn expect_records(self) -> Result<Self, DumpError> {
        if self.manifest.record_count == 0 {
            return Err(DumpError::NoRecords { path: self.dir });
        }
        Ok(self)
    }

    /// The dump directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The validated manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The chain the dump's blocks belong to.
    pub fn chain_id(&self) -> u64 {
        self.manifest.chain_id
    }

    /// Streams every record in order, one segment at a time.
    ///
    /// Each item is a record or the first error found; after an error the iterator ends. Beyond
    /// the per-frame checks (see [`decode_segment_bytes`](crate::decode_segment_bytes)), it checks
    /// block order (no gaps in a chained dump), the parent links of a chained dump
    /// ([`DumpError::BrokenLink`]), each segment's record count, first and last block
    /// and whole-file CRC-32 against the manifest (reported once the segment's last frame is
    /// read), and the dump's totals at the end. Only what one frame needs is held in memory.
    pub fn records(&self) -> Records {
        Records {
            dir: self.dir.clone(),
            manifest: self.manifest.clone(),
            next_segment: 0,
            current: None,
            previous_block: None,
            links: ChainLinks::new(self.manifest.chained),
            records_read: 0,
            first_block: None,
            done: false,
        }
    }

    /// [`records`](Self::records) without the parent-link check: for a tool that checks the links
    /// itself and reports each break without stopping there (`bal-dump validate`). A replay never
    /// reads a dump this way.
    pub fn records_unlinked(&self) -> Records {
        Records {
            links: ChainLinks::new(false),
            ..self.records()
        }
    }

    /// The hashes of the blocks before the dump's first that its first record carries (none for
    /// an empty dump): what a replay over a store without headers (reth's MDBX) starts with.
    pub fn first_block_hashes(&self) -> Result<Vec<BlockHashEntry>, DumpError> {
        Ok(match self.records().next() {
            Some(first) => first?.block_hashes,
            None => Vec::new(),
        })
    }

    /// The last record, reading only the last segment (with every check [`records`](Self::records)
    /// makes of it): how a writer that follows a chain learns the hash its next block must link to.
    pub fn last_record(&self) -> Result<Option<BlockRecord>, DumpError> {
        let Some(index) = self.manifest.segments.len().checked_sub(1) else {
            return Ok(None);
        };
        let earlier: u64 = self.manifest.segments[..index]
            .iter()
            .map(|s| s.records)
            .sum();
        let mut records = Records {
            next_segment: index,
            records_read: earlier,
            first_block: self.manifest.first_block,
            ..self.records()
        };
        let mut last = None;
        while let Some(record) = records.advance()? {
            last = Some(record);
        }
        Ok(last)
    }

    /// Recomputes the CRC-32 of every segment's recorded bytes and compares it with the manifest,
    /// without decoding anything: a quick integrity check (e.g. after copying a dump).
    pub fn verify_checksums(&self) -> Result<(), DumpError> {
        let mut chunk = vec![0u8; 1 << 16];
        for segment in &self.manifest.segments {
            let path = self.dir.join(&segment.file);
            let file = File::open(&path).map_err(|source| DumpError::io(&path, source))?;
            let mut hasher = crc32fast::Hasher::new();
            let mut length: u64 = 0;
            let mut reader = BufReader::with_capacity(READ_BUFFER_BYTES, file.take(segment.bytes));
            loop {
                let read = reader
                    .read(&mut chunk)
                    .map_err(|source| DumpError::io(&path, source))?;
                if read == 0 {
                    break;
                }
                hasher.update(&chunk[..read]);
                length += read as u64;
            }
            if length != segment.bytes {
                return Err(DumpError::SizeMismatch {
                    path,
                    expected: segment.bytes,
                    found: length,
                });
            }
            let found = hasher.finalize();
            if found != segment.crc32 {
                return Err(DumpError::SegmentChecksum {
                    path,
                    expected: segment.crc32,
                    found,
                });
            }
        }
        Ok(())
    }
}

/// Fails with [`DumpError::SizeMismatch`] if the segment file is shorter than the recorded size:
/// bytes the manifest declared durable are gone. A longer file is a writer's unflushed tail.
fn check_segment_size(dir: &Path, segment: &SegmentInfo) -> Result<(), DumpError> {
    let path = dir.join(&segment.file);
    let found = fs::metadata(&path)
        .map_err(|source| DumpError::io(&path, source))?
        .len();
    if found < segment.bytes {
        return Err(DumpError::SizeMismatch {
            path,
            expected: segment.bytes,
            found,
        });
    }
    Ok(())
}

/// The segment a [`Records`] iterator is reading, and what it has seen of it.
struct OpenSegment {
    /// Index into the manifest's segments.
    index: usize,
    cursor: FrameCursor<CrcReader<BufReader<Take<File>>>>,
    records: u64,
    first_block: Option<u64>,
    last_block: Option<u64>,
}

/// Iterator over a dump's records, from [`DumpReader::records`].
///
/// Owns what it needs (a copy of the manifest), so it can outlive the reader or move to another
/// thread.
pub struct Records {
    dir: PathBuf,
    manifest: Manifest,
    /// Index of the next segment to open.
    next_segment: usize,
    current: Option<OpenSegment>,
    /// Number of the last record yielded, across segments.
    previous_block: Option<u64>,
    /// In a chained dump, each record's parent must be the record before it: a replay commits
    /// records in turn, and a dump spliced from two chains would otherwise commit without an error
    /// in a design that reads only the dump's values.
    links: ChainLinks,
    records_read: u64,
    first_block: Option<u64>,
    done: bool,
}

impl Records {
    /// The next record, `Ok(None)` at the (verified) end.
    fn advance(&mut self) -> Result<Option<BlockRecord>, DumpError> {
        loop {
            let Some(segment) = &mut self.current else {
                if self.next_segment == self.manifest.segments.len() {
                    self.check_totals()?;
                    return Ok(None);
                }
                self.current = Some(self.open_segment(self.next_segment)?);
                self.next_segment += 1;
                continue;
            };

            if segment.cursor.at_end() {
                let finished = self.current.take();
                if let Some(finished) = finished {
                    self.check_segment(&finished)?;
                }
                continue;
            }

            let (record, offset) = segment.cursor.next_record()?;
            let number = record.number();
            check_block_order(
                self.manifest.chained,
                self.previous_block,
                number,
                segment.cursor.path(),
                offset,
            )?;
            self.links
                .check(&record)
                .map_err(|link| DumpError::BrokenLink {
                    path: segment.cursor.path().to_path_buf(),
                    offset,
                    link: Box::new(link),
                })?;
            segment.records += 1;
            segment.first_block.get_or_insert(number);
            segment.last_block = Some(number);
            self.previous_block = Some(number);
            self.first_block.get_or_insert(number);
            self.records_read += 1;
            return Ok(Some(record));
        }
    }

    fn open_segment(&self, index: usize) -> Result<OpenSegment, DumpError> {
        let info = &self.manifest.segments[index];
        let path = self.dir.join(&info.file);
        let file = File::open(&path).map_err(|source| DumpError::io(&path, source))?;
        // Checked again here, not just at open: a writer cutting the dump back may have shrunk
        // the file since.
        let len = file
            .metadata()
            .map_err(|source| DumpError::io(&path, source))?
            .len();
        if len < info.bytes {
            return Err(DumpError::SizeMismatch {
                path,
                expected: info.bytes,
                found: len,
            });
        }
        // Only the recorded prefix is the dump; what a writer appends after it is not read.
        let source = CrcReader::new(BufReader::with_capacity(
            READ_BUFFER_BYTES,
            file.take(info.bytes),
        ));
        let cursor = FrameCursor::open(source, path, info.bytes)?;
        Ok(OpenSegment {
            index,
            cursor,
            records: 0,
            first_block: None,
            last_block: None,
        })
    }

    /// Compares a fully read segment with its manifest entry.
    fn check_segment(&self, segment: &OpenSegment) -> Result<(), DumpError> {
        let info = &self.manifest.segments[segment.index];
        let path = segment.cursor.path();
        if segment.records != info.records {
            return Err(DumpError::CountMismatch {
                path: path.to_path_buf(),
                expected: info.records,
                found: segment.records,
            });
        }
        check_block(path, "first", Some(info.first_block), segment.first_block)?;
        check_block(path, "last", Some(info.last_block), segment.last_block)?;
        let found = segment.cursor.source().crc32();
        if found != info.crc32 {
            return Err(DumpError::SegmentChecksum {
                path: path.to_path_buf(),
                expected: info.crc32,
                found,
            });
        }
        Ok(())
    }

    /// Compares the whole dump with the manifest's totals.
    fn check_totals(&self) -> Result<(), DumpError> {
        let path = Manifest::path_in(&self.dir);
        if self.records_read != self.manifest.record_count {
            return Err(DumpError::CountMismatch {
                path,
                expected: self.manifest.record_count,
                found: self.records_read,
            });
        }
        check_block(&path, "first", self.manifest.first_block, self.first_block)?;
        check_block(&path, "last", self.manifest.last_block, self.previous_block)
    }
}

fn check_block(
    path: &Path,
    which: &'static str,
    expected: Option<u64>,
    found: Option<u64>,
) -> Result<(), DumpError> {
    if expected == found {
        return Ok(());
    }
    Err(DumpError::BlockRangeMismatch {
        path: path.to_path_buf(),
        which,
        expected,
        found,
    })
}

impl std::fmt::Debug for Records {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Records")
            .field("dir", &self.dir)
            .field(
                "segment",
                &self.current.as_ref().map(|segment| segment.cursor.path()),
            )
            .field("records_read", &self.records_read)
            .field("previous_block", &self.previous_block)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl Iterator for Records {
    type Item = Result<BlockRecord, DumpError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.advance() {
            Ok(Some(record)) => Some(Ok(record)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(error) => {
                self.done = true;
                self.current = None;
                Some(Err(error))
            }
        }
    }
}

impl std::iter::FusedIterator for Records {}
