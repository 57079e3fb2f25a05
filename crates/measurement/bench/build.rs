//! Records the Cargo profile the crate is built with (its output directory's name: `debug` for
//! dev, `release`, `measure`), which every page names beside its figures.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let out = std::env::var("OUT_DIR").unwrap_or_default();
    // <target>/<profile>/build/<crate>-<hash>/out
    let profile = std::path::Path::new(&out)
        .ancestors()
        .nth(3)
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .map(|n| if n == "debug" { "dev" } else { n })
        .unwrap_or("unknown")
        .to_owned();
    println!("cargo:rustc-env=BAL_REPLAY_CARGO_PROFILE={profile}");
}
