//! The generated world (accounts, keys, contracts) and its genesis state.

use crate::{
    GeneratorConfig,
    cold::ColdState,
    config::{HOT_WALLETS, TOKEN_UNIT},
    contracts::{self, erc20_layout, nft_layout, pair_layout},
    rng::Rng,
};
use alloy_eips::eip4788::{BEACON_ROOTS_ADDRESS, BEACON_ROOTS_CODE};
use alloy_primitives::{Address, B256, Bytes, U256, keccak256};
use bal_replay_state::{FlatAccount, StateChanges};
use revm::primitives::KECCAK_EMPTY;
use secp256k1::{PublicKey, SecretKey};

/// One ether in wei.
pub(crate) const ETHER: u128 = 1_000_000_000_000_000_000;

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
    /// The cold part of the state, if the config asks for more entries than the hot world has.
    pub cold: Option<ColdState>,
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
///
/// Every random draw comes from one generator, in this order: EOAs, contract balances, token
/// holdings, contract storage. Changing the order changes every chain.
pub(crate) fn build(config: &GeneratorConfig) -> (World, StateChanges) {
    let seed = config.seed;
    let mut rng = Rng::new(seed, 0x0067_656e_6573_6973); // "genesis"
    let eoas = derive_eoas(seed, config.accounts);
    let mut genesis = Genesis::default();
    let nonces = genesis.add_eoas(&mut rng, &eoas);
    let contracts = ContractAddresses::new(config);
    genesis.deploy(&mut rng, &contracts);
    let traders = config.holders_per_token / 2;
    let holders = genesis.fund_token_holders(&mut rng, config, &eoas, &contracts, traders);
    genesis.seed_contract_storage(&mut rng, config, &contracts);
    let block_hashes = (config.first_block.saturating_sub(256)..config.first_block)
        .map(|n| (n, prehistory_block_hash(seed, n)))
        .collect();
    let ContractAddresses {
        tokens,
        pairs,
        nfts,
        router,
        reader,
        fee_recipient,
    } = contracts;
    let genesis = genesis.finish(block_hashes);
    let hot_entries = (genesis.accounts.len() + genesis.storage.len()) as u64;
    let cold = ColdState::new(config, &tokens, hot_entries);
    let world = World {
        cold,
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

/// Where the generated contracts live (and the fee recipient): pure functions of the seed.
struct ContractAddresses {
    tokens: Vec<Address>,
    pairs: Vec<Pair>,
    nfts: Vec<Address>,
    router: Address,
    reader: Address,
    fee_recipient: Address,
}

impl ContractAddresses {
    fn new(config: &GeneratorConfig) -> Self {
        let seed = config.seed;
        let token_pairs = (0..config.tokens)
            .flat_map(|a| (a + 1..config.tokens).map(move |b| (a, b)))
            .take(config.pools);
        Self {
            tokens: (0..config.tokens)
                .map(|i| contract_address(seed, "token", i))
                .collect(),
            pairs: token_pairs
                .enumerate()
                .map(|(i, (token0, token1))| Pair {
                    address: contract_address(seed, "pair", i),
                    token0,
                    token1,
                })
                .collect(),
            nfts: (0..config.nfts)
                .map(|i| contract_address(seed, "nft", i))
                .collect(),
            router: contract_address(seed, "router", 0),
            reader: contract_address(seed, "reader", 0),
            fee_recipient: contract_address(seed, "fee-recipient", 0),
        }
    }
}

/// The genesis state as it is built.
#[derive(Default)]
struct Genesis {
    accounts: Vec<(Address, Option<FlatAccount>)>,
    storage: Vec<(Address, U256, U256)>,
    codes: Vec<(B256, Bytes)>,
}

impl Genesis {
    /// Adds the EOAs and returns their nonces: mainnet accounts have a history, so nonces start
    /// anywhere up to a few hundred.
    fn add_eoas(&mut self, rng: &mut Rng, eoas: &[Eoa]) -> Vec<u64> {
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
            self.accounts.push((
                eoa.address,
                Some(FlatAccount {
                    nonce,
                    balance,
                    code_hash: KECCAK_EMPTY,
                }),
            ));
        }
        nonces
    }

    /// Adds a contract account with runtime `code` (its code stored once per hash).
    fn add_contract(&mut self, address: Address, code: &Bytes, balance: U256) {
        let code_hash = keccak256(code);
        if !self.codes.iter().any(|(h, _)| *h == code_hash) {
            self.codes.push((code_hash, code.clone()));
        }
        self.accounts.push((
            address,
            Some(FlatAccount {
                nonce: 1,
                balance,
                code_hash,
            }),
        ));
    }

    /// Deploys every contract by writing its runtime code (no constructor runs), and adds the fee
    /// recipient.
    fn deploy(&mut self, rng: &mut Rng, at: &ContractAddresses) {
        let erc20 = contracts::erc20();
        for token in &at.tokens {
            self.add_contract(*token, &erc20, U256::ZERO);
        }
        let pair_code = contracts::pair();
        for pair in &at.pairs {
            self.add_contract(pair.address, &pair_code, U256::ZERO);
        }
        let nft_code = contracts::nft();
        for nft in &at.nfts {
            let balance = U256::from(rng.range(1, 100) as u128 * ETHER);
            self.add_contract(*nft, &nft_code, balance);
        }
        self.add_contract(at.router, &contracts::router(), U256::ZERO);
        self.add_contract(at.reader, &contracts::reader(), U256::ZERO);
        self.add_contract(BEACON_ROOTS_ADDRESS, &BEACON_ROOTS_CODE.clone(), U256::ZERO);
        self.accounts.push((
            at.fee_recipient,
            Some(FlatAccount {
                nonce: 0,
                balance: U256::from(ETHER),
                code_hash: KECCAK_EMPTY,
            }),
        ));
    }

    /// Token balances, allowances, pair reserves and supplies: EOAs `0..traders` hold every token
    /// and have approved the router, the other holders one token each; reserves are large enough
    /// that swaps barely move prices. Returns the EOA indices holding each token.
    fn fund_token_holders(
        &mut self,
        rng: &mut Rng,
        config: &GeneratorConfig,
        eoas: &[Eoa],
        at: &ContractAddresses,
        traders: usize,
    ) -> Vec<Vec<u32>> {
        let mut holders = Vec::with_capacity(at.tokens.len());
        for (t, token) in at.tokens.iter().enumerate() {
            let mut token_holders: Vec<u32> = (0..traders as u32).collect();
            token_holders.extend(distinct_sample(
                rng,
                traders,
                config.accounts,
                config.holders_per_token - traders,
            ));
            let mut supply = U256::ZERO;
            for &h in &token_holders {
                let owner = eoas[h as usize].address;
                let amount = U256::from(rng.range(100_000_000, 1_000_000_000) as u128 * TOKEN_UNIT);
                supply += amount;
                self.storage
                    .push((*token, erc20_layout::balance_slot(owner), amount));
            }
            for eoa in &eoas[..traders] {
                self.storage.push((
                    *token,
                    erc20_layout::allowance_slot(eoa.address, at.router),
                    U256::MAX,
                ));
            }
            for pair in at.pairs.iter().filter(|p| p.token0 == t || p.token1 == t) {
                let reserve =
                    U256::from(rng.range(10_000_000_000, 100_000_000_000) as u128 * TOKEN_UNIT);
                supply += reserve;
                self.storage
                    .push((*token, erc20_layout::balance_slot(pair.address), reserve));
                let slot = if pair.token0 == t {
                    pair_layout::RESERVE0
                } else {
                    pair_layout::RESERVE1
                };
                self.storage.push((pair.address, U256::from(slot), reserve));
            }
            self.storage
                .push((*token, U256::from(erc20_layout::TOTAL_SUPPLY), supply));
            let owner = contract_address(config.seed, "token-owner", t);
            self.storage.push((
                *token,
                U256::from(erc20_layout::CONFIG),
                U256::from_be_slice(owner.as_slice()),
            ));
            holders.push(token_holders);
        }
        holders
    }

    /// The pairs' token addresses, the NFTs' minted counters and the reader's slots.
    fn seed_contract_storage(
        &mut self,
        rng: &mut Rng,
        config: &GeneratorConfig,
        at: &ContractAddresses,
    ) {
        for pair in &at.pairs {
            let word = |t: usize| U256::from_be_slice(at.tokens[t].as_slice());
            self.storage.push((
                pair.address,
                U256::from(pair_layout::TOKEN0),
                word(pair.token0),
            ));
            self.storage.push((
                pair.address,
                U256::from(pair_layout::TOKEN1),
                word(pair.token1),
            ));
        }
        for nft in &at.nfts {
            self.storage.push((
                *nft,
                U256::from(nft_layout::MINTED),
                U256::from(rng.range(1_000, 10_000)),
            ));
        }
        for i in 0..config.reader_slots() {
            let slot = contracts::reader_slot(i);
            self.storage
                .push((at.reader, slot, contracts::reader_value(slot)));
        }
    }

    /// The genesis state with `block_hashes`, sorted, so it is canonical and loads into RocksDB
    /// in key order.
    fn finish(mut self, block_hashes: Vec<(u64, B256)>) -> StateChanges {
        self.accounts.sort_unstable_by_key(|(a, _)| *a);
        self.storage.sort_unstable_by_key(|(a, s, _)| (*a, *s));
        self.codes.sort_unstable_by_key(|(h, _)| *h);
        StateChanges {
            accounts: self.accounts,
            wiped_storage: Vec::new(),
            storage: self.storage,
            codes: self.codes,
            block_hashes,
        }
    }
}
