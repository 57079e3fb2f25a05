//! `bal-replay`: replay dumps over a RocksDB flat state, and benchmark the BAL designs. The
//! commands live in `bal-replay-cli`.

use clap::Parser;

fn main() -> eyre::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    bal_replay_cli::Cli::parse().run()
}
