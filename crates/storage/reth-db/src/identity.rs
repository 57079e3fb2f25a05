//! Which chain a reth database holds and which block its state is at, as far as the database says.
//!
//! reth keeps no chain id in MDBX (the chain spec is the node's configuration, not its data), so a
//! chain is known by its genesis block's hash ([`KNOWN_CHAINS`]). Block hashes come from
//! `CanonicalHeaders`, or, where reth v2 leaves that table empty (its headers live in static
//! files), from `HeaderNumbers`, the hash -> number index reth keeps in MDBX for every canonical
//! block (its entries are removed when a block is unwound).

use std::borrow::Cow;

use alloy_primitives::{B256, b256, hex};
use libmdbx::{NoWriteMap, RO, Transaction};

use crate::{RethDb, RethDbError, reader::table};

/// A key and value as MDBX hands them out (borrowed from the map in a read transaction).
type Entry<'txn> = (Cow<'txn, [u8]>, Cow<'txn, [u8]>);

/// A chain a reth database is recognised by: the hash of its genesis block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownChain {
    /// The chain id.
    pub id: u64,
    /// Its name, for messages.
    pub name: &'static str,
    /// The hash of its genesis block.
    pub genesis_hash: B256,
}

/// The chains a source is recognised as. A header holds no chain id, so a network started from
/// another's genesis under its own id would be taken for that one; `bal-migrate --chain` cannot
/// override a recognised chain, only name one that is not.
pub const KNOWN_CHAINS: [KnownChain; 5] = [
    KnownChain {
        id: 1,
        name: "mainnet",
        genesis_hash: b256!("d4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3"),
    },
    KnownChain {
        id: 11_155_111,
        name: "sepolia",
        genesis_hash: b256!("25a5cc106eea7138acab33231d7160d69cb777ee0c2c553fcddf5138993e6dd9"),
    },
    KnownChain {
        id: 17_000,
        name: "holesky",
        genesis_hash: b256!("b5f7f912443c940f21fd611f12828d75b534364ed9e95ca4e307729a4661bde4"),
    },
    KnownChain {
        id: 560_048,
        name: "hoodi",
        genesis_hash: b256!("bbe312868b376a3001692a646dd2d7d1e4406380dfd86b98aa8a34d1557c971b"),
    },
    // reth v2.5.1's `--dev` chain spec (its genesis, with the forks it activates at block 0,
    // fixes the hash; other reth versions' dev genesis differ).
    KnownChain {
        id: 1337,
        name: "reth v2.5.1 --dev",
        genesis_hash: b256!("683713729fcb72be6f3d8b88c8cda3e10569d73b9640d3bf6f5184d94bd97616"),
    },
];

impl KnownChain {
    /// The known chain whose genesis block has `hash`.
    pub fn by_genesis_hash(hash: B256) -> Option<Self> {
        KNOWN_CHAINS.into_iter().find(|c| c.genesis_hash == hash)
    }
}

/// What a source says of its identity, read in one snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceIdentity {
    /// The hash of block 0, where the source holds exactly one.
    pub genesis_hash: Option<B256>,
    /// The hashes the source holds for the block its state is at: one, none, or (a `HeaderNumbers`
    /// that names several hashes for it, which reth should never leave) more.
    pub block_hashes: Vec<B256>,
}

impl SourceIdentity {
    /// The chain the genesis hash names, where it is one of [`KNOWN_CHAINS`].
    pub fn chain(&self) -> Option<KnownChain> {
        self.genesis_hash.and_then(KnownChain::by_genesis_hash)
    }

    /// The state's block hash, where the source names exactly one.
    pub fn block_hash(&self) -> Option<B256> {
        match self.block_hashes.as_slice() {
            [hash] => Some(*hash),
            _ => None,
        }
    }
}

impl RethDb {
    /// The genesis hash and the hashes of block `height` in `txn`'s snapshot: from
    /// `CanonicalHeaders`, else from `HeaderNumbers`, which is read whole (it has one entry per
    /// block: about 1 GiB on a mainnet node), and only when `CanonicalHeaders` lacks one of them.
    pub fn identity_in(
        &self,
        txn: &Transaction<'_, RO, NoWriteMap>,
        height: u64,
    ) -> Result<SourceIdentity, RethDbError> {
        let genesis = self.canonical_hash_in(txn, 0)?;
        let block = self.canonical_hash_in(txn, height)?;
        if let (Some(genesis), Some(block)) = (genesis, block) {
            return Ok(SourceIdentity {
                genesis_hash: Some(genesis),
                block_hashes: vec![block],
            });
        }
        let (numbered_genesis, numbered_block) = self.hashes_numbered_in(txn, height)?;
        Ok(SourceIdentity {
            genesis_hash: genesis.or(match numbered_genesis.as_slice() {
                [hash] => Some(*hash),
                _ => None,
            }),
            block_hashes: block.map_or(numbered_block, |hash| vec![hash]),
        })
    }

    /// The hashes `HeaderNumbers` maps to block 0 and to block `height` (none where the table is
    /// missing).
    fn hashes_numbered_in(
        &self,
        txn: &Transaction<'_, RO, NoWriteMap>,
        height: u64,
    ) -> Result<(Vec<B256>, Vec<B256>), RethDbError> {
        let name = table::HEADER_NUMBERS;
        let headers = match self.open_table(txn, name) {
            Ok(headers) => headers,
            Err(RethDbError::MissingTable { .. }) => return Ok(Default::default()),
            Err(e) => return Err(e),
        };
        let mdbx = |source| RethDbError::Mdbx {
            table: name,
            source,
        };
        let mut cursor = txn.cursor(&headers).map_err(mdbx)?;
        let (mut genesis, mut block) = (Vec::new(), Vec::new());
        let mut entry: Option<Entry<'_>> = cursor.first().map_err(mdbx)?;
        while let Some((key, value)) = entry {
            let bad = |reason: String| RethDbError::Decode {
                table: name,
                key: hex::encode_prefixed(&key),
                reason,
            };
            let hash = B256::try_from(key.as_ref()).map_err(|_| {
                bad(format!(
                    "a key of {} bytes, expected a 32-byte hash",
                    key.len()
                ))
            })?;
            // reth stores a u64 table value SCALE-encoded: 8 bytes, little-endian.
            let number = <[u8; 8]>::try_from(value.as_ref())
                .map(u64::from_le_bytes)
                .map_err(|_| {
                    bad(format!(
                        "a block number of {} bytes, expected 8",
                        value.len()
                    ))
                })?;
            if number == 0 {
                genesis.push(hash);
            }
            if number == height {
                block.push(hash);
            }
            entry = cursor.next().map_err(mdbx)?;
        }
        Ok((genesis, block))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_chains_are_found_by_their_genesis_and_only_by_it() {
        let mainnet = b256!("d4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3");
        assert_eq!(KnownChain::by_genesis_hash(mainnet).map(|c| c.id), Some(1));
        assert_eq!(KnownChain::by_genesis_hash(B256::repeat_byte(1)), None);
        let identity = |hashes: Vec<B256>| SourceIdentity {
            genesis_hash: Some(mainnet),
            block_hashes: hashes,
        };
        assert_eq!(identity(vec![]).block_hash(), None);
        assert_eq!(
            identity(vec![B256::repeat_byte(2)]).block_hash(),
            Some(B256::repeat_byte(2))
        );
        assert_eq!(
            identity(vec![B256::repeat_byte(2), B256::repeat_byte(3)]).block_hash(),
            None
        );
    }
}
