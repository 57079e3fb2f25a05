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
        let output = run_study(&self.dump, &self.state, &options, |r| {
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
