//! Conversion of revm's bundle state into flat-state changes.

use bal_replay_state::{FlatAccount, StateChanges};
use revm::database::{BundleState, OriginalValuesKnown};

/// The flat-state changes a bundle makes, in a deterministic order (sorted by address, slot, hash).
pub fn state_changes_from_bundle(bundle: &BundleState) -> StateChanges {
    let plain = bundle.to_plain_state(OriginalValuesKnown::Yes);
    let mut changes = StateChanges {
        accounts: plain
            .accounts
            .into_iter()
            .map(|(address, info)| (address, info.map(FlatAccount::from)))
            .collect(),
        ..Default::default()
    };
    for account in plain.storage {
        if account.wipe_storage {
            changes.wiped_storage.push(account.address);
        }
        changes.storage.extend(
            account
                .storage
                .into_iter()
                .map(|(slot, value)| (account.address, slot, value)),
        );
    }
    changes.codes = plain
        .contracts
        .into_iter()
        .map(|(hash, code)| (hash, code.original_bytes()))
        .collect();
    changes.accounts.sort_unstable_by_key(|(a, _)| *a);
    changes.wiped_storage.sort_unstable();
    changes.storage.sort_unstable_by_key(|(a, s, _)| (*a, *s));
    changes.codes.sort_unstable_by_key(|(h, _)| *h);
    changes
}
