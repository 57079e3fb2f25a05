//! The transaction mix: what each generated transaction does, who sends it, and its gas.

use crate::{
    cold::ColdKey,
    config::{HOT_WALLETS, TOKEN_UNIT},
    contracts::{self, RouterOp},
    genesis::{ETHER, World},
    rng::{Rng, Zipf},
};
use alloy_primitives::{Address, Bytes, U256};

/// What a generated transaction does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    EthTransfer,
    Erc20Transfer,
    Erc20Approve,
    Swap,
    NftMint,
    Multicall,
    WorstCaseRead,
}

impl Action {
    pub(crate) const ALL: [Action; 7] = [
        Action::EthTransfer,
        Action::Erc20Transfer,
        Action::Erc20Approve,
        Action::Swap,
        Action::NftMint,
        Action::Multicall,
        Action::WorstCaseRead,
    ];

    /// Gas assumed before any transaction of the kind has executed (then the executed average):
    /// roughly what the contracts cost, so the first block fills close to its target too.
    fn initial_gas_estimate(self) -> u64 {
        match self {
            Action::EthTransfer => 21_000,
            Action::Erc20Transfer => 48_000,
            Action::Erc20Approve => 52_000,
            Action::Swap => 112_000,
            Action::NftMint => 72_000,
            Action::Multicall => 410_000,
            Action::WorstCaseRead => 17_200_000,
        }
    }
}

/// The mainnet-like mix, in per mille of transactions. ETH transfers and ERC-20 calls match
/// PROFILE.md's 2023-2024 blocks (45% and 28%). The rest (swaps ~112k gas with their price
/// arithmetic, mints ~72k, router calls of 4 to 10 operations ~410k) bring the average transaction
/// to ~91k gas (mainnet: 79.6k), 87 state keys per Mgas (mainnet: 88) and the execution CPU per
/// gas of mainnet's recent blocks within 10% (`scripts/cpu-per-gas.sh`).
const MIX: [(Action, u64); 6] = [
    (Action::EthTransfer, 450),
    (Action::Erc20Transfer, 220),
    (Action::Erc20Approve, 60),
    (Action::Swap, 90),
    (Action::NftMint, 50),
    (Action::Multicall, 130),
];

/// The highest priority fee a generated transaction offers (2 gwei).
pub(crate) const MAX_PRIORITY_FEE: u128 = 2_000_000_000;

/// A transaction before its nonce, fees and signature.
#[derive(Debug, Clone)]
pub(crate) struct TxPlan {
    pub action: Action,
    /// Index of the sending EOA.
    pub sender: usize,
    pub to: Address,
    pub value: U256,
    pub input: Bytes,
    pub gas_limit: u64,
}

/// Running average of executed gas per [`Action`], so blocks fill to their gas target whatever
/// the contracts cost. Updated only from executed blocks, so it is as deterministic as they are.
#[derive(Debug, Clone, Default)]
pub(crate) struct GasModel {
    totals: [(u64, u64); Action::ALL.len()],
}

impl GasModel {
    pub(crate) fn estimate(&self, action: Action) -> u64 {
        match self.totals[action as usize] {
            (_, 0) => action.initial_gas_estimate(),
            (gas, count) => gas / count,
        }
    }

    pub(crate) fn observe(&mut self, action: Action, gas: u64) {
        let entry = &mut self.totals[action as usize];
        entry.0 += gas;
        entry.1 += 1;
    }
}

/// Draws transactions from the world.
#[derive(Debug)]
pub(crate) struct TxGenerator {
    rng: Rng,
    tokens: Zipf,
    pairs: Zipf,
    nfts: Zipf,
    /// Cold keys the transactions generated since the last [`TxGenerator::take_cold`] touch.
    cold_touched: Vec<ColdKey>,
}

/// The calldata of `selector(args...)` with 32-byte word arguments.
fn abi_call(selector: [u8; 4], args: &[U256]) -> Bytes {
    let mut data = Vec::with_capacity(4 + 32 * args.len());
    data.extend_from_slice(&selector);
    for arg in args {
        data.extend_from_slice(&arg.to_be_bytes::<32>());
    }
    data.into()
}

fn word(address: Address) -> U256 {
    U256::from_be_slice(address.as_slice())
}

/// A contract call without value.
fn call(action: Action, sender: usize, to: Address, input: Bytes, gas_limit: u64) -> TxPlan {
    TxPlan {
        action,
        sender,
        to,
        value: U256::ZERO,
        input,
        gas_limit,
    }
}

/// Intrinsic calldata gas (4 per zero byte, 16 per other byte).
fn calldata_gas(data: &[u8]) -> u64 {
    data.iter().map(|b| if *b == 0 { 4 } else { 16 }).sum()
}

impl TxGenerator {
    pub(crate) fn new(world: &World, seed: u64) -> Self {
        Self {
            rng: Rng::new(seed, 0x0074_786d_6978), // "txmix"
            tokens: Zipf::new(world.tokens.len()),
            pairs: Zipf::new(world.pairs.len()),
            nfts: Zipf::new(world.nfts.len()),
            cold_touched: Vec::new(),
        }
    }

    /// The cold keys touched since the last call: their values must be in the state before the
    /// transactions execute.
    pub(crate) fn take_cold(&mut self) -> Vec<ColdKey> {
        std::mem::take(&mut self.cold_touched)
    }

    /// A cold account, with the cold share's chance, when the state has them. (No random draw
    /// without a cold state, so chains without one are the same as before it existed.)
    fn cold_account(&mut self, world: &World) -> Option<Address> {
        let cold = world.cold.as_ref()?;
        if !self.rng.chance(cold.share_permille) {
            return None;
        }
        let i = self.rng.below(cold.accounts);
        self.cold_touched.push(ColdKey::Account(i));
        Some(cold.account_address(i))
    }

    /// A cold holder of `token`, as [`TxGenerator::cold_account`].
    fn cold_holder(&mut self, world: &World, token: usize) -> Option<Address> {
        let cold = world.cold.as_ref()?;
        if cold.holders == 0 || !self.rng.chance(cold.share_permille) {
            return None;
        }
        let holder = self.rng.below(cold.holders);
        self.cold_touched.push(ColdKey::Balance { token, holder });
        Some(cold.holder_address(holder))
    }

    /// A random EOA: mostly uniform over all accounts (the cold long tail).
    fn any_eoa(&mut self, world: &World) -> usize {
        self.rng.index(world.eoas.len())
    }

    /// A trader (holds every token, approved the router).
    fn trader(&mut self, world: &World) -> usize {
        self.rng.index(world.traders)
    }

    /// The recipient of a transfer: now and then an address never seen before (a new account).
    fn recipient(&mut self, world: &World) -> Address {
        if let Some(cold) = self.cold_account(world) {
            return cold;
        }
        if self.rng.chance(100) {
            Address::from_slice(&self.rng.bytes32()[12..])
        } else {
            world.eoas[self.any_eoa(world)].address
        }
    }

    fn token_amount(&mut self, max_tokens: u64) -> U256 {
        U256::from(self.rng.range(1, max_tokens) as u128 * TOKEN_UNIT)
    }

    fn swap_op(&mut self, world: &World) -> RouterOp {
        let pair = world.pairs[self.pairs.sample(&mut self.rng)];
        let token_in = if self.rng.chance(500) {
            pair.token0
        } else {
            pair.token1
        };
        RouterOp::Swap {
            pair: pair.address,
            token_in: world.tokens[token_in],
            amount: self.token_amount(100),
        }
    }

    /// The next mainnet-like transaction.
    pub(crate) fn mainnet_like(&mut self, world: &World) -> TxPlan {
        let mut pick = self.rng.below(1000);
        let action = MIX
            .iter()
            .find(|(_, share)| {
                let hit = pick < *share;
                pick = pick.saturating_sub(*share);
                hit
            })
            .map_or(Action::EthTransfer, |(a, _)| *a);
        match action {
            Action::EthTransfer => self.eth_transfer(world),
            Action::Erc20Transfer => self.erc20_transfer(world),
            Action::Erc20Approve => self.erc20_approve(world),
            Action::Swap => self.swap(world),
            Action::NftMint => self.nft_mint(world),
            Action::Multicall => self.multicall(world),
            Action::WorstCaseRead => unreachable!("not in the mainnet-like mix"),
        }
    }

    /// An ETH transfer.
    fn eth_transfer(&mut self, world: &World) -> TxPlan {
        // Exchanges' hot wallets send a good share of mainnet's transfers.
        let sender = if self.rng.chance(150) {
            self.rng.index(HOT_WALLETS)
        } else {
            self.any_eoa(world)
        };
        let to = self.recipient(world);
        let value = U256::from(self.rng.range(1_000, 500_000) as u128 * (ETHER / 1_000_000));
        TxPlan {
            action: Action::EthTransfer,
            sender,
            to,
            value,
            input: Bytes::new(),
            gas_limit: 21_000,
        }
    }

    /// An ERC-20 `transfer`.
    fn erc20_transfer(&mut self, world: &World) -> TxPlan {
        let token = self.tokens.sample(&mut self.rng);
        let holders = &world.holders[token];
        let sender = if self.rng.chance(150) {
            self.rng.index(HOT_WALLETS)
        } else {
            holders[self.rng.index(holders.len())] as usize
        };
        // Half the time to an existing holder (a balance update), else to anyone (mostly a
        // new balance slot).
        let to = if let Some(cold) = self.cold_holder(world, token) {
            cold
        } else if self.rng.chance(500) {
            world.eoas[holders[self.rng.index(holders.len())] as usize].address
        } else {
            self.recipient(world)
        };
        let amount = self.token_amount(1_000);
        call(
            Action::Erc20Transfer,
            sender,
            world.tokens[token],
            abi_call(contracts::SEL_TRANSFER, &[word(to), amount]),
            100_000,
        )
    }

    /// An ERC-20 `approve`.
    fn erc20_approve(&mut self, world: &World) -> TxPlan {
        let token = self.tokens.sample(&mut self.rng);
        let sender = self.any_eoa(world);
        let spender = match self.rng.below(10) {
            0..=4 => world.router,
            5..=7 => world.pairs[self.pairs.sample(&mut self.rng)].address,
            _ => world.eoas[self.any_eoa(world)].address,
        };
        let amount = if self.rng.chance(500) {
            U256::MAX
        } else {
            self.token_amount(1_000_000)
        };
        call(
            Action::Erc20Approve,
            sender,
            world.tokens[token],
            abi_call(contracts::SEL_APPROVE, &[word(spender), amount]),
            80_000,
        )
    }

    /// A router swap.
    fn swap(&mut self, world: &World) -> TxPlan {
        let sender = self.trader(world);
        let op = self.swap_op(world);
        call(
            Action::Swap,
            sender,
            world.router,
            contracts::router_calldata(&[op]),
            300_000,
        )
    }

    /// An NFT mint, paid in ETH.
    fn nft_mint(&mut self, world: &World) -> TxPlan {
        let nft = world.nfts[self.nfts.sample(&mut self.rng)];
        let sender = self.any_eoa(world);
        let mut plan = call(
            Action::NftMint,
            sender,
            nft,
            contracts::SEL_MINT.to_vec().into(),
            200_000,
        );
        plan.value = U256::from(self.rng.range(1, 50) as u128 * (ETHER / 1_000));
        plan
    }

    /// A router call of several swaps and payments.
    fn multicall(&mut self, world: &World) -> TxPlan {
        // A router call of several swaps and payments: mainnet's aggregator and
        // multicall transactions, several contracts and a few hundred thousand gas each.
        let sender = self.trader(world);
        let count = self.rng.range(4, 10) as usize;
        let ops: Vec<RouterOp> = (0..count)
            .map(|_| {
                if self.rng.chance(500) {
                    self.swap_op(world)
                } else {
                    let token = world.tokens[self.tokens.sample(&mut self.rng)];
                    let to = self.recipient(world);
                    RouterOp::Pay {
                        token,
                        to,
                        amount: self.token_amount(100),
                    }
                }
            })
            .collect();
        call(
            Action::Multicall,
            sender,
            world.router,
            contracts::router_calldata(&ops),
            100_000 + 200_000 * count as u64,
        )
    }

    /// A worst-case read of `count` slots from `start`, sent by hot wallet `sender`.
    pub(crate) fn worst_case_read(
        &mut self,
        world: &World,
        sender: usize,
        start: u64,
        count: u64,
    ) -> TxPlan {
        let input = abi_call(
            contracts::sel_read(),
            &[U256::from(start), U256::from(count)],
        );
        let gas_limit = worst_case_gas_limit(&input, count);
        TxPlan {
            action: Action::WorstCaseRead,
            sender,
            to: world.reader,
            value: U256::ZERO,
            input,
            gas_limit,
        }
    }

    /// The priority fee of the next transaction: 0.01 gwei to [`MAX_PRIORITY_FEE`].
    pub(crate) fn priority_fee(&mut self) -> u128 {
        u128::from(self.rng.range(10_000_000, MAX_PRIORITY_FEE as u64))
    }
}

/// Gas limit of a worst-case read of `count` slots: intrinsic and calldata gas, the loop, and a
/// margin for dispatch and memory.
pub(crate) fn worst_case_gas_limit(input: &[u8], count: u64) -> u64 {
    21_000 + calldata_gas(input) + count * contracts::READER_GAS_PER_SLOT + 20_000
}
