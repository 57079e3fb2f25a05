//! A memory cgroup bounds the page cache this process is served from: reading a file four times
//! the limit leaves at most the limit cached, and the cgroup is gone once the guard drops.
//! Its own test binary, because entering the cgroup moves the whole process.

use bal_replay_probe::memory_limit::MemoryLimit;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;

const LIMIT: u64 = 32 << 20;
const FILE: usize = 128 << 20;

/// O_DIRECT, whose value differs between architectures.
const fn o_direct() -> i32 {
    if cfg!(any(target_arch = "aarch64", target_arch = "arm")) {
        0o200000
    } else {
        0o40000
    }
}

fn own_memory_cgroup_line() -> String {
    std::fs::read_to_string("/proc/self/cgroup")
        .unwrap()
        .lines()
        .find(|l| {
            l.split(':')
                .nth(1)
                .is_some_and(|c| c.split(',').any(|c| c == "memory"))
        })
        .unwrap_or_default()
        .to_string()
}

#[test]
fn reading_a_file_larger_than_the_limit_keeps_at_most_the_limit_cached() {
    // The file is written around the page cache (O_DIRECT), so none of it is cached, or charged
    // to another cgroup, when the process enters its own.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = dir.path().join("state-like");
    {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(o_direct())
            .open(&path)
            .unwrap();
        let mut buf = vec![0u8; (1 << 20) + 4096];
        let offset = buf.as_ptr().align_offset(4096);
        let chunk = &mut buf[offset..offset + (1 << 20)];
        for i in 0..FILE >> 20 {
            chunk.fill(i as u8);
            file.write_all(chunk).unwrap();
        }
        file.sync_all().unwrap();
    }
    let before = own_memory_cgroup_line();
    let limit = match MemoryLimit::enter(LIMIT) {
        Ok(limit) => limit,
        Err(e) if std::env::var_os("CI").is_none() => {
            eprintln!("skipped: {e}");
            return;
        }
        Err(e) => panic!("CI must be able to create a memory cgroup (root, cgroup v1): {e}"),
    };
    let inside = own_memory_cgroup_line();
    assert!(
        inside.contains(&format!("/bal-replay-{}-", std::process::id())),
        "{inside}"
    );
    MemoryLimit::reset_peak();

    let mut file = std::fs::File::open(&path).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    for i in 0..FILE >> 20 {
        file.read_exact(&mut buf).unwrap();
        assert!(buf.iter().all(|b| *b == i as u8), "chunk {i}");
    }
    let usage = MemoryLimit::current_usage().unwrap();
    assert_eq!(usage.limit_bytes, LIMIT);
    assert!(usage.max_usage_bytes <= LIMIT, "{usage:?}");
    assert!(usage.page_cache_bytes <= LIMIT, "{usage:?}");
    // The limit was reached and the kernel reclaimed: most of the file is not cached.
    assert!(usage.limit_hits > 0, "{usage:?}");
    assert!(usage.max_usage_bytes >= LIMIT / 2, "{usage:?}");
    assert!(matches!(MemoryLimit::enter(LIMIT), Err(e) if e.to_string().contains("already")));

    drop(limit);
    assert_eq!(own_memory_cgroup_line(), before);
    let created = inside.splitn(3, ':').nth(2).unwrap().to_string();
    assert!(
        !std::path::Path::new("/sys/fs/cgroup/memory")
            .join(created.trim_start_matches('/'))
            .exists(),
        "the cgroup {created} is removed"
    );
}
