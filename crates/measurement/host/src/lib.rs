//! What the host machine gives a measurement: the page cache dropped, the cost of starting worker
//! threads.
//!
//! The operating system's side of a run, below the engine: the engine starts its batches' workers
//! with [`worker_thread`] and reads the CPU clocks here; the bench and the command line drop the
//! page cache before cold runs and measure what starting a worker costs on this machine.

#![cfg_attr(not(test), warn(unused_crate_dependencies))]

mod cpu;
mod error;
mod page_cache;
mod workers;

pub use cpu::{
    ResourceUse, process_cpu_time, process_resource_use, thread_cpu_time, thread_resource_use,
};
pub use error::HostError;
pub use page_cache::drop_page_cache;
pub use workers::{
    WORKER_START_ROUNDS, WORKER_START_WORKERS, WorkerStartCost, measure_worker_start, worker_thread,
};
