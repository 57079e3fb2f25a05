//! Byte encodings of keys and values, shared by every store so that their contents compare equal.
//!
//! The layouts are listed in the crate docs (column-family table) and in [`crate::cf`].

use alloy_primitives::{Address, B256, U256, hex, keccak256};
use revm::bytecode::Bytecode;

use crate::{FlatAccount, KeyScheme, StateError};

/// Length of an encoded [`FlatAccount`]: nonce (8) ++ balance (32) ++ code hash (32).
pub const ACCOUNT_VALUE_LEN: usize = 8 + 32 + 32;

/// An encoded key, kept on the stack: every key of the flat state is at most 64 bytes, and point
/// reads are the hot path, so they should not allocate.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct StateKey {
    buf: [u8; 64],
    len: u8,
}

impl StateKey {
    fn from_parts(parts: &[&[u8]]) -> Self {
        let mut buf = [0u8; 64];
        let mut len = 0usize;
        for part in parts {
            buf[len..len + part.len()].copy_from_slice(part);
            len += part.len();
        }
        // All callers pass at most 64 bytes in total (checked by the slice copy above).
        Self {
            buf,
            len: len as u8,
        }
    }

    /// The key's bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.buf[..usize::from(self.len)]
    }

    /// The key as `0x`-prefixed hex, for error messages.
    pub fn to_hex(&self) -> String {
        hex::encode_prefixed(self.as_slice())
    }
}

impl AsRef<[u8]> for StateKey {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl std::ops::Deref for StateKey {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl KeyScheme {
    /// The `accounts` key of `address`: the address (20 bytes), or keccak256(address) (32 bytes).
    pub fn account_key(self, address: Address) -> StateKey {
        match self {
            Self::Plain => StateKey::from_parts(&[address.as_slice()]),
            Self::Hashed => StateKey::from_parts(&[keccak256(address).as_slice()]),
        }
    }

    /// The `storage` key of `slot` of `address`: address (20) ++ slot (32, big-endian), or
    /// keccak256(address) (32) ++ keccak256(slot as 32 big-endian bytes) (32).
    pub fn storage_key(self, address: Address, slot: U256) -> StateKey {
        let slot = B256::from(slot.to_be_bytes::<32>());
        match self {
            Self::Plain => StateKey::from_parts(&[address.as_slice(), slot.as_slice()]),
            Self::Hashed => {
                StateKey::from_parts(&[keccak256(address).as_slice(), keccak256(slot).as_slice()])
            }
        }
    }

    /// The part of `address`'s storage keys that all of them share (its account key); every
    /// storage key is this prefix followed by exactly 32 bytes.
    pub fn storage_prefix(self, address: Address) -> StateKey {
        self.account_key(address)
    }

    /// Length of an `accounts` key in this scheme.
    pub const fn account_key_len(self) -> usize {
        match self {
            Self::Plain => 20,
            Self::Hashed => 32,
        }
    }

    /// Length of a `storage` key in this scheme.
    pub const fn storage_key_len(self) -> usize {
        self.account_key_len() + 32
    }
}

impl FlatAccount {
    /// The 72-byte value stored under an account key: nonce (u64 BE) ++ balance (32 BE) ++ code hash.
    pub fn to_bytes(&self) -> [u8; ACCOUNT_VALUE_LEN] {
        let mut out = [0u8; ACCOUNT_VALUE_LEN];
        out[..8].copy_from_slice(&self.nonce.to_be_bytes());
        out[8..40].copy_from_slice(&self.balance.to_be_bytes::<32>());
        out[40..].copy_from_slice(self.code_hash.as_slice());
        out
    }

    /// Decodes [`FlatAccount::to_bytes`]; `None` if `bytes` is not exactly 72 bytes long.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let bytes: &[u8; ACCOUNT_VALUE_LEN] = bytes.try_into().ok()?;
        let (nonce, rest) = bytes.split_at(8);
        let (balance, code_hash) = rest.split_at(32);
        Some(Self {
            nonce: u64::from_be_bytes(nonce.try_into().ok()?),
            balance: U256::from_be_slice(balance),
            code_hash: B256::from_slice(code_hash),
        })
    }
}

/// A non-zero slot value, big-endian with its leading zero bytes trimmed (1..=32 bytes). Trimming
/// keeps the common small values (counters, flags, addresses) short on disk.
pub struct StorageValueBytes {
    buf: [u8; 32],
    start: usize,
}

impl AsRef<[u8]> for StorageValueBytes {
    fn as_ref(&self) -> &[u8] {
        &self.buf[self.start..]
    }
}

/// Encodes a slot value; zero values are never stored (a zero write deletes the slot), so callers
/// only pass non-zero values. A zero still encodes (as one 0x00 byte) rather than panicking.
pub fn encode_storage_value(value: U256) -> StorageValueBytes {
    let buf = value.to_be_bytes::<32>();
    let start = (value.leading_zeros() / 8).min(31);
    StorageValueBytes { buf, start }
}

/// Decodes a stored slot value; rejects empty, over-long and untrimmed (incl. zero) encodings, since
/// every writer stores the canonical form and anything else means corruption.
pub fn decode_storage_value(bytes: &[u8]) -> Result<U256, &'static str> {
    match bytes.first() {
        None => Err("empty storage value"),
        Some(_) if bytes.len() > 32 => Err("storage value longer than 32 bytes"),
        Some(0) => Err("storage value not trimmed of leading zero bytes (or a stored zero)"),
        Some(_) => Ok(U256::from_be_slice(bytes)),
    }
}

/// Decodes an account value, naming `table` and `key` on failure.
pub fn decode_account(
    table: &'static str,
    key: &[u8],
    bytes: &[u8],
) -> Result<FlatAccount, StateError> {
    FlatAccount::from_bytes(bytes).ok_or_else(|| StateError::Corrupt {
        table,
        key: hex::encode_prefixed(key),
        reason: format!(
            "account value is {} bytes, expected {ACCOUNT_VALUE_LEN}",
            bytes.len()
        ),
    })
}

/// Decodes a 32-byte hash value, naming `table` and `key` on failure.
pub fn decode_b256(table: &'static str, key: &[u8], bytes: &[u8]) -> Result<B256, StateError> {
    B256::try_from(bytes).map_err(|_| StateError::Corrupt {
        table,
        key: hex::encode_prefixed(key),
        reason: format!("value is {} bytes, expected 32", bytes.len()),
    })
}

/// Decodes a big-endian u64 (block numbers), naming `table` and `key` on failure.
pub fn decode_u64(table: &'static str, key: &[u8], bytes: &[u8]) -> Result<u64, StateError> {
    <[u8; 8]>::try_from(bytes)
        .map(u64::from_be_bytes)
        .map_err(|_| StateError::Corrupt {
            table,
            key: hex::encode_prefixed(key),
            reason: format!(
                "value is {} bytes, expected an 8-byte big-endian integer",
                bytes.len()
            ),
        })
}

/// The code a state holds under `hash`, decoded for revm. Code revm cannot load (EIP-7702's marker
/// without a whole designation; `Bytecode::new_raw` would panic) is a corrupt state, named by hash.
pub fn decode_code(hash: B256, bytes: alloy_primitives::Bytes) -> Result<Bytecode, StateError> {
    bal_replay_dump::check_code(&bytes)
        .map_err(|defect| StateError::MalformedCode { hash, defect })?;
    Ok(Bytecode::new_raw(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::{address, b256};

    #[test]
    fn account_value_round_trips_and_has_fixed_layout() {
        let account = FlatAccount {
            nonce: 0x0102_0304_0506_0708,
            balance: U256::from(0xaabbu64),
            code_hash: b256!("0x1111111111111111111111111111111111111111111111111111111111111111"),
        };
        let bytes = account.to_bytes();
        assert_eq!(&bytes[..8], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&bytes[38..40], &[0xaa, 0xbb]);
        assert!(bytes[8..38].iter().all(|b| *b == 0));
        assert_eq!(&bytes[40..], &[0x11; 32]);
        assert_eq!(FlatAccount::from_bytes(&bytes), Some(account));
        assert_eq!(FlatAccount::from_bytes(&bytes[..71]), None);
    }

    #[test]
    fn storage_values_are_trimmed_and_strictly_decoded() {
        assert_eq!(encode_storage_value(U256::from(1)).as_ref(), &[1]);
        assert_eq!(encode_storage_value(U256::from(0x0100)).as_ref(), &[1, 0]);
        assert_eq!(encode_storage_value(U256::MAX).as_ref(), &[0xff; 32]);
        for v in [
            U256::from(1),
            U256::from(0x1234_5678u64),
            U256::MAX,
            U256::from(1) << 255,
        ] {
            assert_eq!(
                decode_storage_value(encode_storage_value(v).as_ref()),
                Ok(v)
            );
        }
        assert!(decode_storage_value(&[]).is_err());
        assert!(decode_storage_value(&[0]).is_err());
        assert!(decode_storage_value(&[0, 1]).is_err());
        assert!(decode_storage_value(&[1; 33]).is_err());
    }

    #[test]
    fn keys_follow_the_documented_layouts() {
        let a = address!("0x00000000000000000000000000000000000000aa");
        let slot = U256::from(0x0102);
        let plain = KeyScheme::Plain.storage_key(a, slot);
        assert_eq!(plain.len(), 52);
        assert_eq!(&plain[..20], a.as_slice());
        assert_eq!(&plain[50..], &[1, 2]);
        assert_eq!(KeyScheme::Plain.account_key(a).as_slice(), a.as_slice());

        let hashed = KeyScheme::Hashed.storage_key(a, slot);
        assert_eq!(hashed.len(), 64);
        assert_eq!(&hashed[..32], keccak256(a).as_slice());
        assert_eq!(&hashed[32..], keccak256(B256::from(slot)).as_slice());
        assert_eq!(
            KeyScheme::Hashed.account_key(a).as_slice(),
            keccak256(a).as_slice()
        );
    }
}
