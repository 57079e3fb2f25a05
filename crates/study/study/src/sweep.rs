//! The regime as a variable: every design again at several amounts of the state held in memory,
//! from a block cache that holds almost none of it to one that holds every block the chain touches,
//! and in the research's own regime (buffered reads through a page cache emptied before each run,
//! which warms as the run replays the chain in order). Each point is one bench over the same dump
//! and state at the study's largest batch; the page sets each design's share of full BAL's
//! throughput against the device reads per Mgas the point left, beside the research's 0.78 at the
//! most reads its disk could have served.

use crate::{
    chart,
    names::{design_colour, design_name, research_parallel_share},
    runs::best,
};
use bal_replay_bench::{
    BenchMatrix, BenchResult, Interval, TaskProfiles, VersionedResult, bounds::FieldError,
};
use bal_replay_engine::IoDesign;
use bal_replay_report::research;
use std::{fmt::Write, num::NonZeroUsize};

/// The schema version of [`RegimeSweep`] this build writes and reads. Version 2 holds bench
/// results of version 4 (the read cost account and the floor), version 3 of version 5 (the
/// workers' own CPU), version 4 of version 7 (the engine's commit, the time reading the dump);
/// version 1 to 3 files are read too.
pub const SWEEP_SCHEMA_VERSION: u32 = 4;

const MIB: u64 = 1 << 20;

/// RocksDB's block cache in the research's regime: RocksDB's own default (32 MiB), as a node
/// that leaves the state to the page cache runs it.
pub const BUFFERED_BLOCK_CACHE_BYTES: u64 = 32 * MIB;

/// Where one point's state reads are served from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case", tag = "reads")]
pub enum CacheRegime {
    /// Direct reads (O_DIRECT): RocksDB's block cache of this many bytes is the only memory that
    /// holds data blocks (index and filters pinned beside it).
    Direct {
        /// The block cache, bytes.
        block_cache_bytes: u64,
    },
    /// The research's: buffered reads through the page cache, emptied before each run and warmed
    /// by the run itself as it replays the chain in order, beside a block cache of this size.
    Buffered {
        /// The block cache, bytes.
        block_cache_bytes: u64,
    },
}

impl CacheRegime {
    /// The block cache, bytes.
    pub fn block_cache_bytes(self) -> u64 {
        match self {
            Self::Direct { block_cache_bytes } | Self::Buffered { block_cache_bytes } => {
                block_cache_bytes
            }
        }
    }

    /// How the page names it: "direct, 256 MiB block cache".
    pub fn label(self) -> String {
        match self {
            Self::Direct { block_cache_bytes } => {
                format!("direct, {} block cache", bytes_label(block_cache_bytes))
            }
            Self::Buffered { block_cache_bytes } => format!(
                "buffered, page cache emptied before each run, {} block cache (the research's)",
                bytes_label(block_cache_bytes)
            ),
        }
    }
}

/// "8 MiB", "2 GiB".
fn bytes_label(bytes: u64) -> String {
    if bytes >= 1 << 30 && bytes.is_multiple_of(1 << 30) {
        format!("{} GiB", bytes >> 30)
    } else {
        format!("{} MiB", bytes / MIB)
    }
}

/// The points a sweep measures over a state of `state_bytes` on a machine of `memory_bytes`:
/// direct reads with block caches of 8 MiB, a 32nd, a quarter and all of the state (each the
/// nearest power of two, at most half the machine's memory, fewer where they coincide), then the
/// research's regime where the page cache may be emptied (`buffered`: the user asked for it).
pub fn sweep_regimes(state_bytes: u64, memory_bytes: u64, buffered: bool) -> Vec<CacheRegime> {
    let smallest = crate::STUDY_BLOCK_CACHE_BYTES as u64;
    let ceiling = (memory_bytes / 2).max(smallest);
    let nearest_power_of_two = |bytes: u64| {
        let up = bytes.max(1).next_power_of_two();
        let down = up / 2;
        if down > 0 && bytes - down < up - bytes {
            down
        } else {
            up
        }
    };
    let mut sizes: Vec<u64> = [state_bytes / 32, state_bytes / 4, state_bytes]
        .into_iter()
        .map(|b| nearest_power_of_two(b).min(prev_power_of_two(ceiling)))
        .filter(|b| *b > smallest)
        .collect();
    sizes.insert(0, smallest);
    sizes.dedup();
    let mut regimes: Vec<CacheRegime> = sizes
        .into_iter()
        .map(|block_cache_bytes| CacheRegime::Direct { block_cache_bytes })
        .collect();
    if buffered {
        regimes.push(CacheRegime::Buffered {
            block_cache_bytes: BUFFERED_BLOCK_CACHE_BYTES,
        });
    }
    regimes
}

fn prev_power_of_two(bytes: u64) -> u64 {
    if bytes.is_power_of_two() {
        bytes
    } else {
        bytes.next_power_of_two() / 2
    }
}

/// The bench one point runs: the study's matrix at one batch and the given worker counts, in the
/// point's regime, with no task profiles (the projection calibrates on the study's own runs).
pub fn sweep_matrix(
    study: &BenchMatrix,
    regime: CacheRegime,
    batch: NonZeroUsize,
    threads: Vec<NonZeroUsize>,
) -> BenchMatrix {
    BenchMatrix {
        threads,
        batches: vec![batch],
        direct_io: matches!(regime, CacheRegime::Direct { .. }),
        block_cache_bytes: regime.block_cache_bytes() as usize,
        // The research's regime starts each run from an empty page cache; a direct point empties
        // it only where the study was asked to.
        drop_caches: study.drop_caches || matches!(regime, CacheRegime::Buffered { .. }),
        profile: TaskProfiles::Off,
        ..study.clone()
    }
}

/// The worker counts a sweep runs of the study's: the cores and the most the study runs (a
/// design that reads on demand is fastest far past the cores).
pub fn sweep_threads(study: &[NonZeroUsize], cores: usize) -> Vec<NonZeroUsize> {
    let cores = NonZeroUsize::new(cores.max(1)).expect("at least 1");
    let most = study.iter().copied().max().unwrap_or(cores);
    let mut threads = vec![cores.min(most), most];
    threads.dedup();
    threads
}

/// One point of a sweep: its regime and its runs.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SweepPoint {
    /// Where the reads were served from.
    pub regime: CacheRegime,
    /// The runs.
    pub bench: BenchResult,
}

/// A study's sweep over regimes (`sweep.json`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RegimeSweep {
    /// [`SWEEP_SCHEMA_VERSION`] when written by this build.
    pub schema_version: u32,
    /// Blocks per batch of every point.
    pub batch: usize,
    /// The points, in the order run.
    pub points: Vec<SweepPoint>,
}

impl VersionedResult for RegimeSweep {
    const KIND: &'static str = "regime sweep";
    const SCHEMA_VERSION: u32 = SWEEP_SCHEMA_VERSION;
    /// Versions 2 to 4 only added optional fields (in their bench results).
    const ALSO_READS: &'static [u32] = &[1, 2, 3];

    /// Every point's runs, as a bench's are checked.
    fn check(&self) -> Result<(), FieldError> {
        self.points.iter().enumerate().try_for_each(|(i, point)| {
            point.bench.check().map_err(|e| FieldError {
                field: format!("points[{i}].bench.{}", e.field),
                ..e
            })
        })
    }
}

/// One design at one point of the sweep.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SweepCell {
    /// The design.
    pub design: IoDesign,
    /// Its fastest worker count there.
    pub threads: usize,
    /// Its throughput there (median of its repeats), Mgas/s.
    pub mgas_per_s: f64,
    /// That over full BAL's at the same point, with the range its repeats allow.
    pub share_of_full: Interval,
    /// Device read requests per Mgas; `None` without a device counter.
    pub device_reads_per_mgas: Option<f64>,
    /// The share of its RocksDB block lookups served from memory (block cache or page cache);
    /// `None` where the counters cannot tell (a design that reads no state).
    pub from_memory: Option<f64>,
}

/// One regime's row: each design measured there.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SweepRow {
    /// The regime.
    pub regime: CacheRegime,
    /// Each design but full BAL, in the order of [`IoDesign::ALL`].
    pub cells: Vec<SweepCell>,
    /// Full BAL's throughput there, Mgas/s (it reads no state: the regime moves it by noise only).
    pub full_mgas_per_s: f64,
}

impl SweepRow {
    /// The cell of `design`.
    pub fn cell(&self, design: IoDesign) -> Option<&SweepCell> {
        self.cells.iter().find(|c| c.design == design)
    }
}

impl RegimeSweep {
    /// One row per point whose full BAL ran.
    pub fn rows(&self) -> Vec<SweepRow> {
        self.points
            .iter()
            .filter_map(|point| {
                let full = best(&point.bench, IoDesign::Full, self.batch)?;
                let cells = IoDesign::ALL
                    .into_iter()
                    .filter(|d| *d != IoDesign::Full)
                    .filter_map(|design| {
                        let run = best(&point.bench, design, self.batch)?;
                        let mgas = (run.gas as f64 / 1e6).max(f64::MIN_POSITIVE);
                        Some(SweepCell {
                            design,
                            threads: run.threads,
                            mgas_per_s: run.throughput.mgas_per_s,
                            share_of_full: Interval::ratio(&run, &full),
                            device_reads_per_mgas: run.disk.device_reads.map(|n| n as f64 / mgas),
                            from_memory: run.disk.residency.reached_device.map(|s| 1.0 - s),
                        })
                    })
                    .collect();
                Some(SweepRow {
                    regime: point.regime,
                    cells,
                    full_mgas_per_s: full.throughput.mgas_per_s,
                })
            })
            .collect()
    }
}

/// Where along the sweep a design keeps `share` of full BAL's throughput, read off its points in
/// order of their device reads per Mgas.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Crossing {
    /// Between two points: at about this many device reads per Mgas (linear between them).
    At(f64),
    /// At every point: at least `share` up to the most reads measured.
    Always {
        /// The most device reads per Mgas of a point.
        most_reads: f64,
    },
    /// At no point: the best share measured, and its reads.
    Never {
        /// The highest share of a point.
        best_share: f64,
        /// Its device reads per Mgas.
        reads: f64,
    },
}

/// Where `design` keeps `share` of full BAL's throughput along `rows`; `None` where fewer than
/// one point has device counters.
pub fn crossing(rows: &[SweepRow], design: IoDesign, share: f64) -> Option<Crossing> {
    let mut points: Vec<(f64, f64)> = rows
        .iter()
        .filter_map(|r| r.cell(design))
        .filter_map(|c| Some((c.device_reads_per_mgas?, c.share_of_full.median)))
        .collect();
    if points.is_empty() {
        return None;
    }
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    if points.iter().all(|p| p.1 >= share) {
        return Some(Crossing::Always {
            most_reads: points[points.len() - 1].0,
        });
    }
    if points.iter().all(|p| p.1 < share) {
        let best = points
            .iter()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .expect("not empty");
        return Some(Crossing::Never {
            best_share: best.1,
            reads: best.0,
        });
    }
    // The last pair, in order of reads, that goes from at-or-above to below the share.
    let at = points
        .windows(2)
        .filter(|w| w[0].1 >= share && w[1].1 < share)
        .map(|w| {
            let ((x0, y0), (x1, y1)) = (w[0], w[1]);
            x0 + (y0 - share) / (y0 - y1) * (x1 - x0)
        })
        .next_back()
        // Shares rising with reads (noise at points close together): the first point above.
        .unwrap_or_else(|| {
            points
                .iter()
                .find(|p| p.1 >= share)
                .map_or(points[0].0, |p| p.0)
        });
    Some(Crossing::At(at))
}

/// The smallest direct-read block cache from which parallel I/O's device reads per Mgas stop
/// falling (within 2% of the largest cache's), where that is not the largest: from there every
/// block the chain touches stays in the cache, and what still reaches the device is each block's
/// first read, which no cache that starts empty avoids.
pub fn plateau(rows: &[SweepRow]) -> Option<(CacheRegime, f64)> {
    let direct: Vec<(CacheRegime, f64)> = rows
        .iter()
        .filter(|r| matches!(r.regime, CacheRegime::Direct { .. }))
        .filter_map(|r| Some((r.regime, r.cell(IoDesign::Parallel)?.device_reads_per_mgas?)))
        .collect();
    let &(largest, floor) = direct.last()?;
    direct
        .iter()
        .find(|(_, reads)| (reads - floor).abs() <= 0.02 * floor.max(f64::MIN_POSITIVE))
        .filter(|(regime, _)| *regime != largest)
        .copied()
}

/// The answer's one sentence on the sweep: the range of parallel I/O's share and device reads
/// over the regimes, where it keeps the research's `share`, and the research's regime.
pub fn sweep_summary(rows: &[SweepRow], share: f64) -> Option<String> {
    let cells: Vec<(f64, f64)> = rows
        .iter()
        .filter_map(|r| r.cell(IoDesign::Parallel))
        .filter_map(|c| Some((c.device_reads_per_mgas?, c.share_of_full.median)))
        .collect();
    let span = |f: fn(&(f64, f64)) -> f64| {
        cells
            .iter()
            .map(f)
            .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)))
    };
    let (reads, shares) = (span(|c| c.0), span(|c| c.1));
    let keeps = match crossing(rows, IoDesign::Parallel, share)? {
        Crossing::At(at) => {
            format!("it keeps {share:.2} at about {at:.1} device reads per Mgas or fewer")
        }
        Crossing::Always { .. } => format!("it keeps at least {share:.2} at every one"),
        Crossing::Never { .. } => format!("it keeps {share:.2} in none of them"),
    };
    let buffered = rows
        .iter()
        .find(|r| matches!(r.regime, CacheRegime::Buffered { .. }))
        .and_then(|r| r.cell(IoDesign::Parallel))
        .and_then(|c| {
            Some(format!(
                "; in the research's own regime (buffered reads, page cache emptied before each run) {:.2} at {:.1}",
                c.share_of_full.median,
                c.device_reads_per_mgas?
            ))
        })
        .unwrap_or_else(|| "; the research's own regime was not measured (it needs --drop-caches)".into());
    Some(format!(
        "Over {} cache regimes parallel I/O kept {:.2}-{:.2} of full BAL at {:.1}-{:.1} device reads per Mgas: {keeps}{buffered}.",
        rows.len(),
        shares.0,
        shares.1,
        reads.0,
        reads.1,
    ))
}

/// The sweep section's sentences: where parallel I/O keeps the research's share on this
/// machine, and where the research's regime lands.
pub fn sweep_sentence(rows: &[SweepRow]) -> Option<String> {
    let research_share = research_parallel_share();
    let bound = research::parallel_device_reads_per_mgas_bound();
    let mut out = match crossing(rows, IoDesign::Parallel, research_share)? {
        Crossing::At(reads) => format!(
            "Across the regimes swept, parallel I/O keeps the research's {research_share:.2} of full BAL's throughput at about {reads:.1} device reads per Mgas or fewer"
        ),
        Crossing::Always { most_reads } => format!(
            "Across the regimes swept, parallel I/O keeps at least the research's {research_share:.2} of full BAL's throughput at every point, up to {most_reads:.1} device reads per Mgas"
        ),
        Crossing::Never { best_share, reads } => format!(
            "Across the regimes swept, parallel I/O keeps less than the research's {research_share:.2} of full BAL's throughput at every point, at most {best_share:.2} at {reads:.1} device reads per Mgas"
        ),
    };
    let _ = write!(
        out,
        "; the research's disk could have served at most {bound:.1} per Mgas at its throughput."
    );
    let buffered = rows
        .iter()
        .find(|r| matches!(r.regime, CacheRegime::Buffered { .. }))
        .and_then(|r| r.cell(IoDesign::Parallel));
    match buffered {
        Some(cell) => {
            let _ = write!(
                out,
                " In the research's own regime (buffered reads, page cache emptied before each run) parallel I/O read {} device blocks per Mgas and kept {}.",
                cell.device_reads_per_mgas
                    .map_or_else(|| "an unmeasured number of".into(), |r| format!("{r:.1}")),
                cell.share_of_full.median_and_range(),
            );
        }
        None => out.push_str(
            " The research's own regime (buffered reads, page cache emptied before each run) was not measured: the study empties the page cache only with --drop-caches (root).",
        ),
    }
    if let Some((regime, reads)) = plateau(rows) {
        let _ = write!(
            out,
            " From a {} block cache on, parallel I/O's device reads stay at {reads:.1} per Mgas: every block the chain touches stays in the cache, and the reads left are first reads, which no cache that starts empty avoids; fewer need a cache warmed by a longer chain.",
            bytes_label(regime.block_cache_bytes())
        );
    }
    Some(out)
}

/// The sweep's table, Markdown: a row per regime and design.
pub fn sweep_table(w: &mut String, rows: &[SweepRow], batch: usize) {
    let _ = writeln!(
        w,
        "| Regime | Full BAL Mgas/s | Design | Threads | Share of full's throughput | Device reads per Mgas | From memory |"
    );
    let _ = writeln!(w, "| --- | --- | --- | --- | --- | --- | --- |");
    for row in rows {
        for (i, c) in row.cells.iter().enumerate() {
            let (regime, full) = if i == 0 {
                (row.regime.label(), format!("{:.1}", row.full_mgas_per_s))
            } else {
                (String::new(), String::new())
            };
            let _ = writeln!(
                w,
                "| {regime} | {full} | {} | {} | {}{} | {} | {} |",
                design_name(c.design),
                c.threads,
                c.share_of_full.median_and_range(),
                if c.share_of_full.has_range() && c.share_of_full.includes_one() {
                    ", within noise"
                } else {
                    ""
                },
                c.device_reads_per_mgas
                    .map_or_else(|| "-".into(), |r| format!("{r:.1}")),
                c.from_memory
                    .map_or_else(|| "-".into(), |s| format!("{:.0}%", 100.0 * s)),
            );
        }
    }
    let _ = writeln!(
        w,
        "\nEach regime is its own bench at batch {batch}: every design at the cores and at the most workers the study runs, the faster counted, repeats interleaved; \"from memory\" is the share of RocksDB's block lookups that did not reach the device (block cache or page cache).\n"
    );
}

/// The sweep's chart as SVG: each design's share of full BAL's throughput against its device
/// reads per Mgas, one line per design through the regimes, the research's parallel I/O marked at
/// the most reads its disk could have served.
pub fn sweep_svg(rows: &[SweepRow]) -> String {
    let (width, height, margin) = (680.0, 420.0, 60.0);
    let designs: Vec<IoDesign> = IoDesign::ALL
        .into_iter()
        .filter(|d| rows.iter().any(|r| r.cell(*d).is_some()))
        .collect();
    let bound = research::parallel_device_reads_per_mgas_bound();
    let research_share = research_parallel_share();
    let points = |design: IoDesign| -> Vec<(f64, f64)> {
        let mut p: Vec<(f64, f64)> = rows
            .iter()
            .filter_map(|r| r.cell(design))
            .filter_map(|c| Some((c.device_reads_per_mgas?, c.share_of_full.median)))
            .collect();
        p.sort_by(|a, b| a.0.total_cmp(&b.0));
        p
    };
    let all: Vec<(f64, f64)> = designs.iter().flat_map(|d| points(*d)).collect();
    let x_max = chart::nice_ceiling(all.iter().map(|p| p.0).fold(bound, f64::max).max(1.0) * 1.05);
    let y_max = chart::share_axis_top(all.iter().map(|p| p.1).fold(research_share, f64::max));
    let plot_right = width - margin - 150.0;
    let x = |v: f64| margin + v.clamp(0.0, x_max) / x_max * (plot_right - margin);
    let y = |v: f64| height - margin - v.clamp(0.0, y_max) / y_max * (height - 2.0 * margin);
    let mut svg = chart::head(
        width,
        height,
        "Share of full BAL's throughput against device reads per Mgas, one point per regime",
        width / 2.0,
    );
    let x_ticks = chart::even_ticks(x_max, 5);
    chart::axes(
        &mut svg,
        chart::Frame {
            right: plot_right,
            height,
            margin,
        },
        (&x_ticks, "device reads per Mgas"),
        y_max,
        &x,
        &y,
    );
    for design in &designs {
        let p = points(*design);
        let colour = design_colour(*design);
        let path: Vec<String> = p
            .iter()
            .map(|(r, s)| format!("{:.1},{:.1}", x(*r), y(*s)))
            .collect();
        let _ = writeln!(
            svg,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{colour}\"/>",
            path.join(" ")
        );
        for (r, s) in &p {
            let _ = writeln!(
                svg,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3.5\" fill=\"{colour}\"/>",
                x(*r),
                y(*s)
            );
        }
    }
    // The research's parallel I/O: its share, at the most reads its disk could have served.
    let (rx, ry) = (x(bound), y(research_share));
    let _ = writeln!(
        svg,
        "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"9\" height=\"9\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>",
        rx - 4.5,
        ry - 4.5,
        design_colour(IoDesign::Parallel)
    );
    sweep_legend(
        &mut svg,
        plot_right + 14.0,
        margin,
        &designs,
        (research_share, bound),
    );
    svg.push_str("</svg>\n");
    svg
}

/// The sweep's legend from `top`, right of the plot at `legend_x`: one line per design, then the
/// research's mark with its share and bound.
fn sweep_legend(
    svg: &mut String,
    legend_x: f64,
    margin: f64,
    designs: &[IoDesign],
    (research_share, bound): (f64, f64),
) {
    for (i, design) in designs.iter().enumerate() {
        let ly = margin + 10.0 + 18.0 * i as f64;
        let _ = writeln!(
            svg,
            "<line x1=\"{legend_x:.1}\" y1=\"{ly:.1}\" x2=\"{:.1}\" y2=\"{ly:.1}\" stroke=\"{c}\" stroke-width=\"2\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            legend_x + 18.0,
            legend_x + 24.0,
            ly + 4.0,
            design_name(*design),
            c = design_colour(*design)
        );
    }
    let ly = margin + 10.0 + 18.0 * designs.len() as f64;
    let _ = writeln!(
        svg,
        "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"9\" height=\"9\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/><text x=\"{:.1}\" y=\"{:.1}\">research: parallel I/O</text><text x=\"{:.1}\" y=\"{:.1}\">({research_share:.2} at its bound {bound:.1})</text>",
        legend_x + 4.5,
        ly - 4.5,
        design_colour(IoDesign::Parallel),
        legend_x + 24.0,
        ly + 4.0,
        legend_x + 24.0,
        ly + 18.0,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn a_sweep_is_its_golden_file_and_reads_back() {
        let root = bal_replay_test_utils::workspace_root(env!("CARGO_MANIFEST_DIR"));
        // The bench format inside is pinned by its own golden file; its sample serves here.
        let bench_golden = root.join(format!(
            "crates/measurement/bench/tests/golden/bench-result-v{}.json",
            bal_replay_bench::SCHEMA_VERSION
        ));
        let bench: BenchResult = bal_replay_results::read_result(&bench_golden).unwrap();
        let sweep = RegimeSweep {
            schema_version: SWEEP_SCHEMA_VERSION,
            batch: 50,
            points: vec![
                SweepPoint {
                    regime: CacheRegime::Direct {
                        block_cache_bytes: 8 * MIB,
                    },
                    bench: bench.clone(),
                },
                SweepPoint {
                    regime: CacheRegime::Buffered {
                        block_cache_bytes: BUFFERED_BLOCK_CACHE_BYTES,
                    },
                    bench,
                },
            ],
        };
        bal_replay_results::assert_golden(&root.join("crates/study/study/tests/golden"), &sweep);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sweep.json");
        std::fs::write(&path, serde_json::to_vec_pretty(&sweep).unwrap()).unwrap();
        let read: RegimeSweep = bal_replay_results::read_result(&path).unwrap();
        assert_eq!(read, sweep);
        // A version 1 sweep (its benches without the read cost account) reads whole.
        let v1: RegimeSweep = bal_replay_results::read_result(
            &root.join("crates/study/study/tests/golden/regime-sweep-v1.json"),
        )
        .unwrap();
        assert_eq!(v1.schema_version, 1);
        assert!(v1.points.iter().all(|p| p.bench.read_floors.is_empty()));
    }

    #[test]
    fn the_regimes_scale_with_the_state_and_stop_at_half_the_memory() {
        let direct = |regimes: Vec<CacheRegime>| -> Vec<u64> {
            regimes
                .into_iter()
                .map(|r| match r {
                    CacheRegime::Direct { block_cache_bytes } => block_cache_bytes / MIB,
                    CacheRegime::Buffered { .. } => 0,
                })
                .collect()
        };
        // A 8.8 GB state on a 24 GiB machine: 8 MiB, 256 MiB, 2 GiB, 8 GiB.
        assert_eq!(
            direct(sweep_regimes(8_800_000_000, 24 * GIB, false)),
            [8, 256, 2048, 8192]
        );
        // On an 8 GiB machine the largest is 4 GiB.
        assert_eq!(
            direct(sweep_regimes(8_800_000_000, 8 * GIB, false)),
            [8, 256, 2048, 4096]
        );
        // A small state: only caches larger than the smallest, once each.
        assert_eq!(direct(sweep_regimes(20_000_000, 24 * GIB, false)), [8, 16]);
        // The research's regime only where the page cache may be emptied, and last.
        let with = sweep_regimes(8_800_000_000, 24 * GIB, true);
        assert_eq!(
            with.last(),
            Some(&CacheRegime::Buffered {
                block_cache_bytes: BUFFERED_BLOCK_CACHE_BYTES
            })
        );
        assert_eq!(with[..4], sweep_regimes(8_800_000_000, 24 * GIB, false)[..]);
        assert_eq!(
            CacheRegime::Direct {
                block_cache_bytes: 2 * GIB
            }
            .label(),
            "direct, 2 GiB block cache"
        );
    }

    #[test]
    fn a_point_changes_only_its_regime_and_batch() {
        let n = |v| NonZeroUsize::new(v).unwrap();
        let study = BenchMatrix {
            direct_io: true,
            drop_caches: false,
            profile: TaskProfiles::OneWorkerKept,
            ..BenchMatrix::default()
        };
        let buffered = sweep_matrix(
            &study,
            CacheRegime::Buffered {
                block_cache_bytes: BUFFERED_BLOCK_CACHE_BYTES,
            },
            n(50),
            vec![n(2), n(32)],
        );
        assert!(!buffered.direct_io && buffered.drop_caches);
        assert_eq!(buffered.block_cache_bytes, 32 << 20);
        assert_eq!(buffered.batches, [n(50)]);
        assert_eq!(buffered.profile, TaskProfiles::Off);
        assert_eq!(buffered.designs, study.designs);
        let direct = sweep_matrix(
            &study,
            CacheRegime::Direct {
                block_cache_bytes: 256 << 20,
            },
            n(50),
            vec![n(2)],
        );
        assert!(direct.direct_io && !direct.drop_caches);
        assert_eq!(sweep_threads(&[n(1), n(2), n(8), n(32)], 2), [n(2), n(32)]);
        assert_eq!(sweep_threads(&[n(1), n(2)], 2), [n(2)]);
    }

    fn row(reads: f64, share: f64) -> SweepRow {
        SweepRow {
            regime: CacheRegime::Direct {
                block_cache_bytes: 8 << 20,
            },
            cells: vec![SweepCell {
                design: IoDesign::Parallel,
                threads: 32,
                mgas_per_s: 1000.0,
                share_of_full: Interval {
                    median: share,
                    low: share - 0.02,
                    high: share + 0.02,
                },
                device_reads_per_mgas: Some(reads),
                from_memory: Some(0.5),
            }],
            full_mgas_per_s: 2000.0,
        }
    }

    #[test]
    fn the_crossing_is_read_between_the_points_either_side() {
        let rows = [row(30.0, 0.5), row(2.0, 0.95), row(10.0, 0.8)];
        // Between 10 reads (0.80) and 30 (0.50): 0.78 at 10 + 0.02/0.30 * 20.
        match crossing(&rows, IoDesign::Parallel, 0.78) {
            Some(Crossing::At(reads)) => assert!((reads - 11.333).abs() < 0.01, "{reads}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            crossing(&rows, IoDesign::Parallel, 0.4),
            Some(Crossing::Always { most_reads: 30.0 })
        );
        assert_eq!(
            crossing(&rows, IoDesign::Parallel, 0.99),
            Some(Crossing::Never {
                best_share: 0.95,
                reads: 2.0
            })
        );
        assert_eq!(crossing(&rows, IoDesign::Batched, 0.78), None);
        let sentence = sweep_sentence(&rows).unwrap();
        // The research's share is 10,842 / 13,881 = 0.781: 10 + 0.019 / 0.30 * 20 = 11.3.
        assert!(
            sentence.contains("at about 11.3 device reads per Mgas or fewer"),
            "{sentence}"
        );
        assert!(
            sentence.contains(
                "was not measured: the study empties the page cache only with --drop-caches"
            ),
            "{sentence}"
        );
    }

    #[test]
    fn the_answer_sums_the_sweep_up_in_one_sentence() {
        let rows = [row(30.0, 0.5), row(2.0, 0.95), row(10.0, 0.8)];
        assert_eq!(
            sweep_summary(&rows, 0.78).unwrap(),
            "Over 3 cache regimes parallel I/O kept 0.50-0.95 of full BAL at 2.0-30.0 device reads per Mgas: it keeps 0.78 at about 11.3 device reads per Mgas or fewer; the research's own regime was not measured (it needs --drop-caches)."
        );
        assert!(
            sweep_summary(&rows, 0.99)
                .unwrap()
                .contains("it keeps 0.99 in none of them")
        );
        assert_eq!(sweep_summary(&[], 0.78), None);
    }

    #[test]
    fn reads_that_stop_falling_with_the_cache_are_named_as_first_reads() {
        let at = |mib: u64, reads: f64| SweepRow {
            regime: CacheRegime::Direct {
                block_cache_bytes: mib << 20,
            },
            ..row(reads, 0.4)
        };
        let rows = [at(8, 27.2), at(256, 9.6), at(2048, 9.61), at(8192, 9.6)];
        assert_eq!(
            plateau(&rows),
            Some((
                CacheRegime::Direct {
                    block_cache_bytes: 256 << 20
                },
                9.6
            ))
        );
        assert!(sweep_sentence(&rows).unwrap().contains(
            "From a 256 MiB block cache on, parallel I/O's device reads stay at 9.6 per Mgas"
        ));
        // Still falling at the largest cache: no plateau.
        assert_eq!(plateau(&[at(8, 27.2), at(256, 9.6), at(2048, 5.0)]), None);
    }

    #[test]
    fn the_chart_axes_end_near_the_data_and_mark_the_research() {
        let rows = [row(30.0, 0.5), row(2.0, 0.95)];
        let svg = sweep_svg(&rows);
        // x to 50 (the data stop at 30), y to 1.1 (they stop at 0.95).
        assert!(svg.contains(">50</text>"), "{svg}");
        assert!(!svg.contains(">100</text>"), "{svg}");
        assert!(
            svg.contains(">1.0</text>") && !svg.contains(">1.4</text>"),
            "{svg}"
        );
        assert!(svg.contains("research: parallel I/O"));
        assert!(svg.contains("<polyline"));
        crate::chart::read_back::assert_ticks_true(&svg);
        // A sweep whose shares end at 0.8: the axis ends on a tick (1.0), not between two.
        let svg = sweep_svg(&[row(3.0, 0.8), row(1.0, 0.7)]);
        crate::chart::read_back::assert_ticks_true(&svg);
        assert!(svg.contains(">1.0</text>"), "{svg}");
        assert_eq!(chart::nice_ceiling(31.5), 50.0);
        assert_eq!(chart::nice_ceiling(17.4), 20.0);
        assert_eq!(chart::nice_ceiling(0.9), 1.0);
    }
}
