//! The CPU a key read costs as a function of the reads in flight, relative to one in flight.
//!
//! Measured on this machine (a Firecracker VM) by `bench-db` point reads, a read's CPU falls from
//! 54 µs with one in flight to 30-35 µs with 16-256: with one in flight the vCPU idles during
//! every read and pays the hypervisor's wake-up, and each request submitted alone traps once. A
//! one-worker profile carries the first figure into every task, so a simulation of many workers
//! over-charges their reads (docs/notes/2026-11-24-batch-term-split-and-read-cpu.md).

/// One measured point: reads in flight and the CPU one read cost there.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReadCpuPoint {
    /// Reads in flight (reader threads of a point-read run).
    pub depth: f64,
    /// CPU per read at that depth, ns.
    pub cpu_ns: f64,
}

/// A read's CPU per reads in flight, from measured points (at least one; the first at the lowest
/// depth is the reference).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReadCpuCurve {
    points: Vec<ReadCpuPoint>,
    /// Where the points come from.
    pub source: String,
}

/// A curve that cannot be built.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ReadCpuCurveError {
    /// No point.
    #[error("{origin}: no point-read run to take the CPU per read from")]
    Empty {
        /// Where the points were to come from.
        origin: String,
    },
    /// A point with a depth below 1 or a CPU time that is not positive.
    #[error(
        "{origin}: a point needs depth >= 1 and CPU per read > 0 (got depth {depth}, {cpu_ns} ns)"
    )]
    Invalid {
        /// Where the point came from.
        origin: String,
        /// Its depth.
        depth: f64,
        /// Its CPU per read, ns.
        cpu_ns: f64,
    },
}

impl ReadCpuCurve {
    /// A curve through `points` (any order; one point per depth, the last given wins).
    pub fn new(
        mut points: Vec<ReadCpuPoint>,
        source: impl Into<String>,
    ) -> Result<Self, ReadCpuCurveError> {
        let source = source.into();
        if let Some(p) = points
            .iter()
            .find(|p| !(p.depth >= 1.0 && p.cpu_ns > 0.0 && p.cpu_ns.is_finite()))
        {
            return Err(ReadCpuCurveError::Invalid {
                origin: source,
                depth: p.depth,
                cpu_ns: p.cpu_ns,
            });
        }
        points.sort_by(|a, b| a.depth.total_cmp(&b.depth));
        points.dedup_by(|later, earlier| {
            let same = later.depth == earlier.depth;
            if same {
                *earlier = *later;
            }
            same
        });
        if points.is_empty() {
            return Err(ReadCpuCurveError::Empty { origin: source });
        }
        Ok(Self { points, source })
    }

    /// The measured points, by depth.
    pub fn points(&self) -> &[ReadCpuPoint] {
        &self.points
    }

    /// A read's CPU at `depth` reads in flight over its CPU at the lowest measured depth: linear
    /// in log(depth) between points, flat beyond the ends.
    pub fn relative(&self, depth: f64) -> f64 {
        let first = self.points[0];
        let at = |depth: f64| {
            let last = self.points[self.points.len() - 1];
            if depth <= first.depth {
                return first.cpu_ns;
            }
            if depth >= last.depth {
                return last.cpu_ns;
            }
            let i = self.points.partition_point(|p| p.depth <= depth);
            let (a, b) = (self.points[i - 1], self.points[i]);
            let t = (depth.ln() - a.depth.ln()) / (b.depth.ln() - a.depth.ln());
            a.cpu_ns + t * (b.cpu_ns - a.cpu_ns)
        };
        at(depth) / first.cpu_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(depth: f64, cpu_us: f64) -> ReadCpuPoint {
        ReadCpuPoint {
            depth,
            cpu_ns: cpu_us * 1e3,
        }
    }

    #[test]
    fn relative_cpu_interpolates_in_log_depth_and_is_flat_past_the_ends() {
        let curve = ReadCpuCurve::new(vec![point(16.0, 30.0), point(1.0, 60.0)], "test").unwrap();
        assert_eq!(curve.relative(1.0), 1.0);
        assert_eq!(curve.relative(0.5), 1.0);
        // Depth 4 is half way from 1 to 16 in log(depth): 45 µs of 60.
        assert!((curve.relative(4.0) - 0.75).abs() < 1e-12);
        assert_eq!(curve.relative(16.0), 0.5);
        assert_eq!(curve.relative(256.0), 0.5);
    }

    #[test]
    fn a_curve_needs_valid_points() {
        assert_eq!(
            ReadCpuCurve::new(vec![], "x.json").unwrap_err().to_string(),
            "x.json: no point-read run to take the CPU per read from"
        );
        assert!(matches!(
            ReadCpuCurve::new(vec![point(0.0, 5.0)], "x.json"),
            Err(ReadCpuCurveError::Invalid { depth, .. }) if depth == 0.0
        ));
        assert!(ReadCpuCurve::new(vec![point(1.0, 0.0)], "x.json").is_err());
    }
}
