//! Plain data types of the flat state.

use alloy_primitives::{Address, B256, Bytes, U256};
use bal_replay_dump::{AccountPre, BlockHashEntry, PreState};

/// An account's flat value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FlatAccount {
    /// Nonce.
    pub nonce: u64,
    /// Balance in wei.
    pub balance: U256,
    /// keccak256 of the code (`KECCAK_EMPTY` without code).
    pub code_hash: B256,
}

impl FlatAccount {
    /// The account as revm reads it: without code, which revm fetches by hash when it runs it, except
    /// the empty code, attached so revm never asks for it.
    pub fn to_account_info(&self) -> revm::state::AccountInfo {
        revm::state::AccountInfo {
            balance: self.balance,
            nonce: self.nonce,
            code_hash: self.code_hash,
            account_id: None,
            code: (self.code_hash == revm::primitives::KECCAK_EMPTY)
                .then(revm::bytecode::Bytecode::default),
        }
    }
}

impl From<AccountPre> for FlatAccount {
    fn from(account: AccountPre) -> Self {
        Self {
            nonce: account.nonce,
            balance: account.balance,
            code_hash: account.code_hash,
        }
    }
}

/// The account without its code and id, which a flat value does not hold.
impl From<&revm::state::AccountInfo> for FlatAccount {
    fn from(info: &revm::state::AccountInfo) -> Self {
        Self {
            nonce: info.nonce,
            balance: info.balance,
            code_hash: info.code_hash,
        }
    }
}

impl From<revm::state::AccountInfo> for FlatAccount {
    fn from(info: revm::state::AccountInfo) -> Self {
        Self::from(&info)
    }
}

/// See [`FlatAccount::to_account_info`].
impl From<FlatAccount> for revm::state::AccountInfo {
    fn from(account: FlatAccount) -> Self {
        account.to_account_info()
    }
}

/// How keys are stored: by address and slot (`Plain`), or by their keccak256 (`Hashed`, reth's v2
/// layout). Recorded in the store's metadata; readers hash when the store is hashed.
///
/// In JSON (`bench-db --json`) by its [`KeyScheme::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyScheme {
    /// Keys are the address and the slot as they are.
    #[default]
    Plain,
    /// Keys are keccak256(address) and keccak256(slot).
    Hashed,
}

/// The block a commit brings a state to, and what identifies it where the committer knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppliedBlock {
    /// The block number: the new applied height.
    pub number: u64,
    /// The block's hash. `None` records it as unknown: a hash recorded for an earlier height is
    /// removed rather than kept beside a height it does not belong to.
    pub hash: Option<B256>,
    /// The chain. `None` leaves the recorded chain id as it is.
    pub chain_id: Option<u64>,
}

impl AppliedBlock {
    /// Block `number`, its hash and chain unknown.
    pub const fn number(number: u64) -> Self {
        Self {
            number,
            hash: None,
            chain_id: None,
        }
    }

    /// Block `number` with `hash` on chain `chain_id`.
    pub const fn new(number: u64, hash: B256, chain_id: u64) -> Self {
        Self {
            number,
            hash: Some(hash),
            chain_id: Some(chain_id),
        }
    }
}

/// Changes to apply in one commit.
///
/// Order of application: `wiped_storage` first (all storage of those accounts deleted), then
/// `accounts`, `storage`, `codes`, `block_hashes`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StateChanges {
    /// New account values; `None` deletes the account.
    pub accounts: Vec<(Address, Option<FlatAccount>)>,
    /// Accounts whose whole storage is deleted (self-destructed or re-created) before `storage` applies.
    pub wiped_storage: Vec<Address>,
    /// New slot values; zero deletes the slot.
    pub storage: Vec<(Address, U256, U256)>,
    /// New code by hash.
    pub codes: Vec<(B256, Bytes)>,
    /// Block hashes to record.
    pub block_hashes: Vec<(u64, B256)>,
}

impl KeyScheme {
    /// The name recorded in a store's metadata (`plain` / `hashed`).
    pub const fn name(self) -> &'static str {
        match self {
            Self::Plain => "plain",
            Self::Hashed => "hashed",
        }
    }

    /// Parses a name written by [`KeyScheme::name`].
    pub fn from_name(name: &[u8]) -> Option<Self> {
        match name {
            b"plain" => Some(Self::Plain),
            b"hashed" => Some(Self::Hashed),
            _ => None,
        }
    }
}

impl std::fmt::Display for KeyScheme {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl StateChanges {
    /// Changes that seed an empty state with a dump record's pre-block values.
    pub fn from_pre_state(pre: &PreState, block_hashes: &[BlockHashEntry]) -> Self {
        Self {
            accounts: pre
                .accounts
                .iter()
                .map(|a| (a.address, Some(FlatAccount::from(*a))))
                .collect(),
            wiped_storage: Vec::new(),
            storage: pre
                .storage
                .iter()
                .map(|s| (s.address, s.slot, s.value))
                .collect(),
            codes: pre.codes.iter().map(|c| (c.hash, c.code.clone())).collect(),
            block_hashes: block_hashes.iter().map(|h| (h.number, h.hash)).collect(),
        }
    }

    /// Appends `other`, whose changes come after these, so that applying the result equals applying
    /// `self` and then `other`.
    ///
    /// Because a commit applies all wipes before all slot writes, this drops the slot writes of
    /// `self` for accounts that `other` wipes: applied in sequence, `other`'s wipe would have erased
    /// them, but merged they would land after the wipe and survive.
    pub fn extend(&mut self, other: StateChanges) {
        if !other.wiped_storage.is_empty() {
            let wiped: std::collections::HashSet<Address> =
                other.wiped_storage.iter().copied().collect();
            self.storage
                .retain(|(address, _, _)| !wiped.contains(address));
        }
        self.accounts.extend(other.accounts);
        self.wiped_storage.extend(other.wiped_storage);
        self.storage.extend(other.storage);
        self.codes.extend(other.codes);
        self.block_hashes.extend(other.block_hashes);
    }
}

impl From<u64> for AppliedBlock {
    fn from(number: u64) -> Self {
        Self::number(number)
    }
}
