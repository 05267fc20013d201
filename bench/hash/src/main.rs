//! `sluice-hashbench [RUNS]`: prints the "Hashing" section of BENCHMARKS.md
//! for the build it was compiled in (`cargo build --release -p
//! sluice-hashbench`, or `--profile fast`).

fn main() -> anyhow::Result<()> {
    let runs = std::env::args()
        .nth(1)
        .map(|r| r.parse())
        .transpose()?
        .unwrap_or(3);
    print!("{}", sluice_hashbench::run(runs)?);
    Ok(())
}
