//! The format's fixed numbers: what every segment file starts with and the bounds a frame keeps.
//! Their own module so that the frame code and the errors that name them both read them from
//! here, and neither imports the other.

/// The first eight bytes of every segment file.
pub const MAGIC: [u8; 8] = *b"BALDUMP\0";

/// The format version this build writes and the only one it reads, stored after [`MAGIC`] in every
/// segment file and in the manifest.
pub const FORMAT_VERSION: u32 = 1;

/// Size of the segment header: [`MAGIC`] and the format version.
pub const SEGMENT_HEADER_LEN: u64 = 12;

/// Size of a frame header: compressed length, raw length and CRC-32, each a little-endian `u32`.
pub const FRAME_HEADER_LEN: u64 = 12;

/// The largest compressed or raw length a frame may declare (256 MiB).
///
/// Far above any real block record (mainnet records are kilobytes to a few megabytes), and low
/// enough that a corrupted length cannot make a reader allocate an absurd buffer.
pub const MAX_FRAME_BYTES: u32 = 256 * 1024 * 1024;

/// The zstd level records are compressed with by default: fast, and most of the ratio of higher
/// levels on RLP-encoded blocks.
pub const DEFAULT_ZSTD_LEVEL: i32 = 3;
