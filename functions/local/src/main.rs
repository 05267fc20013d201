//! `sluice`: run everything locally, or mint a bearer token.

fn main() -> std::process::ExitCode {
    tune_malloc();
    sluice_local::main()
}

/// Runs the server with glibc's malloc tuned, unless the environment
/// already tunes it: two arenas (`MALLOC_ARENA_MAX`; with glibc's default
/// of 8 per core the short blocking tasks that move upload and download
/// chunks spread over many), and allocations of 128 KiB and more mapped on
/// their own and returned when freed (`MALLOC_MMAP_THRESHOLD_`; by default
/// glibc raises that threshold each time such a block is freed, after which
/// transfer buffers come from the heap and fragment it). Under the soak's
/// mixed load RSS rose from 47 to 91 MiB in five minutes with two arenas
/// alone, and stayed at 36–41 MiB with both (BENCHMARKS.md, Soak). glibc
/// reads these only when a process starts, and `mallopt` would need
/// `unsafe`: so the process starts itself again with them; `exec` keeps
/// its pid, its pipes and its arguments.
fn tune_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const TUNING: [(&str, &str); 2] = [
            ("MALLOC_ARENA_MAX", "2"),
            ("MALLOC_MMAP_THRESHOLD_", "131072"),
        ];
        if TUNING
            .iter()
            .any(|(name, _)| std::env::var_os(name).is_none())
        {
            use std::os::unix::process::CommandExt as _;
            if let Ok(exe) = std::env::current_exe() {
                let mut command = std::process::Command::new(exe);
                command.args(std::env::args_os().skip(1));
                for (name, value) in TUNING {
                    if std::env::var_os(name).is_none() {
                        command.env(name, value);
                    }
                }
                let err = command.exec();
                eprintln!("sluice: could not restart with malloc tuned ({err}); going on without");
            }
        }
    }
}
