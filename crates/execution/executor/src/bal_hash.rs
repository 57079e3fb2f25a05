//! Checking a BAL against the one the block's header commits to (Amsterdam on): the network's BAL
//! is the truth, byte for byte.

use alloy_consensus::Header;
use alloy_eip7928::{AccountChanges, BlockAccessList, compute_block_access_list_hash};
use alloy_primitives::{Address, B256, U256};
use std::fmt;

/// A BAL is not the one the block's header commits to (`blockAccessListHash`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "block {block}: BAL hash mismatch: the header's blockAccessListHash is {expected}, the BAL \
     hashes to {got}{}",
    first_difference.as_ref().map_or(String::new(), |d| format!("; first difference: {d}"))
)]
pub struct BalHashMismatch {
    /// Block number.
    pub block: u64,
    /// The header's `blockAccessListHash`.
    pub expected: B256,
    /// keccak256 of the RLP of the BAL checked.
    pub got: B256,
    /// Where the BAL first differs from the network's, when the network's BAL is at hand.
    pub first_difference: Option<BalDifference>,
}

/// The first place two BALs differ, in their RLP order: account, then within it slot changes,
/// slot reads, balance, nonce and code changes, each by BAL index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BalDifference {
    /// The account.
    pub account: Address,
    /// The slot, for a storage difference.
    pub slot: Option<U256>,
    /// The BAL index (0 pre-execution, `i + 1` transaction `i`, `n + 1` post-block), for a
    /// difference in one change.
    pub index: Option<u64>,
    /// What differs, the network's value first.
    pub what: String,
}

impl fmt::Display for BalDifference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "account {}", self.account)?;
        if let Some(slot) = self.slot {
            write!(f, " slot {slot:#x}")?;
        }
        if let Some(index) = self.index {
            write!(f, " index {index}")?;
        }
        write!(f, ": {}", self.what)
    }
}

/// Checks `bal` against the header's `blockAccessListHash`. Returns whether there was a hash to
/// check (Amsterdam on). On a mismatch, `network` (the block's BAL as the network gave it, when at
/// hand) names the first difference.
pub fn check_bal_hash(
    header: &Header,
    bal: &[AccountChanges],
    network: Option<&[AccountChanges]>,
) -> Result<bool, BalHashMismatch> {
    let Some(expected) = header.block_access_list_hash else {
        return Ok(false);
    };
    let got = compute_block_access_list_hash(bal);
    if got == expected {
        return Ok(true);
    }
    Err(BalHashMismatch {
        block: header.number,
        expected,
        got,
        first_difference: network.and_then(|network| first_bal_difference(network, bal)),
    })
}

/// The first difference between `network`'s BAL and `ours` (see [`BalDifference`]), or `None`
/// when they are equal.
pub fn first_bal_difference(
    network: &[AccountChanges],
    ours: &[AccountChanges],
) -> Option<BalDifference> {
    let accounts = network.len().max(ours.len());
    (0..accounts).find_map(|i| match (network.get(i), ours.get(i)) {
        (Some(n), Some(o)) if n.address == o.address => account_difference(n, o),
        (n, o) => {
            // The lower address is the one the other list lacks at this position.
            let (account, only_network) = match (n, o) {
                (Some(n), Some(o)) => (n.address.min(o.address), n.address < o.address),
                (Some(n), None) => (n.address, true),
                (None, Some(o)) => (o.address, false),
                (None, None) => return None,
            };
            Some(BalDifference {
                account,
                slot: None,
                index: None,
                what: if only_network {
                    "the network's BAL lists the account, ours does not".into()
                } else {
                    "our BAL lists the account, the network's does not".into()
                },
            })
        }
    })
}

fn account_difference(network: &AccountChanges, ours: &AccountChanges) -> Option<BalDifference> {
    let account = network.address;
    let at = |slot, index, what: String| BalDifference {
        account,
        slot,
        index,
        what,
    };
    // Slot changes: by slot, then by index.
    let slots = network
        .storage_changes
        .len()
        .max(ours.storage_changes.len());
    for i in 0..slots {
        match (network.storage_changes.get(i), ours.storage_changes.get(i)) {
            (Some(n), Some(o)) if n.slot == o.slot => {
                let changes = n.changes.len().max(o.changes.len());
                for j in 0..changes {
                    let (nc, oc) = (n.changes.get(j), o.changes.get(j));
                    if nc != oc {
                        let index = nc.or(oc).map(|c| c.block_access_index.0);
                        return Some(at(
                            Some(n.slot),
                            index,
                            format!(
                                "written {} by the network, {} by ours",
                                nc.map_or("-".into(), |c| format!("{:#x}", c.new_value)),
                                oc.map_or("-".into(), |c| format!("{:#x}", c.new_value)),
                            ),
                        ));
                    }
                }
            }
            (n, o) => {
                let slot = match (n, o) {
                    (Some(n), Some(o)) => n.slot.min(o.slot),
                    (Some(s), None) | (None, Some(s)) => s.slot,
                    (None, None) => continue,
                };
                let network_has = n.is_some_and(|n| n.slot == slot);
                return Some(at(
                    Some(slot),
                    None,
                    format!(
                        "written in {} BAL only",
                        if network_has { "the network's" } else { "our" }
                    ),
                ));
            }
        }
    }
    let reads = network.storage_reads.len().max(ours.storage_reads.len());
    for i in 0..reads {
        let (n, o) = (network.storage_reads.get(i), ours.storage_reads.get(i));
        if n != o {
            let slot = match (n, o) {
                (Some(n), Some(o)) => *n.min(o),
                (Some(s), None) | (None, Some(s)) => *s,
                (None, None) => continue,
            };
            let network_has = n == Some(&slot);
            return Some(at(
                Some(slot),
                None,
                format!(
                    "read in {} BAL only",
                    if network_has { "the network's" } else { "our" }
                ),
            ));
        }
    }
    let balances = pairwise(
        &network.balance_changes,
        &ours.balance_changes,
        |c| c.block_access_index.0,
        |c| format!("balance {}", c.post_balance),
    );
    let nonces = || {
        pairwise(
            &network.nonce_changes,
            &ours.nonce_changes,
            |c| c.block_access_index.0,
            |c| format!("nonce {}", c.new_nonce),
        )
    };
    let codes = || {
        pairwise(
            &network.code_changes,
            &ours.code_changes,
            |c| c.block_access_index.0,
            |c| format!("code of {} bytes", c.new_code.len()),
        )
    };
    balances
        .or_else(nonces)
        .or_else(codes)
        .map(|(index, what)| at(None, Some(index), what))
}

/// The first position where two change lists differ: its BAL index and what each side has.
fn pairwise<T: PartialEq>(
    network: &[T],
    ours: &[T],
    index: impl Fn(&T) -> u64,
    show: impl Fn(&T) -> String,
) -> Option<(u64, String)> {
    (0..network.len().max(ours.len())).find_map(|i| {
        let (n, o) = (network.get(i), ours.get(i));
        (n != o).then(|| {
            let at = match (n, o) {
                (Some(n), Some(o)) => index(n).min(index(o)),
                (Some(c), None) | (None, Some(c)) => index(c),
                (None, None) => 0,
            };
            let side = |c: Option<&T>| c.filter(|c| index(c) == at).map_or("-".into(), &show);
            (
                at,
                format!("the network's has {}, ours {}", side(n), side(o)),
            )
        })
    })
}

/// The BAL a block's RLP bytes hold (as `eth_getBlockAccessListRaw` gives it).
pub fn decode_bal(mut rlp: &[u8]) -> Result<BlockAccessList, alloy_rlp::Error> {
    let bal = <BlockAccessList as alloy_rlp::Decodable>::decode(&mut rlp)?;
    if !rlp.is_empty() {
        return Err(alloy_rlp::Error::Custom("trailing bytes after the BAL"));
    }
    Ok(bal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_eip7928::{BalanceChange, BlockAccessIndex, SlotChanges, StorageChange};
    use alloy_primitives::address;

    fn bal() -> BlockAccessList {
        vec![
            AccountChanges::new(address!("0x00000000000000000000000000000000000000aa"))
                .with_storage_change(SlotChanges::new(
                    U256::from(1),
                    vec![StorageChange::new(BlockAccessIndex::new(1), U256::from(5))],
                ))
                .with_storage_read(U256::from(7))
                .with_balance_change(BalanceChange::new(
                    BlockAccessIndex::new(2),
                    U256::from(100),
                )),
            AccountChanges::new(address!("0x00000000000000000000000000000000000000bb")),
        ]
    }

    #[test]
    fn a_bal_matches_the_header_that_commits_to_it_and_names_the_first_difference_otherwise() {
        let network = bal();
        let header = Header {
            number: 9,
            block_access_list_hash: Some(compute_block_access_list_hash(&network)),
            ..Default::default()
        };
        assert_eq!(check_bal_hash(&header, &network, None), Ok(true));
        assert_eq!(
            check_bal_hash(&Header::default(), &network, None),
            Ok(false)
        );

        let mut ours = bal();
        ours[0].balance_changes[0].post_balance = U256::from(99);
        let e = check_bal_hash(&header, &ours, Some(&network)).unwrap_err();
        assert_eq!(e.block, 9);
        assert_eq!(e.got, compute_block_access_list_hash(&ours));
        let d = e.first_difference.clone().unwrap();
        assert_eq!(
            (d.account, d.slot, d.index),
            (network[0].address, None, Some(2))
        );
        assert!(
            e.to_string().ends_with(
                "first difference: account 0x00000000000000000000000000000000000000AA index 2: \
                 the network's has balance 100, ours balance 99"
            ),
            "{e}"
        );

        let mut ours = bal();
        ours[0].storage_changes[0].changes[0].new_value = U256::from(6);
        let d = first_bal_difference(&network, &ours).unwrap();
        assert_eq!((d.slot, d.index), (Some(U256::from(1)), Some(1)));

        let mut ours = bal();
        ours[0].storage_reads.clear();
        let d = first_bal_difference(&network, &ours).unwrap();
        assert_eq!(
            (d.slot, d.what.as_str()),
            (Some(U256::from(7)), "read in the network's BAL only")
        );

        let ours = vec![bal()[1].clone()];
        let d = first_bal_difference(&network, &ours).unwrap();
        assert_eq!(d.account, network[0].address);
        assert_eq!(first_bal_difference(&network, &bal()), None);
    }

    #[test]
    fn a_bal_decodes_from_its_rlp_and_nothing_else() {
        let bytes = alloy_rlp::encode(bal());
        assert_eq!(decode_bal(&bytes).unwrap(), bal());
        let mut trailing = bytes.clone();
        trailing.push(0);
        assert!(decode_bal(&trailing).is_err());
    }
}
