//! Generation errors.

use bal_replay_dump::DumpError;
use bal_replay_exec::ExecError;
use bal_replay_state::StateError;

/// Why a chain could not be generated.
#[derive(Debug, thiserror::Error)]
pub enum SynthError {
    /// The configuration cannot make a chain.
    #[error("invalid generator config: {reason}")]
    InvalidConfig {
        /// What is wrong.
        reason: String,
    },
    /// A generated block failed to execute: a bug in the generator or its contracts. Boxed, as
    /// the executor's error is large and this one travels up every call.
    #[error("generated block failed to execute: {0}")]
    Exec(Box<ExecError>),
    /// Execution returned no access list or pre-state although both were requested.
    #[error("block {block}: execution returned no {what}")]
    MissingOutput {
        /// Block number.
        block: u64,
        /// `"BAL"` or `"pre-state"`.
        what: &'static str,
    },
    /// Reading or writing a state store failed.
    #[error("failed to read or write the state: {0}")]
    State(#[from] StateError),
    /// Writing the dump failed.
    #[error("failed to write the dump: {0}")]
    Dump(#[from] DumpError),
}

impl From<ExecError> for SynthError {
    fn from(error: ExecError) -> Self {
        Self::Exec(Box::new(error))
    }
}
