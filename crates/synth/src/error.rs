//! Generation errors.

use bal_replay_dump::DumpError;
use bal_replay_executor::{ExecError, HeaderMismatch};
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
    /// A profile name that is not one of [`Profile`](crate::Profile)'s.
    #[error("unknown profile {0:?} (expected mainnet-like or worst-case-io)")]
    UnknownProfile(String),
    /// A generated block failed to execute: a bug in the generator or its contracts. Boxed, as
    /// the executor's error is large and this one travels up every call.
    #[error("generated block failed to execute: {0}")]
    Exec(Box<ExecError>),
    /// A generated block disagrees with the header it was sealed with: a bug in the generator.
    #[error("generated block disagrees with its header: {0}")]
    Header(#[from] HeaderMismatch),
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
