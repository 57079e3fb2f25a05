//! A projection read back from the JSON `bal-replay project --json` wrote, refused whole when
//! another version of the schema wrote it.

use crate::error::ReadProjectionError;
use bal_replay_model::ProjectionReport;
use bal_replay_results::{ResultReadError, parse_result};
use std::path::Path;

/// `path` read as `bal-replay project --json` output, or `None` when it is not one (an object
/// without `calibrations`: a bench result, read as such elsewhere). A projection of another
/// schema version than [`bal_replay_model::SCHEMA_VERSION`] is refused, naming both
/// ([`parse_result`], as every result format is read).
pub fn read_projection(path: &Path) -> Result<Option<ProjectionReport>, ReadProjectionError> {
    let bytes = std::fs::read(path).map_err(|source| ReadProjectionError::Read {
        path: path.into(),
        source,
    })?;
    let value: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|source| ReadProjectionError::NotJson {
            path: path.into(),
            source,
        })?;
    if value.get("calibrations").is_none() {
        return Ok(None);
    }
    parse_result(path, &bytes).map(Some).map_err(|e| match e {
        ResultReadError::Version {
            path,
            found,
            expected,
            ..
        } => ReadProjectionError::SchemaVersion {
            path,
            found,
            expected,
        },
        ResultReadError::Parse { path, source, .. } => {
            ReadProjectionError::NotProjection { path, source }
        }
        ResultReadError::NotJson { path, source, .. } => {
            ReadProjectionError::NotJson { path, source }
        }
        other => ReadProjectionError::Result(other),
    })
}
