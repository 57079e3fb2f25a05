//! `bal-replay study`: the research's question answered for one chain, as a findings page.

use crate::{DiskTableArgs, DumpArgs, ThreadsArgs, count, progress_bar};
use bal_replay_study::{StudyOptions, run_study, study_matrix, study_run_count};
use clap::Args;
use std::{
    num::NonZeroUsize,
    path::{Path, PathBuf},
};

/// The answer for one chain: every design on the disk, at thread counts up to the machine's and
/// past them, batch 1, 10 and 50, repeated; the BAL sizes; the disk's bound (fio); a findings page,
/// with the model's projection onto the research's machine.
#[derive(Debug, Clone, Args)]
// The shared `--dump` help names the commands that refuse independent blocks, this one among them.
#[command(mut_arg("dump", |a| a.help("Dump directory: a chain (independent blocks are for `bench`)")))]
pub struct StudyCommand {
    #[command(flatten)]
    pub dump: DumpArgs,
    /// The RocksDB state before the dump's first block (never written).
    #[arg(long, value_name = "DIR")]
    pub state: PathBuf,
    /// Where the findings page, its chart and the bench's JSON go.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The quick form: 1 and all cores, batch 1 and 10, two repeats.
    #[arg(long)]
    pub quick: bool,
    #[command(flatten)]
    pub threads: ThreadsArgs,
    /// Batch sizes, in place of 1, 10 and 50.
    #[arg(long, value_name = "LIST", value_parser = count, value_delimiter = ',')]
    pub batch: Option<Vec<NonZeroUsize>>,
    /// Runs of each configuration, interleaved (default 3; 2 with --quick).
    #[arg(long, value_name = "N", value_parser = count)]
    pub repeat: Option<NonZeroUsize>,
    /// Do not measure the disk with fio (without --disk-table: no disk bound, no projection).
    #[arg(long)]
    pub no_fio: bool,
    /// The disk's curve, in place of measuring it with fio.
    #[command(flatten)]
    pub disk_table: DiskTableArgs,
    /// What the page calls the chain (default: the dump's directory).
    #[arg(long, value_parser = one_line)]
    pub title: Option<String>,
    /// Compute the page again from an earlier study's bench.json of the same dump and state.
    #[arg(long, value_name = "FILE")]
    pub from_bench: Option<PathBuf>,
    /// Another machine's bench JSON of a chain of the same shape: its frontier drawn beside.
    #[arg(long, value_name = "FILE")]
    pub beside: Option<PathBuf>,
    /// Drop the machine's page cache before each run (root only; slows other processes).
    #[arg(long)]
    pub drop_caches: bool,
    /// Leave out the sweep over cache regimes (run unless --quick).
    #[arg(long)]
    pub no_sweep: bool,
}

impl StudyCommand {
    /// The library's options, with the command line that made them.
    pub fn options(&self) -> StudyOptions {
        StudyOptions {
            quick: self.quick,
            threads: self.threads.threads.clone(),
            batches: self.batch.clone(),
            repeat: self.repeat,
            fio: !self.no_fio,
            disk: self.disk_table.path.clone(),
            out: self.out.clone(),
            title: self.title.clone(),
            from_bench: self.from_bench.clone(),
            beside: self.beside.clone(),
            drop_caches: self.drop_caches,
            sweep: !self.quick && !self.no_sweep,
            command: command_line(),
        }
    }

    /// Runs the study ([`study_with_progress`]).
    pub fn run(&self) -> eyre::Result<bal_replay_study::StudyOutput> {
        // `--from-bench` may lie inside `--out`: a study's own runs there are kept as they are.
        let mut inputs = vec![
            crate::paths::Input::dir("--dump", &self.dump),
            crate::paths::Input::dir("--state", &self.state),
        ];
        inputs.extend(self.disk_table.inputs());
        inputs.extend(
            self.beside
                .as_deref()
                .map(|path| crate::paths::Input::file("--beside", path)),
        );
        crate::paths::check_apart(&[crate::paths::Output::dir("--out", &self.out)], &inputs)?;
        study_with_progress(&self.dump, &self.state, &self.options())
    }
}

/// This process's command line, quoted where an argument has a space, as a page records it.
pub fn command_line() -> String {
    std::env::args()
        .map(|a| if a.contains(' ') { format!("'{a}'") } else { a })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs the study library over `dump` and `state` with `options`, with a progress bar and the
/// run-time estimate, prints the answer and where the page is, and returns what it found.
pub fn study_with_progress(
    dump: &Path,
    state: &Path,
    options: &StudyOptions,
) -> eyre::Result<bal_replay_study::StudyOutput> {
    {
        let blocks = bal_replay_dump::DumpReader::open(dump)?
            .expect_records()?
            .manifest()
            .record_count;
        let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
        let matrix = study_matrix(options, cores, blocks);
        let total_runs = study_run_count(options, &matrix, state);
        if matrix.drop_caches && options.from_bench.is_none() {
            // Asked for and refused: said before anything is measured or written.
            bal_replay_host::drop_page_cache().map_err(|e| {
                eyre::eyre!(
                    "--drop-caches: {e} (leave it out to run without emptying the page cache)"
                )
            })?;
        }
        if let Some(path) = &options.from_bench {
            println!(
                "study: the page again from {}, nothing replayed",
                path.display()
            );
        } else {
            println!(
                "study: {} runs ({} designs x {} thread counts x {} batch sizes x {} repeats), each replaying {blocks} blocks{}",
                matrix.run_count(),
                matrix.designs.len(),
                matrix.threads.len(),
                matrix.batches.len(),
                matrix.repeat,
                if options.sweep {
                    format!(
                        ", then {} runs over cache regimes",
                        total_runs - matrix.run_count()
                    )
                } else {
                    String::new()
                }
            );
        }
        let bar = progress_bar(
            total_runs,
            "{spinner} study [{bar:30}] {pos}/{len} runs, {per_sec}, eta {eta} {msg}",
        );
        let mut pace = StudyPace::new(
            total_runs,
            (matrix.designs.len() * matrix.threads.len()) as u64,
        );
        let output = run_study(dump, state, options, |r| {
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

/// How long a study will take, said once a sample of its runs has ended: every design at every
/// thread count of the first batch size, which the bench's schedule runs first. Runs differ by
/// design several times over (full BAL reads no state), so the first run or two would say too
/// little. Timed from the first run's end (fio and the dump's sizes come before it) to the end of
/// the run after the sample: a whole run each (drop the caches, open the state, replay, close).
struct StudyPace {
    runs: u64,
    sample: u64,
    ended: u64,
    first_ended: Option<std::time::Instant>,
}

impl StudyPace {
    fn new(runs: u64, sample: u64) -> Self {
        Self {
            runs,
            sample: sample.max(1),
            ended: 0,
            first_ended: None,
        }
    }

    /// The estimate's line, once: when the run after the sample ends at `now`.
    fn run_ended(&mut self, now: std::time::Instant) -> Option<String> {
        self.ended += 1;
        let first = *self.first_ended.get_or_insert(now);
        if self.ended != self.sample + 1 || self.ended == self.runs {
            return None;
        }
        let sample_s = now.duration_since(first).as_secs_f64();
        let left = self.runs - self.ended;
        // The ended runs are the sample and the one before it whose end the timing starts from,
        // so the counts said add up to the whole: ended + left = runs.
        Some(format!(
            "study: {} of {} runs done; the {} after the first (every design and thread count at the first batch size) took {}: the {left} left take about {} (the bar's estimate follows the runs)",
            self.ended,
            self.runs,
            self.sample,
            minutes(sample_s),
            minutes(sample_s / self.sample as f64 * left as f64),
        ))
    }
}

/// A title, which heads the page: one line, so a newline or another control character in it is
/// refused rather than left to break the heading.
fn one_line(s: &str) -> Result<String, String> {
    match s.chars().find(|c| c.is_control()) {
        Some(c) => Err(format!(
            "a title is one line of text, and this one holds {c:?}"
        )),
        None => Ok(s.to_owned()),
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
    fn the_estimate_is_said_once_after_every_design_has_run() {
        let start = Instant::now();
        // 40 runs, a sample of 10: said when the 11th ends, from 10 runs' time after the first.
        let mut pace = StudyPace::new(40, 10);
        for run in 0..10 {
            assert_eq!(pace.run_ended(start + Duration::from_secs(run * 24)), None);
        }
        let line = pace.run_ended(start + Duration::from_secs(240)).unwrap();
        assert!(
            line.contains("11 of 40 runs done; the 10 after the first (every design and thread count at the first batch size) took 4 min: the 29 left take about 12 min"),
            "{line}"
        );
        assert_eq!(pace.run_ended(start + Duration::from_secs(264)), None);
        // A matrix no longer than its sample has nothing left to estimate.
        let mut short = StudyPace::new(3, 2);
        assert!((0..3).all(|run| short.run_ended(start + Duration::from_secs(run)).is_none()));
        let mut quick = StudyPace::new(4, 2);
        quick.run_ended(start);
        quick.run_ended(start + Duration::from_millis(400));
        let line = quick
            .run_ended(start + Duration::from_millis(1400))
            .unwrap();
        assert!(
            line.contains("3 of 4 runs done; the 2 after the first (every design and thread count at the first batch size) took 1.4 s: the 1 left take about 0.7 s"),
            "{line}"
        );
    }
}
