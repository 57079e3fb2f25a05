//! A projection read back from the JSON `bal-replay project --json` wrote, refused whole when
//! another version of the schema wrote it.

use crate::error::ReadProjectionError;
use bal_replay_model::ProjectionReport;
use bal_replay_results::{ResultReadError, parse_result, read_result_bytes, top_level_fields};
use std::path::Path;

/// `path` read as `bal-replay project --json` output, or `None` when it is not one (an object
/// without `calibrations`: a bench result, read as such elsewhere). A projection of another
/// schema version than [`bal_replay_model::SCHEMA_VERSION`] is refused, naming both
/// ([`parse_result`], as every result format is read), as is one past the size of any result
/// or with a number no projection holds ([`bal_replay_model::bounds`]). The file is read once,
/// into one buffer.
pub fn read_projection(path: &Path) -> Result<Option<ProjectionReport>, ReadProjectionError> {
    let bytes = read_result_bytes(path).map_err(|e| match e {
        ResultReadError::Read { path, source } => ReadProjectionError::Read { path, source },
        other => ReadProjectionError::Result(other),
    })?;
    let fields = top_level_fields(&bytes).map_err(|source| ReadProjectionError::NotJson {
        path: path.into(),
        source,
    })?;
    if !fields.iter().any(|f| f == "calibrations") {
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

#[cfg(test)]
mod tests {
    use super::*;

    const GOLDEN: &str = include_str!("../tests/golden/projection-v2.json");

    /// The golden projection with `edit` applied to its JSON, parsed.
    fn edited(edit: impl FnOnce(&mut serde_json::Value)) -> Result<ProjectionReport, String> {
        let mut value: serde_json::Value = serde_json::from_str(GOLDEN).unwrap();
        edit(&mut value);
        let bytes = serde_json::to_vec(&value).unwrap();
        parse_result::<ProjectionReport>(Path::new("p.json"), &bytes).map_err(|e| e.to_string())
    }

    #[test]
    fn the_golden_projection_is_within_bounds() {
        edited(|_| {}).unwrap();
    }

    #[test]
    fn values_that_hang_the_report_are_refused_naming_the_field() {
        let err = edited(|v| v["calibrations"][0]["calibration"]["residual"] = (-1.0).into())
            .unwrap_err();
        assert_eq!(
            err,
            "p.json: calibrations[0].calibration.residual = -1: expected a number from -0.999999999 \
             to 1e6 (the prediction's relative error: more than -1)"
        );
        let err = edited(|v| v["calibrations"][0]["repeats"]["median_mgas_per_s"] = 0.into())
            .unwrap_err();
        assert_eq!(
            err,
            "p.json: calibrations[0].repeats.median_mgas_per_s = 0: expected a number from 1e-6 to \
             1e7 (Mgas/s of a run that replayed gas)"
        );
        let err =
            edited(|v| v["checks"][0]["predicted"]["exec_with_io_s"] = 5e-324.into()).unwrap_err();
        assert!(
            err.starts_with("p.json: checks[0].predicted.exec_with_io_s = 5e-324: expected"),
            "{err}"
        );
        let err = edited(|v| v["measured_on"]["cpu_speed"] = 1e300.into()).unwrap_err();
        assert!(
            err.starts_with("p.json: measured_on.cpu_speed = 1e300: expected"),
            "{err}"
        );
    }
}
