//! The read engines' queue-depth sweep (`bal-replay bench-db --json`) set against the disk's own
//! random-read curve (`scripts/fio-random-reads.sh`): charts and `read-engines.md`.

use crate::{ReportError, ReportOptions, Written, charts, engine_groups::engines};
use bal_replay_bench::point_reads::{BenchDbReport, BenchDbResult};
use bal_replay_model::DiskModel;
use std::fmt::Write as _;
use std::path::Path;

/// Reads a file `bal-replay bench-db --json` wrote, or `None` when it is not one (so a caller can
/// try the file as another kind of result). One written with another schema version (a bare array
/// of stores: version 1) is refused, naming both versions. The file is read once, into one buffer
/// of at most [`bal_replay_bench::read_result_bytes`]'s size, and what it looks like is told
/// without building its values.
pub fn load_bench_db(path: &Path) -> Result<Option<Vec<BenchDbReport>>, ReportError> {
    let bytes = bal_replay_bench::read_result_bytes(path)?;
    if !bal_replay_bench::point_reads::looks_like_bench_db(&bytes) {
        return Ok(None);
    }
    let result: BenchDbResult = bal_replay_bench::parse_result(path, &bytes)?;
    Ok(Some(result.stores))
}

/// The sweep as a table: per engine and thread count, keys and device reads per second, CPU per
/// key, and (with `fio`) the disk's IOPS at that queue depth with both rates against it.
pub fn render_read_engines_markdown(reports: &[BenchDbReport], fio: Option<&DiskModel>) -> String {
    let mut out = String::new();
    for r in reports {
        let _ = writeln!(
            out,
            "- {} {}: {} accounts and {} slots in the store, {} and {} sampled; {}; {} CPUs",
            r.backend,
            r.path,
            r.total_accounts,
            r.total_slots,
            r.sampled_accounts,
            r.sampled_slots,
            if r.cold {
                "page cache dropped and store reopened before each run"
            } else {
                "warm"
            },
            r.cpus
        );
    }
    match fio {
        Some(disk) => {
            let _ = writeln!(
                out,
                "- the disk: {} (best {:.0} IOPS); between its depths, IOPS on the line in log(depth)",
                disk.source,
                disk.best_iops()
            );
        }
        None => out.push_str("- no fio curve given (`report --disk-table <table>`)\n"),
    }
    out.push_str(
        "\n| Engine | Reader threads | Keys/s | Device reads/s | Device reads per key | CPU µs per key | fio IOPS at that depth | Device reads / fio | Keys / fio |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    let dash = || "-".to_string();
    for (name, rows) in engines(reports) {
        for row in rows {
            let device = row.device_reads_per_s();
            // Through io_uring a reader's multi-get has more reads in flight than the reader:
            // its threads are not a queue depth to read fio at.
            let fio_iops = fio
                .filter(|_| !(row.io_uring && row.multiget_keys.is_some()))
                .map(|d| d.iops_at(row.threads as f64));
            let _ = writeln!(
                out,
                "| {} | {} | {:.0} | {} | {} | {:.1} | {} | {} | {} |",
                name,
                row.threads,
                row.iops,
                device.map_or_else(dash, |d| format!("{d:.0}")),
                row.device_reads.map_or_else(dash, |d| format!(
                    "{:.2}",
                    d as f64 / row.reads.max(1) as f64
                )),
                row.cpu_s * 1e6 / row.reads.max(1) as f64,
                fio_iops.map_or_else(dash, |f| format!("{f:.0}")),
                device
                    .zip(fio_iops)
                    .map_or_else(dash, |(d, f)| format!("{:.2}", d / f)),
                fio_iops.map_or_else(dash, |f| format!("{:.2}", row.iops / f)),
            );
        }
    }
    out
}

/// Draws the sweep's charts into `options.out` and writes `read-engines.md` there.
pub fn write_read_engines_report(
    reports: &[BenchDbReport],
    fio: Option<&DiskModel>,
    options: &ReportOptions,
) -> Result<Written, ReportError> {
    if reports.iter().all(|r| r.rows.is_empty()) {
        return Err(ReportError::NoInput);
    }
    crate::write_charts_and_summary(
        options,
        "read-engines.md",
        |out, size, font| charts::draw_read_engines(reports, fio, out, size, font),
        |charts, skipped| {
            let mut text = String::from("# Read engines against the disk's curve\n\n");
            for c in charts {
                let _ = writeln!(text, "![{}]({}.svg)\n", c.title, c.stem);
            }
            for s in skipped {
                let _ = writeln!(text, "Not drawn: {s}\n");
            }
            text.push_str(&render_read_engines_markdown(reports, fio));
            text
        },
    )
}
