//! A document serde_json stops reading at its depth limit is said to be nested too deep, naming
//! the file and the limit, not "not JSON": it may well be JSON.

use bal_replay_results::{JSON_DEPTH_LIMIT, ResultReadError, too_deep};
use std::path::PathBuf;

fn error_of(json: &str) -> serde_json::Error {
    serde_json::from_str::<serde_json::Value>(json).unwrap_err()
}

#[test]
fn a_document_nested_past_the_limit_is_said_to_be() {
    let depth = JSON_DEPTH_LIMIT + 72;
    let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let refused = ResultReadError::NotJson {
        path: PathBuf::from("deep.json"),
        kind: "bench result",
        source: error_of(&deep),
    };
    assert_eq!(
        refused.to_string(),
        "deep.json: nested deeper than 128 levels, more than any bench result holds"
    );
    // Within the limit it is read; anything else that is not JSON is still said to be that.
    let within = format!("{}{}", "[".repeat(100), "]".repeat(100));
    assert!(serde_json::from_str::<serde_json::Value>(&within).is_ok());
    assert_eq!(too_deep("bench result", &error_of("{\"runs\": [1,")), None);
    let garbage = ResultReadError::NotJson {
        path: PathBuf::from("x.json"),
        kind: "bench result",
        source: error_of("not json"),
    };
    assert_eq!(garbage.to_string(), "x.json: not a JSON bench result");
}
