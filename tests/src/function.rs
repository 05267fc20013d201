//! One sluice function (`mcp`, `issuer` or `resolver`, the first argument),
//! built from the same code as its own binary, so that tests can spawn it
//! as a real process, under an emulated Lambda runtime API too.

fn main() -> std::process::ExitCode {
    let router = match std::env::args().nth(1).as_deref() {
        Some("mcp") => sluice_mcp::router,
        Some("issuer") => sluice_issuer::router,
        Some("resolver") => sluice_resolver::router,
        other => {
            eprintln!("usage: sluice-function-under-test mcp|issuer|resolver (got {other:?})");
            return std::process::ExitCode::from(2);
        }
    };
    sluice_runtime::main_with(router)
}
