//! `reth-bal dump`: a historical range from a synced node's database, read-only, in parallel.

use crate::{
    adapter::{chain_config, dump_block},
    exex::record,
};
use bal_replay_exex::{BlockRange, ChainDumper, RecordError, dump_range};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use reth_cli_commands::common::{AccessRights, EnvironmentArgs};
use reth_ethereum::{
    chainspec::ChainSpecProvider,
    cli::chainspec::EthereumChainSpecParser,
    node::EthereumNode,
    provider::{BlockReader, TransactionVariant},
};
use std::path::PathBuf;

/// Re-executes blocks `--from..=--to` of the node in `--datadir` (opened read-only; the node may
/// keep running) into the dump in `--out`, resuming it if it exists.
#[derive(Debug, Parser)]
pub struct DumpCommand {
    #[command(flatten)]
    env: EnvironmentArgs<EthereumChainSpecParser>,
    /// First block.
    #[arg(long)]
    from: u64,
    /// Last block (inclusive).
    #[arg(long)]
    to: u64,
    /// Dump directory.
    #[arg(long)]
    out: PathBuf,
    /// Worker threads (each block re-executes over its own historical state).
    #[arg(long, default_value_t = std::thread::available_parallelism().map_or(1, |n| n.get()))]
    threads: usize,
}

impl DumpCommand {
    /// Runs the command.
    pub fn execute(self, runner: reth_cli_runner::CliRunner) -> eyre::Result<()> {
        let env = self
            .env
            .init::<EthereumNode>(AccessRights::RO, runner.runtime())?;
        let factory = env.provider_factory;
        let config = chain_config(&factory.chain_spec());
        let mut dumper = ChainDumper::open_with_schedule(
            &self.out,
            config.chain_id,
            Some(config.spec.to_schedule()),
            BlockRange::default(),
        )?;
        let bar = ProgressBar::new(self.to.saturating_sub(self.from).saturating_add(1)).with_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{bar:40}] {pos}/{len} blocks {per_sec} eta {eta}",
            )?,
        );
        let appended = dump_range(
            &mut dumper,
            self.from,
            self.to,
            self.threads,
            |number| {
                let provider_error = |message: String| RecordError::Provider {
                    block: number,
                    message,
                };
                let block = factory
                    .recovered_block(number.into(), TransactionVariant::WithHash)
                    .map_err(|e| provider_error(e.to_string()))?
                    .ok_or_else(|| provider_error("the database has no such block".into()))?;
                let hash = block.hash();
                let (block, senders) = dump_block(&block);
                let parent_state = factory.history_by_block_number(number.saturating_sub(1));
                record(&config, parent_state, &factory, hash, block, senders)
            },
            Some(&bar),
        )?;
        bar.finish();
        eprintln!(
            "dumped {appended} blocks to {} (last block {:?})",
            self.out.display(),
            dumper.last_dumped().map(|l| l.0)
        );
        Ok(())
    }
}
