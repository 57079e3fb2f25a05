//! The disk: latency of a random 4 KiB read as a function of the reads in flight.

use std::io::Read;
use std::path::Path;

/// Whether `x` lies from `low` to `high` (never a NaN).
fn within(x: f64, (low, high): (f64, f64)) -> bool {
    (low..=high).contains(&x)
}

/// One measured point of a disk's random-read curve.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DiskPoint {
    /// Reads in flight (queue depth).
    pub depth: f64,
    /// Reads per second at that depth.
    pub iops: f64,
}

impl DiskPoint {
    /// Mean latency at this point, ns (Little's law: depth / IOPS).
    pub fn latency_ns(&self) -> f64 {
        self.depth / self.iops * 1e9
    }
}

/// A disk's random-read latency per queue depth: measured points (fio), or a device entered as
/// its best IOPS and its latency at low depth.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DiskModel {
    /// Measured points by increasing depth, at least one; empty for a device entered by its
    /// spec.
    points: Vec<DiskPoint>,
    /// An entered device: its best IOPS and its latency at low depth, ns.
    spec: Option<(f64, f64)>,
    /// What the model is ("fio on this machine's disk", "960k IOPS at 85 µs").
    pub source: String,
}

/// The research's RocksDB random reads (its ioarena table over 1.6 billion 16-byte keys, 85 GB):
/// (threads, reads per second, mean latency in µs). Each thread keeps one read in flight, so
/// threads are the queue depth: 12K at 160 µs with 2, 180K at 90 µs with 16, 320K at 110 µs with
/// 32. The disk as the research's RocksDB saw it: [`DiskModel::research_rocksdb`].
pub const RESEARCH_ROCKSDB_READS: [(usize, f64, f64); 5] = [
    (2, 12_000.0, 160.0),
    (4, 30_000.0, 130.0),
    (8, 85_000.0, 92.0),
    (16, 180_000.0, 90.0),
    (32, 320_000.0, 110.0),
];

/// Points a disk's curve may have: fio's tables have a dozen, and the model reads the curve for
/// every simulated read.
pub const MAX_DISK_POINTS: usize = 10_000;

/// The largest disk table read, bytes: far more than [`MAX_DISK_POINTS`] lines take.
pub const MAX_DISK_TABLE_BYTES: u64 = 1 << 20;

/// Reads in flight a curve may have a point at: the deepest queue an NVMe device takes.
pub const MAX_DEPTH: f64 = 65_536.0;

/// Reads a second a disk may serve, from 1 to 10^12: past any device, so an entered disk that
/// never holds reads back is one of 10^12 IOPS.
pub const IOPS_RANGE: (f64, f64) = (1.0, 1e12);

/// A device's latency at low depth, µs: from 10 ns to 10 s.
pub const LATENCY_US_RANGE: (f64, f64) = (0.01, 1e7);

/// A disk model that cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum DiskModelError {
    /// The fio table could not be read.
    #[error("reading the disk curve {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A line of the table is not `depth iops [latency_us]`, within [`MAX_DEPTH`] and
    /// [`IOPS_RANGE`].
    #[error(
        "{path}:{line}: expected `depth iops [mean_latency_us]` with depth from 1 to {MAX_DEPTH} and iops from {} to {:e}, got {text:?}",
        IOPS_RANGE.0,
        IOPS_RANGE.1
    )]
    Line {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// The line.
        text: String,
    },
    /// The table is larger than any disk's curve ([`MAX_DISK_TABLE_BYTES`]).
    #[error("{path}: larger than {MAX_DISK_TABLE_BYTES} bytes, more than a disk's curve takes")]
    TooLarge {
        /// The file.
        path: String,
    },
    /// The table has more points than any disk's curve ([`MAX_DISK_POINTS`]).
    #[error("{path}: more than {MAX_DISK_POINTS} `depth iops` lines (fio's tables have a dozen)")]
    TooManyPoints {
        /// The file.
        path: String,
    },
    /// No point at all.
    #[error("{path}: no `depth iops` line (the output of scripts/fio-random-reads.sh)")]
    Empty {
        /// The file.
        path: String,
    },
    /// An entered device with a figure outside [`IOPS_RANGE`] or [`LATENCY_US_RANGE`].
    #[error(
        "a disk needs IOPS from {} to {:e} and a latency from {} to {:e} µs (got {iops} IOPS, {latency_us} µs)",
        IOPS_RANGE.0,
        IOPS_RANGE.1,
        LATENCY_US_RANGE.0,
        LATENCY_US_RANGE.1
    )]
    Invalid {
        /// IOPS given.
        iops: f64,
        /// Latency given, µs.
        latency_us: f64,
    },
}

impl DiskModel {
    /// The curve `scripts/fio-random-reads.sh` prints: a header line, then `depth iops
    /// mean_latency_us` per line (the latency column is not needed: depth / IOPS is used, which
    /// is what a closed loop at that depth sees). A line `# source: TEXT` names another tool
    /// that measured the same reads, in place of fio.
    pub fn parse_fio_table(text: &str, path: &str) -> Result<Self, DiskModelError> {
        let mut points = Vec::new();
        let mut source = String::from("fio 4 KiB O_DIRECT random reads");
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if let Some(named) = line.strip_prefix("# source:") {
                source = named.trim().to_string();
                continue;
            }
            if line.is_empty() || line.starts_with('#') || line.starts_with("depth") {
                continue;
            }
            let bad = || DiskModelError::Line {
                path: path.to_string(),
                line: i + 1,
                text: line.to_string(),
            };
            let mut fields = line.split_whitespace();
            let depth: f64 = fields.next().and_then(|f| f.parse().ok()).ok_or_else(bad)?;
            let iops: f64 = fields.next().and_then(|f| f.parse().ok()).ok_or_else(bad)?;
            if !((1.0..=MAX_DEPTH).contains(&depth) && within(iops, IOPS_RANGE)) {
                return Err(bad());
            }
            if points.len() == MAX_DISK_POINTS {
                return Err(DiskModelError::TooManyPoints {
                    path: path.to_string(),
                });
            }
            points.push(DiskPoint { depth, iops });
        }
        Self::from_points(points, &format!("{source} ({path})"), path)
    }

    /// A curve of measured points (reads in flight, reads per second), in any order; `what`
    /// says where they come from, `path` names them in an error.
    pub fn from_points(
        mut points: Vec<DiskPoint>,
        what: &str,
        path: &str,
    ) -> Result<Self, DiskModelError> {
        if points.is_empty() {
            return Err(DiskModelError::Empty {
                path: path.to_string(),
            });
        }
        points.sort_by(|a, b| a.depth.total_cmp(&b.depth));
        points.dedup_by(|a, b| a.depth == b.depth);
        let source = format!(
            "{what}: {}",
            points
                .iter()
                .map(|p| format!("QD{} {:.0}", p.depth, p.iops))
                .collect::<Vec<_>>()
                .join(", ")
        );
        Ok(Self {
            points,
            spec: None,
            source,
        })
    }

    /// Reads [`Self::parse_fio_table`]'s format from a file.
    pub fn from_fio_file(path: &Path) -> Result<Self, DiskModelError> {
        let name = path.display().to_string();
        let read_error = |source| DiskModelError::Read {
            path: name.clone(),
            source,
        };
        let mut text = String::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_DISK_TABLE_BYTES + 1).read_to_string(&mut text))
            .map_err(read_error)?;
        if text.len() as u64 > MAX_DISK_TABLE_BYTES {
            return Err(DiskModelError::TooLarge { path: name });
        }
        Self::parse_fio_table(&text, &name)
    }

    /// A device that serves any read in `latency_us` until `iops` is reached: latency is
    /// `max(latency, depth / iops)` (an NVMe array's spec sheet in two numbers).
    pub fn from_spec(iops: f64, latency_us: f64) -> Result<Self, DiskModelError> {
        if !(within(iops, IOPS_RANGE) && within(latency_us, LATENCY_US_RANGE)) {
            return Err(DiskModelError::Invalid { iops, latency_us });
        }
        Ok(Self {
            points: Vec::new(),
            spec: Some((iops, latency_us * 1e3)),
            source: format!("{iops:.0} IOPS at {latency_us} µs (entered)"),
        })
    }

    /// The research's disk as its RocksDB read it ([`RESEARCH_ROCKSDB_READS`]). Its NVMe
    /// array's 960k IOPS is the device's; a key read through RocksDB is what the designs wait on.
    pub fn research_rocksdb() -> Self {
        let points = RESEARCH_ROCKSDB_READS
            .iter()
            .map(|&(threads, iops, _)| DiskPoint {
                depth: threads as f64,
                iops,
            })
            .collect();
        Self::from_points(
            points,
            "the research's RocksDB random reads (its ioarena table, threads as depth)",
            "the research's table",
        )
        .expect("the research's table has points")
    }

    /// The measured points (none for a device entered by its spec).
    pub fn points(&self) -> &[DiskPoint] {
        &self.points
    }

    /// The highest IOPS of the curve.
    pub fn best_iops(&self) -> f64 {
        match self.spec {
            Some((iops, _)) => iops,
            None => self.points.iter().map(|p| p.iops).fold(0.0, f64::max),
        }
    }

    /// Reads per second with `depth` reads in flight: on the curve, interpolated as
    /// [`Self::latency_ns`] is (a closed loop at that depth: depth / latency).
    pub fn iops_at(&self, depth: f64) -> f64 {
        depth.max(1.0) / self.latency_ns(depth) * 1e9
    }

    /// Mean latency of a read issued with `depth` reads in flight (itself included), ns.
    /// Between points, IOPS is interpolated on log(depth); below the first point the first
    /// latency holds; past the last, the IOPS stays at its last value, so latency grows with
    /// depth (the device is saturated).
    pub fn latency_ns(&self, depth: f64) -> f64 {
        let depth = depth.max(1.0);
        if let Some((iops, latency_ns)) = self.spec {
            return latency_ns.max(depth / iops * 1e9);
        }
        let first = self.points[0];
        if depth <= first.depth {
            return first.latency_ns();
        }
        for pair in self.points.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            if depth <= b.depth {
                let f = (depth.ln() - a.depth.ln()) / (b.depth.ln() - a.depth.ln());
                let iops = a.iops + f * (b.iops - a.iops);
                return depth / iops * 1e9;
            }
        }
        let last = self.points[self.points.len() - 1];
        depth / last.iops * 1e9
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIO: &str = "depth iops mean_latency_us\n1 26600 37.4\n16 87400 182.7\n4 52000 76.5\n";

    /// A table measured by another tool names it, and the label the pages print says so.
    #[test]
    fn a_table_names_the_tool_that_measured_it() {
        assert!(
            DiskModel::parse_fio_table(FIO, "fio.txt")
                .unwrap()
                .source
                .starts_with("fio 4 KiB O_DIRECT random reads (fio.txt): QD1 26600")
        );
        let other = format!("# source: 4 KiB O_DIRECT random preads, one process per read\n{FIO}");
        let disk = DiskModel::parse_fio_table(&other, "disk.txt").unwrap();
        assert_eq!(disk.points().len(), 3);
        assert!(
            disk.source
                .starts_with("4 KiB O_DIRECT random preads, one process per read (disk.txt): QD1"),
            "{}",
            disk.source
        );
    }

    #[test]
    fn a_fio_table_gives_latency_per_depth() {
        let disk = DiskModel::parse_fio_table(FIO, "fio.txt").unwrap();
        assert_eq!(disk.points().len(), 3);
        assert_eq!(disk.best_iops(), 87400.0);
        // At a measured depth: depth / IOPS.
        assert!((disk.latency_ns(1.0) - 1e9 / 26600.0).abs() < 1e-6);
        assert!((disk.latency_ns(16.0) - 16e9 / 87400.0).abs() < 1e-6);
        // Past the last point the device is saturated: twice the depth, twice the latency.
        assert!((disk.latency_ns(32.0) / disk.latency_ns(16.0) - 2.0).abs() < 1e-9);
        // IOPS at a measured depth is the measured figure; between points, on the line in
        // log(depth): 8 is halfway from 4 to 16.
        assert!((disk.iops_at(16.0) - 87400.0).abs() < 1e-6);
        assert!((disk.iops_at(8.0) - (52000.0 + 87400.0) / 2.0).abs() < 1e-6);
        // Latency grows with depth.
        let mut last = 0.0;
        for d in 1..200 {
            let l = disk.latency_ns(d as f64);
            assert!(l >= last, "{d}");
            last = l;
        }
    }

    #[test]
    fn bad_lines_name_the_file_and_line() {
        let err = DiskModel::parse_fio_table("depth iops\n1 26600\n4 fast\n", "f.txt").unwrap_err();
        assert_eq!(
            err.to_string(),
            "f.txt:3: expected `depth iops [mean_latency_us]` with depth from 1 to 65536 and iops from 1 to 1e12, got \"4 fast\""
        );
        assert!(matches!(
            DiskModel::parse_fio_table("depth iops\n", "f.txt"),
            Err(DiskModelError::Empty { .. })
        ));
        assert!(DiskModel::from_spec(0.0, 85.0).is_err());
    }

    /// Figures no disk has (an IOPS of 1e-300 made a latency of hundreds of digits) are
    /// refused on the line that holds them, as are entered ones.
    #[test]
    fn implausible_figures_are_refused() {
        for line in [
            "1 1e-300", "1 0.5", "1 2e12", "0.5 1000", "1e6 1000", "1 NaN", "inf 1",
        ] {
            let err =
                DiskModel::parse_fio_table(&format!("1 26600\n{line}\n"), "f.txt").unwrap_err();
            assert!(
                matches!(&err, DiskModelError::Line { line: 2, text, .. } if text == line),
                "{line}: {err}"
            );
        }
        for (iops, latency_us) in [
            (1e-300, 85.0),
            (f64::NAN, 85.0),
            (960_000.0, f64::INFINITY),
            (960_000.0, 1e300),
            (960_000.0, 0.0),
        ] {
            let err = DiskModel::from_spec(iops, latency_us).unwrap_err();
            assert!(
                err.to_string().starts_with(
                    "a disk needs IOPS from 1 to 1e12 and a latency from 0.01 to 1e7 µs"
                ),
                "{err}"
            );
        }
    }

    /// A table of more points than any disk's curve is refused before it is modelled, and one
    /// larger than any table before it is read whole.
    #[test]
    fn a_table_of_too_many_points_is_refused() {
        let many: String = (1..=MAX_DISK_POINTS + 1)
            .map(|d| format!("{} 1000\n", d.min(60_000)))
            .collect();
        assert!(matches!(
            DiskModel::parse_fio_table(&many, "f.txt"),
            Err(DiskModelError::TooManyPoints { .. })
        ));
        let dir = std::env::temp_dir().join(format!("disk-table-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let big = dir.join("big.txt");
        std::fs::write(
            &big,
            "1 1000\n".repeat(MAX_DISK_TABLE_BYTES as usize / 7 + 1),
        )
        .unwrap();
        let err = DiskModel::from_fio_file(&big).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            err.to_string(),
            format!(
                "{}: larger than 1048576 bytes, more than a disk's curve takes",
                big.display()
            )
        );
    }

    #[test]
    fn a_spec_sheet_holds_its_latency_until_its_iops() {
        // The research's array: 960k IOPS at about 85 µs.
        let disk = DiskModel::from_spec(960_000.0, 85.0).unwrap();
        assert!((disk.latency_ns(1.0) - 85_000.0).abs() < 1e-6);
        assert!((disk.latency_ns(64.0) - 85_000.0).abs() < 1.0);
        // Past 81.6 in flight, the IOPS limit: 160 in flight take 160 / 960k s.
        assert!((disk.latency_ns(160.0) - 160.0 / 960_000.0 * 1e9).abs() < 1.0);
    }
}
