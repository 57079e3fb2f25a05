//! The dump format: one self-contained record per block, in framed, checksummed segment files.
//!
//! A record ([`BlockRecord`]) carries a block with its senders, its EIP-7928 access list, the pre-block
//! value of every key it reads or writes, and the hashes of the 256 blocks before it: enough to replay
//! the block, or seed a state for it, with no other source.
//!
//! # A dump directory
//!
//! ```text
//! dump/
//!   manifest.json          what the dump holds, and how much of each segment is committed
//!   writer.lock            locked by the one writer at a time (contents: its pid, a hint)
//!   segment-000000.bin     MAGIC "BALDUMP\0" | version u32 LE | frame | frame | ...
//!   segment-000001.bin     ...
//! ```
//!
//! Each frame is a 12-byte header (`compressed_len`, `raw_len`, `crc32`, each a `u32` LE) and a
//! payload, `zstd(RLP(BlockRecord))`. `docs/dump-format.md` in the repository describes every byte.
//!
//! Write with [`DumpWriter`], read with [`DumpReader`]:
//!
//! ```no_run
//! # fn produce() -> Vec<bal_replay_dump::BlockRecord> { Vec::new() }
//! use bal_replay_dump::{DumpMeta, DumpReader, DumpWriter, WriterOptions};
//!
//! let meta = DumpMeta { chain_id: 1, chained: true, source: "synthetic".into(), schedule: None };
//! let mut writer = DumpWriter::create("dump/", meta, WriterOptions::default())?;
//! for record in produce() {
//!     writer.append(&record)?;
//! }
//! writer.finish()?;
//!
//! for record in DumpReader::open("dump/")?.expect_chain_id(1)?.records() {
//!     let record = record?; // every frame, checksum and block number checked on the way
//! #   let _ = record;
//! }
//! # Ok::<(), bal_replay_dump::DumpError>(())
//! ```
//!
//! # Invariants of a dump directory
//!
//! These hold for every dump the writer leaves behind after a flush, and the reader checks each:
//!
//! - **The manifest is the commit record.** Segment `i` is the file `segment-{i:06}.bin`, and only
//!   the first `bytes` bytes of it, whose CRC-32 is `crc32`, belong to the dump. While a writer
//!   appends, or after a crash, the file may be longer: readers read only the recorded bytes, so a
//!   dump can be read while it is written, and [`DumpWriter::resume`] cuts the excess off. Segment
//!   files not listed in the manifest are leftovers, ignored by readers and removed on resume. The
//!   manifest itself is replaced atomically, so it is never half-written.
//! - **One writer at a time.** A [`DumpWriter`] holds an OS lock on [`LOCK_FILE`] for its
//!   lifetime; a second one fails with [`DumpError::Locked`]. A crashed writer's lock is released
//!   by the kernel.
//! - **Every segment is non-empty and whole.** It starts with the segment header and ends exactly at
//!   the end of its last frame; segments are created when their first record is written.
//! - **Block numbers strictly ascend** across the whole dump. In a *chained* dump (consecutive
//!   blocks of one chain, each applied to the previous one's post-state) they go up by exactly one;
//!   in an independent dump (e.g. imported fixtures) gaps are allowed.
//! - **Counts and ranges agree.** Each segment's `records`, `first_block` and `last_block` match its
//!   frames; the manifest's `record_count`, `first_block` and `last_block` match the segments
//!   (`None` for an empty dump, which has no segment files).
//! - **Every frame is within limits and intact**: both lengths at most [`MAX_FRAME_BYTES`], the
//!   payload's CRC-32 matches, it decompresses to exactly `raw_len` bytes, and those bytes are one
//!   RLP [`BlockRecord`] with nothing after it, with one sender per transaction and a BAL of the
//!   shape EIP-7928 requires ([`check_bal`]: accounts, slots and indices strictly ascending, each
//!   index within its block).
//! - **A chained dump links**: each record's parent hash is the hash of the record before it
//!   ([`ChainLinks`]).
//! - **One chain and one format version per dump**, both recorded in the manifest (and the version
//!   in each segment header too).

#![cfg_attr(not(test), warn(unused_crate_dependencies))]

// A direct dependency only so that its `serde` feature is enabled for the withdrawal and
// access-list types inside `BlockRecord`; nothing here names it.
use alloy_eips as _;

mod bal;
mod chain;
mod error;
mod frame;
mod layout;
mod lock;
mod manifest;
mod owned;
mod reader;
mod record;
mod schedule;
mod summary;
mod writer;

pub use bal::{BalDefect, BalList, MalformedCode, check_bal, check_code};
pub use chain::{BrokenLink, ChainLinks, FirstPreValues, PreChainState, pre_chain_state};
pub use error::{DumpError, FramePart, LengthField};
pub use frame::{
    DEFAULT_ZSTD_LEVEL, FORMAT_VERSION, FRAME_HEADER_LEN, FrameHeader, MAGIC, MAX_FRAME_BYTES,
    SEGMENT_HEADER_LEN, decode_segment_bytes, segment_file_name,
};
pub use lock::LOCK_FILE;
pub use manifest::{DumpMeta, MANIFEST_FILE, MANIFEST_VERSION, Manifest, SegmentInfo};
pub use reader::{DumpReader, Records};
pub use record::{
    AccountPre, BlockHashEntry, BlockRecord, CodePre, PreState, StoragePre, decode_record,
    encode_record,
};
pub use schedule::{
    Activation, BlobParamsEntry, BlobSchedule, ChainSchedule, ForkEntry, ScheduledBlobParams,
};
pub use summary::RecordSummary;
pub use writer::{DumpWriter, WriterOptions};
