//! `bal-dump`: import mainnet fixtures into dumps, verify them, and inspect dumps. This file sets
//! up logging, parses the arguments and turns a command's outcome into the exit code; the
//! commands are in [`commands`].

use clap::Parser;
use cli::Cli;
use commands::Outcome;
use std::process::ExitCode;

mod cli;
mod commands;

fn main() -> eyre::Result<ExitCode> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match commands::run(Cli::parse().command, &mut std::io::stdout().lock()) {
        Ok(Outcome::Passed) => Ok(ExitCode::SUCCESS),
        Ok(Outcome::Failed) => Ok(ExitCode::from(1)),
        // A reader that stops early (`| head`) is not a failure of ours.
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Err(e),
    }
}
