//! What the end-to-end tests (`tests/`) and the benchmarks (`bench/`) share,
//! so that each exists once: the emulators, sluice in-process over a
//! temporary directory ([`inproc`]), payload bytes, and where the
//! repository and its tools are.

pub mod emulators;
pub mod inproc;
pub mod table;

use std::path::{Path, PathBuf};

/// The repository's root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `len` pseudo-random bytes (xorshift), the same for the same `seed`, so
/// large payloads are neither patterned nor trivially compressible.
pub fn bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Every regular file below `dir`.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}
