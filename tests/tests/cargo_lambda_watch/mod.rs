//! `cargo lambda watch` for real (cargo-lambda from PyPI, pinned in
//! `tests/requirements.txt`), run as `docs/aws.md`'s "Develop with cargo lambda
//! watch" section runs it: `infra/dev-emulators.sh` on an env file made from
//! `infra/cargo-lambda.env` (only the ports and names changed, so tests can
//! run beside a developer's stack), the watch bound to loopback, a token
//! from `sluice token`, and then the 401 and its metadata, `POST /uploads`,
//! the official Python MCP client's whole flow (upload and download with
//! the returned lines, a spent link), the page URL, and Claude Code's
//! `claude mcp add` line connecting.

mod events;
mod importer;
mod readme;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::json;
use sluice_testkit::emulators::free_port;
use sluice_testkit::root;

use crate::util::{BIN, out_text, post_json, request, sh};

/// `KEY=VALUE` lines of an env file, comments and blanks left out.
fn read_env(path: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        // A quoted value is what is inside the quotes, as cargo lambda reads it.
        .map(|(k, v)| {
            let v = v
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(v);
            (k.to_owned(), v.to_owned())
        })
        .collect()
}

/// Kills a process group when dropped: the watch and the functions it runs,
/// or the emulators the script started.
struct Group(Vec<i32>);

impl Drop for Group {
    fn drop(&mut self) {
        let kill = |target: String| {
            let _ = Command::new("kill")
                .args(["--", &target])
                .stderr(Stdio::null())
                .status();
        };
        for pid in &self.0 {
            kill(format!("-{pid}"));
            kill(pid.to_string());
        }
    }
}

/// `PATH` with the venv's `bin` first: where `pip install cargo-lambda`
/// put `cargo-lambda`, so that `cargo lambda` finds it.
fn venv_path() -> String {
    let venv = root().join(".venv/bin");
    assert!(
        venv.join("cargo-lambda").exists(),
        "cargo-lambda is not installed: run `make test` (it installs tests/requirements.txt)"
    );
    format!(
        "{}:{}",
        venv.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Waits until `url` answers `status` (the first request to a function
/// compiles it: minutes on a cold machine).
fn wait_for_status(url: &str, status: u16, within: Duration, log: &Path, watch: &Mutex<Child>) {
    let deadline = Instant::now() + within;
    loop {
        // A watch that ended (its env file refused, say) will never answer.
        if let Some(ended) = watch.lock().unwrap().try_wait().unwrap() {
            panic!(
                "cargo lambda watch ended ({ended}) before {url} answered; it said:\n{}",
                std::fs::read_to_string(log.with_extension("err")).unwrap_or_default()
            );
        }
        let reply = Command::new("curl")
            .args([
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "--max-time",
                "600",
            ])
            .args(["-X", "POST", url])
            .output()
            .unwrap();
        if String::from_utf8_lossy(&reply.stdout).trim() == status.to_string() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{url} never answered {status}; the watch said:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The env file the README uses, with this test's ports and names, less
/// `drop` and plus `add`.
fn env_file(work: &Path, invoke: u16, drop: &[&str], add: &[(&str, String)]) -> PathBuf {
    let (s3, dynamodb) = (free_port(), free_port());
    let name = format!("sluice-watch-{invoke}");
    let mut text: String = std::fs::read_to_string(root().join("infra/cargo-lambda.env"))
        .unwrap()
        .replace("127.0.0.1:9000", &format!("127.0.0.1:{invoke}"))
        .replace("127.0.0.1:8014", &format!("127.0.0.1:{s3}"))
        .replace("127.0.0.1:5000", &format!("127.0.0.1:{dynamodb}"))
        .replace("=sluice-dev\n", &format!("={name}\n"))
        .lines()
        .filter(|l| !drop.iter().any(|d| l.starts_with(&format!("{d}="))))
        .map(|l| format!("{l}\n"))
        .collect();
    for (k, v) in add {
        text.push_str(&format!("{k}={v}\n"));
    }
    let path = work.join("cargo-lambda.env");
    std::fs::write(&path, text).unwrap();
    path
}

/// `cargo lambda watch` on `invoke`; with `own_cors`, without the CORS
/// layer it puts in front of every function by default (which allows any
/// origin, preflights included: API Gateway without a `CorsConfiguration`
/// does no such thing, so behind the template's routes the functions'
/// own CORS must answer).
fn start_watch(env: &Path, invoke: u16, log: &Path, own_cors: bool) -> Child {
    use std::os::unix::process::CommandExt as _;
    Command::new("cargo")
        .args(["lambda", "watch", "--env-file"])
        .arg(env)
        .args(own_cors.then_some("--disable-cors"))
        .args(["--invoke-address", "127.0.0.1", "--invoke-port"])
        .arg(invoke.to_string())
        .env("PATH", venv_path())
        .current_dir(root())
        .stdout(Stdio::from(std::fs::File::create(log).unwrap()))
        .stderr(Stdio::from(
            std::fs::File::create(log.with_extension("err")).unwrap(),
        ))
        .process_group(0)
        .spawn()
        .unwrap()
}

/// What `cargo lambda watch` answers (`text/plain`, status 500) for an
/// error of its own (its `ServerError`), such as a function's answer lost on
/// its way: never a function's answer, which comes as the function wrote it.
const EMULATOR_500: &str =
    r#"{"type":"https://httpstatuses.com/500","status":500,"title":"Internal Server Error"}"#;

/// The README's stack: the emulators from `infra/dev-emulators.sh` and the
/// three functions under `cargo lambda watch`; stopped on drop.
pub(crate) struct Stack {
    /// `http://127.0.0.1:<port>/lambda-url`.
    pub base: String,
    /// The env file's variables.
    pub env: BTreeMap<String, String>,
    log: PathBuf,
    /// The watch's invoke port.
    invoke: u16,
    watch: Mutex<Child>,
    _emulators: Group,
    pub work: tempfile::TempDir,
    /// The template's API in front of the functions, when there is one:
    /// its base URL, the stage's URL as deployed.
    pub api: Option<String>,
}

/// How the stack is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reached {
    /// As the README runs it: each function at its own prefix.
    ByPrefix,
    /// Through the template's HTTP API ([`crate::front`]), one origin for
    /// all three functions, as deployed; with `s3_cors`, S3 behind the
    /// template's CORS rule too (`browser::cors_front`), for a browser.
    ThroughApi { s3_cors: bool },
}

impl Stack {
    fn start(drop: &[&str], add: &[(&str, String)]) -> Self {
        Self::reached(Reached::ByPrefix, drop, add)
    }

    pub(crate) fn reached(reached: Reached, drop: &[&str], add: &[(&str, String)]) -> Self {
        let work = tempfile::tempdir().unwrap();
        let invoke = free_port();
        let mut front = (reached != Reached::ByPrefix).then(crate::front::ApiFront::bind);
        let (mut drop, mut add) = (drop.to_vec(), add.to_vec());
        if let Some(front) = &front {
            // One origin for every function: every URL sluice hands out is
            // the stage's, as with `PublicUrl` deployed.
            drop.extend([
                "SLUICE_PUBLIC_URL",
                "SLUICE_ISSUER_URL",
                "SLUICE_RESOLVER_URL",
                "SLUICE_MCP_URL",
            ]);
            add.push(("SLUICE_PUBLIC_URL", front.base.clone()));
        }
        let env_path = env_file(work.path(), invoke, &drop, &add);
        let pids = work.path().join("emulators.pids");
        let started = Command::new("bash")
            .arg(root().join("infra/dev-emulators.sh"))
            .arg(&env_path)
            .env("SLUICE_DEV_S3_ROOT", work.path().join("s3"))
            .env("SLUICE_DEV_PIDS", &pids)
            .output()
            .unwrap();
        let emulators = Group(
            std::fs::read_to_string(&pids)
                .unwrap_or_default()
                .lines()
                .filter_map(|l| l.trim().parse().ok())
                .collect(),
        );
        assert!(
            started.status.success(),
            "dev-emulators.sh: {}",
            out_text(&started)
        );
        assert!(String::from_utf8_lossy(&started.stdout).contains("emulators ready"));
        if reached == (Reached::ThroughApi { s3_cors: true }) {
            // The functions reach S3 through the stand-in for its CORS
            // rule; the emulators were started on the real port above.
            let text = std::fs::read_to_string(&env_path).unwrap();
            let s3 = read_env(&env_path)["SLUICE_S3_ENDPOINT_URL"].clone();
            let cors = crate::browser::cors_front(
                s3.trim_start_matches("http://").to_owned(),
                crate::browser::template_cors_headers(),
                Vec::new(),
            );
            std::fs::write(&env_path, text.replace(&s3, &cors)).unwrap();
        }
        let log = work.path().join("watch.log");
        let watch = start_watch(&env_path, invoke, &log, front.is_some());
        let base = format!("http://127.0.0.1:{invoke}/lambda-url");
        if let Some(front) = &mut front {
            front.serve(base.clone());
        }
        let stack = Stack {
            base,
            env: read_env(&env_path),
            log,
            invoke,
            watch: Mutex::new(watch),
            _emulators: emulators,
            work,
            api: front.map(|f| f.base),
        };
        stack.compiled(&stack.mcp_url(), 401);
        stack
    }

    /// Where `path` of `function` (`sluice-mcp`, ...) is reached.
    pub(crate) fn url(&self, function: &str, path: &str) -> String {
        match &self.api {
            Some(api) => format!("{api}{path}"),
            None => format!("{}/{function}{path}", self.base),
        }
    }

    pub(crate) fn mcp_url(&self) -> String {
        self.url("sluice-mcp", "/mcp")
    }

    /// `cargo lambda invoke <function> --data-file <data>` on this watch,
    /// as docs/aws.md says to hand a function an event of its own.
    pub(crate) fn invoke(&self, function: &str, data: &Path) -> std::process::Output {
        Command::new("cargo")
            .args(["lambda", "invoke", function, "--data-file"])
            .arg(data)
            .args(["--invoke-address", "127.0.0.1", "--invoke-port"])
            .arg(self.invoke.to_string())
            .env("PATH", venv_path())
            .current_dir(root())
            .output()
            .unwrap()
    }

    /// What the functions wrote so far: their standard output, then their
    /// standard error.
    pub(crate) fn output(&self) -> String {
        let mut output = std::fs::read_to_string(&self.log).unwrap_or_default();
        output += &std::fs::read_to_string(self.log.with_extension("err")).unwrap_or_default();
        output
    }

    /// The last lines the functions wrote (their logs), for a failure's
    /// message: what the server saw when a client's request failed.
    pub(crate) fn log_tail(&self) -> String {
        let output = self.output();
        let lines: Vec<&str> = output.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    /// Asserts that `out`, what `what` did against the functions, succeeded;
    /// else fails with its output and the functions' last log lines.
    pub(crate) fn assert_succeeded(&self, what: &str, out: &std::process::Output) {
        assert!(
            out.status.success(),
            "{what}: {}\nthe functions' log:\n{}",
            out_text(out),
            self.log_tail()
        );
    }

    /// Runs `client` (a program driving the functions, which prints an
    /// error response's headers and body) and asserts it succeeded; runs it
    /// once more only when it failed on trouble of the emulator's, not of
    /// a function's: `cargo lambda watch`'s own 500, its problem document
    /// [`EMULATOR_500`], which no function answers (it answers that when it
    /// loses a function's answer on its way), or the template's front
    /// failing to reach it ([`crate::front::UNREACHABLE`]). Full runs failed
    /// the OAuth flows twice on a 5xx no function wrote (the emulator's
    /// problem document once; CI's output cut the other's body); runs of
    /// them alone, never.
    fn assert_client_succeeds(
        &self,
        what: &str,
        client: impl Fn() -> std::process::Output,
    ) -> std::process::Output {
        let out = client();
        let said = String::from_utf8_lossy(&out.stderr);
        let emulator = [EMULATOR_500, crate::front::UNREACHABLE];
        if out.status.success() || !emulator.iter().any(|e| said.contains(e)) {
            self.assert_succeeded(what, &out);
            return out;
        }
        eprintln!(
            "{what}: failed on the emulator's trouble; once more. It said:\n{}\nthe functions' log:\n{}",
            out_text(&out),
            self.log_tail()
        );
        let out = client();
        self.assert_succeeded(what, &out);
        out
    }

    /// The official Python SDK's OAuth flow (`oauth.py`, RS256) against the
    /// mcp function, with `auth` as its authorization server: every check
    /// it must make, made.
    pub(crate) fn assert_oauth_py_passes(&self, auth: &crate::oauth::AuthServer) {
        let python = root().join(".venv/bin/python");
        let out = self.assert_client_succeeds("oauth.py", || {
            let (python, url) = (python.to_str().unwrap(), self.mcp_url());
            crate::oauth::oauth_client_output(python, "oauth.py", &url, auth, "RS256", &[])
        });
        let checks = crate::util::client_checks("oauth.py", &out);
        crate::oauth::assert_oauth_checks(&checks, "RS256");
    }

    /// Waits for `url` to answer `status`: the first request to each
    /// function compiles it.
    pub(crate) fn compiled(&self, url: &str, status: u16) {
        wait_for_status(
            url,
            status,
            Duration::from_secs(900),
            &self.log,
            &self.watch,
        );
    }
}

/// `sluice token` with the env file's variables, as the README says to mint one.
pub(crate) fn token(env: &BTreeMap<String, String>, user: &str, scopes: &[&str]) -> String {
    sluice_testkit::process::mint_token(std::path::Path::new(BIN), env, user, scopes).unwrap()
}

impl Drop for Stack {
    /// The watch and the functions it started go first, then the emulators.
    fn drop(&mut self) {
        let watch = self.watch.get_mut().unwrap();
        drop(Group(vec![watch.id() as i32]));
        let _ = watch.wait();
    }
}

/// The 401 and the metadata name the mcp function's URL.
pub(crate) fn check_discovery(stack: &Stack) {
    let mcp_url = stack.mcp_url();
    let refused = post_json(&mcp_url, None, &json!({}));
    let challenge = refused.header("www-authenticate").unwrap().to_owned();
    let metadata_url = stack.url("sluice-mcp", "/.well-known/oauth-protected-resource/mcp");
    assert!(
        challenge.contains(&format!("resource_metadata=\"{metadata_url}\"")),
        "{challenge}"
    );
    let metadata = request("GET", &metadata_url, &[], None);
    assert_eq!(metadata.status, 200, "{}", metadata.text());
    assert_eq!(metadata.json()["resource"], mcp_url.as_str());
}
