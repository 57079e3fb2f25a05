//! `bal-replay study`: the research's question answered for one chain, as a findings page.

use crate::{count, progress_bar};
use bal_replay_study::{StudyOptions, run_study, study_matrix};
use clap::Args;
use std::{num::NonZeroUsize, path::PathBuf};

/// The answer for one chain: every design on the disk, at thread counts up to the machine's and
/// past them, batch 1, 10 and 50, repeated; the BAL sizes; the disk's bound (fio); a findings page,
/// with the model's projection onto the research's machine.
#[derive(Debug, Clone, Args)]
pub struct StudyCommand {
    /// The dump.
    #[arg(long, value_name = "DIR")]
    pub dump: PathBuf,
    /// The RocksDB state before the dump's first block (never written).
    #[arg(long, value_name = "DIR")]
    pub state: PathBuf,
    /// Where the findings page, its chart and the bench's JSON go.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The quick form: 1 and all cores, batch 1 and 10, two repeats.
    #[arg(long)]
    pub quick: bool,
    /// Worker counts, in place of 1, the cores, 2x and 4x the cores.
    #[arg(long, value_name = "LIST", value_parser = count, value_delimiter = ',')]
    pub threads: Option<Vec<NonZeroUsize>>,
    /// Batch sizes, in place of 1, 10 and 50.
    #[arg(long, value_name = "LIST", value_parser = count, value_delimiter = ',')]
    pub batch: Option<Vec<NonZeroUsize>>,
    /// Runs of each configuration, interleaved (default 3; 2 with --quick).
    #[arg(long, value_name = "N", value_parser = count)]
    pub repeat: Option<NonZeroUsize>,
    /// Do not measure the disk with fio (without --disk: no disk bound, no projection).
    #[arg(long)]
    pub no_fio: bool,
    /// The disk's fio table (scripts/fio-random-reads.sh), in place of measuring it.
    #[arg(long, value_name = "FILE")]
    pub disk: Option<PathBuf>,
    /// What the page calls the chain (default: the dump's directory).
    #[arg(long)]
    pub title: Option<String>,
    /// Compute the page again from an earlier study's bench.json of the same dump and state.
    #[arg(long, value_name = "FILE")]
    pub from_bench: Option<PathBuf>,
}

impl StudyCommand {
    /// The library's options, with the command line that made them.
    pub fn options(&self) -> StudyOptions {
        StudyOptions {
            quick: self.quick,
            threads: self.threads.clone(),
            batches: self.batch.clone(),
            repeat: self.repeat,
            fio: !self.no_fio,
            disk: self.disk.clone(),
            out: self.out.clone(),
            title: self.title.clone(),
            from_bench: self.from_bench.clone(),
            command: std::env::args()
                .map(|a| if a.contains(' ') { format!("'{a}'") } else { a })
                .collect::<Vec<_>>()
                .join(" "),
        }
    }

    /// Runs the study, with a progress bar, prints the answer and where the page is, and returns
    /// what it found.
    pub fn run(&self) -> eyre::Result<bal_replay_study::StudyOutput> {
        let options = self.options();
        let blocks = bal_replay_dump::DumpReader::open(&self.dump)?
            .manifest()
            .record_count;
        let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
        let matrix = study_matrix(&options, cores, blocks);
        if let Some(path) = &self.from_bench {
            println!(
                "study: the page again from {}, nothing replayed",
                path.display()
            );
        } else {
            println!(
                "study: {} runs ({} designs x {} thread counts x {} batch sizes x {} repeats), each replaying {blocks} blocks",
                matrix.run_count(),
                matrix.designs.len(),
                matrix.threads.len(),
                matrix.batches.len(),
                matrix.repeat
            );
        }
        let bar = progress_bar(
            matrix.run_count(),
            "{spinner} study [{bar:30}] {pos}/{len} runs, {per_sec}, eta {eta} {msg}",
        );
        let mut pace = StudyPace::new(matrix.run_count());
        let output = run_study(&self.dump, &self.state, &options, |r| {
            if let Some(line) = pace.run_ended(std::time::Instant::now()) {
                // Said whether or not the bar is drawn (a log redirected to a file hides it).
                bar.suspend(|| eprintln!("{line}"));
            }
            bar.inc(1);
            bar.set_message(format!(
                "{}: {:.1} Mgas/s",
                r.label(),
                r.throughput.mgas_per_s
            ));
        })?;
        bar.finish_and_clear();
        println!("{}\n", output.answer);
        println!(
            "findings: {} (from {})",
            output.page.display(),
            output.bench_json.display()
        );
        Ok(output)
    }
}

/// How long a study will take, said once its second run ends: the time between the first two
/// runs' ends is one whole run (drop the caches, open the state, replay, close), which the first
/// alone cannot show (fio and the dump's sizes come before it).
struct StudyPace {
    runs: u64,
    first_ended: Option<std::time::Instant>,
    said: bool,
}

impl StudyPace {
    fn new(runs: u64) -> Self {
        Self {
            runs,
            first_ended: None,
            said: false,
        }
    }

    /// The estimate's line, once: when the second run ends at `now`.
    fn run_ended(&mut self, now: std::time::Instant) -> Option<String> {
        let Some(first) = self.first_ended else {
            self.first_ended = Some(now);
            return None;
        };
        if std::mem::replace(&mut self.said, true) {
            return None;
        }
        let run_s = now.duration_since(first).as_secs_f64();
        let left_s = run_s * self.runs.saturating_sub(2) as f64;
        Some(format!(
            "study: a run takes about {} here, so the rest takes about {} ({} runs; designs and thread counts differ, the bar's estimate follows the runs)",
            minutes(run_s),
            minutes(left_s),
            self.runs.saturating_sub(2)
        ))
    }
}

/// `s` as minutes, or seconds under two minutes (tenths under ten).
fn minutes(s: f64) -> String {
    if s < 10.0 {
        format!("{s:.1} s")
    } else if s < 120.0 {
        format!("{s:.0} s")
    } else {
        format!("{:.0} min", s / 60.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn the_estimate_is_said_once_from_the_second_run() {
        let start = Instant::now();
        let mut pace = StudyPace::new(62);
        assert_eq!(pace.run_ended(start), None);
        let line = pace.run_ended(start + Duration::from_secs(30)).unwrap();
        assert!(
            line.contains("about 30 s here, so the rest takes about 30 min (60 runs;"),
            "{line}"
        );
        assert_eq!(pace.run_ended(start + Duration::from_secs(60)), None);
        let mut short = StudyPace::new(3);
        short.run_ended(start);
        let line = short.run_ended(start + Duration::from_secs(10)).unwrap();
        assert!(
            line.contains("the rest takes about 10 s (1 runs;"),
            "{line}"
        );
    }
}
