//! `bal-replay run` over the Amsterdam dev chain (`../shared/fixtures/amsterdam-dev`) as `bal-dump
//! import-chain` leaves it: every mode and I/O design replays all 80 blocks verified, with the BAL
//! hash checked against every header, under the fork schedule the dump carries.

mod common;

use bal_replay_fixtures::default_amsterdam_dev_dir;
use bal_replay_import::{ChainFixture, import_chain};

#[test]
fn run_replays_the_imported_amsterdam_chain_in_every_mode_and_design() {
    let fixture = ChainFixture::read(
        default_amsterdam_dev_dir()
            .expect("../shared/fixtures/amsterdam-dev must exist next to the workspace"),
    )
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (dump, genesis) = (tmp.path().join("dump"), tmp.path().join("genesis"));
    let imported = import_chain(&fixture, &dump, &genesis, |_, _| {}).unwrap();
    assert_eq!(imported.failed(), 0);
    let gas: u64 = fixture.blocks.iter().map(|b| b.block.header.gas_used).sum();
    for mode in ["sequential", "parallel"] {
        for design in ["full", "full-verify", "batched", "parallel", "hybrid"] {
            let state = tmp.path().join(format!("{mode}-{design}"));
            common::copy_state(&genesis, &state);
            let out = common::bal_replay()
                .args(["run", "--dump"])
                .arg(&dump)
                .arg("--state")
                .arg(&state)
                .args([
                    "--mode",
                    mode,
                    "--io",
                    design,
                    "--batch",
                    "16",
                    "--threads",
                    "2",
                ])
                .output()
                .unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(out.status.success(), "{mode}/{design}: {text}");
            assert!(
                text.contains(&format!("replayed 80 blocks, 185 txs, {gas} gas")),
                "{mode}/{design}: {text}"
            );
            assert_eq!(common::digest(&state).1, Some(80));
        }
    }
}
