//! What the end-to-end tests (`tests/`) and the benchmarks (`bench/`) share,
//! so that each exists once: the emulators, sluice in-process over a
//! temporary directory ([`inproc`]), a `sluice` process ([`process`]),
//! payload bytes, and where the repository and its tools are.

pub mod clamd;
pub mod emulators;
pub mod inproc;
pub mod process;
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

/// Puts a `curl` in `bin`, for the front of a PATH: for each of its
/// arguments, `$a` (the one before it `$prev`), it runs the shell line
/// `each`, then hands everything to the real curl. Returns the PATH to
/// run with.
pub fn curl_wrapper(bin: &Path, each: &str) -> std::io::Result<String> {
    let found = std::process::Command::new("sh")
        .args(["-c", "command -v curl"])
        .output()?;
    let real = String::from_utf8_lossy(&found.stdout).trim().to_owned();
    std::fs::create_dir_all(bin)?;
    let fake = bin.join("curl");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nprev=\nfor a in \"$@\"; do {each}; prev=$a; done\nexec {real} \"$@\"\n"
        ),
    )?;
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755))?;
    Ok(format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    ))
}

/// Puts a `curl` first on a PATH for running an upload line in parts in
/// `dir`: it logs the number of every part it sends (from the target it
/// asks for first, saved as `-o <tmp>/<n>.t`) to `dir/sent`, and fails as
/// a dropped connection would (exit 56) on every part from `fail_from` on,
/// if given; anything else it hands to the real curl. Returns the PATH to
/// run the line with.
pub fn counting_curl(dir: &Path, fail_from: Option<usize>) -> std::io::Result<String> {
    let _ = std::fs::remove_file(dir.join("sent"));
    let fail = fail_from.map_or(String::new(), |n| {
        format!("[ \"$n\" -ge {n} ] && exit 56; ")
    });
    curl_wrapper(
        &dir.join("bin"),
        &format!(
            "if [ \"$prev\" = -o ]; then case \"$a\" in *.t) n=${{a##*/}}; n=${{n%.t}}; \
             echo \"$n\" >> {sent}; {fail}:;; esac; fi",
            sent = dir.join("sent").display(),
        ),
    )
}

/// How many parts the `curl` of [`counting_curl`] sent (or tried to).
pub fn parts_sent(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("sent")).map_or(0, |s| s.lines().count())
}
