//! Per-task profiles (`ReplayOptions::profile`): every task of every parallel batch once, in the
//! order workers took them, with the gas, reads and prefetch the replay's own counters show.

use bal_replay_cache::ReadKind;
use bal_replay_dump::DumpReader;
use bal_replay_engine::{BatchProfile, ExecMode, IoDesign, ReplayOptions, ReplayReport, replay};
use bal_replay_executor::ChainConfig;
use bal_replay_rocks::ScratchState;
use bal_replay_rocks::{RocksOptions, RocksStore};
use bal_replay_synth::{GeneratorConfig, generate};
use std::{collections::BTreeSet, num::NonZeroUsize, path::Path};

fn chain(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let config = GeneratorConfig {
        blocks: 6,
        accounts: 2_000,
        holders_per_token: 200,
        seed: 11,
        gas_per_block: 5_000_000,
        ..GeneratorConfig::default()
    };
    let (dump, state) = (dir.join("dump"), dir.join("state"));
    generate(&config, &dump, &state, None).expect("generate");
    (dump, state)
}

fn run(dump: &DumpReader, pristine: &Path, options: &ReplayOptions) -> ReplayReport {
    let scratch = ScratchState::checkpoint_of(pristine, "profile").unwrap();
    let store = RocksStore::open(scratch.path(), &RocksOptions::default()).unwrap();
    replay(&ChainConfig::mainnet(), dump, &store, options, |_| {}).unwrap()
}

fn profiles(report: &ReplayReport) -> Vec<&BatchProfile> {
    report
        .batches
        .iter()
        .map(|b| b.profile.as_ref().expect("a profile per parallel batch"))
        .collect()
}

#[test]
fn every_task_is_profiled_once_with_the_replays_own_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump_dir, pristine) = chain(tmp.path());
    let dump = DumpReader::open(&dump_dir).unwrap();
    let threads = 3;
    for design in [IoDesign::Parallel, IoDesign::Batched, IoDesign::Full] {
        let options = ReplayOptions {
            mode: ExecMode::Parallel,
            threads: NonZeroUsize::new(threads).unwrap(),
            batch: NonZeroUsize::new(4).unwrap(),
            design,
            io_threads: NonZeroUsize::new(2).unwrap(),
            profile: true,
            ..ReplayOptions::default()
        };
        let report = run(&dump, &pristine, &options);
        let batches = profiles(&report);
        assert_eq!(batches.len(), 2, "{design}: 6 blocks in batches of 4");
        // Each batch says how long its workers waited for a core (this kernel says).
        assert!(
            batches.iter().all(|b| b.worker_run_delay_ns.is_some()),
            "{design}: no worker run delay"
        );
        let mut tasks = 0;
        let mut gas = 0;
        let mut reads = 0;
        for (batch, profile) in report.batches.iter().zip(&batches) {
            assert_eq!(
                (profile.first_block, profile.last_block),
                (batch.first_block, batch.last_block)
            );
            // Each block's pre-block task, its transactions and its post-block task, once each.
            let keys: BTreeSet<(u64, u64)> =
                profile.tasks.iter().map(|t| (t.block, t.index)).collect();
            assert_eq!(keys.len(), profile.tasks.len(), "{design}: a task twice");
            let blocks = (batch.last_block - batch.first_block + 1) as usize;
            assert_eq!(profile.tasks.len(), batch.txs + 2 * blocks);
            // Workers take tasks in block order.
            assert!(
                profile
                    .tasks
                    .windows(2)
                    .all(|w| (w[0].block, w[0].index) < (w[1].block, w[1].index)),
                "{design}: tasks out of block order"
            );
            for t in &profile.tasks {
                assert!((t.worker as usize) < threads);
                assert!(t.start_ns + t.wall_ns <= profile.exec_ns + 1_000_000);
                assert!(t.read_wait_ns <= t.wall_ns, "{t:?}");
            }
            assert_eq!(profile.exec_ns, batch.exec.as_nanos() as u64);
            assert_eq!(profile.commit_ns, batch.commit.as_nanos() as u64);
            assert!(profile.commit_ns > 0);
            // The process's CPU over the batch's execution holds its tasks' (the tasks ran
            // inside it).
            let task_cpu: u64 = profile.tasks.iter().map(|t| t.cpu_ns).sum();
            let process_cpu = profile.process_cpu_ns.expect("the process's CPU");
            assert!(
                process_cpu >= task_cpu,
                "{design}: {process_cpu} < {task_cpu}"
            );
            tasks += profile.tasks.len();
            gas += profile.tasks.iter().map(|t| t.gas).sum::<u64>();
            reads += profile.tasks.iter().map(|t| t.reads).sum::<u64>();
            match design {
                IoDesign::Batched => {
                    let prefetch = profile.prefetch.expect("batched I/O prefetches");
                    assert_eq!(prefetch.keys, batch.keys_prefetched);
                    assert!(prefetch.keys > 0 && !prefetch.concurrent);
                    // Every reader of the group takes chunks in turn: 2 x io_threads.
                    assert_eq!(prefetch.readers, 4);
                    assert!(prefetch.wall_ns > 0 && prefetch.cpu_ns > 0);
                }
                _ => assert_eq!(profile.prefetch, None),
            }
        }
        assert_eq!(tasks as u64, report.txs + 2 * report.blocks);
        assert_eq!(
            gas, report.gas,
            "{design}: the tasks' gas is the blocks' gas"
        );
        let on_demand: u64 = [ReadKind::Account, ReadKind::Storage, ReadKind::Code]
            .into_iter()
            .map(|k| report.cache.reads(k))
            .sum();
        match design {
            // Every on-demand read of the replay was made by a task, and counted by it.
            IoDesign::Parallel => assert!(reads > 0 && reads == on_demand, "{reads} {on_demand}"),
            // Full BAL reads nothing.
            IoDesign::Full => assert_eq!((reads, on_demand), (0, 0)),
            // Batched I/O executes from its prefetch, which loads code through the cache's
            // on-demand path, on its own threads: no task read anything.
            _ => {
                assert_eq!(reads, 0);
                assert_eq!(on_demand, report.cache.reads(ReadKind::Code));
            }
        }
    }
}

#[test]
fn profiles_are_recorded_only_when_asked_and_change_no_result() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump_dir, pristine) = chain(tmp.path());
    let dump = DumpReader::open(&dump_dir).unwrap();
    let options = ReplayOptions {
        threads: NonZeroUsize::new(2).unwrap(),
        batch: NonZeroUsize::new(3).unwrap(),
        design: IoDesign::Hybrid,
        ..ReplayOptions::default()
    };
    let plain = run(&dump, &pristine, &options);
    assert!(plain.batches.iter().all(|b| b.profile.is_none()));
    // Hybrid's prefetch runs beside execution; its keys are in the batch report either way.
    assert!(plain.batches.iter().all(|b| {
        b.prefetch_profile
            .is_some_and(|p| p.concurrent && p.keys == b.keys_prefetched)
    }));
    let profiled = run(
        &dump,
        &pristine,
        &ReplayOptions {
            profile: true,
            ..options
        },
    );
    assert_eq!((profiled.gas, profiled.txs), (plain.gas, plain.txs));
    for b in profiles(&profiled) {
        assert!(b.prefetch.is_some_and(|p| p.concurrent));
        // Some task spent CPU: the thread clock is read.
        assert!(b.tasks.iter().any(|t| t.cpu_ns > 0));
    }
}

#[test]
fn hybrids_prefetch_serves_or_loses_exactly_the_reads_parallel_io_makes() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump_dir, pristine) = chain(tmp.path());
    let dump = DumpReader::open(&dump_dir).unwrap();
    // One worker in block order: the same lookups, in the same order, in both designs.
    let options = |design| ReplayOptions {
        threads: NonZeroUsize::MIN,
        batch: NonZeroUsize::new(3).unwrap(),
        design,
        io_threads: NonZeroUsize::new(2).unwrap(),
        profile: true,
        ..ReplayOptions::default()
    };
    let parallel = run(&dump, &pristine, &options(IoDesign::Parallel));
    let on_demand: Vec<Vec<u64>> = profiles(&parallel)
        .iter()
        .map(|b| b.tasks.iter().map(|t| t.reads).collect())
        .collect();
    assert!(on_demand.iter().flatten().sum::<u64>() > 100);
    let hybrid = run(&dump, &pristine, &options(IoDesign::Hybrid));
    assert_eq!(hybrid.gas, parallel.gas);
    let mut served = 0;
    for (batch, reads) in profiles(&hybrid).iter().zip(&on_demand) {
        // Each task's first lookups of a key were either read on demand or the first use of
        // a prefetched value: together, the reads parallel I/O made for it.
        let mine: Vec<u64> = batch
            .tasks
            .iter()
            .map(|t| t.reads + t.prefetch_hits)
            .collect();
        assert_eq!(&mine, reads);
        // A lookup is served only by a value the prefetch itself put in the cache.
        let hits: u64 = batch.tasks.iter().map(|t| t.prefetch_hits).sum();
        let loaded = batch.prefetch.expect("hybrid prefetches").keys;
        assert!(hits <= loaded, "{hits} hits of {loaded} keys loaded");
        served += hits;
    }
    assert!(served > 0, "the prefetch served no lookup");
    // Parallel I/O has no prefetch to race.
    assert!(
        profiles(&parallel)
            .iter()
            .flat_map(|b| &b.tasks)
            .all(|t| t.raced == 0 && t.prefetch_hits == 0)
    );
}

#[test]
fn pinned_workers_replay_the_same_and_a_cpu_that_cannot_be_had_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let (dump_dir, pristine) = chain(tmp.path());
    let dump = DumpReader::open(&dump_dir).unwrap();
    let options = ReplayOptions {
        threads: NonZeroUsize::new(3).unwrap(),
        batch: NonZeroUsize::new(3).unwrap(),
        design: IoDesign::Parallel,
        profile: true,
        ..ReplayOptions::default()
    };
    let free = run(&dump, &pristine, &options);
    // Every worker on the last CPU this process may use, in the order given.
    let last = *bal_replay_engine::cpus::allowed_cpus()
        .unwrap()
        .last()
        .unwrap();
    let pinned = run(
        &dump,
        &pristine,
        &ReplayOptions {
            pin_workers: Some(vec![last].into()),
            ..options.clone()
        },
    );
    assert_eq!((pinned.gas, pinned.txs), (free.gas, free.txs));
    assert_eq!(pinned.blocks, free.blocks);
    // Three workers on one CPU wait for it: the profiles say so.
    let waited: u64 = profiles(&pinned)
        .iter()
        .map(|b| b.worker_run_delay_ns.unwrap())
        .sum();
    assert!(
        waited > 0,
        "three workers pinned to CPU {last} never waited"
    );

    let scratch = ScratchState::checkpoint_of(&pristine, "pin").unwrap();
    let store = RocksStore::open(scratch.path(), &RocksOptions::default()).unwrap();
    let err = replay(
        &ChainConfig::mainnet(),
        &dump,
        &store,
        &ReplayOptions {
            pin_workers: Some(vec![1 << 20].into()),
            ..options
        },
        |_| {},
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("pinning bal-worker-0 to CPU 1048576"),
        "{err}"
    );
}
