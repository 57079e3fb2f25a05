//! Everything that can go wrong writing or reading a dump.
//!
//! Every variant names the file it is about, so a message read in a log is enough to find the
//! problem: `segment-000003.bin: frame at byte 1048612: checksum mismatch (...)`. Frame problems also
//! carry the byte offset of the frame's start within its segment file, and every mismatch says what
//! was expected and what was found.

use std::{
    fmt, io,
    path::{Path, PathBuf},
};

/// A part of a segment file that ended before it was complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FramePart {
    /// The segment header (magic and format version) at the start of the file.
    SegmentHeader,
    /// The fixed-size header in front of each frame.
    FrameHeader,
    /// The compressed payload following a frame header.
    Payload,
}

impl fmt::Display for FramePart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::SegmentHeader => "segment header",
            Self::FrameHeader => "frame header",
            Self::Payload => "frame payload",
        })
    }
}

/// One of the two lengths a frame header declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LengthField {
    /// Length of the zstd-compressed payload stored in the file.
    Compressed,
    /// Length of the RLP record the payload decompresses to.
    Raw,
}

impl fmt::Display for LengthField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Compressed => "compressed length",
            Self::Raw => "raw length",
        })
    }
}

/// An error writing or reading a dump.
///
/// `path` is the file the problem is in (a segment file, or `manifest.json`). For errors the writer
/// raises before writing a frame (order, sender count, size), `offset` is where that frame would have
/// started.
#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    /// The operating system refused a read, write, open, sync or rename.
    #[error("{}: I/O error: {source}", path.display())]
    Io {
        /// The file or directory being accessed.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },

    /// The manifest is not valid JSON, or contradicts itself (counts that do not add up, segments
    /// out of order, a segment with an unexpected file name).
    #[error("{}: invalid manifest: {reason}", path.display())]
    Manifest {
        /// Path of `manifest.json`.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },

    /// [`DumpWriter::create`](crate::DumpWriter::create) was pointed at a directory that already
    /// holds a dump; use [`DumpWriter::resume`](crate::DumpWriter::resume) to continue it.
    #[error("{}: a dump already exists here (resume it instead of creating a new one)", path.display())]
    AlreadyExists {
        /// Path of the existing `manifest.json`.
        path: PathBuf,
    },

    /// A new dump was asked for in a directory that holds segment files but no manifest: an
    /// earlier dump whose manifest is gone. Its records are still in the segments, so nothing is
    /// created over them.
    #[error("{}: holds the segment file {file} but no manifest.json (a dump whose manifest is missing); not creating a dump over it: restore the manifest, or move the segments away", path.display())]
    OrphanedSegments {
        /// The directory.
        path: PathBuf,
        /// The first segment file found.
        file: String,
    },

    /// A segment file does not start with `BALDUMP\0`: it is not a segment file at all.
    #[error("{}: bad magic (expected {:?}, found {:?})", path.display(), crate::layout::MAGIC, found)]
    BadMagic {
        /// The segment file.
        path: PathBuf,
        /// The first eight bytes of the file.
        found: [u8; 8],
    },

    /// A segment file or manifest was written by a format version this build cannot read.
    #[error("{}: unsupported format version {found} (this build reads version {supported})", path.display())]
    UnsupportedVersion {
        /// The segment file or manifest.
        path: PathBuf,
        /// The version the file declares.
        found: u32,
        /// The version this build reads and writes.
        supported: u32,
    },

    /// A manifest was written with a manifest version this build cannot read.
    #[error("{}: unsupported manifest version {found} (this build reads versions 1 and {supported})", path.display())]
    UnsupportedManifestVersion {
        /// The manifest.
        path: PathBuf,
        /// The version the manifest declares.
        found: u32,
        /// The version this build writes.
        supported: u32,
    },

    /// The file ends in the middle of a segment header, frame header or payload (typically a write
    /// that was cut off, or a file copied while being written).
    #[error("{}: frame at byte {offset}: truncated {part} (needs {needed} bytes, only {available} remain)", path.display())]
    Truncated {
        /// The segment file.
        path: PathBuf,
        /// Start of the frame (0 for the segment header).
        offset: u64,
        /// What was being read when the file ended.
        part: FramePart,
        /// Bytes that part needs.
        needed: u64,
        /// Bytes left in the file.
        available: u64,
    },

    /// A frame header declares a length above [`MAX_FRAME_BYTES`](crate::MAX_FRAME_BYTES); refused
    /// before allocating anything, since a corrupted length must not become a huge allocation. The
    /// writer raises it for a record too large to store.
    #[error("{}: frame at byte {offset}: {field} {len} exceeds the limit of {max} bytes", path.display())]
    FrameTooLarge {
        /// The segment file.
        path: PathBuf,
        /// Start of the frame.
        offset: u64,
        /// Which length is too large.
        field: LengthField,
        /// The declared (or, when writing, actual) length.
        len: u64,
        /// The limit, [`MAX_FRAME_BYTES`](crate::MAX_FRAME_BYTES).
        max: u64,
    },

    /// The CRC-32 of a frame's compressed payload differs from the one in its header: the bytes
    /// changed after they were written.
    #[error("{}: frame at byte {offset}: checksum mismatch (expected {expected:#010x}, found {found:#010x})", path.display())]
    Checksum {
        /// The segment file.
        path: PathBuf,
        /// Start of the frame.
        offset: u64,
        /// The checksum in the frame header.
        expected: u32,
        /// The checksum of the payload as read.
        found: u32,
    },

    /// The CRC-32 of a whole segment file differs from the one in the manifest.
    #[error("{}: segment checksum mismatch (manifest says {expected:#010x}, file has {found:#010x})", path.display())]
    SegmentChecksum {
        /// The segment file.
        path: PathBuf,
        /// The checksum in the manifest.
        expected: u32,
        /// The checksum of the file as read.
        found: u32,
    },

    /// zstd could not decompress a payload whose checksum matched (or could not compress a record).
    #[error("{}: frame at byte {offset}: zstd failed: {source}", path.display())]
    Decompress {
        /// The segment file.
        path: PathBuf,
        /// Start of the frame.
        offset: u64,
        /// zstd's error.
        #[source]
        source: io::Error,
    },

    /// A payload decompressed to a different number of bytes than the frame header's raw length.
    #[error("{}: frame at byte {offset}: raw length mismatch (header says {expected} bytes, payload holds {found})", path.display())]
    RawLenMismatch {
        /// The segment file.
        path: PathBuf,
        /// Start of the frame.
        offset: u64,
        /// The raw length in the frame header.
        expected: u64,
        /// The length the payload decompressed to (or declares in its zstd header).
        found: u64,
    },

    /// A decompressed payload is not the RLP of a [`BlockRecord`](crate::BlockRecord), or has bytes
    /// after it.
    #[error("{}: frame at byte {offset}: record does not decode: {source}", path.display())]
    Decode {
        /// The segment file.
        path: PathBuf,
        /// Start of the frame.
        offset: u64,
        /// The RLP decoder's error.
        #[source]
        source: alloy_rlp::Error,
    },

    /// In a chained dump, a block is missing: the record's number is past the one expected.
    #[error("{}: frame at byte {offset}: gap in chained dump (expected block {expected}, found {found})", path.display())]
    Gap {
        /// The segment file.
        path: PathBuf,
        /// Start of the frame.
        offset: u64,
        /// The number that should come next (previous + 1).
        expected: u64,
        /// The number the record has.
        found: u64,
    },

    /// A record's number is not above the previous record's (dumps are strictly ascending).
    #[error("{}: frame at byte {offset}: block {found} is out of order (previous block is {previous})", path.display())]
    OutOfOrder {
        /// The segment file.
        path: PathBuf,
        /// Start of the frame.
        offset: u64,
        /// The previous record's number.
        previous: u64,
        /// The number the record has.
        found: u64,
    },

    /// The dump is for a different chain than the caller expects.
    #[error("{}: wrong chain (expected chain id {expected}, dump is for {found})", path.display())]
    WrongChain {
        /// Path of `manifest.json`.
        path: PathBuf,
        /// The chain id the caller asked for.
        expected: u64,
        /// The chain id in the manifest.
        found: u64,
    },

    /// A record's sender list is not one address per transaction.
    #[error("{}: frame at byte {offset}: block {block} has {transactions} transactions but {senders} senders", path.display())]
    SenderCountMismatch {
        /// The segment file.
        path: PathBuf,
        /// Start of the frame.
        offset: u64,
        /// The record's block number.
        block: u64,
        /// Number of transactions in the block.
        transactions: u64,
        /// Number of senders in the record.
        senders: u64,
    },

    /// A record's block access list does not have the shape EIP-7928 requires (see
    /// [`check_bal`](crate::check_bal)).
    #[error("{}: frame at byte {offset}: block {block}: malformed BAL: {defect}", path.display())]
    MalformedBal {
        /// The segment file.
        path: PathBuf,
        /// Start of the frame.
        offset: u64,
        /// The record's block number.
        block: u64,
        /// What is wrong, naming the account and slot.
        #[source]
        defect: Box<crate::BalDefect>,
    },

    /// A record's pre-state carries code revm cannot load (see [`check_code`](crate::check_code)).
    #[error("{}: frame at byte {offset}: block {block}: pre-state code {hash}: {defect}", path.display())]
    MalformedPreCode {
        /// The segment file.
        path: PathBuf,
        /// Start of the frame.
        offset: u64,
        /// The record's block number.
        block: u64,
        /// The code's hash as the record lists it.
        hash: alloy_primitives::B256,
        /// What is wrong with it.
        #[source]
        defect: crate::MalformedCode,
    },

    /// A record of a chained dump does not name the record before it as its parent: the dump was
    /// spliced from two chains (or a record replaced).
    #[error("{}: frame at byte {offset}: block {}: {link}", path.display(), link.block)]
    BrokenLink {
        /// The segment file.
        path: PathBuf,
        /// Start of the frame.
        offset: u64,
        /// Both blocks and their hashes.
        #[source]
        link: Box<crate::BrokenLink>,
    },

    /// A segment (or the whole dump) holds a different number of records than the manifest says.
    #[error("{}: record count mismatch (manifest says {expected}, found {found})", path.display())]
    CountMismatch {
        /// The segment file, or `manifest.json` for the dump's total.
        path: PathBuf,
        /// The count in the manifest.
        expected: u64,
        /// The count actually read.
        found: u64,
    },

    /// The first or last block number of a segment (or of the whole dump) differs from the
    /// manifest's.
    #[error("{}: {which} block mismatch (manifest says {}, found {})", path.display(), fmt_block(*expected), fmt_block(*found))]
    BlockRangeMismatch {
        /// The segment file, or `manifest.json` for the dump's range.
        path: PathBuf,
        /// `"first"` or `"last"`.
        which: &'static str,
        /// The number in the manifest (`None`: the manifest says the dump is empty).
        expected: Option<u64>,
        /// The number actually read (`None`: no record was read).
        found: Option<u64>,
    },

    /// A segment file's size differs from the manifest's: bytes were lost, or written after the
    /// manifest without a flush.
    #[error("{}: size mismatch (manifest says {expected} bytes, file has {found})", path.display())]
    SizeMismatch {
        /// The segment file.
        path: PathBuf,
        /// The size in the manifest.
        expected: u64,
        /// The size on disk.
        found: u64,
    },

    /// Another writer holds the dump directory's lock (see [`LOCK_FILE`](crate::LOCK_FILE)): one
    /// writer per dump, so that two cannot interleave frames or overwrite each other's manifest.
    #[error("{}: the dump is being written by another writer{}; stop it, or write to another directory", path.display(), fmt_holder(*holder))]
    Locked {
        /// The dump directory.
        path: PathBuf,
        /// The holder's process id, as it recorded it (`None` if it has not yet, or the lock file
        /// cannot be read).
        holder: Option<u32>,
    },

    /// A file the writer was about to write in the dump directory is a symbolic link, has another
    /// name (a hard link), is not a regular file or belongs to another user: writing it could write
    /// somewhere outside the dump. Nothing was written to it.
    #[error("{}: refusing to write: {reason}; the writer writes only files of its own in the dump directory (remove it if it is not yours to keep)", path.display())]
    UnsafeFile {
        /// The file.
        path: PathBuf,
        /// What makes it unsafe to write.
        reason: String,
    },

    /// The dump directory belongs to another user, who could replace any file in it with a link
    /// between the writer's check and its write.
    #[error("{}: the dump directory is owned by uid {owner}, not by this process's uid {uid}; refusing to write a dump in another user's directory", path.display())]
    ForeignDirectory {
        /// The dump directory.
        path: PathBuf,
        /// The directory's owner.
        owner: u32,
        /// The user this process writes as (its effective uid).
        uid: u32,
    },

    /// The dump's manifest lists no records: a write that was interrupted before its first flush,
    /// or a dump just created. Nothing in it can be replayed or measured.
    #[error("dump {} holds no block records (an interrupted write?)", path.display())]
    NoRecords {
        /// The dump directory.
        path: PathBuf,
    },

    /// An earlier write failed part-way, so the open segment may end in a partial frame; the writer
    /// refuses further work. Drop it and [`resume`](crate::DumpWriter::resume) the dump, which cuts
    /// the segment back to the last flush.
    #[error("{}: an earlier write failed; resume the dump to continue from its last flush", path.display())]
    WriterPoisoned {
        /// The segment file the failed write went to.
        path: PathBuf,
    },
}

impl DumpError {
    /// The file (or directory) the error is about.
    pub fn path(&self) -> &Path {
        match self {
            Self::Io { path, .. }
            | Self::Manifest { path, .. }
            | Self::AlreadyExists { path }
            | Self::OrphanedSegments { path, .. }
            | Self::BadMagic { path, .. }
            | Self::UnsupportedVersion { path, .. }
            | Self::UnsupportedManifestVersion { path, .. }
            | Self::Truncated { path, .. }
            | Self::FrameTooLarge { path, .. }
            | Self::Checksum { path, .. }
            | Self::SegmentChecksum { path, .. }
            | Self::Decompress { path, .. }
            | Self::RawLenMismatch { path, .. }
            | Self::Decode { path, .. }
            | Self::Gap { path, .. }
            | Self::OutOfOrder { path, .. }
            | Self::WrongChain { path, .. }
            | Self::SenderCountMismatch { path, .. }
            | Self::MalformedBal { path, .. }
            | Self::MalformedPreCode { path, .. }
            | Self::BrokenLink { path, .. }
            | Self::CountMismatch { path, .. }
            | Self::BlockRangeMismatch { path, .. }
            | Self::SizeMismatch { path, .. }
            | Self::Locked { path, .. }
            | Self::UnsafeFile { path, .. }
            | Self::ForeignDirectory { path, .. }
            | Self::NoRecords { path }
            | Self::WriterPoisoned { path } => path,
        }
    }

    /// Byte offset of the frame the error is about, for errors about one frame.
    pub fn frame_offset(&self) -> Option<u64> {
        match self {
            Self::Truncated { offset, .. }
            | Self::FrameTooLarge { offset, .. }
            | Self::Checksum { offset, .. }
            | Self::Decompress { offset, .. }
            | Self::RawLenMismatch { offset, .. }
            | Self::Decode { offset, .. }
            | Self::Gap { offset, .. }
            | Self::OutOfOrder { offset, .. }
            | Self::SenderCountMismatch { offset, .. }
            | Self::MalformedBal { offset, .. }
            | Self::MalformedPreCode { offset, .. }
            | Self::BrokenLink { offset, .. } => Some(*offset),
            _ => None,
        }
    }

    /// Shorthand for [`DumpError::Io`].
    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}

/// Names the lock's holder for [`DumpError::Locked`].
fn fmt_holder(holder: Option<u32>) -> String {
    match holder {
        Some(pid) => format!(" (process {pid})"),
        None => String::new(),
    }
}

/// Formats an optional block number for [`DumpError::BlockRangeMismatch`].
fn fmt_block(block: Option<u64>) -> String {
    match block {
        Some(number) => number.to_string(),
        None => "none".to_owned(),
    }
}
