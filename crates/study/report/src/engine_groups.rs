//! The read engines of `bal-replay bench-db` sweeps, grouped and named once for both the charts
//! and the summary of the read engines' report.

use bal_replay_bench::{
    StoreKind,
    point_reads::{BenchDbReport, BenchDbRow},
};

/// Each read engine's rows by reader threads, with its name, in the order the engines first
/// appear. An engine is a store (its backend, path and key scheme), a cache state (cold or warm)
/// and a way of reading (point reads, or multi-gets of a size, through io_uring or not): sweeps
/// that differ in any of these are separate lines, named apart by what differs.
pub(crate) fn engines(reports: &[BenchDbReport]) -> Vec<(String, Vec<&BenchDbRow>)> {
    type Key<'a> = (StoreKind, &'a str, &'static str, bool, Option<usize>, bool);
    let mut groups: Vec<(Key<'_>, Vec<&BenchDbRow>)> = Vec::new();
    for report in reports {
        for row in &report.rows {
            let key = (
                report.backend,
                report.path.as_str(),
                report.key_scheme.name(),
                report.cold,
                row.multiget_keys,
                row.io_uring,
            );
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, rows)) => rows.push(row),
                None => groups.push((key, vec![row])),
            }
        }
    }
    let first = groups.first().map(|(k, _)| *k);
    let paths = groups.iter().any(|(k, _)| Some(k.1) != first.map(|f| f.1));
    let schemes = groups.iter().any(|(k, _)| Some(k.2) != first.map(|f| f.2));
    let warm = groups.iter().any(|(k, _)| k.3) && groups.iter().any(|(k, _)| !k.3);
    groups
        .into_iter()
        .map(
            |((backend, path, scheme, cold, multiget, io_uring), mut rows)| {
                let mut name = engine_name(backend, multiget, io_uring);
                if warm && !cold {
                    name.push_str(", warm");
                }
                if schemes {
                    name.push_str(&format!(", {scheme} keys"));
                }
                if paths {
                    name.push_str(&format!(" ({path})"));
                }
                rows.sort_by_key(|r| r.threads);
                (name, rows)
            },
        )
        .collect()
}

/// A way of reading a store, as legends and tables name it.
fn engine_name(backend: StoreKind, multiget: Option<usize>, io_uring: bool) -> String {
    let store = backend.backend_name();
    match (multiget, io_uring) {
        (None, _) => format!("{store}, point reads"),
        (Some(n), false) => format!("{store}, sorted multi-get of {n}"),
        (Some(n), true) => format!("{store}, sorted multi-get of {n}, io_uring"),
    }
}
