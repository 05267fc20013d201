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

/// A terminal (tmux, on a socket of its own) running one line; killed on
/// drop.
pub struct Terminal {
    socket: String,
}

static TERMINALS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl Terminal {
    fn start(line: &str) -> Self {
        let n = TERMINALS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let terminal = Self {
            socket: format!("sluice-test-{}-{n}", std::process::id()),
        };
        let started = terminal.tmux(&[
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            "400",
            "-y",
            "50",
            line,
        ]);
        assert!(started.status.success(), "{}", out_text(&started));
        terminal
    }

    fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("tmux could not run ({e}): `make test` installs it"))
    }

    /// What the terminal shows, wrapped lines joined.
    pub fn pane(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-J", "-t", "t"]).stdout)
            .into_owned()
    }

    /// What it shows once `what` holds of it (within two minutes).
    pub fn wait_for(&self, what: &dyn Fn(&str) -> bool) -> String {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        loop {
            let text = self.pane();
            if what(&text) {
                return text;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the terminal showed:\n{text}"
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }

    /// Presses `keys` (tmux key names), one at a time.
    pub fn keys(&self, keys: &[&str]) {
        for key in keys {
            let sent = self.tmux(&["send-keys", "-t", "t", key]);
            assert!(sent.status.success(), "{}", out_text(&sent));
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}

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
        let terminal = self.terminal("BROWSER=true", "claude mcp login sluice");
        let shown = terminal.wait_for(&|t| t.contains("/auth?"));
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
        let done = terminal.wait_for(&|t| t.contains("Authenticated with") || t.contains("rror"));
        drop(terminal);
        assert!(
            landed.contains("/callback?code="),
            "{landed}: {}",
            out_text(&signed_in)
        );
        format!("{shown}\n{done}")
    }

    /// `line` run in a terminal of its own (tmux, 400 columns), with
    /// `env` (`NAME=value …`), `claude` on the `PATH`, this home and
    /// project directory.
    pub fn terminal(&self, env: &str, line: &str) -> Terminal {
        let path = format!(
            "{}:{}",
            bin_dir().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        Terminal::start(&format!(
            "cd '{}' && env HOME='{}' PATH='{path}' CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
             DISABLE_AUTOUPDATER=1 {env} {line}; sleep 600",
            self.work().display(),
            self.home.path().display()
        ))
    }

    /// Claude Code's first-run steps taken, as a person takes them once:
    /// onboarding done, this project trusted, the stand-in's key approved,
    /// so that an interactive session starts at its prompt.
    pub fn onboarded(&self, api_key: &str) {
        let file = self.home.path().join(".claude.json");
        let mut config: Value = std::fs::read_to_string(&file)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_else(|| json!({}));
        config["hasCompletedOnboarding"] = json!(true);
        config["theme"] = json!("dark");
        let work = self.work().display().to_string();
        config["projects"][&work]["hasTrustDialogAccepted"] = json!(true);
        let tail = &api_key[api_key.len().saturating_sub(20)..];
        config["customApiKeyResponses"] = json!({"approved": [tail], "rejected": []});
        std::fs::write(&file, config.to_string()).unwrap();
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

/// URL elicitation with Claude Code itself, in a terminal: the stand-in
/// model asks for the person's file (request_browser_upload); Claude Code,
/// which declares URL elicitation on 2026-07-28, shows the person the page
/// in its own dialog ("wants to open a URL"); the person uploads there (the
/// page's own requests); "I'm done, continue" makes Claude Code call again
/// with the state, and the model gets the handle, which downloads the file.
#[test]
fn claude_code_shows_the_upload_page_itself_and_the_model_gets_the_handle() {
    let (server, _dir) = Server::start();
    let claude = Claude::new();
    let token = server.token("alice", &["files:read", "files:write"]);
    claude.add_with_header(&format!("{}/mcp", server.base), &token);
    let key = "sk-ant-stub-not-a-key-elicitation";
    claude.onboarded(key);
    let mut stub = Command::new("node");
    stub.arg(root().join("tests/clients/stub-messages.mjs"))
        .args(["--person", "--filename", "notes.txt"]);
    let (mut stub, messages_url) = spawn_announcing(stub);
    let terminal = claude.terminal(
        &format!(
            "ANTHROPIC_BASE_URL={messages_url} ANTHROPIC_API_KEY={key} ENABLE_TOOL_SEARCH=false"
        ),
        "claude --allowedTools mcp__sluice__request_browser_upload",
    );
    terminal.wait_for(&|t| t.contains("❯"));
    // The interactive session connects to its MCP servers while it takes
    // the first prompt: a prompt sent before sluice's tools are there gets
    // the stand-in's "ok" (it was offered no tool to call), and is sent
    // again.
    let asked = |t: &str| t.contains("wants to open a URL") && t.contains("/browser/");
    let mut shown = String::new();
    for attempt in 1..=5 {
        terminal.keys(&["Get the file from me", "Enter"]);
        shown = terminal.wait_for(&|t| asked(t) || t.matches("● ok").count() >= attempt);
        if asked(&shown) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    assert!(asked(&shown), "{shown}");
    // The URL, as the dialog draws it: after "│ ", wrapped over lines.
    let at = shown.find("│ http").unwrap_or_else(|| panic!("{shown}"));
    let page: String = shown[at..]
        .lines()
        .map(str::trim)
        .take_while(|l| l.starts_with('│'))
        .map(|l| l.trim_start_matches('│').trim())
        .collect();
    assert!(
        page.starts_with(&format!("{}/browser/", server.base)),
        "{page}"
    );

    // The person uploads on the page, by the page's own requests.
    let data = crate::util::bytes(40_000, 51);
    let started = crate::util::post_json(
        &format!("{page}/start"),
        None,
        &json!({"filename": "notes.txt", "size": data.len(), "sha256": sluice::Sha256::of(&data).to_hex()}),
    );
    assert_eq!(started.status, 200, "{}", started.text());
    let target = started.json()["upload"].clone();
    let headers: Vec<(String, String)> = target["headers"]
        .as_object()
        .map(|h| {
            h.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
                .collect()
        })
        .unwrap_or_default();
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let put = crate::util::request(
        "PUT",
        target["url"].as_str().unwrap(),
        &headers,
        Some(&data),
    );
    assert!(put.status < 300, "{}", put.text());

    // "I'm done, continue".
    terminal.keys(&["Right", "Enter"]);
    let said = terminal.wait_for(&|t| {
        t.contains("The person uploaded it: $uploadedFile:") || t.contains("No handle")
    });
    let _ = stub.kill();
    let _ = stub.wait();
    let handle = said
        .split_whitespace()
        .find(|w| w.starts_with("$uploadedFile:"))
        .unwrap_or_else(|| panic!("no handle: {said}"))
        .to_owned();
    drop(terminal);
    let link = server.download_url(&token, &handle);
    assert_eq!(crate::util::request("GET", &link, &[], None).body, data);
}
