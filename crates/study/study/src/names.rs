//! How the pages name and colour each design, and the research's headline share they set every
//! figure beside: one place, which every page module reads.

use bal_replay_engine::IoDesign;

/// The research's headline: parallel I/O at 16 threads, batch 50, over full BAL.
pub fn research_parallel_share() -> f64 {
    bal_replay_report::research::PARALLEL_BATCH_50[4].mgas_per_s
        / bal_replay_report::research::FULL_BATCH_50_T16
}

/// The design as the page names it.
pub fn design_name(design: IoDesign) -> &'static str {
    match design {
        IoDesign::Full => "full BAL",
        IoDesign::FullVerify => "full BAL, verified",
        IoDesign::Batched => "batched I/O",
        IoDesign::Parallel => "parallel I/O",
        IoDesign::Hybrid => "hybrid",
    }
}

/// Each design's colour on the frontier chart.
pub fn design_colour(design: IoDesign) -> &'static str {
    match design {
        IoDesign::Full => "#000000",
        IoDesign::FullVerify => "#7f7f7f",
        IoDesign::Batched => "#1f77b4",
        IoDesign::Parallel => "#d62728",
        IoDesign::Hybrid => "#2ca02c",
    }
}
