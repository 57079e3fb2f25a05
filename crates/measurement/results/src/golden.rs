//! Golden files of the result formats: a sample result's JSON, kept beside the format's tests, so
//! that a field added, removed or renamed without raising the format's version fails a test.

use std::path::Path;

use crate::VersionedResult;

/// Checks that `sample` serializes to the golden file of its format at its version,
/// `<dir>/<kind>-v<version>.json` (the kind with dashes for spaces). With `BAL_REPLAY_BLESS=1`
/// the file is written instead. Panics, naming the file and what to do, where they differ or the
/// file is missing: a test helper.
pub fn assert_golden<T: VersionedResult + serde::Serialize>(dir: &Path, sample: &T) {
    let name = format!("{}-v{}.json", T::KIND.replace(' ', "-"), T::SCHEMA_VERSION);
    let path = dir.join(&name);
    let json = serde_json::to_string_pretty(sample).expect("a result serializes") + "\n";
    if std::env::var_os("BAL_REPLAY_BLESS").is_some() {
        std::fs::create_dir_all(dir).expect("the golden files' directory");
        std::fs::write(&path, &json).expect("writing the golden file");
        return;
    }
    let golden = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}. A new format version needs its golden file: run the test with BAL_REPLAY_BLESS=1",
            path.display()
        )
    });
    assert!(
        golden == json,
        "{} differs from what this build writes for {}'s sample: a field changed. Raise the \
         format's SCHEMA_VERSION (readers of the old version must refuse it) and bless the new \
         golden file (BAL_REPLAY_BLESS=1), keeping the old one.\n--- golden\n{golden}\n--- now\n{json}",
        path.display(),
        T::KIND
    );
    // What was written reads back, at its version.
    crate::parse_result::<T>(&path, json.as_bytes())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Sample {
        schema_version: u32,
        blocks: u64,
    }

    impl VersionedResult for Sample {
        const KIND: &'static str = "sample result";
        const SCHEMA_VERSION: u32 = 4;
    }

    #[test]
    fn a_field_changed_at_the_same_version_fails_and_the_same_json_passes() {
        let dir = tempfile::tempdir().unwrap();
        let sample = Sample {
            schema_version: 4,
            blocks: 6,
        };
        // No golden file for this version yet: told to bless one.
        let missing = std::panic::catch_unwind(|| assert_golden(dir.path(), &sample));
        assert!(missing.is_err());
        let path = dir.path().join("sample-result-v4.json");
        std::fs::write(&path, "{\n  \"schema_version\": 4,\n  \"blocks\": 6\n}\n").unwrap();
        assert_golden(dir.path(), &sample);
        // The same version with another field: refused.
        std::fs::write(
            &path,
            "{\n  \"schema_version\": 4,\n  \"blocks\": 6,\n  \"gas\": 1\n}\n",
        )
        .unwrap();
        let changed = std::panic::catch_unwind(|| assert_golden(dir.path(), &sample));
        assert!(changed.is_err());
    }
}
