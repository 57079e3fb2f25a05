//! `bal-replay project`: the engine's schedule simulated from measured task profiles, checked
//! against the runs the profiles did not come from, and projected onto another machine (the
//! work is `bal_replay_projection`'s; this is its command line).

use crate::{DiskTableArgs, OutputArgs, count};
use bal_replay_projection::{ProjectOptions, TargetDisk, TargetOptions};
use clap::Args;
use eyre::WrapErr;
use std::{num::NonZeroUsize, path::PathBuf};

/// Predict runs from per-task profiles, check the predictions against measured runs, and project
/// onto another machine (every projected figure is the model's, not a measurement).
#[derive(Debug, Clone, Args)]
pub struct ProjectCommand {
    /// `bench --json --task-profile` results (one-worker runs calibrate, the others are checked).
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// The inputs' disk (required).
    #[command(flatten)]
    pub disk_table: DiskTableArgs,
    /// The inputs' cores [default: each run's, less what other processes took during it].
    #[arg(long, value_parser = count)]
    pub cores: Option<NonZeroUsize>,
    /// Project onto the research's machine (sixteen cores; the disk as its RocksDB read it, 12K-320K reads/s at 2-32 threads)
    #[arg(long)]
    pub research_machine: bool,
    /// Project onto a machine with this many cores.
    #[arg(long, value_parser = count)]
    pub target_cores: Option<NonZeroUsize>,
    /// Its disk as a measured curve (the fio table's format).
    #[arg(long, conflicts_with_all = ["target_iops", "target_latency_us"])]
    pub target_disk: Option<PathBuf>,
    /// Its disk as a spec: best random-read IOPS ...
    #[arg(long, requires = "target_latency_us")]
    pub target_iops: Option<f64>,
    /// ... and latency at low queue depth, µs.
    #[arg(long, requires = "target_iops")]
    pub target_latency_us: Option<f64>,
    /// Its cores' speed relative to the inputs' (2.0: twice as fast).
    #[arg(long, default_value_t = 1.0)]
    pub target_cpu_speed: f64,
    /// CPU per key read there, µs [default: the profiles' own, per batch size].
    #[arg(long)]
    pub target_read_cpu_us: Option<f64>,
    /// Prefetch readers there, as `--io-threads` [default: the profiles' own].
    #[arg(long, value_parser = count)]
    pub target_io_threads: Option<NonZeroUsize>,
    /// Worker counts to project.
    #[arg(long, value_delimiter = ',', value_parser = count, default_value = "1,2,4,8,16,32")]
    pub target_workers: Vec<NonZeroUsize>,
    /// Where the checks and projections go as JSON (what `report` draws).
    #[command(flatten)]
    pub output: OutputArgs,
}

impl ProjectCommand {
    /// What it asks of the projection.
    fn options(&self) -> eyre::Result<ProjectOptions> {
        let disk = self.disk_table.path.clone().ok_or_else(|| {
            eyre::eyre!(
                "project needs the inputs' disk: --disk-table FILE (scripts/fio-random-reads.sh's table, measured on the state's filesystem)"
            )
        })?;
        let target_disk = match (&self.target_disk, self.target_iops, self.target_latency_us) {
            (Some(path), _, _) => Some(TargetDisk::Fio(path.clone())),
            (None, Some(iops), Some(latency_us)) => Some(TargetDisk::Spec { iops, latency_us }),
            _ => None,
        };
        Ok(ProjectOptions {
            inputs: self.inputs.clone(),
            disk,
            cores: self.cores,
            target: TargetOptions {
                research_machine: self.research_machine,
                cores: self.target_cores,
                disk: target_disk,
                cpu_speed: self.target_cpu_speed,
                read_cpu_us: self.target_read_cpu_us,
                io_threads: self.target_io_threads,
            },
            target_workers: self.target_workers.clone(),
        })
    }

    /// Calibrates, checks, projects, prints the tables and writes the JSON if asked.
    pub fn run(&self) -> eyre::Result<()> {
        let mut inputs: Vec<_> = self
            .inputs
            .iter()
            .map(|path| crate::paths::Input::file("input", path))
            .collect();
        inputs.extend(self.disk_table.inputs());
        inputs.extend(
            self.target_disk
                .as_deref()
                .map(|path| crate::paths::Input::file("--target-disk", path)),
        );
        crate::paths::check_apart(&self.output.outputs(), &inputs)?;
        self.output.check()?;
        let report = bal_replay_projection::project(&self.options()?, &mut |note| {
            eprintln!("note: {note}")
        })?;
        print!("{}", bal_replay_report::render_projection_markdown(&report));
        if let Some(json) = &self.output.json {
            bal_replay_bench::write_result(json, &report, bal_replay_bench::Layout::Pretty)
                .wrap_err_with(|| format!("writing {}", json.display()))?;
            println!("wrote {}", json.display());
        }
        Ok(())
    }
}
