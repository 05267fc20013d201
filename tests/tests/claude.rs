//! Claude Code itself (npm `@anthropic-ai/claude-code`, pinned in
//! `tests/clients/package.json`) as a client of sluice: the `claude mcp add`
//! line sluice prints connects; without the header it fails at dynamic
//! client registration as docs/aws.md's troubleshooting entry says; and
//! `claude -p`, against a stand-in for the Messages API on loopback
//! (`tests/clients/stub-messages.mjs`), lists sluice's tools, calls
//! `request_upload`, runs the returned line with its Bash tool, and the
//! file is ready. Its MCP commands need no login; each test gives it a home
//! of its own.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};
use sluice_testkit::root;

use crate::util::{Server, out_text, spawn_announcing};

/// Where `npm ci` put Claude Code's command.
fn bin_dir() -> PathBuf {
    let dir = root().join("tests/clients/node_modules/.bin");
    assert!(
        dir.join("claude").exists(),
        "Claude Code is not installed: run `make test` (npm ci in tests/clients)"
    );
    dir
}

/// Claude Code with a home and a project directory of its own.
pub struct Claude {
    home: tempfile::TempDir,
    work: tempfile::TempDir,
}

impl Claude {
    pub fn new() -> Self {
        Self {
            home: tempfile::tempdir().unwrap(),
            work: tempfile::tempdir().unwrap(),
        }
    }

    /// The project directory it runs in.
    pub fn work(&self) -> &Path {
        self.work.path()
    }

    /// A shell line, as a person types it, with `claude` on the `PATH`.
    pub fn sh(&self, line: &str, env: &[(&str, &str)]) -> Output {
        let path = format!(
            "{}:{}",
            bin_dir().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        Command::new("sh")
            .args(["-c", line])
            .current_dir(self.work())
            .env("HOME", self.home.path())
            .env("PATH", path)
            // Nothing but the servers the test runs.
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env_remove("ANTHROPIC_API_KEY")
            .envs(env.iter().copied())
            .output()
            .unwrap()
    }

    /// `claude mcp add` with the bearer token as a header.
    pub fn add_with_header(&self, url: &str, token: &str) {
        let out = self.sh(
            &format!("claude mcp add --transport http sluice {url} --header \"Authorization: Bearer {token}\""),
            &[],
        );
        assert!(out.status.success(), "{}", out_text(&out));
    }

    /// What `claude mcp list` says.
    pub fn list(&self) -> String {
        let out = self.sh("timeout 120 claude mcp list", &[]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `claude mcp login sluice` in a terminal (tmux: it needs one), signing
    /// in at the authorization server by following the URL it prints (the
    /// test server completes its login and consent without a person), as a
    /// browser would; returns what the terminal showed.
    pub fn login(&self) -> String {
        let socket = format!(
            "sluice-test-{}-{}",
            std::process::id(),
            self.work().display().to_string().len()
        );
        let tmux = |args: &[&str]| {
            Command::new("tmux")
                .args(["-L", &socket])
                .args(args)
                .output()
                .unwrap_or_else(|e| panic!("tmux could not run ({e}): `make test` installs it"))
        };
        let path = format!(
            "{}:{}",
            bin_dir().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let line = format!(
            "cd '{}' && env HOME='{}' PATH='{path}' BROWSER=true CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
             DISABLE_AUTOUPDATER=1 claude mcp login sluice; sleep 600",
            self.work().display(),
            self.home.path().display()
        );
        let started = tmux(&[
            "new-session",
            "-d",
            "-s",
            "login",
            "-x",
            "400",
            "-y",
            "50",
            &line,
        ]);
        assert!(started.status.success(), "{}", out_text(&started));
        let pane = || {
            String::from_utf8_lossy(&tmux(&["capture-pane", "-p", "-J", "-t", "login"]).stdout)
                .into_owned()
        };
        let wait_for = |what: &dyn Fn(&str) -> bool| {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
            loop {
                let text = pane();
                if what(&text) {
                    return text;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "the terminal showed:\n{text}"
                );
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
        };
        let shown = wait_for(&|t| t.contains("/auth?"));
        let url = shown
            .split_whitespace()
            .find(|w| w.starts_with("http") && w.contains("/auth?"))
            .unwrap()
            .to_owned();
        let jar = self.work().join("cookies");
        let signed_in = Command::new("curl")
            .args([
                "-sS",
                "-L",
                "--max-time",
                "60",
                "-o",
                "/dev/null",
                "-w",
                "%{url_effective}",
            ])
            .arg("-c")
            .arg(&jar)
            .arg("-b")
            .arg(&jar)
            .arg(&url)
            .output()
            .unwrap();
        let landed = String::from_utf8_lossy(&signed_in.stdout).into_owned();
        let done = wait_for(&|t| t.contains("Authenticated with") || t.contains("rror"));
        let _ = tmux(&["kill-server"]);
        assert!(
            landed.contains("/callback?code="),
            "{landed}: {}",
            out_text(&signed_in)
        );
        format!("{shown}\n{done}")
    }

    /// A person's sign-in with an authorization server: `claude mcp add`
    /// without a header, `claude mcp list` (it says sluice needs signing in;
    /// Claude Code also learns the metadata's URL from the 401), and
    /// `claude mcp login`, which registers, runs PKCE for the MCP URL as its
    /// resource, and then connects.
    pub fn signs_in_and_connects(&self, mcp_url: &str) {
        let out = self.sh(
            &format!("claude mcp add --transport http sluice {mcp_url}"),
            &[],
        );
        assert!(out.status.success(), "{}", out_text(&out));
        let listed = self.list();
        assert!(listed.contains("Needs authentication"), "{listed}");
        let shown = self.login();
        assert!(shown.contains("Authenticated with \"sluice\""), "{shown}");
        let resource = format!("resource={}", urlencode(mcp_url));
        assert!(
            shown.contains(&resource),
            "the sign-in names the MCP URL as its resource: {shown}"
        );
        assert!(shown.contains("code_challenge_method=S256"), "{shown}");
        assert!(self.connected(), "{}", self.list());
    }

    /// Whether `claude mcp list` says sluice is connected (asked up to
    /// three times: its health check gives up quickly, and a function under
    /// `cargo lambda watch` may be restarting).
    pub fn connected(&self) -> bool {
        (0..3).any(|attempt| {
            if attempt > 0 {
                std::thread::sleep(std::time::Duration::from_secs(2));
            }
            self.list()
                .lines()
                .any(|l| l.starts_with("sluice:") && l.contains("✔ Connected"))
        })
    }
}

#[test]
fn the_claude_mcp_add_line_sluice_prints_connects() {
    let (server, _dir) = Server::start();
    let line = server.printed_after("connect Claude Code:");
    assert!(
        line.starts_with("claude mcp add --transport http sluice "),
        "{line}"
    );
    let claude = Claude::new();
    let out = claude.sh(&line, &[]);
    assert!(out.status.success(), "{}", out_text(&out));
    assert!(claude.connected(), "{}", claude.list());
}

/// With an authorization server (oidc-provider), `claude mcp login`
/// registers itself, runs PKCE for the MCP URL as its resource, and then
/// connects.
#[test]
fn claude_mcp_login_signs_in_at_the_authorization_server_and_connects() {
    let auth = crate::oauth::AuthServer::start("RS256");
    let env: Vec<(&str, String)> = auth.env();
    let vars: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_in(dir.path(), &vars);
    Claude::new().signs_in_and_connects(&format!("{}/mcp", server.base));
}

/// `application/x-www-form-urlencoded` as Claude Code writes a query value.
pub fn urlencode(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '-' | '_' | '.' | '~' => c.to_string(),
            other => format!("%{:02X}", other as u32),
        })
        .collect()
}

#[test]
fn without_the_header_claude_code_stops_at_client_registration() {
    let (server, _dir) = Server::start();
    let claude = Claude::new();
    let out = claude.sh(
        &format!("claude mcp add --transport http sluice {}/mcp", server.base),
        &[],
    );
    assert!(out.status.success(), "{}", out_text(&out));
    let list = claude.list();
    assert!(!claude.connected(), "{list}");
    // docs/aws.md's troubleshooting entry quotes this.
    assert!(
        list.contains("Dynamic Client Registration rejected (HTTP 404)"),
        "{list}"
    );
}

#[test]
fn claude_p_uploads_a_file_with_the_line_request_upload_returns() {
    let (server, _dir) = Server::start();
    let claude = Claude::new();
    let data = b"quarterly figures, from Claude Code\n";
    std::fs::write(claude.work().join("report.txt"), data).unwrap();
    let log = claude.work().join("stub.log");
    let mut stub = Command::new("node");
    stub.arg(root().join("tests/clients/stub-messages.mjs"))
        .args([
            "--filename",
            "report.txt",
            "--size",
            &data.len().to_string(),
        ])
        .args(["--sha256", &sluice::Sha256::of(data).to_hex()])
        .arg("--log")
        .arg(&log);
    let (mut stub, messages_url) = spawn_announcing(stub);
    let token = server.token("alice", &["files:read", "files:write"]);
    claude.add_with_header(&format!("{}/mcp", server.base), &token);
    let out = claude.sh(
        "timeout 300 claude -p 'Upload report.txt to sluice' \
         --allowedTools 'Bash mcp__sluice__request_upload'",
        &[
            ("ANTHROPIC_BASE_URL", &messages_url),
            ("ANTHROPIC_API_KEY", "sk-ant-stub-not-a-key"),
            // Otherwise Claude Code keeps MCP tools behind its tool search.
            ("ENABLE_TOOL_SEARCH", "false"),
        ],
    );
    let _ = stub.kill();
    let _ = stub.wait();
    assert!(out.status.success(), "{}", out_text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("The file is uploaded."),
        "{}",
        out_text(&out)
    );

    let requests: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let tools: Vec<&str> = requests[0]["body"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for tool in ["request_upload", "get_download_url", "list_files"] {
        assert!(
            tools.contains(&format!("mcp__sluice__{tool}").as_str()),
            "{tools:?}"
        );
    }
    let page = crate::util::call_tool(&server.base, &token, "list_files", json!({}));
    let files = &page["structuredContent"]["files"];
    assert_eq!(files[0]["filename"], "report.txt", "{page}");
    assert_eq!(files[0]["state"], "ready", "{page}");
    assert_eq!(files[0]["sha256"], sluice::Sha256::of(data).to_hex());
}
