//! The column families (tables) of a `RocksStore` (`bal-replay-rocks`) and the encoding of their
//! keys and values. Integers are big-endian everywhere, so byte order equals numeric order. Their
//! own module, below both the store and [`FlatContents`](crate::FlatContents), which names them
//! in its errors.

/// Accounts. Key: address (20 bytes), or keccak256(address) (32) under [`KeyScheme::Hashed`].
/// Value: nonce (u64, 8) ++ balance (32) ++ code hash (32) = 72 bytes.
///
/// [`KeyScheme::Hashed`]: crate::KeyScheme::Hashed
pub const ACCOUNTS: &str = "accounts";
/// Storage slots. Key: address (20) ++ slot (32), or keccak256(address) (32) ++
/// keccak256(slot) (32) when hashed. Value: the slot value with its leading zero bytes trimmed
/// (1..=32 bytes); zero values are deleted, never stored.
pub const STORAGE: &str = "storage";
/// Contract code. Key: keccak256(code) (32). Value: the raw code.
pub const CODE: &str = "code";
/// Block hashes. Key: block number (u64, 8). Value: the hash (32).
pub const BLOCK_HASHES: &str = "block_hashes";
/// Store metadata. Keys: [`META_APPLIED_BLOCK`] -> u64 (8), [`META_APPLIED_BLOCK_HASH`] ->
/// hash (32), [`META_CHAIN_ID`] -> u64 (8), [`META_KEY_SCHEME`] -> `plain` / `hashed`,
/// [`META_FORMAT_VERSION`] -> u32 (4).
pub const META: &str = "meta";

/// Every column family, in the order they are opened.
pub const ALL: [&str; 5] = [ACCOUNTS, STORAGE, CODE, BLOCK_HASHES, META];

/// `meta` key of the applied height, written by every commit.
pub const META_APPLIED_BLOCK: &[u8] = b"applied_block";
/// `meta` key of the hash of the applied block, written by every commit that knows it and
/// deleted by every commit that does not (never left beside another height). Absent in states
/// written before it was recorded: the hash is then unknown.
pub const META_APPLIED_BLOCK_HASH: &[u8] = b"applied_block_hash";
/// `meta` key of the chain id, written by commits that name the chain.
pub const META_CHAIN_ID: &[u8] = b"chain_id";
/// `meta` key of the key scheme, written when the store is created.
pub const META_KEY_SCHEME: &[u8] = b"key_scheme";
/// `meta` key of the on-disk format version, written when the store is created.
pub const META_FORMAT_VERSION: &[u8] = b"format_version";
/// The format version this build reads and writes.
pub const FORMAT_VERSION: u32 = 1;
