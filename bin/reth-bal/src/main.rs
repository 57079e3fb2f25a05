//! `reth-bal`: reth's Ethereum node with the BAL dump ExEx, plus `reth-bal dump` for historical
//! ranges. Thin by design: what lands in a dump is decided by `bal-replay-exex` (tested in the root
//! workspace); this binary turns reth's notifications and state providers into its calls.

// Errors carry the block, field and both values of a mismatch; built once, on the path that
// stops the ExEx, so their size costs nothing where it matters.
#![allow(clippy::result_large_err)]

mod adapter;
mod exex;
mod range;

use clap::{Args, Parser, Subcommand};
use reth_ethereum::{
    cli::{Cli, ExtendedCommand, chainspec::EthereumChainSpecParser},
    node::EthereumNode,
};
use reth_rpc_server_types::DefaultRpcModuleValidator;
use std::path::PathBuf;
use tracing::info;

/// The dump ExEx's flags, next to reth's own (all of which keep their meaning).
#[derive(Debug, Clone, Args)]
pub struct BalArgs {
    /// Directory of the dump the ExEx appends every committed block to (created or resumed).
    /// Without it the node runs without the ExEx.
    #[arg(long = "bal.dump-dir", value_name = "DIR")]
    pub dump_dir: Option<PathBuf>,
    /// First block to dump (default: the first block the node commits after start).
    #[arg(long = "bal.from-block", value_name = "N")]
    pub from_block: Option<u64>,
    /// Last block to dump (default: no end).
    #[arg(long = "bal.to-block", value_name = "N")]
    pub to_block: Option<u64>,
}

/// `reth-bal`'s own subcommands.
#[derive(Debug, Subcommand)]
pub enum BalCommands {
    /// Re-execute a range of a synced node's blocks (read-only) into a dump.
    Dump(range::DumpCommand),
}

impl ExtendedCommand for BalCommands {
    fn execute(self, runner: reth_cli_runner::CliRunner) -> eyre::Result<()> {
        match self {
            Self::Dump(command) => command.execute(runner),
        }
    }
}

fn main() {
    reth_cli_util::sigsegv_handler::install();

    let cli =
        Cli::<EthereumChainSpecParser, BalArgs, DefaultRpcModuleValidator, BalCommands>::parse();
    if let Err(err) = cli.run(async move |builder, args| {
        let range = bal_replay_exex::BlockRange {
            from: args.from_block,
            to: args.to_block,
        };
        let dump_dir = args.dump_dir.clone();
        let handle = builder
            .node(EthereumNode::default())
            .install_exex_if(dump_dir.is_some(), "bal-dump", async move |ctx| {
                let dir = dump_dir.expect("installed only with --bal.dump-dir");
                exex::BalDumpExEx::start(ctx, dir, range)
            })
            // As reth's own binary does: `--dev` only mines with the debug capabilities.
            .launch_with_debug_capabilities()
            .await?;
        info!(target: "reth_bal", "node launched");
        handle.wait_for_node_exit().await
    }) {
        eprintln!("Error: {err:?}");
        std::process::exit(1);
    }
}
