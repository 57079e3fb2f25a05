//! The shape EIP-7928 requires of a block access list, checked where a BAL enters the project.
//!
//! A BAL's lists are keyed: accounts by address, slots by key, changes by block access index. The
//! EIP requires each list strictly ascending, so each key appears once. Everything downstream leans
//! on that: merging a batch's BALs appends each block's changes to the account's lists, a batch
//! commits a list's last entry as the final value, and revm's BAL reads search sorted lists. A BAL
//! that names an account or a slot twice, each list sorted on its own, would still pass a check of
//! the indices alone, and a write that does not depend on the previous value (an ERC-20 `approve`)
//! would then pass every per-transaction check while the parallel engine commits another state
//! than sequential execution. So a dump is refused where it is read or written (the reader and the
//! writer both call [`check_bal`]), and every design and mode sees only well-formed BALs.

use alloy_eip7928::{AccountChanges, BlockAccessList};
use alloy_primitives::{Address, U256};

/// Which of an account's lists a defect is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BalList {
    /// `storage_changes` (a slot's changes, or the list of slots).
    StorageChanges,
    /// `storage_reads`.
    StorageReads,
    /// `balance_changes`.
    BalanceChanges,
    /// `nonce_changes`.
    NonceChanges,
    /// `code_changes`.
    CodeChanges,
}

impl std::fmt::Display for BalList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::StorageChanges => "storage_changes",
            Self::StorageReads => "storage_reads",
            Self::BalanceChanges => "balance_changes",
            Self::NonceChanges => "nonce_changes",
            Self::CodeChanges => "code_changes",
        })
    }
}

/// How a block access list departs from EIP-7928's shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BalDefect {
    /// The accounts are not in strictly ascending address order (equal: the account is listed
    /// twice).
    #[error(
        "account {address} follows account {previous}; accounts must be strictly ascending by address, each listed once"
    )]
    AccountOrder {
        /// The account out of order.
        address: Address,
        /// The account before it.
        previous: Address,
    },
    /// An account's slots are not in strictly ascending order (equal: the slot is listed twice).
    #[error(
        "account {address}: {list} slot {slot:#x} follows slot {previous:#x}; slots must be strictly ascending, each listed once"
    )]
    SlotOrder {
        /// The account.
        address: Address,
        /// The list the slots are in.
        list: BalList,
        /// The slot out of order.
        slot: U256,
        /// The slot before it.
        previous: U256,
    },
    /// A slot is listed both as read and as changed (a slot the block writes is a change only).
    #[error(
        "account {address}: slot {slot:#x} is in both storage_changes and storage_reads; a written slot is listed as a change only"
    )]
    ReadAndChanged {
        /// The account.
        address: Address,
        /// The slot.
        slot: U256,
    },
    /// A change list's indices are not strictly ascending (equal: two changes at one index).
    #[error("account {address}{}: {list} index {index} follows index {previous}; indices must be strictly ascending", fmt_slot(*slot))]
    IndexOrder {
        /// The account.
        address: Address,
        /// The list.
        list: BalList,
        /// The slot, for a slot's changes.
        slot: Option<U256>,
        /// The index out of order.
        index: u64,
        /// The index before it.
        previous: u64,
    },
    /// A change names an index past the block's last (a block with `n` transactions has the
    /// indices `0..=n + 1`).
    #[error("account {address}{}: {list} index {index} is outside the block's indices 0..={last}", fmt_slot(*slot))]
    IndexOutOfRange {
        /// The account.
        address: Address,
        /// The list.
        list: BalList,
        /// The slot, for a slot's changes.
        slot: Option<U256>,
        /// The index.
        index: u64,
        /// The block's last index (`tx_count + 1`).
        last: u64,
    },
    /// A code change sets code that starts with EIP-7702's delegation marker `0xef01` but is not a
    /// delegation designation (`0xef0100` and a 20-byte address). No transaction can set such code
    /// (EIP-3541 refuses new code starting with `0xef`; EIP-7702 writes only designations), and
    /// revm refuses to load it: let through, it would fail a whole batch far from its block.
    #[error(
        "account {address}: code_changes index {index} sets {len} bytes of code starting 0xef01{}; code starting 0xef01 must be an EIP-7702 delegation: 0xef0100 and a 20-byte address, 23 bytes",
        version.map(|v| format!(" version {v}")).unwrap_or_default()
    )]
    MalformedDelegation {
        /// The account.
        address: Address,
        /// The code change's index.
        index: u64,
        /// The code's length.
        len: usize,
        /// The byte after the marker (the delegation's version), if there is one.
        version: Option<u8>,
    },
}

impl BalDefect {
    /// The account the defect is in.
    pub fn address(&self) -> Address {
        match self {
            Self::AccountOrder { address, .. }
            | Self::SlotOrder { address, .. }
            | Self::ReadAndChanged { address, .. }
            | Self::IndexOrder { address, .. }
            | Self::IndexOutOfRange { address, .. }
            | Self::MalformedDelegation { address, .. } => *address,
        }
    }
}

fn fmt_slot(slot: Option<U256>) -> String {
    slot.map(|s| format!(" slot {s:#x}")).unwrap_or_default()
}

/// EIP-7702's delegation designation: this marker, this version, a 20-byte address. revm reads any
/// code that starts with the marker as a designation and refuses one of another length or version.
const DELEGATION_MARKER: [u8; 2] = [0xef, 0x01];
const DELEGATION_VERSION: u8 = 0;
const DELEGATION_LEN: usize = 23;

/// Checks that `bal`, the access list of a block of `tx_count` transactions, has the shape
/// EIP-7928 requires: accounts strictly ascending by address; in each account, changed slots and
/// read slots each strictly ascending and disjoint; every change list strictly ascending by index,
/// each index within `0..=tx_count + 1`; and any code set that starts with EIP-7702's delegation
/// marker a whole designation. Returns the first defect found, in list order.
pub fn check_bal(tx_count: usize, bal: &BlockAccessList) -> Result<(), BalDefect> {
    let last = tx_count as u64 + 1;
    let mut previous: Option<Address> = None;
    for account in bal {
        if let Some(previous) = previous.filter(|p| *p >= account.address) {
            return Err(BalDefect::AccountOrder {
                address: account.address,
                previous,
            });
        }
        previous = Some(account.address);
        check_account(last, account)?;
    }
    Ok(())
}

fn check_account(last: u64, account: &AccountChanges) -> Result<(), BalDefect> {
    let address = account.address;
    let indices = |list: BalList, slot: Option<U256>, indices: &mut dyn Iterator<Item = u64>| {
        let mut previous: Option<u64> = None;
        for index in indices {
            if index > last {
                return Err(BalDefect::IndexOutOfRange {
                    address,
                    list,
                    slot,
                    index,
                    last,
                });
            }
            if let Some(previous) = previous.filter(|p| *p >= index) {
                return Err(BalDefect::IndexOrder {
                    address,
                    list,
                    slot,
                    index,
                    previous,
                });
            }
            previous = Some(index);
        }
        Ok(())
    };
    let slots = |list: BalList, slots: &mut dyn Iterator<Item = U256>| {
        let mut previous: Option<U256> = None;
        for slot in slots {
            if let Some(previous) = previous.filter(|p| *p >= slot) {
                return Err(BalDefect::SlotOrder {
                    address,
                    list,
                    slot,
                    previous,
                });
            }
            previous = Some(slot);
        }
        Ok(())
    };
    slots(
        BalList::StorageChanges,
        &mut account.storage_changes.iter().map(|s| s.slot),
    )?;
    slots(
        BalList::StorageReads,
        &mut account.storage_reads.iter().copied(),
    )?;
    // Both lists are sorted now, so one merge-like walk finds a slot in both.
    let mut changed = account.storage_changes.iter().map(|s| s.slot).peekable();
    for &read in &account.storage_reads {
        while changed.next_if(|slot| *slot < read).is_some() {}
        if changed.peek() == Some(&read) {
            return Err(BalDefect::ReadAndChanged {
                address,
                slot: read,
            });
        }
    }
    for slot in &account.storage_changes {
        indices(
            BalList::StorageChanges,
            Some(slot.slot),
            &mut slot.changes.iter().map(|c| c.block_access_index.0),
        )?;
    }
    indices(
        BalList::BalanceChanges,
        None,
        &mut account
            .balance_changes
            .iter()
            .map(|c| c.block_access_index.0),
    )?;
    indices(
        BalList::NonceChanges,
        None,
        &mut account.nonce_changes.iter().map(|c| c.block_access_index.0),
    )?;
    indices(
        BalList::CodeChanges,
        None,
        &mut account.code_changes.iter().map(|c| c.block_access_index.0),
    )?;
    for change in &account.code_changes {
        check_code(&change.new_code).map_err(|defect| BalDefect::MalformedDelegation {
            address,
            index: change.block_access_index.0,
            len: defect.len,
            version: defect.version,
        })?;
    }
    Ok(())
}

/// Code revm cannot load: it starts with EIP-7702's delegation marker `0xef01` but is no
/// designation (`0xef0100` and a 20-byte address). No transaction can deploy such code (EIP-3541
/// refuses new code starting with `0xef`), so where a dump or a state holds it, the input is
/// corrupt; revm's `Bytecode::new_raw` would panic on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "{len} bytes of code starting 0xef01{}; code starting 0xef01 must be an EIP-7702 delegation: 0xef0100 and a 20-byte address, 23 bytes",
    version.map(|v| format!(" version {v}")).unwrap_or_default()
)]
pub struct MalformedCode {
    /// The code's length.
    pub len: usize,
    /// The byte after the marker (the delegation's version), if there is one.
    pub version: Option<u8>,
}

/// Checks that `code` is loadable by revm: either not starting with `0xef01`, or a whole
/// EIP-7702 designation.
pub fn check_code(code: &[u8]) -> Result<(), MalformedCode> {
    let is_delegation = code.len() == DELEGATION_LEN && code[2] == DELEGATION_VERSION;
    if code.starts_with(&DELEGATION_MARKER) && !is_delegation {
        return Err(MalformedCode {
            len: code.len(),
            version: code.get(2).copied(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_eip7928::{BalanceChange, BlockAccessIndex, CodeChange, SlotChanges, StorageChange};
    use alloy_primitives::Bytes;

    fn change(index: u64, value: u64) -> StorageChange {
        StorageChange::new(BlockAccessIndex::new(index), U256::from(value))
    }

    fn account(last_byte: u8) -> AccountChanges {
        AccountChanges::new(Address::with_last_byte(last_byte))
    }

    #[test]
    fn a_well_formed_bal_passes() {
        let bal = vec![
            account(1)
                .with_storage_change(SlotChanges::new(U256::from(1), vec![change(1, 5)]))
                .with_storage_change(SlotChanges::new(
                    U256::from(3),
                    vec![change(1, 5), change(3, 6)],
                ))
                .with_storage_read(U256::from(2))
                .with_storage_read(U256::from(4)),
            account(2)
                .with_balance_change(BalanceChange::new(BlockAccessIndex::new(3), U256::ZERO)),
        ];
        check_bal(2, &bal).unwrap();
    }

    #[test]
    fn an_account_listed_twice_is_refused() {
        // Each copy well formed on its own; together they name account 1 twice.
        let bal = vec![
            account(1)
                .with_balance_change(BalanceChange::new(BlockAccessIndex::new(2), U256::ZERO)),
            account(1)
                .with_balance_change(BalanceChange::new(BlockAccessIndex::new(1), U256::ZERO)),
        ];
        assert_eq!(
            check_bal(2, &bal).unwrap_err(),
            BalDefect::AccountOrder {
                address: Address::with_last_byte(1),
                previous: Address::with_last_byte(1),
            }
        );
        let descending = vec![account(2), account(1)];
        assert!(matches!(
            check_bal(2, &descending).unwrap_err(),
            BalDefect::AccountOrder { .. }
        ));
    }

    #[test]
    fn a_slot_listed_twice_is_refused() {
        let bal = vec![
            account(1)
                .with_storage_change(SlotChanges::new(U256::from(7), vec![change(2, 1)]))
                .with_storage_change(SlotChanges::new(U256::from(7), vec![change(1, 2)])),
        ];
        let err = check_bal(2, &bal).unwrap_err();
        assert_eq!(
            err,
            BalDefect::SlotOrder {
                address: Address::with_last_byte(1),
                list: BalList::StorageChanges,
                slot: U256::from(7),
                previous: U256::from(7),
            }
        );
        assert!(
            err.to_string().contains("slot 0x7 follows slot 0x7"),
            "{err}"
        );
        let reads = vec![
            account(1)
                .with_storage_read(U256::from(9))
                .with_storage_read(U256::from(9)),
        ];
        assert!(matches!(
            check_bal(2, &reads).unwrap_err(),
            BalDefect::SlotOrder {
                list: BalList::StorageReads,
                ..
            }
        ));
    }

    #[test]
    fn a_slot_both_read_and_changed_is_refused() {
        let bal = vec![
            account(1)
                .with_storage_change(SlotChanges::new(U256::from(4), vec![change(1, 1)]))
                .with_storage_read(U256::from(2))
                .with_storage_read(U256::from(4)),
        ];
        assert_eq!(
            check_bal(1, &bal).unwrap_err(),
            BalDefect::ReadAndChanged {
                address: Address::with_last_byte(1),
                slot: U256::from(4),
            }
        );
    }

    #[test]
    fn code_with_the_delegation_marker_that_is_no_delegation_is_refused() {
        let delegation = |code: Vec<u8>| {
            vec![
                account(1)
                    .with_code_change(CodeChange::new(BlockAccessIndex::new(1), Bytes::from(code))),
            ]
        };
        let mut designation = vec![0xef, 0x01, 0x00];
        designation.extend_from_slice(Address::with_last_byte(9).as_slice());
        check_bal(1, &delegation(designation.clone())).unwrap();
        // Code starting 0xef but not 0xef01 is no delegation; revm loads it as legacy code.
        check_bal(1, &delegation(vec![0xef, 0x00, 0x01])).unwrap();

        let short = designation[..22].to_vec();
        assert_eq!(
            check_bal(1, &delegation(short)).unwrap_err(),
            BalDefect::MalformedDelegation {
                address: Address::with_last_byte(1),
                index: 1,
                len: 22,
                version: Some(0),
            }
        );
        let mut version_one = designation;
        version_one[2] = 1;
        let err = check_bal(1, &delegation(version_one)).unwrap_err();
        assert_eq!(
            err,
            BalDefect::MalformedDelegation {
                address: Address::with_last_byte(1),
                index: 1,
                len: 23,
                version: Some(1),
            }
        );
        assert!(
            err.to_string()
                .contains("code_changes index 1 sets 23 bytes of code starting 0xef01 version 1"),
            "{err}"
        );
        assert_eq!(
            check_bal(1, &delegation(vec![0xef, 0x01])).unwrap_err(),
            BalDefect::MalformedDelegation {
                address: Address::with_last_byte(1),
                index: 1,
                len: 2,
                version: None,
            }
        );
    }

    #[test]
    fn indices_out_of_order_or_range_are_refused() {
        let order = vec![account(1).with_storage_change(SlotChanges::new(
            U256::from(1),
            vec![change(2, 1), change(2, 2)],
        ))];
        assert_eq!(
            check_bal(3, &order).unwrap_err(),
            BalDefect::IndexOrder {
                address: Address::with_last_byte(1),
                list: BalList::StorageChanges,
                slot: Some(U256::from(1)),
                index: 2,
                previous: 2,
            }
        );
        // Two transactions: indices 0..=3.
        let range = vec![
            account(1)
                .with_balance_change(BalanceChange::new(BlockAccessIndex::new(4), U256::ZERO)),
        ];
        assert_eq!(
            check_bal(2, &range).unwrap_err(),
            BalDefect::IndexOutOfRange {
                address: Address::with_last_byte(1),
                list: BalList::BalanceChanges,
                slot: None,
                index: 4,
                last: 3,
            }
        );
        check_bal(3, &range).unwrap();
    }
}
