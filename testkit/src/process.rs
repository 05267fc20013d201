//! A `sluice` process, as the tests and the bench start it: on port 0, its
//! base URL read from the first line it prints, every later line kept (and
//! the pipe drained, so it never blocks), killed when dropped. One kind of
//! handle for both, so a change to how sluice announces itself is made once.

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What `sluice` prints first, before its base URL.
const LISTENING: &str = "sluice listening on ";

/// A running `sluice` process; killed on drop.
#[derive(Debug)]
pub struct Spawned {
    /// The process.
    pub child: Child,
    /// The base URL it printed, e.g. `http://127.0.0.1:40123`.
    pub base: String,
    /// Every line it printed after the first, as it printed them.
    printed: Arc<Mutex<Vec<String>>>,
}

impl Spawned {
    /// Starts `command` (a `sluice` binary, told `SLUICE_PORT=0` here) and
    /// waits for its first line.
    pub fn sluice(mut command: Command) -> std::io::Result<Self> {
        let mut child = command
            .env("SLUICE_PORT", "0")
            .stdout(Stdio::piped())
            .spawn()?;
        let mut lines = BufReader::new(child.stdout.take().expect("stdout is piped")).lines();
        let first = match lines.next() {
            Some(line) => line?,
            None => {
                let _ = child.kill();
                return Err(std::io::Error::other("sluice printed nothing"));
            }
        };
        let Some(base) = first.strip_prefix(LISTENING) else {
            let _ = child.kill();
            return Err(std::io::Error::other(format!(
                "unexpected first line: {first}"
            )));
        };
        let printed = Arc::new(Mutex::new(Vec::new()));
        let keep = printed.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                keep.lock().unwrap_or_else(|p| p.into_inner()).push(line);
            }
        });
        Ok(Self {
            child,
            base: base.to_owned(),
            printed,
        })
    }

    /// The line after `label` in what the process printed, trimmed, once it
    /// has printed it (within `wait`).
    pub fn printed_after(&self, label: &str, wait: Duration) -> Option<String> {
        let deadline = Instant::now() + wait;
        loop {
            {
                let lines = self.printed.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(at) = lines.iter().position(|l| l.trim() == label)
                    && let Some(next) = lines.get(at + 1)
                {
                    return Some(next.trim().to_owned());
                }
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The first line the process printed (after the first) that starts
    /// with `prefix`, once it has printed it (within `wait`).
    pub fn printed_starting(&self, prefix: &str, wait: Duration) -> Option<String> {
        let deadline = Instant::now() + wait;
        loop {
            {
                let lines = self.printed.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(line) = lines.iter().find(|l| l.starts_with(prefix)) {
                    return Some(line.clone());
                }
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A bearer token for `user` with `scopes` (none: the default scopes),
/// minted by `bin`'s own `sluice token` under exactly `vars` (the data
/// directory, or the master secret a deployment shares): the one way the
/// tests and the bench mint tokens, as the README says a user does.
pub fn mint_token<K, V>(
    bin: &std::path::Path,
    vars: impl IntoIterator<Item = (K, V)>,
    user: &str,
    scopes: &[&str],
) -> std::io::Result<String>
where
    K: AsRef<std::ffi::OsStr>,
    V: AsRef<std::ffi::OsStr>,
{
    let mut command = Command::new(bin);
    command
        .env_clear()
        .envs(vars)
        .args(["token", "--user", user]);
    if !scopes.is_empty() {
        command.arg("--scope").args(scopes);
    }
    let out = command.output()?;
    if !out.status.success() {
        return Err(std::io::Error::other(format!(
            "sluice token --user {user}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    String::from_utf8(out.stdout)
        .map(|t| t.trim().to_owned())
        .map_err(std::io::Error::other)
}
