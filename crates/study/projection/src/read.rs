//! A projection read back from the JSON `bal-replay project --json` wrote, refused whole when
//! another version of the schema wrote it.

use crate::error::ReadProjectionError;
use bal_replay_model::{ProjectionReport, SCHEMA_VERSION};
use serde::Deserialize;
use std::path::Path;

/// A result file's schema version alone, read before the rest.
#[derive(Deserialize)]
struct SchemaVersionOnly {
    /// Files written before the version was are version 1.
    #[serde(default = "first_schema_version")]
    schema_version: u32,
}

fn first_schema_version() -> u32 {
    1
}

/// `path` read as `bal-replay project --json` output, or `None` when it is not one (an object
/// without `calibrations`: a bench result, read as such elsewhere). A projection of another
/// schema version than [`SCHEMA_VERSION`] is refused, naming both.
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
    let not_projection = |source| ReadProjectionError::NotProjection {
        path: path.into(),
        source,
    };
    let found = SchemaVersionOnly::deserialize(&value)
        .map_err(not_projection)?
        .schema_version;
    if found != SCHEMA_VERSION {
        return Err(ReadProjectionError::SchemaVersion {
            path: path.into(),
            found,
            expected: SCHEMA_VERSION,
        });
    }
    ProjectionReport::deserialize(value)
        .map(Some)
        .map_err(not_projection)
}
