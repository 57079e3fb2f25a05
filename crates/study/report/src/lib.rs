//! `bal-replay report`: charts (PNG and SVG) and a Markdown summary from one or more results of
//! `bal-replay bench --json`, with the research's published figures next to ours; from
//! `project --json` (the model checked and projected); and from `bench-db --json` (the read
//! engines' queue-depth sweep over the disk's fio curve).
//!
//! Invariant: a report only draws what its inputs carry. Every figure comes from a
//! [`BenchResult`] as written (throughput, per-batch samples, BAL sizes) or from the research's
//! tables in [`research`]; a chart whose data is absent is skipped and the summary says why, never
//! drawn empty or from made-up numbers. Text is laid out with a TrueType font read at run time
//! (`ab_glyph`), so no system font library is needed.

#![cfg_attr(not(test), warn(unused_crate_dependencies))]

mod charts;
mod disk_bound;
mod engine_groups;
mod markdown;
mod png;
mod projection;
mod read_engines;
pub mod research;

use bal_replay_bench::BenchResult;
use std::path::{Path, PathBuf};

pub use disk_bound::render_disk_bound;
pub use markdown::{render_markdown, thousands};
pub use projection::{parallel_over_full, render_projection_markdown};
pub use read_engines::{load_bench_db, render_read_engines_markdown, write_read_engines_report};

/// Debian's fonts-dejavu-core sans font, the default for chart text.
pub const DEFAULT_FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// No bench result was given.
    #[error("no bench result to report on")]
    NoInput,
    /// An input could not be read.
    #[error("reading {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// An input is not a result of the kind and schema version expected (`bench --json`, or a
    /// file shaped like a `bench-db --json` sweep).
    #[error(transparent)]
    Result(#[from] bal_replay_bench::ResultReadError),
    /// The chart font could not be read.
    #[error(
        "reading the chart font {path} (install Debian's fonts-dejavu-core, or pass another TrueType font)"
    )]
    Font {
        /// The font file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The chart font is not a TrueType or OpenType font.
    #[error("{path} is not a TrueType or OpenType font")]
    BadFont {
        /// The font file.
        path: PathBuf,
    },
    /// A chart could not be drawn or written.
    #[error("drawing {path}: {message}")]
    Draw {
        /// The chart file.
        path: PathBuf,
        /// What plotters said.
        message: String,
    },
    /// An output could not be written.
    #[error("writing {path}")]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// One bench result and the short name it goes by in legends and file names.
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    /// Short name (the file stem): letters, digits, `-` and `_` only.
    pub name: String,
    /// The result.
    pub result: BenchResult,
}

impl Input {
    /// Names a result (other characters than letters, digits, `-` and `_` become `_`).
    pub fn new(name: &str, result: BenchResult) -> Self {
        let name: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        Self {
            name: if name.is_empty() {
                "bench".into()
            } else {
                name
            },
            result,
        }
    }

    /// Reads a JSON file written by `bal-replay bench --json`, named after its stem.
    pub fn load(path: &Path) -> Result<Self, ReportError> {
        let result = bal_replay_bench::read_result(path)?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(Self::new(&stem, result))
    }
}

/// Where and how to write a report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportOptions {
    /// Output directory (created if missing).
    pub out: PathBuf,
    /// TrueType font for chart text.
    pub font: PathBuf,
    /// Chart size in pixels (PNG) and user units (SVG).
    pub size: (u32, u32),
}

impl ReportOptions {
    /// Defaults: [`DEFAULT_FONT`], 1024 x 640.
    pub fn new(out: impl Into<PathBuf>) -> Self {
        Self {
            out: out.into(),
            font: DEFAULT_FONT.into(),
            size: (1024, 640),
        }
    }
}

/// A chart written in both formats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chart {
    /// What it shows (used as the Markdown caption).
    pub title: String,
    /// File stem in the output directory (`<stem>.png`, `<stem>.svg`).
    pub stem: String,
}

/// What a report wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The Markdown summary.
    pub markdown: PathBuf,
    /// Every chart, in the order of the summary.
    pub charts: Vec<Chart>,
    /// Charts not drawn, and why.
    pub skipped: Vec<String>,
}

impl Written {
    /// Every file written: the charts' PNG and SVG, then the summary.
    pub fn files(&self, out: &Path) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = self
            .charts
            .iter()
            .flat_map(|c| {
                [
                    out.join(format!("{}.png", c.stem)),
                    out.join(format!("{}.svg", c.stem)),
                ]
            })
            .collect();
        files.push(self.markdown.clone());
        files
    }
}

/// Reads each of `paths` with [`Input::load`]; names that repeat get `-2`, `-3`... appended.
pub fn load_inputs(paths: &[PathBuf]) -> Result<Vec<Input>, ReportError> {
    let mut inputs: Vec<Input> = Vec::with_capacity(paths.len());
    for path in paths {
        let mut input = Input::load(path)?;
        let base = input.name.clone();
        let mut n = 1;
        while inputs.iter().any(|i| i.name == input.name) {
            n += 1;
            input.name = format!("{base}-{n}");
        }
        inputs.push(input);
    }
    Ok(inputs)
}

/// Draws a projection's charts (measured against predicted on the profiled machine, projected
/// against the research's published figures on the target) into `options.out` and writes its
/// tables to `projection.md` there.
pub fn write_projection_report(
    report: &bal_replay_model::ProjectionReport,
    options: &ReportOptions,
) -> Result<Written, ReportError> {
    write_charts_and_summary(
        options,
        "projection.md",
        |out, size, font| {
            Ok((
                charts::draw_projection(report, out, size, font)?,
                Vec::new(),
            ))
        },
        |charts, _| {
            let mut text = String::from("# Projection: the model checked and projected\n\n");
            for c in charts {
                text.push_str(&format!("![{}]({}.svg)\n\n", c.title, c.stem));
            }
            text.push_str(&render_projection_markdown(report));
            text
        },
    )
}

/// What both reports do around their own charts and text: registers the font, creates
/// `options.out`, draws the charts there, writes the summary `name` beside them.
fn write_charts_and_summary(
    options: &ReportOptions,
    name: &str,
    draw: impl FnOnce(
        &Path,
        (u32, u32),
        &ab_glyph::FontRef<'static>,
    ) -> Result<(Vec<Chart>, Vec<String>), ReportError>,
    summary: impl FnOnce(&[Chart], &[String]) -> String,
) -> Result<Written, ReportError> {
    let font = charts::register_font(&options.font)?;
    std::fs::create_dir_all(&options.out).map_err(|source| ReportError::Write {
        path: options.out.clone(),
        source,
    })?;
    let (charts, skipped) = draw(&options.out, options.size, &font)?;
    let markdown = options.out.join(name);
    bal_replay_bench::write_result_file(&markdown, summary(&charts, &skipped).as_bytes()).map_err(
        |source| ReportError::Write {
            path: markdown.clone(),
            source,
        },
    )?;
    Ok(Written {
        markdown,
        charts,
        skipped,
    })
}

/// Draws every chart the inputs have data for into `options.out` and writes `report.md` there.
pub fn write_report(inputs: &[Input], options: &ReportOptions) -> Result<Written, ReportError> {
    if inputs.is_empty() {
        return Err(ReportError::NoInput);
    }
    write_charts_and_summary(
        options,
        "report.md",
        |out, size, font| charts::draw_all(inputs, out, size, font),
        |charts, skipped| render_markdown(inputs, charts, skipped),
    )
}
