//! When the host a returned line needs cannot be reached from where it runs
//! (a hosted sandbox's egress proxy refusing it, no name, no route), the
//! line says so in one line naming the host and what to do instead, and
//! fails: the upload line (locally one resumable stream, which also says so
//! when a proxy drops the offset it asks for). (The download line fails
//! with curl's own words: see the test.)
//! The proxy is a real one on loopback that refuses every host
//! (`tests/clients/refusing_proxy.py`), reached as curl reaches any proxy:
//! through `https_proxy`.

use std::path::Path;
use std::process::{Child, Command, Output};
use std::sync::{Arc, Mutex};

use crate::mcp_clients::root;
use crate::util::{Server, bytes, out_text, request};

/// The refusing proxy; killed on drop.
struct Proxy {
    child: Child,
    port: u16,
    /// What it refused, as it logged it ("refused CONNECT host:443").
    refused: Arc<Mutex<Vec<String>>>,
}

impl Proxy {
    fn start() -> Self {
        Self::running("tests/clients/refusing_proxy.py")
    }

    /// The proxy `script` (under the root) runs.
    fn running(script: &str) -> Self {
        let mut command = Command::new("python3");
        command.arg(root().join(script));
        let (child, port, refused) = crate::util::spawn_listening(command);
        Self {
            child,
            port,
            refused,
        }
    }

    /// Whether it refused a tunnel to `host` (within a few seconds).
    fn refused_tunnel_to(&self, host: &str) -> bool {
        self.logged(&format!("refused CONNECT {host}"))
    }

    /// Whether it logged a line starting `wanted` (within a few seconds).
    fn logged(&self, wanted: &str) -> bool {
        for _ in 0..100 {
            if self
                .refused
                .lock()
                .unwrap()
                .iter()
                .any(|l| l.starts_with(wanted))
            {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(30));
        }
        false
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `line` in `dir` with `proxy` (or none) as curl's proxy.
fn run(line: &str, dir: &Path, proxy: Option<&Proxy>) -> Output {
    run_in(line, dir, proxy, None)
}

/// [`run`], with `path` as the `PATH` (none: this process's).
fn run_in(line: &str, dir: &Path, proxy: Option<&Proxy>, path: Option<&str>) -> Output {
    let mut command = Command::new("/bin/sh");
    command.args(["-c", line]).current_dir(dir);
    if let Some(path) = path {
        command.env("PATH", path);
    }
    for var in [
        "https_proxy",
        "HTTPS_PROXY",
        "http_proxy",
        "HTTP_PROXY",
        "ALL_PROXY",
        "all_proxy",
        "NO_PROXY",
        "no_proxy",
    ] {
        command.env_remove(var);
    }
    if let Some(proxy) = proxy {
        let url = format!("http://127.0.0.1:{}", proxy.port);
        command.env("https_proxy", &url).env("http_proxy", &url);
    }
    command.output().unwrap()
}

/// The stream line stopped before sending, in one line: no offset came
/// back from `origin` (unreachable, or a proxy drops the header), and what
/// to do.
fn says_no_offset(out: &Output, origin: &str) {
    assert!(!out.status.success(), "{}", out_text(out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("sluice: "))
        .collect();
    assert_eq!(
        said,
        [format!(
            "sluice: no Upload-Offset from {origin}, unreachable or a proxy drops it: allow it, or call request_browser_upload"
        )],
        "{stderr}"
    );
    assert!(
        !stderr.contains("option -C"),
        "no bare curl usage error: {stderr}"
    );
}

/// A proxy that drops `Upload-Offset` from the answer to the stream line's
/// `HEAD` (tested with the line run as given, and in a `PATH` of `sh`,
/// `curl` and coreutils alone: the line needs no `grep`): the line says so
/// in one sentence and sends nothing; without the proxy, the same line in
/// the same `PATH` stores the file.
#[test]
fn a_stream_line_that_gets_no_offset_says_why_and_sends_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(dir.path(), &[]);
    let token = server.token("alice", &["files:read", "files:write"]);
    let work = tempfile::tempdir().unwrap();
    let data = bytes(300_000, 6);
    std::fs::write(work.path().join("s.bin"), &data).unwrap();
    let ticket = server.request_upload(&token, "s.bin", &data);
    let line = ticket["command"].as_str().unwrap();
    assert!(line.contains("-X PATCH"), "a resumable line: {line}");
    assert!(!line.contains("grep"), "{line}");
    let bare = bare_path(work.path());
    let proxy = Proxy::running("tests/clients/stripping_proxy.py");
    for path in [None, Some(bare.as_str())] {
        let out = run_in(line, work.path(), Some(&proxy), path);
        says_no_offset(&out, &server.base);
    }
    assert!(
        proxy.logged("stripped HEAD"),
        "the HEAD went through the proxy"
    );
    let link = ticket["upload"]["url"].as_str().unwrap();
    let head = request("HEAD", link, &[], None);
    assert_eq!(head.header("upload-offset"), Some("0"), "nothing was sent");

    let out = run_in(line, work.path(), None, Some(&bare));
    assert!(out.status.success(), "{}", out_text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("300000/300000 stored"),
        "{}",
        out_text(&out)
    );
    let again = run_in(line, work.path(), None, Some(&bare));
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("sluice: stored"),
        "{}",
        out_text(&again)
    );
}

/// A directory holding `sh`, `curl` and coreutils' programs alone, as a
/// `PATH`: what DESIGN promises the lines need.
fn bare_path(work: &Path) -> String {
    let bin = work.join(".bare-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let listed = Command::new("dpkg")
        .args(["-L", "coreutils"])
        .output()
        .unwrap();
    assert!(listed.status.success(), "{}", out_text(&listed));
    let programs = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter(|l| l.starts_with("/usr/bin/") || l.starts_with("/bin/"))
        .map(std::path::PathBuf::from)
        .chain(["/bin/sh".into(), "/usr/bin/curl".into()])
        .collect::<Vec<_>>();
    for program in programs {
        let name = program.file_name().unwrap();
        if program.is_file() && !bin.join(name).exists() {
            std::os::unix::fs::symlink(&program, bin.join(name)).unwrap();
        }
    }
    assert!(!bin.join("grep").exists(), "grep is not coreutils");
    bin.display().to_string()
}

#[test]
fn lines_whose_host_is_blocked_say_which_and_what_to_do_instead() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(
        dir.path(),
        &[
            ("SLUICE_PUBLIC_URL", "https://files.example.test"),
            ("SLUICE_PART_BYTES", "5242880"),
            ("SLUICE_SINGLE_PUT_MAX_BYTES", "4194304"),
        ],
    );
    let token = server.token("alice", &["files:read", "files:write"]);
    let work = tempfile::tempdir().unwrap();
    let small = bytes(10_000, 3);
    let large = bytes(6 << 20, 4);
    std::fs::write(work.path().join("small.bin"), &small).unwrap();
    std::fs::write(work.path().join("large.bin"), &large).unwrap();
    let proxy = Proxy::start();

    // A small file, through the proxy (which refuses the tunnel), then
    // with no proxy (the name does not resolve: .test never does).
    let ticket = server.request_upload(&token, "small.bin", &small);
    let line = ticket["command"].as_str().unwrap();
    for through in [Some(&proxy), None] {
        let out = run(line, work.path(), through);
        says_no_offset(&out, "https://files.example.test");
    }
    assert!(
        proxy.refused_tunnel_to("files.example.test:443"),
        "the line went through the proxy"
    );

    // A large file, as one resumable stream: the line's first request
    // (where the upload stands) already cannot get through, and no offset
    // comes back: said in one line, naming the host.
    let ticket = server.request_upload(&token, "large.bin", &large);
    let line = ticket["command"].as_str().unwrap();
    assert!(line.contains("-X PATCH"), "a resumable line: {line}");
    let out = run(line, work.path(), Some(&proxy));
    says_no_offset(&out, "https://files.example.test");

    // The download line fails without touching the file already there; it
    // carries no guard of its own (its answer would pass the kilobyte):
    // curl says the tunnel failed, and get_download_url's description says
    // what to do.
    let ticket = server.request_upload(&token, "small.bin", &small);
    let path = ticket["upload"]["url"]
        .as_str()
        .unwrap()
        .trim_start_matches("https://files.example.test");
    let put = request("PUT", &format!("{}{path}", server.base), &[], Some(&small));
    assert!(put.status < 300, "{}", put.text());
    let download = server.download_ticket(&token, ticket["handle"].as_str().unwrap());
    let out = run(
        download["command"].as_str().unwrap(),
        work.path(),
        Some(&proxy),
    );
    assert!(!out.status.success(), "{}", out_text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("403"),
        "curl names the refusal: {}",
        out_text(&out)
    );
    assert_eq!(
        std::fs::read(work.path().join("small.bin")).unwrap(),
        small,
        "the file there before is untouched"
    );
}

/// A host with no route (a closed port): named the same way.
#[test]
fn a_host_with_no_route_is_named_too() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(dir.path(), &[("SLUICE_PUBLIC_URL", "http://127.0.0.1:9")]);
    let token = server.token("alice", &["files:write"]);
    let work = tempfile::tempdir().unwrap();
    let data = bytes(1000, 5);
    std::fs::write(work.path().join("a.bin"), &data).unwrap();
    let ticket = server.request_upload(&token, "a.bin", &data);
    let out = run(ticket["command"].as_str().unwrap(), work.path(), None);
    says_no_offset(&out, "http://127.0.0.1:9");
}
