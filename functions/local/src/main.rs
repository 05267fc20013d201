//! `sluice`: run everything locally, or mint a bearer token.

/// mimalloc rather than glibc's malloc. Under the MCP bench's load glibc's
/// malloc and free took a fifth of the request threads' time (fast-bin
/// consolidation among it), and under the soak's mixed load its RSS kept
/// growing (47 to 91 MiB in five minutes with two arenas; 24 to 50 with the
/// mmap threshold fixed too, which needed the process to start itself again
/// with both set). It is built to commit memory on demand
/// (`.cargo/config.toml`), so what a transfer used goes back. BENCHMARKS.md,
/// "MCP", "Soak" and "A transfer costs no memory", has the figures.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    sluice_local::main()
}
