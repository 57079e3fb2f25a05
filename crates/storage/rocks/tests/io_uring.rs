//! A multi-get's data blocks, read from one file: one io_uring batch where the kernel allows
//! io_uring, one `pread` each where it refuses ([`bal_replay_rocks::io_uring`]). Either way every
//! value is found, and [`read_path`] says which path was taken. The refusal is made real: a child
//! process of this test installs a seccomp filter that fails `io_uring_setup` with `EPERM`, as a
//! container runtime's default profile does.

use alloy_primitives::{Address, U256, address};
use bal_replay_rocks::{
    RocksOptions, RocksStore,
    io_uring::{ReadPath, probe_read_path, read_path},
};
use bal_replay_state::{KeyScheme, StateChanges, StateWriter};
use std::{path::Path, process::Command};

const OWNER: Address = address!("0x2000000000000000000000000000000000000002");
/// Slots with 32-byte values: about 64 K entries, some 1,400 data blocks of 4 KiB.
const SLOTS: u64 = 65_536;
/// Slots read, spread over the whole range (1,024 apart) so that no two share a data block or
/// sit in adjacent ones (RocksDB merges reads of adjacent blocks).
const READS: u64 = 64;
/// Set in the child process: the state to read and that io_uring must be refused first.
const CHILD_STATE: &str = "BAL_REPLAY_IO_URING_TEST_STATE";

fn value(slot: U256) -> U256 {
    slot | (U256::MAX << 64)
}

fn write_state(path: &Path) {
    let store = RocksStore::create(path, KeyScheme::Plain, &RocksOptions::default()).unwrap();
    let changes = StateChanges {
        storage: (0..SLOTS)
            .map(|i| (OWNER, U256::from(i), value(U256::from(i))))
            .collect(),
        ..Default::default()
    };
    store.commit(&changes, 1).unwrap();
    store.flush().unwrap();
}

/// One multi-get of [`READS`] blocks over the state at `path`, with direct reads and a block
/// cache too small for the data blocks (every block read from the file): the read system calls
/// it made on this thread. Panics if a value is wrong.
fn multi_get_read_syscalls(path: &Path) -> u64 {
    let wanted: Vec<(Address, U256)> = (0..READS)
        .map(|i| (OWNER, U256::from(i * (SLOTS / READS) + 7)))
        .collect();
    let opts = RocksOptions {
        direct_io: true,
        block_cache_bytes: 64 << 10,
        read_only: true,
        ..RocksOptions::default()
    };
    let store = RocksStore::open(path, &opts).unwrap();
    let before = thread_read_syscalls();
    let values = store.multi_get_storage(&wanted).unwrap();
    let read_syscalls = thread_read_syscalls() - before;
    assert_eq!(
        values,
        wanted
            .iter()
            .map(|(_, slot)| value(*slot))
            .collect::<Vec<_>>()
    );
    read_syscalls
}

#[test]
fn multi_get_reads_its_blocks_through_io_uring_here() {
    if std::env::var_os(CHILD_STATE).is_some() {
        return;
    }
    // This machine's kernel allows io_uring (CI's too): the default path is the one taken.
    assert_eq!(read_path(), &ReadPath::IoUring);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    write_state(&path);
    let read_syscalls = multi_get_read_syscalls(&path);
    // io_uring's reads are not read system calls: what is left are the index and filter blocks.
    assert!(
        read_syscalls < READS / 4,
        "{read_syscalls} read syscalls for {READS} data blocks through io_uring"
    );
}

#[test]
fn where_the_kernel_refuses_io_uring_multi_gets_read_by_pread_and_say_so() {
    if let Some(state) = std::env::var_os(CHILD_STATE) {
        // The child: refuse io_uring, then read.
        deny_io_uring_setup();
        let path = read_path();
        assert_eq!(
            path,
            &ReadPath::Pread {
                reason: "io_uring_setup: Operation not permitted (os error 1)".into()
            }
        );
        assert_eq!(path.name(), "pread");
        let read_syscalls = multi_get_read_syscalls(Path::new(&state));
        assert!(
            read_syscalls >= READS,
            "{read_syscalls} read syscalls for {READS} data blocks by pread"
        );
        println!("child: {read_syscalls} read syscalls by pread");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    write_state(&path);
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "where_the_kernel_refuses_io_uring_multi_gets_read_by_pread_and_say_so",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_STATE, &path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("child:") && stdout.contains("by pread"),
        "child failed: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    // The parent is not filtered: the probe still finds io_uring.
    assert_eq!(probe_read_path(), ReadPath::IoUring);
}

/// Installs a seccomp filter on this process: `io_uring_setup` fails with `EPERM`, every other
/// system call is allowed (x86-64 and aarch64 syscall numbers are checked against the audit arch).
fn deny_io_uring_setup() {
    const AUDIT_ARCH: u32 = if cfg!(target_arch = "x86_64") {
        0xc000_003e
    } else {
        0xc000_00b7
    };
    let stmt = |code: u16, k: u32| libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    let jump = |code: u16, k: u32, jt: u8, jf: u8| libc::sock_filter { code, jt, jf, k };
    const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    // `struct seccomp_data`: nr at byte 0, arch at byte 4.
    let mut filter = [
        stmt(LD_W_ABS, 4),
        jump(JEQ_K, AUDIT_ARCH, 1, 0),
        stmt(RET_K, libc::SECCOMP_RET_ALLOW),
        stmt(LD_W_ABS, 0),
        jump(JEQ_K, libc::SYS_io_uring_setup as u32, 0, 1),
        stmt(RET_K, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32),
        stmt(RET_K, libc::SECCOMP_RET_ALLOW),
    ];
    let program = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_mut_ptr(),
    };
    // SAFETY: prctl with a filter program that outlives the call; the kernel copies it.
    unsafe {
        assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
        assert_eq!(
            libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &program as *const libc::sock_fprog
            ),
            0,
            "seccomp: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// This thread's read system calls (`/proc/thread-self/io` `syscr`): the multi-get runs on the
/// calling thread.
fn thread_read_syscalls() -> u64 {
    let text = std::fs::read_to_string("/proc/thread-self/io").unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix("syscr:"))
        .and_then(|value| value.trim().parse().ok())
        .unwrap()
}
