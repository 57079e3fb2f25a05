//! The generated world (accounts, keys, contracts) and its genesis state.

use crate::{
    GeneratorConfig,
    config::HOT_WALLETS,
    contracts::{self, erc20_layout, nft_layout, pair_layout},
    rng::Rng,
};
use alloy_eips::eip4788::{BEACON_ROOTS_ADDRESS, BEACON_ROOTS_CODE};
use alloy_primitives::{Address, B256, Bytes, U256, keccak256};
use bal_replay_state::{AccountFlat, StateChanges};
use revm::primitives::KECCAK_EMPTY;
use secp256k1::{PublicKey, SecretKey};

/// One ether in wei.
pub(crate) const ETHER: u128 = 1_000_000_000_000_000_000;
/// One whole token (18 decimals).
pub(crate) const TOKEN_UNIT: u128 = 1_000_000_000_000_000_000;

/// An externally owned account with its signing key.
#[derive(Debug, Clone)]
pub(crate) struct Eoa {
    pub address: Address,
    pub key: SecretKey,
}

/// An AMM pair and the indices of its tokens.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pair {
    pub address: Address,
    pub token0: usize,
    pub token1: usize,
}

/// Everything the transaction generator chooses from.
#[derive(Debug)]
pub(crate) struct World {
    pub eoas: Vec<Eoa>,
    /// Genesis nonce of each EOA.
    pub nonces: Vec<u64>,
    /// EOAs `0..traders` hold every token and have approved the router without limit.
    pub traders: usize,
    pub tokens: Vec<Address>,
    /// EOA indices holding each token (the traders first).
    pub holders: Vec<Vec<u32>>,
    pub pairs: Vec<Pair>,
    pub nfts: Vec<Address>,
    pub router: Address,
    pub reader: Address,
    pub fee_recipient: Address,
}

/// A deterministic address for the `index`-th contract of `kind`.
fn contract_address(seed: u64, kind: &str, index: usize) -> Address {
    let digest = keccak256(format!("bal-replay-synth/{kind}/{seed}/{index}"));
    Address::from_slice(&digest[12..])
}

/// The hash the chain's history gives block `number` before the generated blocks.
pub(crate) fn prehistory_block_hash(seed: u64, number: u64) -> B256 {
    keccak256(format!("bal-replay-synth/block-hash/{seed}/{number}"))
}

/// The signing key of EOA `index`: keccak of the seed and index, re-hashed in the (2^-128 likely)
/// case it is not a valid secp256k1 scalar.
fn eoa_key(seed: u64, index: usize) -> SecretKey {
    let mut digest = keccak256(format!("bal-replay-synth/eoa/{seed}/{index}"));
    loop {
        if let Ok(key) = SecretKey::from_byte_array(digest.0) {
            return key;
        }
        digest = keccak256(digest);
    }
}

/// The Ethereum address of `key`: the last 20 bytes of keccak256 of the uncompressed public key.
pub(crate) fn address_of(key: &SecretKey) -> Address {
    let public = PublicKey::from_secret_key_global(key).serialize_uncompressed();
    Address::from_slice(&keccak256(&public[1..])[12..])
}

/// Derives the EOAs' keys and addresses, spread over the machine's cores: each is one scalar
/// multiplication, and a large state has tens of thousands.
fn derive_eoas(seed: u64, count: usize) -> Vec<Eoa> {
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(count.div_ceil(1024))
        .max(1);
    let chunk = count.div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    (t * chunk..((t + 1) * chunk).min(count))
                        .map(|index| {
                            let key = eoa_key(seed, index);
                            Eoa {
                                address: address_of(&key),
                                key,
                            }
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("key derivation does not panic"))
            .collect()
    })
}

/// Picks `count` distinct indices from `lo..hi`, in the order drawn.
fn distinct_sample(rng: &mut Rng, lo: usize, hi: usize, count: usize) -> Vec<u32> {
    let count = count.min(hi - lo);
    let mut taken = vec![false; hi - lo];
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let i = rng.index(hi - lo);
        if !taken[i] {
            taken[i] = true;
            out.push((lo + i) as u32);
        }
    }
    out
}

/// Builds the world and its genesis state for `config` (which must be valid).
pub(crate) fn build(config: &GeneratorConfig) -> (World, StateChanges) {
    let seed = config.seed;
    let mut rng = Rng::new(seed, 0x0067_656e_6573_6973); // "genesis"
    let eoas = derive_eoas(seed, config.accounts);

    let mut accounts: Vec<(Address, Option<AccountFlat>)> = Vec::new();
    let mut storage: Vec<(Address, U256, U256)> = Vec::new();
    let mut codes: Vec<(B256, Bytes)> = Vec::new();

    // EOAs: mainnet accounts have a history, so nonces start anywhere up to a few hundred.
    let mut nonces = Vec::with_capacity(eoas.len());
    for (i, eoa) in eoas.iter().enumerate() {
        let balance = if i < HOT_WALLETS {
            U256::from(1_000_000 * ETHER)
        } else {
            U256::from(rng.range(10, 1_000) as u128 * ETHER)
        };
        let nonce = if rng.chance(100) {
            0
        } else {
            rng.range(1, 500)
        };
        nonces.push(nonce);
        accounts.push((
            eoa.address,
            Some(AccountFlat {
                nonce,
                balance,
                code_hash: KECCAK_EMPTY,
            }),
        ));
    }

    let mut contract = |address: Address, code: &Bytes, balance: U256| {
        let code_hash = keccak256(code);
        if !codes.iter().any(|(h, _)| *h == code_hash) {
            codes.push((code_hash, code.clone()));
        }
        accounts.push((
            address,
            Some(AccountFlat {
                nonce: 1,
                balance,
                code_hash,
            }),
        ));
    };

    // Contracts, all deployed by writing their runtime code: no constructor runs.
    let erc20 = contracts::erc20();
    let pair_code = contracts::pair();
    let router_code = contracts::router();
    let nft_code = contracts::nft();
    let reader_code = contracts::reader();
    let tokens: Vec<Address> = (0..config.tokens)
        .map(|i| contract_address(seed, "token", i))
        .collect();
    let router = contract_address(seed, "router", 0);
    let reader = contract_address(seed, "reader", 0);
    let nfts: Vec<Address> = (0..config.nfts)
        .map(|i| contract_address(seed, "nft", i))
        .collect();
    let token_pairs = (0..config.tokens)
        .flat_map(|a| (a + 1..config.tokens).map(move |b| (a, b)))
        .take(config.pools);
    let pairs: Vec<Pair> = token_pairs
        .enumerate()
        .map(|(i, (token0, token1))| Pair {
            address: contract_address(seed, "pair", i),
            token0,
            token1,
        })
        .collect();
    for token in &tokens {
        contract(*token, &erc20, U256::ZERO);
    }
    for pair in &pairs {
        contract(pair.address, &pair_code, U256::ZERO);
    }
    for nft in &nfts {
        contract(
            *nft,
            &nft_code,
            U256::from(rng.range(1, 100) as u128 * ETHER),
        );
    }
    contract(router, &router_code, U256::ZERO);
    contract(reader, &reader_code, U256::ZERO);
    contract(BEACON_ROOTS_ADDRESS, &BEACON_ROOTS_CODE.clone(), U256::ZERO);
    let fee_recipient = contract_address(seed, "fee-recipient", 0);
    accounts.push((
        fee_recipient,
        Some(AccountFlat {
            nonce: 0,
            balance: U256::from(ETHER),
            code_hash: KECCAK_EMPTY,
        }),
    ));

    // Token balances: traders hold every token, the other holders one token each; reserves are
    // large enough that swaps barely move prices.
    let traders = config.holders_per_token / 2;
    let mut holders = Vec::with_capacity(tokens.len());
    for (t, token) in tokens.iter().enumerate() {
        let mut token_holders: Vec<u32> = (0..traders as u32).collect();
        token_holders.extend(distinct_sample(
            &mut rng,
            traders,
            config.accounts,
            config.holders_per_token - traders,
        ));
        let mut supply = U256::ZERO;
        for &h in &token_holders {
            let owner = eoas[h as usize].address;
            let amount = U256::from(rng.range(100_000_000, 1_000_000_000) as u128 * TOKEN_UNIT);
            supply += amount;
            storage.push((*token, erc20_layout::balance_slot(owner), amount));
        }
        for eoa in &eoas[..traders] {
            storage.push((
                *token,
                erc20_layout::allowance_slot(eoa.address, router),
                U256::MAX,
            ));
        }
        for pair in pairs.iter().filter(|p| p.token0 == t || p.token1 == t) {
            let reserve =
                U256::from(rng.range(10_000_000_000, 100_000_000_000) as u128 * TOKEN_UNIT);
            supply += reserve;
            storage.push((*token, erc20_layout::balance_slot(pair.address), reserve));
            let slot = if pair.token0 == t {
                pair_layout::RESERVE0
            } else {
                pair_layout::RESERVE1
            };
            storage.push((pair.address, U256::from(slot), reserve));
        }
        storage.push((*token, U256::from(erc20_layout::TOTAL_SUPPLY), supply));
        let owner = contract_address(seed, "token-owner", t);
        storage.push((
            *token,
            U256::from(erc20_layout::CONFIG),
            U256::from_be_slice(owner.as_slice()),
        ));
        holders.push(token_holders);
    }
    for pair in &pairs {
        let word = |t: usize| U256::from_be_slice(tokens[t].as_slice());
        storage.push((
            pair.address,
            U256::from(pair_layout::TOKEN0),
            word(pair.token0),
        ));
        storage.push((
            pair.address,
            U256::from(pair_layout::TOKEN1),
            word(pair.token1),
        ));
    }
    for nft in &nfts {
        storage.push((
            *nft,
            U256::from(nft_layout::MINTED),
            U256::from(rng.range(1_000, 10_000)),
        ));
    }
    for i in 0..config.reader_slots() {
        let slot = contracts::reader_slot(i);
        storage.push((reader, slot, contracts::reader_value(slot)));
    }

    let block_hashes = (config.first_block.saturating_sub(256)..config.first_block)
        .map(|n| (n, prehistory_block_hash(seed, n)))
        .collect();

    // Sorted, so the genesis is canonical and loads into RocksDB in key order.
    accounts.sort_unstable_by_key(|(a, _)| *a);
    storage.sort_unstable_by_key(|(a, s, _)| (*a, *s));
    codes.sort_unstable_by_key(|(h, _)| *h);
    let genesis = StateChanges {
        accounts,
        wiped_storage: Vec::new(),
        storage,
        codes,
        block_hashes,
    };
    let world = World {
        eoas,
        nonces,
        traders,
        tokens,
        holders,
        pairs,
        nfts,
        router,
        reader,
        fee_recipient,
    };
    (world, genesis)
}
