//! `sluice`: run everything locally, or mint a bearer token.

fn main() -> std::process::ExitCode {
    sluice_local::main()
}
