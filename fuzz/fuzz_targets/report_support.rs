//! What the report targets share: a fresh output directory for the charts (the process's own,
//! made once under `$BAL_REPLAY_FUZZ_SCRATCH`, which `fuzz/run.sh` sets to its own scratch
//! directory and removes; else under the system's temporary directory, left there), small charts,
//! and the real chart font.

use bal_replay_report::{DEFAULT_FONT, ReportOptions};
use std::{path::PathBuf, sync::OnceLock};

/// Options that draw every chart at 96 x 60 pixels (the ranges and key points are the same work at
/// any size; the pixels are not the point) into this process's own directory.
pub fn small_charts() -> ReportOptions {
    static OUT: OnceLock<PathBuf> = OnceLock::new();
    let out = OUT.get_or_init(|| {
        let base = std::env::var_os("BAL_REPLAY_FUZZ_SCRATCH")
            .map_or_else(std::env::temp_dir, PathBuf::from);
        let dir = base.join(format!("bal-replay-fuzz-report-{}", std::process::id()));
        std::fs::create_dir(&dir).expect("a fresh directory for the charts");
        dir
    });
    ReportOptions {
        font: DEFAULT_FONT.into(),
        size: (96, 60),
        ..ReportOptions::new(out)
    }
}
