//! `sluice`: run everything locally, or mint a bearer token.

fn main() -> std::process::ExitCode {
    limit_malloc_arenas();
    sluice_local::main()
}

/// Runs the server with glibc's malloc limited to two arenas, unless
/// `MALLOC_ARENA_MAX` is already set. With glibc's default (8 per core),
/// the short blocking tasks that move upload and download chunks spread over
/// many arenas, and the server's RSS kept growing under mixed load (a soak:
/// 58 MiB to 97 MiB in two minutes, still rising); with two it levels off
/// within two minutes (BENCHMARKS.md, Soak). The setting is read only when
/// a process starts, so the process starts itself again with it; `exec`
/// keeps its pid, its pipes and its arguments.
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        use std::os::unix::process::CommandExt as _;
        if let Ok(exe) = std::env::current_exe() {
            let err = std::process::Command::new(exe)
                .args(std::env::args_os().skip(1))
                .env("MALLOC_ARENA_MAX", "2")
                .exec();
            eprintln!(
                "sluice: could not restart with MALLOC_ARENA_MAX=2 ({err}); going on without"
            );
        }
    }
}
