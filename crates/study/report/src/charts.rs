//! The charts, each drawn once per backend (SVG and PNG) from one backend-free description.

use crate::{Chart, Input, ReportError, png::PngBackend, research};
use ab_glyph::FontRef;
use bal_replay_bench::{DesignRatio, RunResult, StoreKind, write_result_file};
use bal_replay_engine::{ExecMode, IoDesign};
use bal_replay_model::ProjectionReport;
use image::{ColorType, ImageEncoder, codecs::png::PngEncoder};
use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

const FONT: &str = "sans-serif";
const CAPTION: u32 = 26;
const AXIS_DESC: u32 = 20;
const LABELS: u32 = 16;
const LEGEND: u32 = 16;
const MIB: f64 = 1024.0 * 1024.0;

/// Registers `path` as the "sans-serif" family for chart text and returns it for the PNG text
/// renderer. Read once per path and kept for the life of the process: plotters wants `'static`
/// font data.
pub(crate) fn register_font(path: &Path) -> Result<FontRef<'static>, ReportError> {
    static REGISTERED: Mutex<Option<(PathBuf, FontRef<'static>)>> = Mutex::new(None);
    let mut registered = REGISTERED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((p, font)) = registered.as_ref()
        && p == path
    {
        return Ok(font.clone());
    }
    let bytes = std::fs::read(path).map_err(|source| ReportError::Font {
        path: path.into(),
        source,
    })?;
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    let font =
        FontRef::try_from_slice(bytes).map_err(|_| ReportError::BadFont { path: path.into() })?;
    plotters::style::register_font(FONT, FontStyle::Normal, bytes)
        .map_err(|_| ReportError::BadFont { path: path.into() })?;
    *registered = Some((path.into(), font.clone()));
    Ok(font)
}

/// A point's marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    Circle,
    Triangle,
    Square,
    Cross,
}

impl Marker {
    fn nth(i: usize) -> Self {
        [Self::Circle, Self::Triangle, Self::Square, Self::Cross][i % 4]
    }
}

/// One line of a chart.
#[derive(Debug, Clone)]
struct Series {
    label: String,
    color: RGBColor,
    marker: Marker,
    dashed: bool,
    points: Vec<(f64, f64)>,
    /// Vertical spread (x, low, median, high), drawn as error bars.
    spread: Vec<(f64, f64, f64, f64)>,
}

/// A line chart, whatever the backend.
#[derive(Debug, Clone)]
struct LineChart {
    title: String,
    x_desc: String,
    y_desc: String,
    /// Log-scale x with ticks at exactly these values (thread counts); linear when `None`.
    x_keys: Option<Vec<f64>>,
    series: Vec<Series>,
}

/// What kind of run a result is, for its label and colour. Runs over MDBX carry the backend in
/// their label, so a chart with RocksDB and MDBX inputs tells them apart; each design keeps its
/// colour on either backend.
fn kind(r: &RunResult) -> (&'static str, RGBColor) {
    let mdbx = r.store == StoreKind::Mdbx;
    let pick =
        |rocksdb: &'static str, over_mdbx: &'static str| if mdbx { over_mdbx } else { rocksdb };
    match (r.mode, r.store, r.design) {
        (ExecMode::Sequential, StoreKind::Memory, _) => {
            ("sequential (memory)", RGBColor(140, 86, 75))
        }
        (ExecMode::Parallel, StoreKind::Memory, _) => {
            ("parallel I/O in memory", RGBColor(148, 103, 189))
        }
        (ExecMode::Sequential, StoreKind::Rocksdb | StoreKind::Mdbx, _) => (
            pick("sequential (RocksDB)", "sequential (MDBX)"),
            RGBColor(110, 110, 110),
        ),
        (ExecMode::Parallel, StoreKind::Rocksdb | StoreKind::Mdbx, IoDesign::Full) => {
            (pick("full BAL", "full BAL (MDBX)"), RGBColor(31, 119, 180))
        }
        (ExecMode::Parallel, StoreKind::Rocksdb | StoreKind::Mdbx, IoDesign::FullVerify) => (
            pick("full BAL, verifying", "full BAL, verifying (MDBX)"),
            RGBColor(23, 190, 207),
        ),
        (ExecMode::Parallel, StoreKind::Rocksdb | StoreKind::Mdbx, IoDesign::Batched) => (
            pick("batched I/O", "batched I/O (MDBX)"),
            RGBColor(255, 127, 14),
        ),
        (ExecMode::Parallel, StoreKind::Rocksdb | StoreKind::Mdbx, IoDesign::Parallel) => (
            pick("parallel I/O", "parallel I/O (MDBX)"),
            RGBColor(44, 160, 44),
        ),
        (ExecMode::Parallel, StoreKind::Rocksdb | StoreKind::Mdbx, IoDesign::Hybrid) => {
            (pick("hybrid", "hybrid (MDBX)"), RGBColor(214, 39, 40))
        }
    }
}

fn batch_sizes(inputs: &[Input]) -> Vec<usize> {
    let mut batches: Vec<usize> = inputs
        .iter()
        .flat_map(|i| i.result.runs.iter().map(|r| r.batch))
        .collect();
    batches.sort_unstable();
    batches.dedup();
    batches
}

/// Throughput against threads for one batch size: one line per design (and per input when there
/// are several), the sequential baselines as dashed horizontal lines.
fn throughput_chart(inputs: &[Input], batch: usize) -> LineChart {
    let many = inputs.len() > 1;
    let mut keys: Vec<usize> = inputs
        .iter()
        .flat_map(|i| &i.result.runs)
        .filter(|r| r.batch == batch && r.mode == ExecMode::Parallel)
        .map(|r| r.threads)
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let (lo, hi) = match (keys.first(), keys.last()) {
        (Some(&lo), Some(&hi)) => (lo as f64, hi as f64),
        _ => (1.0, 1.0),
    };
    let mut series: Vec<Series> = Vec::new();
    for (n, input) in inputs.iter().enumerate() {
        let suffix = if many {
            format!(" [{}]", input.name)
        } else {
            String::new()
        };
        let runs: Vec<&RunResult> = input
            .result
            .runs
            .iter()
            .filter(|r| r.batch == batch)
            .collect();
        let mut labels: Vec<&'static str> = Vec::new();
        for r in &runs {
            let (label, _) = kind(r);
            if !labels.contains(&label) {
                labels.push(label);
            }
        }
        for label in labels {
            let mut of_kind: Vec<&&RunResult> =
                runs.iter().filter(|r| kind(r).0 == label).collect();
            of_kind.sort_by_key(|r| r.threads);
            let color = kind(of_kind[0]).1;
            let sequential = of_kind[0].mode == ExecMode::Sequential;
            let (points, spread) = if sequential {
                // One figure, whatever the thread count: drawn across the whole axis.
                let y = of_kind[0].throughput.mgas_per_s;
                (vec![(lo, y), (hi, y)], Vec::new())
            } else {
                (
                    of_kind
                        .iter()
                        .map(|r| (r.threads as f64, r.throughput.mgas_per_s))
                        .collect(),
                    of_kind
                        .iter()
                        .filter(|r| r.throughput.repeats > 1)
                        .map(|r| {
                            let x = r.threads as f64;
                            (
                                x,
                                r.throughput.mgas_per_s_min,
                                r.throughput.mgas_per_s,
                                r.throughput.mgas_per_s_max,
                            )
                        })
                        .collect(),
                )
            };
            series.push(Series {
                label: format!("{label}{suffix}"),
                color,
                marker: Marker::nth(n),
                dashed: sequential,
                points,
                spread,
            });
        }
    }
    LineChart {
        title: format!("Throughput vs threads, batch of {batch} block(s)"),
        x_desc: "Threads (execution workers)".into(),
        y_desc: "Throughput (MGas/s, execution with I/O)".into(),
        x_keys: Some(keys.iter().map(|&t| t as f64).collect()),
        series,
    }
}

/// Each design's throughput over full BAL's against threads at one batch size, from the inputs'
/// recorded ratios (`ratios_to_full`), the range their repeats allow drawn as error bars, full BAL
/// itself the dashed line at 1.0. `None` where no input recorded a ratio at that batch size (files
/// written before bench recorded them).
fn ratios_chart(inputs: &[Input], batch: usize) -> Option<LineChart> {
    let many = inputs.len() > 1;
    let mut series: Vec<Series> = Vec::new();
    let mut threads: Vec<usize> = Vec::new();
    for (n, input) in inputs.iter().enumerate() {
        let suffix = if many {
            format!(" [{}]", input.name)
        } else {
            String::new()
        };
        let ratios: Vec<&DesignRatio> = input
            .result
            .ratios_to_full
            .iter()
            .filter(|r| r.batch == batch)
            .collect();
        let mut designs: Vec<IoDesign> = Vec::new();
        for r in &ratios {
            if !designs.contains(&r.design) {
                designs.push(r.design);
            }
        }
        for design in designs {
            let mut of_design: Vec<&DesignRatio> = ratios
                .iter()
                .copied()
                .filter(|r| r.design == design)
                .collect();
            of_design.sort_by_key(|r| r.threads);
            threads.extend(of_design.iter().map(|r| r.threads));
            series.push(Series {
                label: format!("{design} / full{suffix}"),
                color: design_color(design),
                marker: Marker::nth(n),
                dashed: false,
                points: of_design
                    .iter()
                    .map(|r| (r.threads as f64, r.ratio.median))
                    .collect(),
                // Where neither run was repeated the range is the ratio itself: no bar.
                spread: of_design
                    .iter()
                    .filter(|r| r.ratio.low < r.ratio.high)
                    .map(|r| (r.threads as f64, r.ratio.low, r.ratio.median, r.ratio.high))
                    .collect(),
            });
        }
    }
    let threads = distinct(threads);
    let (&lo, &hi) = (threads.first()?, threads.last()?);
    series.push(Series {
        label: "full BAL (1.0)".into(),
        color: design_color(IoDesign::Full),
        marker: Marker::Circle,
        dashed: true,
        points: vec![(lo as f64, 1.0), (hi as f64, 1.0)],
        spread: Vec::new(),
    });
    Some(LineChart {
        title: format!("Throughput over full BAL vs threads, batch of {batch} block(s)"),
        x_desc: "Threads (execution workers)".into(),
        y_desc: "Ratio to full BAL (bars: the range of the repeats)".into(),
        x_keys: Some(threads.iter().map(|&t| t as f64).collect()),
        series,
    })
}

/// Runs of one input and batch size that carry per-batch samples, each with its line's style.
fn sampled_runs(input: &Input, batch: usize) -> Vec<(&RunResult, String, RGBColor, Marker)> {
    let mut threads: Vec<usize> = input.result.runs.iter().map(|r| r.threads).collect();
    threads.sort_unstable();
    threads.dedup();
    input
        .result
        .runs
        .iter()
        .filter(|r| r.batch == batch && !r.batches.is_empty())
        .map(|r| {
            let (label, color) = kind(r);
            let label = match r.mode {
                ExecMode::Sequential => label.to_string(),
                ExecMode::Parallel => format!("{label}, {} thread(s)", r.threads),
            };
            let t = threads.iter().position(|&t| t == r.threads).unwrap_or(0);
            (r, label, color, Marker::nth(t))
        })
        .collect()
}

/// Each batch's throughput against the time its commit ended, one line per run.
fn batches_chart(input: &Input, batch: usize) -> Option<LineChart> {
    let runs = sampled_runs(input, batch);
    if runs.iter().all(|(r, ..)| r.batches.len() < 2) {
        return None;
    }
    Some(LineChart {
        title: format!(
            "Per-batch throughput over time, batch of {batch} ({})",
            input.name
        ),
        x_desc: "Time since the replay started (s)".into(),
        y_desc: "Batch throughput (MGas/s)".into(),
        x_keys: None,
        series: runs
            .into_iter()
            .map(|(r, label, color, marker)| Series {
                label,
                color,
                marker,
                dashed: r.mode == ExecMode::Sequential,
                points: r
                    .batches
                    .iter()
                    .map(|b| (b.end_s, b.mgas_per_s()))
                    .collect(),
                spread: Vec::new(),
            })
            .collect(),
    })
}

/// Resident memory and state size against time, one line per run; `None` where no sample has it.
fn resources_charts(input: &Input, batch: usize) -> (Option<LineChart>, Option<LineChart>) {
    let runs = sampled_runs(input, batch);
    if runs.iter().all(|(r, ..)| r.batches.len() < 2) {
        return (None, None);
    }
    let chart = |title: String,
                 y_desc: &str,
                 get: &dyn Fn(&bal_replay_bench::BatchSample) -> Option<u64>| {
        let series: Vec<Series> = runs
            .iter()
            .filter_map(|(r, label, color, marker)| {
                let points: Vec<(f64, f64)> = r
                    .batches
                    .iter()
                    .filter_map(|b| get(b).map(|v| (b.end_s, v as f64 / MIB)))
                    .collect();
                (!points.is_empty()).then(|| Series {
                    label: label.clone(),
                    color: *color,
                    marker: *marker,
                    dashed: r.mode == ExecMode::Sequential,
                    points,
                    spread: Vec::new(),
                })
            })
            .collect();
        (!series.is_empty()).then(|| LineChart {
            title,
            x_desc: "Time since the replay started (s)".into(),
            y_desc: y_desc.into(),
            x_keys: None,
            series,
        })
    };
    (
        chart(
            format!(
                "Resident memory of the bench process, batch of {batch} ({})",
                input.name
            ),
            "Resident memory (MiB)",
            &|b| b.rss_bytes,
        ),
        chart(
            format!(
                "State size on disk (RocksDB), batch of {batch} ({})",
                input.name
            ),
            "SST files + memtables (MiB)",
            &|b| b.state_bytes,
        ),
    )
}

/// Draws every chart; returns those drawn and the reasons for those skipped.
pub(crate) fn draw_all(
    inputs: &[Input],
    out: &Path,
    size: (u32, u32),
    font: &FontRef<'static>,
) -> Result<(Vec<Chart>, Vec<String>), ReportError> {
    let render =
        |stem: &str, size: (u32, u32), figure: &Figure<'_>| render(out, stem, size, font, figure);
    let mut charts = Vec::new();
    let mut skipped = Vec::new();
    let batches = batch_sizes(inputs);

    for &batch in &batches {
        let chart = throughput_chart(inputs, batch);
        let stem = format!("throughput-batch{batch}");
        charts.push(draw_line_chart(out, stem, size, font, chart)?);
    }
    for &batch in &batches {
        if let Some(chart) = ratios_chart(inputs, batch) {
            let stem = format!("ratios-batch{batch}");
            charts.push(draw_line_chart(out, stem, size, font, chart)?);
        }
    }

    for input in inputs {
        let has_samples = input.result.runs.iter().any(|r| !r.batches.is_empty());
        if !has_samples {
            skipped.push(format!(
                "{}: per-batch throughput, memory and disk over time (the JSON has no per-batch samples: it was written before `bench` recorded them)",
                input.name
            ));
            continue;
        }
        for &batch in &batches {
            if let Some(chart) = batches_chart(input, batch) {
                let stem = format!("batches-{}-batch{batch}", input.name);
                charts.push(draw_line_chart(out, stem, size, font, chart)?);
            } else if input.result.runs.iter().any(|r| r.batch == batch) {
                skipped.push(format!(
                    "{}: per-batch throughput at batch {batch} (one batch per run: the whole dump is one batch)",
                    input.name
                ));
            }
            let (memory, disk) = resources_charts(input, batch);
            let panels: Vec<LineChart> = memory.into_iter().chain(disk).collect();
            if panels.is_empty() {
                if input.result.runs.iter().any(|r| r.batch == batch) {
                    skipped.push(format!(
                        "{}: memory and disk over time at batch {batch} (fewer than two samples per run, or none carries them)",
                        input.name
                    ));
                }
                continue;
            }
            let stem = format!("resources-{}-batch{batch}", input.name);
            let (w, h) = size;
            let tall = (w, h * panels.len() as u32 * 3 / 4);
            render(&stem, tall, &Figure::Panels(&panels))?;
            charts.push(Chart {
                title: format!(
                    "Memory and state size over time, batch of {batch} ({})",
                    input.name
                ),
                stem,
            });
        }
    }

    let with_sizes: Vec<&Input> = inputs
        .iter()
        .filter(|i| i.result.bal_sizes.full > 0.0)
        .collect();
    if with_sizes.is_empty() {
        skipped.push("BAL size per design (no input carries BAL sizes)".into());
    }
    let stem = "bal-size".to_string();
    render(&stem, size, &Figure::BalSizes(&with_sizes))?;
    charts.push(Chart {
        title: "Mean BAL size per block, per design (RLP)".into(),
        stem,
    });
    Ok((charts, skipped))
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// A figure, drawable on any backend.
enum Figure<'a> {
    Lines(&'a LineChart),
    /// Line charts stacked top to bottom.
    Panels(&'a [LineChart]),
    /// Mean BAL size per design: the research's, then each input's.
    BalSizes(&'a [&'a Input]),
}

impl Figure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        match self {
            Figure::Lines(chart) => draw_lines(root, chart),
            Figure::Panels(panels) => {
                let areas = root.split_evenly((panels.len(), 1));
                for (area, chart) in areas.iter().zip(panels.iter()) {
                    draw_lines(area, chart)?;
                }
                Ok(())
            }
            Figure::BalSizes(inputs) => draw_bal_sizes(root, inputs),
        }
    }
}

/// Draws a line chart into `<out>/<stem>.svg` and `.png`; returns it as the report lists it.
fn draw_line_chart(
    out: &Path,
    stem: String,
    size: (u32, u32),
    font: &FontRef<'static>,
    chart: LineChart,
) -> Result<Chart, ReportError> {
    render(out, &stem, size, font, &Figure::Lines(&chart))?;
    Ok(Chart {
        title: chart.title,
        stem,
    })
}

/// Draws `figure` into `<out>/<stem>.svg` and `<out>/<stem>.png`. Each is drawn in memory and
/// written whole ([`write_result_file`]): a chart that fails to draw or to write leaves the file an
/// earlier report wrote as it was.
fn render(
    out: &Path,
    stem: &str,
    size: (u32, u32),
    font: &FontRef<'static>,
    figure: &Figure<'_>,
) -> Result<(), ReportError> {
    fn go<DB: DrawingBackend>(
        root: DrawingArea<DB, Shift>,
        figure: &Figure<'_>,
        path: &Path,
    ) -> Result<(), ReportError> {
        let err = |e: DrawingAreaErrorKind<DB::ErrorType>| ReportError::Draw {
            path: path.into(),
            message: e.to_string(),
        };
        root.fill(&WHITE).map_err(err)?;
        figure.draw(&root).map_err(err)?;
        root.present().map_err(err)
    }
    let write = |path: &Path, bytes: &[u8]| {
        write_result_file(path, bytes).map_err(|source| ReportError::Write {
            path: path.into(),
            source,
        })
    };
    let svg = out.join(format!("{stem}.svg"));
    let mut text = String::new();
    go(
        SVGBackend::with_string(&mut text, size).into_drawing_area(),
        figure,
        &svg,
    )?;
    write(&svg, text.as_bytes())?;

    let png = out.join(format!("{stem}.png"));
    let (width, height) = size;
    let mut rgb = vec![0u8; width as usize * height as usize * 3];
    let backend = PngBackend::new(BitMapBackend::with_buffer(&mut rgb, size), font.clone());
    go(backend.into_drawing_area(), figure, &png)?;
    // The encoder and settings plotters saves a PNG file with, so the bytes are the same.
    let mut encoded = Vec::new();
    PngEncoder::new(&mut encoded)
        .write_image(&rgb, width, height, ColorType::Rgb8)
        .map_err(|e| ReportError::Draw {
            path: png.clone(),
            message: e.to_string(),
        })?;
    write(&png, &encoded)
}

fn style(color: RGBColor, width: u32) -> ShapeStyle {
    color.stroke_width(width)
}

/// Draws a line chart: a title, the plot with axes and their units, and a legend to its right.
fn draw_lines<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &LineChart,
) -> DrawResult<DB> {
    let root = root
        .margin(10, 0, 0, 0)
        .titled(&chart.title, (FONT, CAPTION))?;
    let legend_font = TextStyle::from((FONT, LEGEND).into_font());
    let mut legend_w = 0;
    for s in &chart.series {
        legend_w = legend_w.max(root.estimate_text_size(&s.label, &legend_font)?.0);
    }
    let (w, _) = root.dim_in_pixel();
    let legend_w = (legend_w + 56).min(w / 2);
    let (plot_area, legend_area) = root.split_horizontally(w - legend_w);
    draw_legend(&legend_area, &chart.series)?;

    let points = || chart.series.iter().flat_map(|s| s.points.iter());
    let y_max = chart
        .series
        .iter()
        .flat_map(|s| {
            s.points
                .iter()
                .map(|p| p.1)
                .chain(s.spread.iter().map(|p| p.3))
        })
        .fold(0.0f64, f64::max);
    let y_max = if y_max > 0.0 { y_max * 1.1 } else { 1.0 };
    match &chart.x_keys {
        Some(keys) => {
            let lo = keys.first().copied().unwrap_or(1.0);
            let hi = keys.last().copied().unwrap_or(1.0);
            let x = (lo / 1.25..hi * 1.25)
                .log_scale()
                .with_key_points(keys.clone());
            plot(&plot_area, chart, x, y_max, &|x: &f64| format!("{x:.0}"))
        }
        None => {
            let hi = points().map(|p| p.0).fold(0.0f64, f64::max);
            let hi = if hi > 0.0 { hi * 1.03 } else { 1.0 };
            plot(&plot_area, chart, 0.0..hi, y_max, &|x: &f64| trim(*x))
        }
    }
}

/// One legend row per series: its line (dashed for baselines), its marker, its label.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    series: &[Series],
) -> DrawResult<DB> {
    let font = (FONT, LEGEND)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (i, s) in series.iter().enumerate() {
        let (x, y) = (8, 40 + 26 * i as i32);
        let line = style(s.color, 2);
        if s.dashed {
            area.draw(&PathElement::new(vec![(x, y), (x + 9, y)], line))?;
            area.draw(&PathElement::new(vec![(x + 15, y), (x + 24, y)], line))?;
        } else {
            area.draw(&PathElement::new(vec![(x, y), (x + 24, y)], line))?;
            let at = (x + 12, y);
            let fill = s.color.filled();
            match s.marker {
                Marker::Circle => area.draw(&Circle::new(at, 4, fill))?,
                Marker::Triangle => area.draw(&TriangleMarker::new(at, 5, fill))?,
                Marker::Square => area.draw(&Rectangle::new(
                    [(at.0 - 4, y - 4), (at.0 + 4, y + 4)],
                    fill,
                ))?,
                Marker::Cross => area.draw(&Cross::new(at, 5, line))?,
            }
        }
        area.draw(&Text::new(s.label.clone(), (x + 32, y), font.clone()))?;
    }
    Ok(())
}

/// A number with no more digits than it needs ("0.5", "12", "1.25").
fn trim(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn plot<DB, X>(
    root: &DrawingArea<DB, Shift>,
    chart: &LineChart,
    x: X,
    y_max: f64,
    x_format: &dyn Fn(&f64) -> String,
) -> DrawResult<DB>
where
    DB: DrawingBackend,
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
{
    let mut ctx = ChartBuilder::on(root)
        .margin(16)
        .x_label_area_size(56)
        .y_label_area_size(84)
        .build_cartesian_2d(x, 0.0..y_max)?;
    ctx.configure_mesh()
        .x_desc(&chart.x_desc)
        .y_desc(&chart.y_desc)
        .axis_desc_style((FONT, AXIS_DESC))
        .label_style((FONT, LABELS))
        .x_label_formatter(x_format)
        .y_label_formatter(&|y: &f64| trim(*y))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.12))
        .draw()?;
    for s in &chart.series {
        let line = style(s.color, 2);
        let fill = s.color.filled();
        if s.dashed {
            ctx.draw_series(DashedLineSeries::new(s.points.iter().copied(), 10, 6, line))?;
        } else {
            ctx.draw_series(LineSeries::new(s.points.iter().copied(), line))?;
        }
        if !s.dashed {
            let at = s.points.iter().copied();
            match s.marker {
                Marker::Circle => {
                    ctx.draw_series(at.map(|p| Circle::new(p, 4, fill)))?;
                }
                Marker::Triangle => {
                    ctx.draw_series(at.map(|p| TriangleMarker::new(p, 5, fill)))?;
                }
                Marker::Square => {
                    ctx.draw_series(
                        at.map(|p| EmptyElement::at(p) + Rectangle::new([(-4, -4), (4, 4)], fill)),
                    )?;
                }
                Marker::Cross => {
                    ctx.draw_series(at.map(|p| Cross::new(p, 5, line)))?;
                }
            }
        }
        ctx.draw_series(s.spread.iter().map(|&(x, lo, mid, hi)| {
            ErrorBar::new_vertical(x, lo, mid, hi, style(s.color, 1), 10)
        }))?;
    }
    Ok(())
}

/// The bars of one source in the BAL-size chart: its legend, its sizes per design (KB, in
/// [`draw_bal_sizes`]'s order) and its colour.
type BalSizeGroup = (String, [f64; 3], RGBColor);

/// The research's BAL sizes, then each input's, each in its colour.
fn bal_size_groups(inputs: &[&Input]) -> Vec<BalSizeGroup> {
    let mut groups: Vec<BalSizeGroup> = vec![(
        "research (mainnet 23.77M, 2,000 blocks)".into(),
        research::BAL_SIZE_KB,
        RGBColor(110, 110, 110),
    )];
    let palette = [
        RGBColor(31, 119, 180),
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(148, 103, 189),
    ];
    for (i, input) in inputs.iter().enumerate() {
        let s = &input.result.bal_sizes;
        groups.push((
            format!("{} ({} blocks)", input.name, input.result.blocks),
            [s.full / 1000.0, s.batched / 1000.0, s.parallel / 1000.0],
            palette[i % palette.len()],
        ));
    }
    groups
}

/// Grouped bars: for each design (full, batched I/O, parallel I/O), the research's mean size and
/// each input's, labelled with their value and their share of the full BAL.
fn draw_bal_sizes<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    inputs: &[&Input],
) -> DrawResult<DB> {
    const DESIGNS: [&str; 3] = ["Full BAL", "Batched I/O BAL", "Parallel I/O BAL"];
    let groups = bal_size_groups(inputs);
    let y_max = groups
        .iter()
        .flat_map(|g| g.1)
        .fold(0.0f64, f64::max)
        .max(1.0)
        * (1.25 + 0.07 * groups.len() as f64);
    let mut ctx = ChartBuilder::on(root)
        .caption("Mean BAL size per block, per design (RLP)", (FONT, CAPTION))
        .margin(16)
        .x_label_area_size(56)
        .y_label_area_size(84)
        .build_cartesian_2d(-0.5f64..2.5, 0.0..y_max)?;
    ctx.configure_mesh()
        .x_desc("BAL design")
        .y_desc("Mean RLP size per block (KB)")
        .axis_desc_style((FONT, AXIS_DESC))
        .label_style((FONT, LABELS))
        .x_labels(3)
        .x_label_formatter(&|x: &f64| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && (0.0..3.0).contains(&i) {
                DESIGNS[i as usize].to_string()
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|y: &f64| trim(*y))
        .disable_x_mesh()
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.12))
        .draw()?;
    let n = groups.len() as f64;
    let width = 0.8 / n;
    for (g, (label, sizes, color)) in groups.iter().enumerate() {
        let color = *color;
        let bars = sizes.iter().enumerate().map(move |(d, &v)| {
            let left = d as f64 - 0.4 + g as f64 * width;
            Rectangle::new(
                [(left + 0.01, 0.0), (left + width - 0.01, v)],
                color.filled(),
            )
        });
        ctx.draw_series(bars)?
            .label(label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 16, y + 6)], color.filled()));
        let full = sizes[0].max(1e-9);
        let label_font = (FONT, 14)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Bottom));
        ctx.draw_series(sizes.iter().enumerate().map(move |(d, &v)| {
            let center = d as f64 - 0.4 + (g as f64 + 0.5) * width;
            EmptyElement::at((center, v))
                + Text::new(
                    trim((v * 10.0).round() / 10.0),
                    (0, -20),
                    label_font.clone(),
                )
                + Text::new(
                    format!("{:.0}%", 100.0 * v / full),
                    (0, -3),
                    label_font.clone(),
                )
        }))?;
    }
    ctx.configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font((FONT, LEGEND))
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.4))
        .draw()?;
    Ok(())
}

/// A design's colour, as in the bench charts.
fn design_color(design: IoDesign) -> RGBColor {
    match design {
        IoDesign::Full => RGBColor(31, 119, 180),
        IoDesign::FullVerify => RGBColor(23, 190, 207),
        IoDesign::Batched => RGBColor(255, 127, 14),
        IoDesign::Parallel => RGBColor(44, 160, 44),
        IoDesign::Hybrid => RGBColor(214, 39, 40),
    }
}

/// On-demand reads against workers at one batch size, for each calibrated configuration whose
/// checked runs read on demand: measured (solid) beside predicted (dashed). Where a prefetch races
/// the tasks (hybrid), how many reads it loses is part of the prediction, and this is where the
/// race term is seen right or wrong. `None` where no checked run read on demand.
fn reads_chart(report: &ProjectionReport, batch: usize) -> Option<LineChart> {
    let mut series = Vec::new();
    let mut keys = Vec::new();
    for (n, c) in calibrations_at(report, batch) {
        let (mut measured, mut predicted) = (Vec::new(), Vec::new());
        for k in checks_of(report, c).filter(|k| k.measured.on_demand_reads > 0.0) {
            measured.push((k.workers as f64, k.measured.on_demand_reads));
            predicted.push((k.workers as f64, k.predicted.on_demand_reads));
        }
        if !measured.is_empty() {
            push_measured_and_predicted(c, n, measured, predicted, &mut series, &mut keys);
        }
    }
    (!series.is_empty()).then(|| LineChart {
        title: format!(
            "On-demand reads, measured and predicted, batch of {batch}, {} cores",
            report.measured_on.cores
        ),
        x_desc: "Workers".into(),
        y_desc: "On-demand reads (whole run)".into(),
        x_keys: Some(distinct(keys).iter().map(|&k| k as f64).collect()),
        series,
    })
}

/// The calibrated configurations at one batch size, numbered in order (each one's marker).
fn calibrations_at(
    report: &ProjectionReport,
    batch: usize,
) -> impl Iterator<Item = (usize, &bal_replay_model::CalibrationRow)> {
    report
        .calibrations
        .iter()
        .filter(move |c| c.batch == batch)
        .enumerate()
}

/// The checks of the configuration `c` was calibrated on (its design and batch size). Where the report has several inputs, those of the first that has any: a chart draws
/// one bench's runs, and the Markdown report sets the inputs side by side.
fn checks_of<'a>(
    report: &'a ProjectionReport,
    c: &'a bal_replay_model::CalibrationRow,
) -> impl Iterator<Item = &'a bal_replay_model::Check> {
    let of_c = move |k: &&bal_replay_model::Check| k.batch == c.batch && k.design == c.design;
    let first_input = report
        .checks
        .iter()
        .filter(of_c)
        .filter_map(|k| k.input)
        .min();
    report
        .checks
        .iter()
        .filter(of_c)
        .filter(move |k| first_input.is_none() || k.input == first_input)
}

/// A calibrated configuration's measured points (solid) and the model's (dashed), by workers, in
/// its design's colour and the `n`th marker; their worker counts join `keys`.
fn push_measured_and_predicted(
    c: &bal_replay_model::CalibrationRow,
    n: usize,
    mut measured: Vec<(f64, f64)>,
    mut predicted: Vec<(f64, f64)>,
    series: &mut Vec<Series>,
    keys: &mut Vec<usize>,
) {
    measured.sort_by(|a, b| a.0.total_cmp(&b.0));
    predicted.sort_by(|a, b| a.0.total_cmp(&b.0));
    keys.extend(measured.iter().map(|p| p.0 as usize));
    let color = design_color(c.design);
    for (kind, dashed, points) in [
        ("measured", false, measured),
        ("predicted (model)", true, predicted),
    ] {
        series.push(Series {
            label: format!("{}, {kind}", crate::projection::design_name(c.design)),
            color,
            marker: Marker::nth(n),
            dashed,
            points,
            spread: Vec::new(),
        });
    }
}

/// An error bar at `workers` around `value`: `repeats`' lowest and highest relative to their
/// median, applied to it.
fn bar(workers: usize, value: f64, repeats: bal_replay_model::Repeats) -> (f64, f64, f64, f64) {
    let (low, high) = repeats.relative();
    (workers as f64, value * low, value, value * high)
}

/// Sorted distinct values.
fn distinct(mut v: Vec<usize>) -> Vec<usize> {
    v.sort_unstable();
    v.dedup();
    v
}

/// Throughput against workers from a projection report: per batch size, each design's measured
/// runs (solid) beside the model's predictions of them (dashed); then, per batch size, the
/// projection onto the target machine (dashed) beside the research's published figures (solid).
pub(crate) fn draw_projection(
    report: &ProjectionReport,
    out: &Path,
    size: (u32, u32),
    font: &FontRef<'static>,
) -> Result<Vec<Chart>, ReportError> {
    let mut charts = Vec::new();
    let batches = distinct(report.calibrations.iter().map(|c| c.batch).collect());
    for &batch in &batches {
        let chart = checked_chart(report, batch);
        let stem = format!("model-checked-batch{batch}");
        charts.push(draw_line_chart(out, stem, size, font, chart)?);
        if let Some(reads) = reads_chart(report, batch) {
            let stem = format!("model-reads-batch{batch}");
            charts.push(draw_line_chart(out, stem, size, font, reads)?);
        }
    }
    let Some(target) = &report.target else {
        return Ok(charts);
    };
    let batches = distinct(report.projections.iter().map(|p| p.batch).collect());
    for &batch in &batches {
        let chart = projected_chart(report, target, batch);
        let stem = format!("model-projected-batch{batch}");
        charts.push(draw_line_chart(out, stem, size, font, chart)?);
    }
    Ok(charts)
}

/// Measured against predicted throughput by worker count at `batch`, one pair of lines per
/// calibrated configuration, with the repeats' range as bars.
fn checked_chart(report: &ProjectionReport, batch: usize) -> LineChart {
    let mut series = Vec::new();
    let mut keys = Vec::new();
    for (n, c) in calibrations_at(report, batch) {
        let mut measured = vec![(c.workers as f64, c.measured_mgas_per_s)];
        let mut predicted = vec![(
            c.workers as f64,
            c.measured_mgas_per_s / (1.0 + c.calibration.residual),
        )];
        // Bars where a configuration was repeated: each measured point's lowest and highest
        // run; each prediction's from the calibration's lowest and highest.
        let (mut measured_bars, mut predicted_bars) = (Vec::new(), Vec::new());
        measured_bars.extend(c.repeats.map(|r| bar(c.workers, c.measured_mgas_per_s, r)));
        for k in checks_of(report, c) {
            let (m, p) = (k.measured.mgas_per_s(k.gas), k.predicted.mgas_per_s(k.gas));
            measured.push((k.workers as f64, m));
            predicted.push((k.workers as f64, p));
            measured_bars.extend(k.measured_repeats.map(|r| bar(k.workers, m, r)));
            // Just right of the measured bar on the log axis, so the two stay apart.
            predicted_bars.extend(
                k.calibration_repeats
                    .map(|r| bar(k.workers, p, r))
                    .map(|(x, lo, mid, hi)| (x * 1.06, lo, mid, hi)),
            );
        }
        push_measured_and_predicted(c, n, measured, predicted, &mut series, &mut keys);
        let [.., measured_series, predicted_series] = &mut series[..] else {
            unreachable!("two series were just pushed");
        };
        measured_series.spread = measured_bars;
        predicted_series.spread = predicted_bars;
    }
    let bars = if series.iter().any(|s| !s.spread.is_empty()) {
        "; bars: repeats' range"
    } else {
        ""
    };
    LineChart {
        title: format!(
            "Measured and predicted, batch of {batch}, {} cores (calibrated at 1 worker{bars})",
            report.measured_on.cores
        ),
        x_desc: "Workers".into(),
        y_desc: "Throughput (MGas/s, execution with I/O)".into(),
        x_keys: Some(distinct(keys).iter().map(|&k| k as f64).collect()),
        series,
    }
}

/// The projection onto `target` at `batch`, each design beside the research's published figures.
fn projected_chart(
    report: &ProjectionReport,
    target: &bal_replay_model::MachineDescription,
    batch: usize,
) -> LineChart {
    use crate::projection::design_name;
    let mut series = Vec::new();
    let mut keys = Vec::new();
    let designs: Vec<IoDesign> = IoDesign::ALL
        .into_iter()
        .filter(|d| {
            report
                .projections
                .iter()
                .any(|p| p.batch == batch && p.design == *d)
        })
        .collect();
    for (n, design) in designs.into_iter().enumerate() {
        let mut projected: Vec<(f64, f64)> = report
            .projections
            .iter()
            .filter(|p| p.batch == batch && p.design == design)
            .map(|p| (p.workers as f64, p.predicted.mgas_per_s(p.gas)))
            .collect();
        projected.sort_by(|a, b| a.0.total_cmp(&b.0));
        keys.extend(projected.iter().map(|p| p.0 as usize));
        let color = design_color(design);
        let published: Vec<(f64, f64)> = projected
            .iter()
            .filter_map(|&(w, _)| research::throughput(design, batch, w as usize).map(|v| (w, v)))
            .collect();
        series.push(Series {
            label: format!("{}, projected (model)", design_name(design)),
            color,
            marker: Marker::nth(n),
            dashed: true,
            points: projected,
            spread: Vec::new(),
        });
        if !published.is_empty() {
            series.push(Series {
                label: format!("{}, research (published)", design_name(design)),
                color,
                marker: Marker::nth(n),
                dashed: false,
                points: published,
                spread: Vec::new(),
            });
        }
    }
    LineChart {
        title: format!(
            "Projected onto {} cores, {} (model), batch of {batch}",
            target.cores, target.disk
        ),
        x_desc: "Threads".into(),
        y_desc: "Throughput (MGas/s, execution with I/O)".into(),
        x_keys: Some(distinct(keys).iter().map(|&k| k as f64).collect()),
        series,
    }
}

/// The read engines' sweep over reader threads (`bench-db --json`), drawn over the disk's own
/// curve (fio at the same queue depths, dashed): device reads per second, what fio measures,
/// and keys per second, what the engine delivers. Each engine's reader thread has one read in
/// flight (more with io_uring), so the thread count is the queue depth fio is set against. The
/// device-reads chart is skipped (and says why) when no row carries the device's counters.
pub(crate) fn draw_read_engines(
    reports: &[bal_replay_bench::point_reads::BenchDbReport],
    fio: Option<&bal_replay_model::DiskModel>,
    out: &Path,
    size: (u32, u32),
    font: &FontRef<'static>,
) -> Result<(Vec<Chart>, Vec<String>), ReportError> {
    let engines = crate::engine_groups::engines(reports);
    let keys = distinct(
        engines
            .iter()
            .flat_map(|(_, rows)| rows.iter().map(|r| r.threads))
            .chain(
                fio.into_iter()
                    .flat_map(|d| d.points().iter().map(|p| p.depth as usize)),
            )
            .collect(),
    );
    let x_keys = Some(keys.iter().map(|&k| k as f64).collect::<Vec<f64>>());
    let mut charts = Vec::new();
    let mut skipped = Vec::new();
    let device = engine_series(&engines, fio, &|r| r.device_reads_per_s());
    if device.iter().any(|s| !s.dashed) {
        let chart = LineChart {
            title: "Read engines against the disk: device reads per second".into(),
            x_desc: "Reader threads (reads in flight without io_uring); fio: queue depth".into(),
            y_desc: "Device reads per second (thousands)".into(),
            x_keys: x_keys.clone(),
            series: device,
        };
        charts.push(draw_line_chart(
            out,
            "read-engines-device-reads".into(),
            size,
            font,
            chart,
        )?);
    } else {
        skipped.push(
            "read-engines-device-reads: no bench-db row carries the device's read counters (a store on a block device)"
                .into(),
        );
    }
    let chart = LineChart {
        title: "Read engines against the disk: keys read per second".into(),
        x_desc: "Reader threads (reads in flight without io_uring); fio: queue depth".into(),
        y_desc: "Keys read per second (thousands)".into(),
        x_keys,
        series: engine_series(&engines, fio, &|r| Some(r.iops)),
    };
    charts.push(draw_line_chart(
        out,
        "read-engines-keys".into(),
        size,
        font,
        chart,
    )?);
    Ok((charts, skipped))
}

/// One series per read engine of `value` (per second, drawn in thousands) by reader threads,
/// then fio's curve of the disk, dashed, where there is one.
fn engine_series(
    engines: &[(String, Vec<&bal_replay_bench::point_reads::BenchDbRow>)],
    fio: Option<&bal_replay_model::DiskModel>,
    value: &dyn Fn(&bal_replay_bench::point_reads::BenchDbRow) -> Option<f64>,
) -> Vec<Series> {
    const COLORS: [RGBColor; 6] = [
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(214, 39, 40),
        RGBColor(31, 119, 180),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
    ];
    let mut series: Vec<Series> = engines
        .iter()
        .enumerate()
        .filter_map(|(i, (name, rows))| {
            let points: Vec<(f64, f64)> = rows
                .iter()
                .filter_map(|r| value(r).map(|v| (r.threads as f64, v / 1e3)))
                .collect();
            (!points.is_empty()).then(|| Series {
                label: name.clone(),
                color: COLORS[i % COLORS.len()],
                marker: Marker::nth(i),
                dashed: false,
                points,
                spread: Vec::new(),
            })
        })
        .collect();
    series.extend(fio.map(|disk| {
        Series {
            // The curve's source (its file and points) is in the summary; the legend stays short.
            label: "fio: the disk (4 KiB random reads, O_DIRECT)".into(),
            color: BLACK,
            marker: Marker::Cross,
            dashed: true,
            // In thousands, as the engines' series.
            points: disk
                .points()
                .iter()
                .map(|p| (p.depth, p.iops / 1e3))
                .collect(),
            spread: Vec::new(),
        }
    }));
    series
}
