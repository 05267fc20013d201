//! The `sluice` binary, rebuilt in the test package so that integration tests
//! can spawn it as a real process.

fn main() -> std::process::ExitCode {
    sluice_local::main()
}
