//! clamd as the tests and the benchmarks run it: Debian's `clamav-daemon`
//! (`make test` installs it) on a Unix socket in a directory of its own,
//! with a signature database written here, at start: the EICAR test file
//! by its MD5 (`.hdb`) and a marker string of sluice's own anywhere in a
//! file (`.ndb`). No real database is downloaded (this machine has no
//! internet, and a test must not depend on one): clamd loads these two
//! signatures alone, and clamd names a match `<name>.UNOFFICIAL`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The EICAR anti-virus test file (68 bytes).
pub const EICAR: &[u8] = b"X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*";
/// The EICAR signature's name, as clamd reports it.
pub const EICAR_SIGNATURE: &str = "Sluice.Test.EICAR.UNOFFICIAL";
/// A marker that makes any file carrying it "infected".
pub const MARKER: &[u8] = b"SLUICE-MALWARE-TEST-MARKER";
/// The marker's signature's name, as clamd reports it.
pub const MARKER_SIGNATURE: &str = "Sluice.Test.Marker.UNOFFICIAL";

/// A clamd started on a socket in `dir`; killed on drop.
#[derive(Debug)]
pub struct Clamd {
    child: Option<Child>,
    dir: PathBuf,
}

impl Clamd {
    /// Where clamd is: Debian's path.
    pub const BIN: &'static str = "/usr/sbin/clamd";

    /// A directory of its own for a clamd, `clamd` in `parent`, made: where
    /// its socket, database, configuration and log go, started or not.
    pub fn dir_in(parent: &Path) -> PathBuf {
        let dir = parent.join("clamd");
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The socket clamd in `dir` listens on, started or not.
    pub fn socket_in(dir: &Path) -> PathBuf {
        dir.join("clamd.sock")
    }

    /// `SLUICE_CLAMD`'s value for the clamd in `dir`.
    pub fn address_in(dir: &Path) -> String {
        format!("unix:{}", Self::socket_in(dir).display())
    }

    /// Writes the database and the configuration into `dir`, starts clamd,
    /// and waits until it answers a `PING`.
    pub fn start(dir: &Path) -> Self {
        let db = dir.join("db");
        std::fs::create_dir_all(&db).unwrap();
        std::fs::write(
            db.join("sluice-test.hdb"),
            format!("{}:{}:Sluice.Test.EICAR\n", md5_hex(EICAR), EICAR.len()),
        )
        .unwrap();
        let marker: String = MARKER.iter().map(|b| format!("{b:02x}")).collect();
        std::fs::write(
            db.join("sluice-test.ndb"),
            format!("Sluice.Test.Marker:0:*:{marker}\n"),
        )
        .unwrap();
        let socket = Self::socket_in(dir);
        let _ = std::fs::remove_file(&socket);
        let conf = dir.join("clamd.conf");
        std::fs::write(
            &conf,
            format!(
                "Foreground yes\nLocalSocket {}\nDatabaseDirectory {}\nLogFile {}\n\
                 StreamMaxLength 1000M\nMaxFileSize 1000M\nMaxScanSize 1000M\nMaxThreads 4\n",
                socket.display(),
                db.display(),
                dir.join("clamd.log").display()
            ),
        )
        .unwrap();
        let child = Command::new(Self::BIN)
            .arg("-c")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{} could not start ({e}): run `make test`", Self::BIN));
        let clamd = Self {
            child: Some(child),
            dir: dir.to_owned(),
        };
        let started = Instant::now();
        while !clamd.answers() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "clamd did not answer within a minute: {}",
                std::fs::read_to_string(dir.join("clamd.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        clamd
    }

    /// `SLUICE_CLAMD`'s value for it.
    pub fn address(&self) -> String {
        Self::address_in(&self.dir)
    }

    /// Whether it answers `PING` with `PONG`.
    pub fn answers(&self) -> bool {
        use std::io::{Read as _, Write as _};
        let Ok(mut s) = std::os::unix::net::UnixStream::connect(Self::socket_in(&self.dir)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
        if s.write_all(b"zPING\0").is_err() {
            return false;
        }
        let mut reply = Vec::new();
        let _ = s.read_to_end(&mut reply);
        reply.starts_with(b"PONG")
    }

    /// Stops it.
    pub fn stop(mut self) {
        self.kill();
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Clamd {
    fn drop(&mut self) {
        self.kill();
    }
}

/// MD5 of `data`, in hex (what a `.hdb` signature names a file by): the
/// `md5sum` command's, so no hash is written here.
fn md5_hex(data: &[u8]) -> String {
    use std::io::Write as _;
    let mut child = Command::new("md5sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("md5sum runs");
    child.stdin.take().unwrap().write_all(data).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8(out.stdout).unwrap()[..32].to_owned()
}
