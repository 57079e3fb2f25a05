//! Generation errors.

use bal_replay_dump::DumpError;
use bal_replay_executor::{ExecError, HeaderMismatch};
use bal_replay_state::StateError;
use std::path::PathBuf;

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
    /// An output path is taken: generating never writes over (or into) what is there.
    #[error("{}: will not generate an output here: {reason}; name a path that does not exist", path.display())]
    OutputExists {
        /// The dump or state directory asked for.
        path: PathBuf,
        /// What is there.
        reason: String,
    },
    /// The dump and the state would be one directory, or one inside the other: placing one would
    /// put it over, or into, the other.
    #[error("the dump directory {} and the state directory {} are the same directory or one is inside the other; name two separate directories", dump.display(), state.display())]
    OutputsOverlap {
        /// The dump directory asked for.
        dump: PathBuf,
        /// The state directory asked for.
        state: PathBuf,
    },
    /// Creating, renaming or removing an output directory failed.
    #[error("{}: I/O error: {source}", path.display())]
    Output {
        /// The directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A finished output could not be renamed to the path asked for; neither output is placed.
    #[error("could not rename the finished output {} to {}: {source}", built.display(), target.display())]
    NotPlaced {
        /// Where it was built.
        built: PathBuf,
        /// The path asked for.
        target: PathBuf,
        /// The rename's error.
        #[source]
        source: std::io::Error,
    },
    /// Writing the dump failed.
    #[error("failed to write the dump: {0}")]
    Dump(#[from] DumpError),
}

impl From<ExecError> for SynthError {
    fn from(error: ExecError) -> Self {
        Self::Exec(Box::new(error))
    }
}
