//! [`MemOverlay`]: a store that is never written, with every commit kept in memory on top of it.

use std::sync::{RwLock, RwLockReadGuard};

use alloy_primitives::{Address, B256, Bytes, U256};

use crate::{
    AppliedBlock, ChangeMap, FlatAccount, StateChanges, StateError, StateReader, StateWriter,
};

/// What the commits so far changed, relative to the base store, and the height they reached.
#[derive(Debug, Default)]
struct Changes {
    map: ChangeMap,
    applied_block: Option<u64>,
    /// Meaningful only once `applied_block` is set: the overlay's height then hides the base's.
    applied_block_hash: Option<B256>,
    chain_id: Option<u64>,
}

/// A read-only base store (for example reth's MDBX, read in place) made committable: each
/// [`StateWriter::commit`] lands in memory, and reads see the committed changes first and the base
/// store under them. The base is never written, so the same base can be replayed over again.
///
/// Reads give exactly what a writable store that had received the same commits would give:
/// a deleted account reads `None`, a wiped account's slots read zero unless written after the wipe,
/// and a commit's wipes apply before its slot writes, as in [`StateChanges`]. A commit is applied
/// under a write lock, so a reader sees the state before or after it, never between.
///
/// Memory grows with the number of distinct keys written, so it suits replays of a bounded number of
/// blocks (each batch's changes are a few MB).
#[derive(Debug)]
pub struct MemOverlay<S> {
    base: S,
    changes: RwLock<Changes>,
}

impl<S: StateReader> MemOverlay<S> {
    /// An overlay with no changes over `base`.
    pub fn new(base: S) -> Self {
        Self {
            base,
            changes: RwLock::new(Changes::default()),
        }
    }

    /// Adds block hashes (for example a dump record's previous 256 hashes, where the base store
    /// has none), as if committed, without changing the applied height.
    pub fn insert_block_hashes(
        &self,
        hashes: impl IntoIterator<Item = (u64, B256)>,
    ) -> Result<(), StateError> {
        let mut changes = self.changes.write().map_err(|_| StateError::Poisoned)?;
        changes.map.insert_block_hashes(hashes);
        Ok(())
    }

    /// The base store.
    pub fn base(&self) -> &S {
        &self.base
    }

    /// Distinct keys (accounts, slots, codes, block hashes) the overlay holds.
    pub fn len(&self) -> Result<usize, StateError> {
        Ok(self.read()?.map.len())
    }

    /// Whether nothing has been committed or inserted.
    pub fn is_empty(&self) -> Result<bool, StateError> {
        Ok(self.read()?.map.is_empty())
    }

    fn read(&self) -> Result<RwLockReadGuard<'_, Changes>, StateError> {
        self.changes.read().map_err(|_| StateError::Poisoned)
    }
}

impl<S: StateReader> StateReader for MemOverlay<S> {
    fn account(&self, address: Address) -> Result<Option<FlatAccount>, StateError> {
        if let Some(account) = self.read()?.map.account(address) {
            return Ok(account);
        }
        self.base.account(address)
    }

    fn storage(&self, address: Address, slot: U256) -> Result<U256, StateError> {
        if let Some(value) = self.read()?.map.storage(address, slot) {
            return Ok(value);
        }
        self.base.storage(address, slot)
    }

    fn code(&self, hash: B256) -> Result<Option<Bytes>, StateError> {
        if let Some(code) = self.read()?.map.code(hash) {
            return Ok(Some(code.clone()));
        }
        self.base.code(hash)
    }

    fn bytecode(&self, hash: B256) -> Result<Option<revm::bytecode::Bytecode>, StateError> {
        if let Some(code) = self.read()?.map.code(hash) {
            return crate::decode_code(hash, code.clone()).map(Some);
        }
        self.base.bytecode(hash)
    }

    fn block_hash(&self, number: u64) -> Result<Option<B256>, StateError> {
        if let Some(hash) = self.read()?.map.block_hash(number) {
            return Ok(Some(hash));
        }
        self.base.block_hash(number)
    }

    fn applied_block(&self) -> Result<Option<u64>, StateError> {
        match self.read()?.applied_block {
            Some(n) => Ok(Some(n)),
            None => self.base.applied_block(),
        }
    }

    fn applied_block_hash(&self) -> Result<Option<B256>, StateError> {
        let c = self.read()?;
        if c.applied_block.is_some() {
            return Ok(c.applied_block_hash);
        }
        drop(c);
        self.base.applied_block_hash()
    }

    fn chain_id(&self) -> Result<Option<u64>, StateError> {
        match self.read()?.chain_id {
            Some(id) => Ok(Some(id)),
            None => self.base.chain_id(),
        }
    }

    fn location(&self) -> Option<&std::path::Path> {
        self.base.location()
    }
}

impl<S: StateReader> StateWriter for MemOverlay<S> {
    fn commit_block(&self, changes: &StateChanges, block: AppliedBlock) -> Result<(), StateError> {
        let mut c = self.changes.write().map_err(|_| StateError::Poisoned)?;
        c.map.apply(changes);
        c.applied_block = Some(block.number);
        c.applied_block_hash = block.hash;
        if block.chain_id.is_some() {
            c.chain_id = block.chain_id;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemStore;

    fn account(nonce: u64) -> FlatAccount {
        FlatAccount {
            nonce,
            balance: U256::from(nonce * 10),
            code_hash: B256::repeat_byte(nonce as u8),
        }
    }

    /// Commits applied to an overlay over a store read the same as the same commits applied to a
    /// copy of that store, and the base is never written.
    #[test]
    fn overlay_reads_like_the_committed_store_and_leaves_the_base_alone() {
        let (a, b, c) = (
            Address::repeat_byte(1),
            Address::repeat_byte(2),
            Address::repeat_byte(3),
        );
        let seed = StateChanges {
            accounts: vec![(a, Some(account(1))), (b, Some(account(2)))],
            storage: vec![
                (a, U256::from(1), U256::from(11)),
                (b, U256::from(1), U256::from(21)),
            ],
            codes: vec![(B256::repeat_byte(9), Bytes::from_static(b"\x60\x00"))],
            block_hashes: vec![(7, B256::repeat_byte(7))],
            ..StateChanges::default()
        };
        let base = MemStore::new();
        base.commit(&seed, 7).unwrap();
        let reference = MemStore::new();
        reference.commit(&seed, 7).unwrap();
        let overlay = MemOverlay::new(&base);
        assert_eq!(overlay.applied_block().unwrap(), Some(7));

        let batches = [
            StateChanges {
                accounts: vec![(a, None), (c, Some(account(3)))],
                wiped_storage: vec![b],
                storage: vec![
                    (b, U256::from(2), U256::from(22)),
                    (c, U256::from(1), U256::from(31)),
                ],
                block_hashes: vec![(8, B256::repeat_byte(8))],
                ..StateChanges::default()
            },
            StateChanges {
                storage: vec![(c, U256::from(1), U256::ZERO)],
                codes: vec![(B256::repeat_byte(5), Bytes::from_static(b"\x00"))],
                ..StateChanges::default()
            },
        ];
        for (i, batch) in batches.iter().enumerate() {
            overlay.commit(batch, 8 + i as u64).unwrap();
            reference.commit(batch, 8 + i as u64).unwrap();
        }
        for address in [a, b, c, Address::repeat_byte(4)] {
            assert_eq!(
                overlay.account(address).unwrap(),
                reference.account(address).unwrap()
            );
            for slot in 0..4u64 {
                assert_eq!(
                    overlay.storage(address, U256::from(slot)).unwrap(),
                    reference.storage(address, U256::from(slot)).unwrap(),
                    "{address} slot {slot}"
                );
            }
        }
        for hash in [B256::repeat_byte(9), B256::repeat_byte(5), B256::ZERO] {
            assert_eq!(overlay.code(hash).unwrap(), reference.code(hash).unwrap());
        }
        for n in 6..10 {
            assert_eq!(
                overlay.block_hash(n).unwrap(),
                reference.block_hash(n).unwrap()
            );
        }
        assert_eq!(overlay.applied_block().unwrap(), Some(9));
        // The base still holds exactly the seed.
        assert_eq!(base.applied_block().unwrap(), Some(7));
        assert_eq!(base.account(a).unwrap(), Some(account(1)));
        assert_eq!(base.storage(b, U256::from(1)).unwrap(), U256::from(21));
        assert!(base.account(c).unwrap().is_none());

        overlay
            .insert_block_hashes([(3, B256::repeat_byte(3))])
            .unwrap();
        assert_eq!(overlay.block_hash(3).unwrap(), Some(B256::repeat_byte(3)));
        assert_eq!(overlay.applied_block().unwrap(), Some(9));
    }
}
