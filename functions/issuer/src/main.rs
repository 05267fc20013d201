//! Runs the `issuer` function alone, as a plain HTTP server on the local backends.

fn main() -> std::process::ExitCode {
    sluice_runtime::main_with(sluice_issuer::router)
}
