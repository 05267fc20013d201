//! `cargo lambda watch` for real (cargo-lambda from PyPI, pinned in
//! `tests/requirements.txt`), run as `docs/aws.md`'s "Develop with cargo lambda
//! watch" section runs it: `infra/dev-emulators.sh` on an env file made from
//! `infra/cargo-lambda.env` (only the ports and names changed, so tests can
//! run beside a developer's stack), the watch bound to loopback, a token
//! from `sluice token`, and then the 401 and its metadata, `POST /uploads`,
//! the official Python MCP client's whole flow (upload and download with
//! the returned lines, a spent link), the page URL, and Claude Code's
//! `claude mcp add` line connecting.

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

#[test]
fn the_readme_watch_steps_work_with_the_real_cargo_lambda_watch() {
    let stack = Stack::start(&[], &[]);
    let (base, env, mcp_url) = (&stack.base, &stack.env, stack.mcp_url());
    check_discovery(&stack);

    // A program's upload: the table has the indexes the records need.
    let carol = token(env, "carol", &["files:read", "files:write"]);
    let up = stack.work.path().join("up");
    std::fs::create_dir(&up).unwrap();
    let data = sluice_testkit::bytes(70_000, 7);
    std::fs::write(up.join("data.bin"), &data).unwrap();
    stack.compiled(&format!("{base}/sluice-issuer/uploads"), 401);
    let ticket = post_json(
        &format!("{base}/sluice-issuer/uploads"),
        Some(&carol),
        &json!({"filename": "data.bin", "size": data.len(), "sha256": sluice::Sha256::of(&data).to_hex()}),
    );
    assert_eq!(ticket.status, 200, "{}", ticket.text());
    let uploaded = sh(ticket.json()["command"].as_str().unwrap(), &up);
    assert!(uploaded.status.success(), "{}", out_text(&uploaded));

    // A download link from the resolver's prefix: it redirects once to a
    // presigned GET of s3s-fs; the same line run again finds it spent.
    stack.compiled(&format!("{base}/sluice-resolver/resolve"), 401);
    let resolved = post_json(
        &format!("{base}/sluice-resolver/resolve"),
        Some(&carol),
        &json!({"handle": ticket.json()["handle"]}),
    );
    assert_eq!(resolved.status, 200, "{}", resolved.text());
    let line = resolved.json()["command"].as_str().unwrap().to_owned();
    assert!(
        line.contains(&format!("{base}/sluice-resolver/l/")),
        "{line}"
    );
    let down = stack.work.path().join("down");
    std::fs::create_dir(&down).unwrap();
    let fetched = sh(&line, &down);
    assert!(fetched.status.success(), "{}", out_text(&fetched));
    assert_eq!(std::fs::read(down.join("data.bin")).unwrap(), data);
    let again = sh(&line, &down);
    assert!(!again.status.success(), "a spent link works once");
    assert!(out_text(&again).contains("404"), "{}", out_text(&again));

    // The official Python client's whole flow, links to the resolver's prefix.
    let alice = token(env, "alice", &["files:read", "files:write"]);
    let client = stack.work.path().join("client");
    let out = Command::new(root().join(".venv/bin/python"))
        .arg(root().join("tests/clients/flow.py"))
        .args(["--url", &mcp_url, "--token", &alice])
        .args(["--readonly-token", &token(env, "alice", &["files:read"])])
        .args([
            "--other-token",
            &token(env, "bob", &["files:read", "files:write"]),
        ])
        .arg("--workdir")
        .arg(&client)
        .args(["--size", "100000"])
        // The whole MCP message (text, structuredContent, envelope) within
        // the flow's default 4 KiB in aws mode too: a presigned URL no
        // longer rides in it (its text alone is 4,133 bytes before).
        .current_dir(root().join("tests/clients"))
        .output()
        .unwrap();
    // On a failure, what the watched functions saw beside what the client did.
    stack.assert_succeeded("flow.py", &out);
    let checks = crate::util::client_checks("flow.py", &out);
    for expected in [
        "request_upload + curl",
        "get_download_url + curl, bytes identical",
        "401 and 403",
    ] {
        assert!(
            checks.iter().any(|c| c == expected),
            "{expected:?}: {checks:?}"
        );
    }

    // The documented lines: a token minted as they say, and the Claude Code
    // line they give, with this test's env file and port.
    let readme = std::fs::read_to_string(root().join("docs/aws.md")).unwrap();
    let section = &readme[readme.find("## Develop with cargo lambda watch").unwrap()..];
    let token_line = section.lines().find(|l| l.starts_with("TOKEN=$(")).unwrap();
    let env_path = stack.work.path().join("cargo-lambda.env");
    let minted = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{}\nprintf %s \"$TOKEN\"",
            token_line.replace("infra/cargo-lambda.env", &env_path.display().to_string())
        ))
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        minted.status.success(),
        "{token_line}: {}",
        out_text(&minted)
    );
    let readme_token = String::from_utf8(minted.stdout).unwrap();
    let add_at = section.find("claude mcp add").unwrap();
    let add_line = section[add_at
        ..section[add_at..]
            .find("\n```")
            .map_or(section.len(), |e| add_at + e)]
        .lines()
        .take_while(|l| !l.starts_with("claude mcp list"))
        .collect::<Vec<_>>()
        .join("\n")
        .replace("http://127.0.0.1:9000/lambda-url", base);
    let claude = crate::claude::Claude::new();
    let out = claude.sh(&add_line, &[("TOKEN", &readme_token)]);
    assert!(out.status.success(), "{add_line}: {}", out_text(&out));
    assert!(claude.connected(), "{add_line}: {}", claude.list());

    // The page URL follows the issuer, and answers.
    let page = crate::util::call_tool(
        &format!("{base}/sluice-mcp"),
        &alice,
        "request_browser_upload",
        json!({}),
    );
    let page_url = page["structuredContent"]["page_url"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        page_url.starts_with(&format!("{base}/sluice-issuer/browser/")),
        "{page_url}"
    );
    assert_eq!(request("GET", &page_url, &[], None).status, 200);

    // What the functions counted, as Embedded Metric Format lines in their
    // output (CloudWatch Logs reads them there), each checked as CloudWatch
    // checks a document; their sums cover what this test did.
    let docs = emf_documents(&stack.output());
    let sum = |metric: &str, dims: &[(&str, &str)]| -> f64 {
        docs.iter()
            .filter(|d| dims.iter().all(|(k, v)| d[*k] == *v))
            .filter_map(|d| match &d[metric] {
                serde_json::Value::Number(n) => n.as_f64(),
                serde_json::Value::Array(a) => Some(a.len() as f64),
                _ => None,
            })
            .sum()
    };
    let files = |change| sum("sluice_files_total", &[("change", change)]);
    assert!(files("issued") >= 2.0, "{docs:#?}");
    assert!(files("downloaded") >= 2.0, "{docs:#?}");
    assert!(
        sum("sluice_file_bytes_total", &[("direction", "down")]) >= data.len() as f64,
        "{docs:#?}"
    );
    assert!(
        sum(
            "sluice_tool_calls_total",
            &[("tool", "request_upload"), ("outcome", "ok")]
        ) >= 1.0,
        "{docs:#?}"
    );
    assert!(
        sum("sluice_tool_call_seconds", &[("tool", "request_upload")]) >= 1.0,
        "{docs:#?}"
    );
    let downloads = docs.iter().find(|d| d["change"] == "downloaded").unwrap();
    assert!(
        downloads["Function"]
            .as_str()
            .is_some_and(|f| f.contains("resolver")),
        "the resolver counts downloads, under its own name: {downloads}"
    );
}

/// The Embedded Metric Format documents in `output`, each checked as
/// CloudWatch Logs checks one before it makes metrics of it (the EMF
/// specification): `_aws.Timestamp` in milliseconds; each directive's
/// namespace, dimension sets (each name a string member of the document,
/// at most 30) and metrics (each a member holding a number or at most 100
/// numbers, a unit CloudWatch knows).
fn emf_documents(output: &str) -> Vec<serde_json::Value> {
    const UNITS: &[&str] = &[
        "Seconds",
        "Microseconds",
        "Milliseconds",
        "Bytes",
        "Kilobytes",
        "Megabytes",
        "Gigabytes",
        "Terabytes",
        "Bits",
        "Kilobits",
        "Megabits",
        "Gigabits",
        "Terabits",
        "Percent",
        "Count",
        "Bytes/Second",
        "Kilobytes/Second",
        "Megabytes/Second",
        "Gigabytes/Second",
        "Terabytes/Second",
        "Bits/Second",
        "Kilobits/Second",
        "Megabits/Second",
        "Gigabits/Second",
        "Terabits/Second",
        "Count/Second",
        "None",
    ];
    let mut docs = Vec::new();
    for line in output.lines().filter(|l| l.starts_with("{\"_aws\"")) {
        let doc: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        let aws = &doc["_aws"];
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let at = aws["Timestamp"]
            .as_u64()
            .unwrap_or_else(|| panic!("Timestamp: {line}"));
        assert!(
            at <= now && now - at < 3_600_000,
            "a Timestamp in ms: {line}"
        );
        let directives = aws["CloudWatchMetrics"].as_array().unwrap();
        assert!(!directives.is_empty(), "{line}");
        for d in directives {
            let ns = d["Namespace"].as_str().unwrap();
            assert!(!ns.is_empty() && ns.len() <= 1024, "{line}");
            for set in d["Dimensions"].as_array().unwrap() {
                let set = set.as_array().unwrap();
                assert!(set.len() <= 30, "{line}");
                for name in set {
                    assert!(
                        doc[name.as_str().unwrap()].is_string(),
                        "dimension {name}: {line}"
                    );
                }
            }
            let metrics = d["Metrics"].as_array().unwrap();
            assert!(!metrics.is_empty() && metrics.len() <= 100, "{line}");
            for m in metrics {
                let name = m["Name"].as_str().unwrap();
                match &doc[name] {
                    serde_json::Value::Number(_) => {}
                    serde_json::Value::Array(values) => assert!(
                        values.len() <= 100 && values.iter().all(|v| v.is_number()),
                        "{name}: {line}"
                    ),
                    other => panic!("metric {name} holds {other}: {line}"),
                }
                if let Some(unit) = m.get("Unit") {
                    assert!(UNITS.contains(&unit.as_str().unwrap()), "{unit}: {line}");
                }
            }
        }
        docs.push(doc);
    }
    assert!(
        !docs.is_empty(),
        "no EMF line in the functions' output:\n{output}"
    );
    docs
}

/// With an authorization server instead of development tokens: the Python
/// SDK's own OAuth flow (discovery from the mcp function's prefix, dynamic
/// registration, PKCE, RFC 8707), and Claude Code's `claude mcp login`.
/// Imports on the AWS backends: the MCP and issuer functions check the
/// request and start the importer function, an asynchronous invocation
/// through the Lambda API (here cargo lambda watch's, as
/// `infra/cargo-lambda.env` says), which fetches the file from a server on
/// loopback into s3s-fs and writes the outcome to the import's record,
/// where the function that was asked reads it; the file then reaches an
/// action's File field by its handle, and a file a host hands over reaches
/// it through the importer too. Where the emulator differs
/// from AWS: cargo lambda watch answers an `Event` invocation only once the
/// function has ended (Lambda answers 202 at once and runs it after), so
/// the asking function finds the import ended at its first look.
#[test]
fn imports_run_in_the_importer_function_under_the_real_cargo_lambda_watch() {
    let data = sluice_testkit::bytes(300_000, 9);
    let origin = crate::imports::Origin::start(crate::imports::routes, data.clone());
    // An action whose File field takes the imported file (the actions
    // tests' upstream, which says what it received).
    let upstream = crate::actions::Upstream::start();
    let catalog_dir = tempfile::tempdir().unwrap();
    let catalog = catalog_dir.path().join("actions.toml");
    std::fs::write(&catalog, crate::actions::catalog(&upstream.url)).unwrap();
    let stack = Stack::start(
        &[],
        &[
            ("SLUICE_IMPORT_ALLOW_LOOPBACK", "true".into()),
            ("SLUICE_IMPORT_PORTS", origin.port.to_string()),
            ("SLUICE_ACTIONS_FILE", catalog.display().to_string()),
        ],
    );
    let carol = token(&stack.env, "carol", &["files:read", "files:write"]);
    // The importer is compiled by its first invocation: a job of no
    // import, refused, before any import needs it.
    let nothing = stack.work.path().join("no-job.json");
    std::fs::write(
        &nothing,
        json!({"owner": "nobody", "file_id": "AAAAAAAAAAAAAAAAAAAAAA", "request": {"url": "http://127.0.0.1/"}, "declared": false}).to_string(),
    )
    .unwrap();
    let refused = stack.invoke("sluice-importer", &nothing);
    assert!(
        String::from_utf8_lossy(&refused.stdout).contains("no file")
            || String::from_utf8_lossy(&refused.stderr).contains("no file"),
        "{}",
        out_text(&refused)
    );

    // Declared, through the issuer's REST route.
    let imports = stack.url("sluice-issuer", "/imports");
    stack.compiled(&imports, 401);
    let declared = post_json(
        &imports,
        Some(&carol),
        &json!({"url": origin.url("/data.bin"), "size": data.len(), "sha256": sluice::Sha256::of(&data).to_hex()}),
    );
    assert_eq!(declared.status, 200, "{}", declared.text());
    let declared = declared.json();
    assert_eq!(
        declared["state"],
        "ready",
        "{declared}\n{}",
        stack.log_tail()
    );
    assert!(
        stack.output().contains("import stored"),
        "the importer function stored it:\n{}",
        stack.log_tail()
    );

    // Undeclared, through the MCP function's tool: pinned to what arrived,
    // its name from the server's Content-Disposition made plain.
    let mcp = stack.url("sluice-mcp", "");
    let named = crate::util::tool_ok(&crate::util::call_tool(
        &mcp,
        &carol,
        "import_file",
        json!({"url": origin.url("/named")}),
    ));
    assert_eq!(named["state"], "ready", "{named}");
    assert_eq!(named["filename"], "evil name.sh");
    assert_eq!(named["sha256"], sluice::Sha256::of(&data).to_hex());

    // Rejected: its reason, read back by the status tool.
    let missing = crate::util::tool_ok(&crate::util::call_tool(
        &mcp,
        &carol,
        "import_file",
        json!({"url": origin.url("/missing")}),
    ));
    assert_eq!(missing["state"], "rejected", "{missing}");
    let status = crate::util::tool_ok(&crate::util::call_tool(
        &mcp,
        &carol,
        "get_import_status",
        json!({"file_id": missing["file_id"]}),
    ));
    assert!(
        status["reason"].as_str().unwrap().contains("HTTP 404"),
        "{status}"
    );

    // It reaches an action's File field, by its handle; and a file a host
    // hands over (`{download_url, file_id}`) is imported through the
    // importer on the action's way in.
    let runs = token(
        &stack.env,
        "carol",
        &["files:read", "files:write", "actions:execute"],
    );
    let sha = sluice::Sha256::of(&data).to_hex();
    for document in [
        declared["handle"].clone(),
        json!({"download_url": origin.url("/data.bin"), "file_id": "file_handed", "file_name": "handed.bin"}),
    ] {
        let echoed = crate::util::tool_ok(&crate::util::call_tool(
            &mcp,
            &runs,
            "action_echo",
            json!({"document": document}),
        ));
        let file = &echoed["fields"]["document"]["file"];
        assert_eq!(file["sha256"], sha, "{echoed}");
        assert_eq!(file["size"], data.len(), "{echoed}");
    }

    // The imported file comes back byte for byte through the resolver's
    // line (a presigned GET of s3s-fs).
    let resolved = post_json(
        &stack.url("sluice-resolver", "/resolve"),
        Some(&carol),
        &json!({"handle": declared["handle"]}),
    );
    assert_eq!(resolved.status, 200, "{}", resolved.text());
    let down = stack.work.path().join("imported");
    std::fs::create_dir(&down).unwrap();
    let fetched = sh(resolved.json()["command"].as_str().unwrap(), &down);
    assert!(fetched.status.success(), "{}", out_text(&fetched));
    let saved = std::fs::read_dir(&down)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    assert!(std::fs::read(saved).unwrap() == data, "the bytes served");
}

#[test]
fn oauth_works_under_the_real_cargo_lambda_watch() {
    let auth = crate::oauth::AuthServer::start("RS256");
    let add: Vec<(&str, String)> = auth.env();
    let stack = Stack::start(&["SLUICE_DEV_TOKENS"], &add);
    check_discovery(&stack);
    stack.assert_oauth_py_passes(&auth);

    // `claude mcp list` before `claude mcp login` matters here: login alone
    // looks for the metadata at the origin's root, which cargo lambda watch
    // cannot route (every path there starts with a function's prefix), and
    // then fails at client registration (`docs/aws.md`, Claude Code troubleshooting).
    crate::claude::Claude::new().signs_in_and_connects(&stack.mcp_url());
}
