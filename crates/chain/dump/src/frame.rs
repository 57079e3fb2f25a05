//! Segment files and the frames inside them.
//!
//! A segment file is a 12-byte header followed by frames, back to back, with nothing after the last:
//!
//! ```text
//! segment: MAGIC (8 bytes, "BALDUMP\0") | FORMAT_VERSION (u32 LE) | frame | frame | ...
//! frame:   compressed_len (u32 LE) | raw_len (u32 LE) | crc32 (u32 LE) | payload (compressed_len bytes)
//! payload: zstd(RLP(BlockRecord)), decompressing to exactly raw_len bytes
//! ```
//!
//! The reading side is careful about untrusted input: both lengths are checked against
//! [`MAX_FRAME_BYTES`], and the compressed length against the bytes left in the file, before
//! anything is allocated; the checksum is verified before the payload reaches zstd; and zstd is given
//! an output buffer of exactly `raw_len` bytes, so a payload that inflates further fails instead of
//! growing without bound.

use std::{
    io::{self, Read},
    path::{Path, PathBuf},
};

pub use crate::layout::{
    DEFAULT_ZSTD_LEVEL, FORMAT_VERSION, FRAME_HEADER_LEN, MAGIC, MAX_FRAME_BYTES,
    SEGMENT_HEADER_LEN,
};
use crate::{
    BlockRecord, DumpError,
    error::{FramePart, LengthField},
    record::decode_record,
};

/// The name of segment file number `index` inside a dump directory (`segment-000000.bin`, ...).
pub fn segment_file_name(index: usize) -> String {
    format!("segment-{index:06}.bin")
}

/// The 12 bytes every segment file starts with.
pub(crate) fn segment_header() -> [u8; SEGMENT_HEADER_LEN as usize] {
    let mut header = [0u8; SEGMENT_HEADER_LEN as usize];
    header[..8].copy_from_slice(&MAGIC);
    header[8..].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    header
}

/// The fixed-size header in front of each frame's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// Length of the zstd-compressed payload that follows the header.
    pub compressed_len: u32,
    /// Length of the RLP record the payload decompresses to.
    pub raw_len: u32,
    /// CRC-32 (IEEE, as computed by `crc32fast`) of the compressed payload.
    pub crc32: u32,
}

impl FrameHeader {
    /// The header's on-disk form.
    pub fn to_bytes(self) -> [u8; FRAME_HEADER_LEN as usize] {
        let mut bytes = [0u8; FRAME_HEADER_LEN as usize];
        bytes[0..4].copy_from_slice(&self.compressed_len.to_le_bytes());
        bytes[4..8].copy_from_slice(&self.raw_len.to_le_bytes());
        bytes[8..12].copy_from_slice(&self.crc32.to_le_bytes());
        bytes
    }

    /// Parses the on-disk form. Any 12 bytes parse; the lengths are checked by the reader.
    pub fn from_bytes(bytes: [u8; FRAME_HEADER_LEN as usize]) -> Self {
        let word = |at: usize| {
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        Self {
            compressed_len: word(0),
            raw_len: word(4),
            crc32: word(8),
        }
    }
}

/// Encodes `record` as a complete frame (header and payload), ready to append to a segment.
///
/// `path` and `offset` only label errors: a record whose RLP or compressed form exceeds
/// [`MAX_FRAME_BYTES`] is refused, since no reader would accept it.
pub(crate) fn encode_frame(
    record: &BlockRecord,
    zstd_level: i32,
    path: &Path,
    offset: u64,
) -> Result<Vec<u8>, DumpError> {
    let raw = crate::record::encode_record(record);
    let raw_len = checked_frame_len(raw.len(), LengthField::Raw, path, offset)?;
    let payload =
        zstd::bulk::compress(&raw, zstd_level).map_err(|source| DumpError::Decompress {
            path: path.to_path_buf(),
            offset,
            source,
        })?;
    let compressed_len = checked_frame_len(payload.len(), LengthField::Compressed, path, offset)?;
    let header = FrameHeader {
        compressed_len,
        raw_len,
        crc32: crc32fast::hash(&payload),
    };

    let mut frame = Vec::with_capacity(FRAME_HEADER_LEN as usize + payload.len());
    frame.extend_from_slice(&header.to_bytes());
    frame.extend_from_slice(&payload);
    Ok(frame)
}

/// `len` as a `u32` frame length, or [`DumpError::FrameTooLarge`] if above [`MAX_FRAME_BYTES`].
fn checked_frame_len(
    len: usize,
    field: LengthField,
    path: &Path,
    offset: u64,
) -> Result<u32, DumpError> {
    match u32::try_from(len) {
        Ok(len) if len <= MAX_FRAME_BYTES => Ok(len),
        _ => Err(DumpError::FrameTooLarge {
            path: path.to_path_buf(),
            offset,
            field,
            len: len as u64,
            max: u64::from(MAX_FRAME_BYTES),
        }),
    }
}

/// Checks that a record's number may follow `previous` (the number of the record before it, if any).
///
/// Every dump is strictly ascending; a chained dump must also have no gaps.
pub(crate) fn check_block_order(
    chained: bool,
    previous: Option<u64>,
    found: u64,
    path: &Path,
    offset: u64,
) -> Result<(), DumpError> {
    let Some(previous) = previous else {
        return Ok(());
    };
    if found <= previous {
        return Err(DumpError::OutOfOrder {
            path: path.to_path_buf(),
            offset,
            previous,
            found,
        });
    }
    // `found > previous` here, so `previous + 1` cannot overflow.
    let expected = previous + 1;
    if chained && found != expected {
        return Err(DumpError::Gap {
            path: path.to_path_buf(),
            offset,
            expected,
            found,
        });
    }
    Ok(())
}

/// Checks that a record's BAL has the shape EIP-7928 requires ([`crate::check_bal`]).
pub(crate) fn check_record_bal(
    record: &BlockRecord,
    path: &Path,
    offset: u64,
) -> Result<(), DumpError> {
    crate::check_bal(record.tx_count(), &record.bal).map_err(|defect| DumpError::MalformedBal {
        path: path.to_path_buf(),
        offset,
        block: record.number(),
        defect: Box::new(defect),
    })
}

/// Checks that every code of a record's pre-state is loadable ([`crate::check_code`]).
pub(crate) fn check_record_codes(
    record: &BlockRecord,
    path: &Path,
    offset: u64,
) -> Result<(), DumpError> {
    for code in &record.pre_state.codes {
        crate::check_code(&code.code).map_err(|defect| DumpError::MalformedPreCode {
            path: path.to_path_buf(),
            offset,
            block: record.number(),
            hash: code.hash,
            defect,
        })?;
    }
    Ok(())
}

/// Checks the record invariant `senders.len() == transactions.len()`.
pub(crate) fn check_sender_count(
    record: &BlockRecord,
    path: &Path,
    offset: u64,
) -> Result<(), DumpError> {
    if record.senders.len() == record.tx_count() {
        return Ok(());
    }
    Err(DumpError::SenderCountMismatch {
        path: path.to_path_buf(),
        offset,
        block: record.number(),
        transactions: record.tx_count() as u64,
        senders: record.senders.len() as u64,
    })
}

/// Reads the frames of one segment from any byte source, checking everything a frame can get wrong.
///
/// The cursor knows the segment's total length up front (the file size, or the slice length), which
/// is what lets it reject a length prefix pointing past the end before allocating for it.
pub(crate) struct FrameCursor<R> {
    source: R,
    path: PathBuf,
    /// Offset of the next frame from the start of the segment.
    offset: u64,
    /// Total length of the segment.
    len: u64,
}

impl<R: Read> FrameCursor<R> {
    /// Reads and checks the segment header from `source`, which holds a segment of `len` bytes.
    pub(crate) fn open(mut source: R, path: PathBuf, len: u64) -> Result<Self, DumpError> {
        if len < SEGMENT_HEADER_LEN {
            return Err(DumpError::Truncated {
                path,
                offset: 0,
                part: FramePart::SegmentHeader,
                needed: SEGMENT_HEADER_LEN,
                available: len,
            });
        }
        let mut header = [0u8; SEGMENT_HEADER_LEN as usize];
        if let Err(source) = source.read_exact(&mut header) {
            return Err(DumpError::io(path, source));
        }
        let mut magic = [0u8; 8];
        magic.copy_from_slice(&header[..8]);
        if magic != MAGIC {
            return Err(DumpError::BadMagic { path, found: magic });
        }
        let version = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
        if version != FORMAT_VERSION {
            return Err(DumpError::UnsupportedVersion {
                path,
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        Ok(Self {
            source,
            path,
            offset: SEGMENT_HEADER_LEN,
            len,
        })
    }

    /// Whether every frame has been read.
    pub(crate) fn at_end(&self) -> bool {
        self.offset >= self.len
    }

    /// The segment's path (used in error messages).
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The byte source, e.g. to read a checksum it accumulated.
    pub(crate) fn source(&self) -> &R {
        &self.source
    }

    /// Reads, verifies, decompresses and decodes the next frame.
    ///
    /// Returns the record and the offset its frame started at. Checks, in order: a whole frame
    /// header is left; both lengths are within [`MAX_FRAME_BYTES`]; the payload fits in what is
    /// left; the payload's CRC-32; zstd's own declared size; decompression into exactly `raw_len`
    /// bytes; the RLP (with no trailing bytes); and one sender per transaction.
    pub(crate) fn next_record(&mut self) -> Result<(BlockRecord, u64), DumpError> {
        let offset = self.offset;
        let available = self.len.saturating_sub(offset);
        if available < FRAME_HEADER_LEN {
            return Err(self.truncated(FramePart::FrameHeader, FRAME_HEADER_LEN, available));
        }
        let mut header_bytes = [0u8; FRAME_HEADER_LEN as usize];
        self.read_exact(&mut header_bytes)?;
        let header = FrameHeader::from_bytes(header_bytes);

        for (field, len) in [
            (LengthField::Compressed, header.compressed_len),
            (LengthField::Raw, header.raw_len),
        ] {
            if len > MAX_FRAME_BYTES {
                return Err(DumpError::FrameTooLarge {
                    path: self.path.clone(),
                    offset,
                    field,
                    len: u64::from(len),
                    max: u64::from(MAX_FRAME_BYTES),
                });
            }
        }
        let compressed_len = u64::from(header.compressed_len);
        let payload_available = available - FRAME_HEADER_LEN;
        if compressed_len > payload_available {
            return Err(self.truncated(FramePart::Payload, compressed_len, payload_available));
        }

        // Bounded by the bytes really left in the source, checked just above.
        let mut payload = vec![0u8; header.compressed_len as usize];
        self.read_exact(&mut payload)?;
        self.offset = offset + FRAME_HEADER_LEN + compressed_len;

        let found = crc32fast::hash(&payload);
        if found != header.crc32 {
            return Err(DumpError::Checksum {
                path: self.path.clone(),
                offset,
                expected: header.crc32,
                found,
            });
        }

        let raw = self.decompress(&payload, header.raw_len, offset)?;
        let record = decode_record(&raw).map_err(|source| DumpError::Decode {
            path: self.path.clone(),
            offset,
            source,
        })?;
        check_sender_count(&record, &self.path, offset)?;
        check_record_bal(&record, &self.path, offset)?;
        check_record_codes(&record, &self.path, offset)?;
        Ok((record, offset))
    }

    /// Decompresses `payload`, which must inflate to exactly `raw_len` bytes.
    fn decompress(&self, payload: &[u8], raw_len: u32, offset: u64) -> Result<Vec<u8>, DumpError> {
        let mismatch = |found: u64| DumpError::RawLenMismatch {
            path: self.path.clone(),
            offset,
            expected: u64::from(raw_len),
            found,
        };
        // The writer always records the content size in the zstd frame header; comparing it first
        // rejects an inconsistent frame without allocating `raw_len` bytes.
        if let Ok(Some(declared)) = zstd::zstd_safe::get_frame_content_size(payload)
            && declared != u64::from(raw_len)
        {
            return Err(mismatch(declared));
        }
        let raw = zstd::bulk::decompress(payload, raw_len as usize).map_err(|source| {
            DumpError::Decompress {
                path: self.path.clone(),
                offset,
                source,
            }
        })?;
        if raw.len() != raw_len as usize {
            return Err(mismatch(raw.len() as u64));
        }
        Ok(raw)
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> Result<(), DumpError> {
        // The length was checked against what is left, so running short here means the file
        // changed under the reader: report it as the I/O error it is.
        self.source
            .read_exact(buf)
            .map_err(|source| DumpError::io(self.path.clone(), source))
    }

    fn truncated(&self, part: FramePart, needed: u64, available: u64) -> DumpError {
        DumpError::Truncated {
            path: self.path.clone(),
            offset: self.offset,
            part,
            needed,
            available,
        }
    }
}

/// A reader that keeps a running CRC-32 of every byte read through it, so checking a segment's
/// whole-file checksum costs no second pass.
pub(crate) struct CrcReader<R> {
    inner: R,
    hasher: crc32fast::Hasher,
}

impl<R> CrcReader<R> {
    pub(crate) fn new(inner: R) -> Self {
        Self {
            inner,
            hasher: crc32fast::Hasher::new(),
        }
    }

    /// CRC-32 of everything read so far.
    pub(crate) fn crc32(&self) -> u32 {
        self.hasher.clone().finalize()
    }
}

impl<R: Read> Read for CrcReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        self.hasher.update(&buf[..read]);
        Ok(read)
    }
}

/// Path used in errors from [`decode_segment_bytes`], which has no file.
const IN_MEMORY_PATH: &str = "<memory>";

/// Parses a whole segment held in memory: header, then every frame to the end.
///
/// This is the format's parser without any file system or manifest around it, which makes it the
/// entry point for fuzzing. Besides everything a frame can get wrong, it checks that block numbers
/// strictly ascend (true of every dump; gaps are allowed, since whether the dump is chained is in
/// the manifest). Errors name the path `<memory>`.
pub fn decode_segment_bytes(bytes: &[u8]) -> Result<Vec<BlockRecord>, DumpError> {
    let mut cursor = FrameCursor::open(bytes, PathBuf::from(IN_MEMORY_PATH), bytes.len() as u64)?;
    let mut records: Vec<BlockRecord> = Vec::new();
    while !cursor.at_end() {
        let (record, offset) = cursor.next_record()?;
        check_block_order(
            false,
            records.last().map(BlockRecord::number),
            record.number(),
            cursor.path(),
            offset,
        )?;
        records.push(record);
    }
    Ok(records)
}
