//! Shared test helpers: spawn the real `sluice` binary on port 0, mint tokens
//! with its `token` command, and talk to it with curl, as a user would.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Barrier, Mutex};

use serde_json::Value;
use sluice::Config;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_sluice-under-test");

/// A running `sluice` process; killed on drop.
pub struct Server {
    process: sluice_testkit::process::Spawned,
    /// The base URL it printed, e.g. `http://127.0.0.1:40123`.
    pub base: String,
    /// Its data directory.
    pub data_dir: PathBuf,
}

impl Server {
    /// Starts a server on a fresh data directory (kept by the returned guard).
    pub fn start() -> (Server, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let server = Server::start_in(dir.path(), &[]);
        (server, dir)
    }

    /// Starts a server on `data_dir` with extra environment variables.
    pub fn start_in(data_dir: &Path, env: &[(&str, &str)]) -> Server {
        Self::start_with(data_dir, env, Stdio::inherit())
    }

    /// [`Server::start_in`], its log (at `SLUICE_LOG=info` unless `env`
    /// says otherwise) written to `log`.
    pub fn start_logging(data_dir: &Path, env: &[(&str, &str)], log: &Path) -> Server {
        let mut env = env.to_vec();
        if !env.iter().any(|(k, _)| *k == "SLUICE_LOG") {
            env.push(("SLUICE_LOG", "info"));
        }
        let file = std::fs::File::create(log).unwrap();
        Self::start_with(data_dir, &env, Stdio::from(file))
    }

    fn start_with(data_dir: &Path, env: &[(&str, &str)], stderr: Stdio) -> Server {
        let mut command = Command::new(BIN);
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("SLUICE_DATA_DIR", data_dir)
            .env("SLUICE_LOG", "warn")
            .envs(env.iter().copied())
            .stderr(stderr);
        let process =
            sluice_testkit::process::Spawned::sluice(command).expect("the sluice binary starts");
        Server {
            base: process.base.clone(),
            process,
            data_dir: data_dir.to_path_buf(),
        }
    }

    /// The line after `label` in what the server printed at start, trimmed:
    /// e.g. the `claude mcp add …` line after "connect Claude Code:".
    pub fn printed_after(&self, label: &str) -> String {
        self.process
            .printed_after(label, std::time::Duration::from_secs(10))
            .unwrap_or_else(|| panic!("sluice never printed {label:?}"))
    }

    /// The line the server printed at start that begins with `prefix`.
    pub fn printed_starting(&self, prefix: &str) -> String {
        self.process
            .printed_starting(prefix, std::time::Duration::from_secs(10))
            .unwrap_or_else(|| panic!("sluice never printed a line starting {prefix:?}"))
    }

    /// The process's id.
    pub fn pid(&self) -> u32 {
        self.process.child.id()
    }

    /// Stops the process and waits for it to exit.
    pub fn stop(self) {
        drop(self.process);
    }

    /// A bearer token for `user` with `scopes`, from `sluice token`.
    pub fn token(&self, user: &str, scopes: &[&str]) -> String {
        token_for(&self.data_dir, user, scopes)
    }

    /// Issues an upload via `POST /uploads` and returns the JSON ticket.
    pub fn request_upload(&self, token: &str, filename: &str, data: &[u8]) -> Value {
        let body = serde_json::json!({
            "filename": filename,
            "size": data.len(),
            "sha256": sluice::Sha256::of(data).to_hex(),
        });
        let reply = post_json(&format!("{}/uploads", self.base), Some(token), &body);
        assert_eq!(reply.status, 200, "{}", reply.text());
        reply.json()
    }

    /// Uploads `data` under `filename` with the returned curl line, run in a
    /// fresh directory holding the file; returns the ticket.
    pub fn upload(&self, token: &str, filename: &str, data: &[u8]) -> Value {
        let ticket = self.request_upload(token, filename, data);
        let work = tempfile::tempdir().unwrap();
        std::fs::write(work.path().join(filename), data).unwrap();
        let out = sh(ticket["command"].as_str().unwrap(), work.path());
        assert!(out.status.success(), "upload failed: {}", out_text(&out));
        ticket
    }

    /// Issues `filename` for `declared` bytes and sends other bytes of the
    /// same size to its link, which refuses them (400); the ticket.
    pub fn refused_upload(&self, token: &str, filename: &str, declared: &[u8]) -> Value {
        let ticket = self.request_upload(token, filename, declared);
        let other: Vec<u8> = declared.iter().map(|b| b ^ 1).collect();
        let refused = request(
            "PUT",
            ticket["upload"]["url"].as_str().unwrap(),
            &[],
            Some(&other),
        );
        assert_eq!(refused.status, 400, "{}", refused.text());
        ticket
    }

    /// `POST /resolve` for a handle: the JSON reply with its status.
    pub fn resolve(&self, token: &str, handle: &str) -> Reply {
        post_json(
            &format!("{}/resolve", self.base),
            Some(token),
            &serde_json::json!({ "handle": handle }),
        )
    }

    /// A download ticket for a handle, which must succeed.
    pub fn download_ticket(&self, token: &str, handle: &str) -> Value {
        let reply = self.resolve(token, handle);
        assert_eq!(reply.status, 200, "{}", reply.text());
        reply.json()
    }

    /// The single-use download link of the file `handle` names, for `token`'s
    /// caller ([`Server::download_ticket`]'s `download.url`).
    pub fn download_url(&self, token: &str, handle: &str) -> String {
        self.download_ticket(token, handle)["download"]["url"]
            .as_str()
            .unwrap()
            .to_owned()
    }
}

/// A bearer token for `user` with `scopes` in `data_dir`.
pub fn token_for(data_dir: &Path, user: &str, scopes: &[&str]) -> String {
    sluice_testkit::process::mint_token(
        Path::new(BIN),
        [("SLUICE_DATA_DIR", data_dir)],
        user,
        scopes,
    )
    .unwrap()
}

/// The configuration a server on `data_dir` reads, for minting tokens in-test.
pub fn config_for(data_dir: &Path) -> Config {
    Config::from_vars([(
        "SLUICE_DATA_DIR".to_owned(),
        data_dir.to_string_lossy().into_owned(),
    )])
    .unwrap()
}

/// Runs a shell line in `dir`.
pub fn sh(line: &str, dir: &Path) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(line)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// Runs `line` in `dir` under `limit` (sh's `ulimit -f`, in its blocks),
/// with a `curl` first on the PATH that notes what each PUT sends (`-T`'s
/// argument) in `dir/.puts` before running the real one; the run, and
/// those notes ([`noted_puts`]).
pub fn run_noting_puts(line: &str, dir: &Path, limit: Option<u32>) -> (Output, Vec<String>) {
    let path = sluice_testkit::curl_wrapper(
        &dir.join(".bin"),
        &format!(
            "[ \"$prev\" = -T ] && echo \"$a\" >> '{}'",
            dir.join(".puts").display()
        ),
    )
    .unwrap();
    let _ = std::fs::remove_file(dir.join(".puts"));
    let limited = match limit {
        Some(blocks) => format!("ulimit -f {blocks}; {line}"),
        None => line.to_owned(),
    };
    let out = Command::new("sh")
        .arg("-c")
        .arg(limited)
        .current_dir(dir)
        .env("PATH", path)
        .output()
        .unwrap();
    (out, noted_puts(dir))
}

/// What the PUTs of the last [`run_noting_puts`] in `dir` sent, in order.
pub fn noted_puts(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join(".puts"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Whether a PUT's body (`-T`'s argument) is a part's: its copy in the
/// part script's slot file (`s0`, `s1`, …), or stdin where it is piped.
pub fn is_part_body(body: &str) -> bool {
    body == "-"
        || Path::new(body)
            .file_name()
            .and_then(|name| name.to_str())
            .and_then(|name| name.strip_prefix('s'))
            .is_some_and(|slot| slot.parse::<u32>().is_ok())
}

/// stdout and stderr of a finished command, for assertion messages.
pub fn out_text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs `command` to its end, asserting it succeeded (its status and
/// output the message if not): what it printed.
pub fn stdout_of(command: &mut Command) -> Vec<u8> {
    let out = command.output().unwrap();
    assert!(out.status.success(), "{}", out_text(&out));
    out.stdout
}

/// An HTTP reply.
#[derive(Debug)]
pub struct Reply {
    /// Status code.
    pub status: u16,
    /// Headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// Body bytes.
    pub body: Vec<u8>,
}

impl Reply {
    /// The first value of header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }

    /// The `message` of a JSON error body.
    pub fn message(&self) -> String {
        self.json()["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}

/// Sends one request with curl and returns the reply.
pub fn request(method: &str, url: &str, headers: &[(&str, &str)], body: Option<&[u8]>) -> Reply {
    let dir = tempfile::tempdir().unwrap();
    let head = dir.path().join("head");
    let out_body = dir.path().join("body");
    let mut cmd = Command::new("curl");
    // No test waits for ever on a server that stopped answering.
    cmd.args(["-sS", "--max-time", "60"])
        .arg("-D")
        .arg(&head)
        .arg("-o")
        .arg(&out_body)
        .args(["-w", "%{http_code}"]);
    if method == "HEAD" {
        cmd.arg("-I");
    } else {
        cmd.args(["-X", method]);
    }
    for (name, value) in headers {
        cmd.arg("-H").arg(format!("{name}: {value}"));
    }
    if let Some(body) = body {
        let input = dir.path().join("in");
        std::fs::write(&input, body).unwrap();
        cmd.arg("--data-binary")
            .arg(format!("@{}", input.display()));
    }
    let out = cmd.arg(url).output().unwrap();
    let status: u16 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("curl gave no status: {}", out_text(&out)));
    let headers = std::fs::read_to_string(&head)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Reply {
        status,
        headers,
        body: std::fs::read(&out_body).unwrap_or_default(),
    }
}

/// `POST` a JSON body, with a bearer token if given.
pub fn post_json(url: &str, token: Option<&str>, body: &Value) -> Reply {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("Content-Type", "application/json")];
    if let Some(auth) = &auth {
        headers.push(("Authorization", auth));
    }
    request("POST", url, &headers, Some(body.to_string().as_bytes()))
}

pub use sluice_testkit::{bytes, files_under};

/// The stored object files of a data directory.
pub fn stored_objects(data_dir: &Path) -> Vec<PathBuf> {
    files_under(&data_dir.join("objects").join("files"))
}

/// One JSON-RPC message POSTed to `/mcp` (stateless, as any client sends it).
pub fn mcp_post(base: &str, token: &str, message: &Value) -> Reply {
    let auth = format!("Bearer {token}");
    request(
        "POST",
        &format!("{base}/mcp"),
        &[
            ("Accept", "application/json, text/event-stream"),
            ("Content-Type", "application/json"),
            ("MCP-Protocol-Version", "2025-11-25"),
            ("Authorization", &auth),
        ],
        Some(message.to_string().as_bytes()),
    )
}

/// A `tools/call`: the JSON-RPC `result`, which must be there.
pub fn call_tool(base: &str, token: &str, tool: &str, arguments: Value) -> Value {
    mcp_call(
        base,
        token,
        "tools/call",
        serde_json::json!({"name": tool, "arguments": arguments}),
    )
}

/// Any MCP request: the whole JSON-RPC answer.
pub fn mcp_response(base: &str, token: &str, method: &str, params: Value) -> Value {
    let message =
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let reply = mcp_post(base, token, &message);
    assert_eq!(reply.status, 200, "{method}: {}", reply.text());
    reply.json()
}

/// Any MCP request: its `result`, which must be there.
pub fn mcp_call(base: &str, token: &str, method: &str, params: Value) -> Value {
    let json = mcp_response(base, token, method, params);
    assert!(json.get("result").is_some(), "{method}: {json}");
    json["result"].clone()
}

/// The text of a tool result that must be an error.
pub fn tool_error(result: &Value) -> String {
    assert_eq!(result["isError"], true, "expected a tool error: {result}");
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The `structuredContent` of a tool result that must have succeeded.
pub fn tool_ok(result: &Value) -> Value {
    assert_ne!(result["isError"], true, "expected success: {result}");
    result["structuredContent"].clone()
}

/// The names of the tools `tools/list` shows.
pub fn tool_names(base: &str, token: &str) -> Vec<String> {
    let message = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let reply = mcp_post(base, token, &message);
    assert_eq!(reply.status, 200, "{}", reply.text());
    reply.json()["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Opens a connection to `base` and sends `head` (request line and
/// headers, without the blank line) and then `body`, leaving the request
/// open: a client that stalls.
pub fn stalled_request(base: &str, head: &str, body: &[u8]) -> std::net::TcpStream {
    use std::io::Write as _;
    let addr = base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let host = format!("Host: {addr}\r\n");
    stream
        .write_all(format!("{head}\r\n{host}\r\n").as_bytes())
        .unwrap();
    stream.write_all(body).unwrap();
    stream
}

/// What arrived on `stream` within `wait` up to the end of a response's
/// head (or all that came before the server closed or `wait` ran out).
pub fn response_head(stream: &mut std::net::TcpStream, wait: std::time::Duration) -> String {
    use std::io::Read as _;
    stream.set_read_timeout(Some(wait)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// The status of the response arriving on `stream` within `wait`, or
/// `None` if none came (or the server closed the connection without one).
pub fn response_status(stream: &mut std::net::TcpStream, wait: std::time::Duration) -> Option<u16> {
    response_head(stream, wait)
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Whether the server closed `stream` within `wait` (a read returns end of
/// stream or a reset), answering or not.
pub fn closed_within(stream: &mut std::net::TcpStream, wait: std::time::Duration) -> bool {
    use std::io::Read as _;
    stream.set_read_timeout(Some(wait)).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) => {
                return !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                );
            }
        }
    }
}

/// A PUT link for a file of `size` bytes with digest `sha256`, minted with
/// the keys of `data_dir` (no record, no request: as many as a test needs).
/// The file id a short handle names (its tag checked with the keys of
/// `data_dir`).
pub fn handle_file_id(data_dir: &Path, handle: &str) -> sluice::FileId {
    let keys = sluice_runtime::local_keyring(&config_for(data_dir)).unwrap();
    let token = handle.strip_prefix(sluice::token::HANDLE_PREFIX).unwrap();
    sluice::token::Short::decode(
        &keys,
        token,
        sluice::token::ShortKind::Handle,
        sluice::time::now_unix(),
    )
    .unwrap()
    .file_id
}

pub fn put_link(data_dir: &Path, size: u64, sha256: sluice::Sha256) -> String {
    put_links(data_dir, 1, size, sha256).remove(0)
}

/// `n` upload links (paths) for files of mallory's, each recorded pending
/// in the data directory's records as an issue would (a link names its
/// file by id; the record says the rest).
pub fn put_links(data_dir: &Path, n: usize, size: u64, sha256: sluice::Sha256) -> Vec<String> {
    use sluice::records::FileRecords as _;
    let keys = sluice_runtime::local_keyring(&config_for(data_dir)).unwrap();
    let records = sluice::records::SqliteRecords::open(&data_dir.join("files.sqlite3")).unwrap();
    let expires_at = sluice::time::now_unix() + 600;
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    (0..n)
        .map(|_| {
            let file = sluice::FileMeta {
                id: sluice::FileId::random(),
                owner: "mallory".into(),
                filename: "f.bin".into(),
                content_type: "application/octet-stream".into(),
                size,
                sha256,
            };
            let record = sluice::records::FileRecord::issued(&file, expires_at);
            rt.block_on(records.put(&record)).unwrap();
            let link = sluice::token::Short::upload(file.id, expires_at);
            format!("/u/{}", link.encode(&keys))
        })
        .collect()
}

/// Replaces the object file at `path` by a FIFO no one writes to: a read of
/// it waits until [`release_fifo`].
pub fn stall_reads_of(path: &Path) {
    std::fs::remove_file(path).unwrap();
    let made = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success());
}

/// Releases a reader waiting on the FIFO at `path`, if any. The write end is
/// opened without blocking (O_NONBLOCK), so this returns whether or not
/// anyone was reading.
pub fn release_fifo(path: &Path) {
    use std::os::unix::fs::OpenOptionsExt as _;
    const O_NONBLOCK: i32 = 0o4000;
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(O_NONBLOCK)
        .open(path);
}

/// moto's server on loopback, every service it emulates on one port: its
/// S3 (which keeps object versions and tags, which s3s-fs does not), its
/// KMS. The child, killed by its caller, and its port.
pub fn start_moto() -> (Child, String) {
    let mut command = Command::new(crate::mcp_clients::root().join(".venv/bin/python"));
    command.arg(crate::mcp_clients::root().join("tests/clients/moto_server.py"));
    spawn_announcing(command)
}

/// Spawns `command` (stdout piped) and returns it with what its first line
/// announces after `listening on `; the rest of its output keeps being read,
/// since a closed pipe would fail the server's next write. A process that
/// announces nothing within 30 s is killed and started once more (seen here,
/// rarely: a Node process hung before it listened, under a loaded machine);
/// a second silence fails the test.
pub fn spawn_announcing(command: Command) -> (Child, String) {
    spawn_announcing_within(command, std::time::Duration::from_secs(30))
}

fn spawn_announcing_within(mut command: Command, wait: std::time::Duration) -> (Child, String) {
    for attempt in 1..=2 {
        let mut child = command
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{command:?} could not start ({e}): run `make test`"));
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let (first_line, first) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut first = String::new();
            let _ = stdout.read_line(&mut first);
            let _ = first_line.send(first);
            for _ in stdout.lines() {}
        });
        let Ok(first) = first.recv_timeout(wait) else {
            eprintln!("{command:?} announced nothing within {wait:?} (attempt {attempt})");
            let _ = child.kill();
            let _ = child.wait();
            continue;
        };
        let announced = first
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line: {first}"))
            .to_owned();
        return (child, announced);
    }
    panic!("{command:?} announced nothing twice");
}

/// Starts `command`, which prints "listening on <port>" first: the child,
/// its port, and every line it prints after, as they come.
pub fn spawn_listening(mut command: Command) -> (Child, u16, Arc<Mutex<Vec<String>>>) {
    let mut child = command.stdout(Stdio::piped()).spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let port = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {first}"))
        .parse()
        .unwrap();
    let printed = Arc::new(Mutex::new(Vec::new()));
    let kept = printed.clone();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            kept.lock().unwrap().push(line);
        }
    });
    (child, port, printed)
}

/// Asserts that a client's `checks` (from [`client_checks`]) include each
/// of `expected`.
#[track_caller]
pub fn assert_checks(checks: &[String], expected: &[&str]) {
    for e in expected {
        assert!(checks.iter().any(|c| c == e), "{e:?} missing: {checks:?}");
    }
}

/// The checks a client script reported in its JSON summary line; the
/// script must have succeeded.
pub fn client_checks(script: &str, out: &Output) -> Vec<String> {
    assert!(out.status.success(), "{script}: {}", out_text(out));
    let summary: Value = serde_json::from_slice(
        out.stdout
            .split(|b| *b == b'\n')
            .find(|l| l.starts_with(b"{"))
            .unwrap_or_default(),
    )
    .unwrap_or_else(|e| panic!("{script} printed no summary ({e}): {}", out_text(out)));
    summary["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_owned())
        .collect()
}

// AWS mode: servers on the emulators, and tokens they accept.

pub use sluice_testkit::emulators::Emulators;

/// Starts a sluice process on the AWS backends (bucket and table `name`),
/// with the (unused) data directory it must still be given.
pub fn aws_server(
    emulators: &Emulators,
    name: &str,
    extra: &[(&str, &str)],
) -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let env = emulators.env(name);
    let mut vars: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    vars.extend_from_slice(extra);
    (Server::start_in(dir.path(), &vars), dir)
}

pub fn provision(emulators: &Emulators, name: &str) {
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(emulators.provision(name));
}

/// A token for `user` with `scopes` (none: the default ones) that the
/// AWS-mode servers accept.
pub fn aws_token(emulators: &Emulators, user: &str, scopes: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let env = emulators.env("unused");
    let secret = env
        .iter()
        .find(|(k, _)| *k == "SLUICE_MASTER_SECRET")
        .unwrap()
        .1
        .clone();
    sluice_testkit::process::mint_token(
        Path::new(BIN),
        [
            ("SLUICE_DATA_DIR", dir.path().as_os_str()),
            ("SLUICE_MASTER_SECRET", std::ffi::OsStr::new(&secret)),
        ],
        user,
        scopes,
    )
    .unwrap()
}

/// Runs `n` requests at once (released together by a barrier) and returns
/// their statuses.
pub fn concurrently(n: usize, f: impl Fn(usize) -> u16 + Send + Sync + 'static) -> Vec<u16> {
    let barrier = Arc::new(Barrier::new(n));
    let f = Arc::new(f);
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let barrier = barrier.clone();
            let f = f.clone();
            std::thread::spawn(move || {
                barrier.wait();
                f(i)
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}
