//! The official MCP clients (Python and TypeScript SDKs) against the real
//! server: connect, list tools, upload with the returned curl line, download
//! with the returned curl line, bytes identical; the 401, 403 and other-user
//! paths; and no MCP message of a 1 MiB file's flow over 4 KiB.
//!
//! The clients are installed by `make test` (a venv and `npm ci`).

use std::process::Command;

use crate::util::Server;

pub use sluice_testkit::root;

fn run_client(program: &str, script: &str) {
    let (server, _dir) = Server::start();
    let work = tempfile::tempdir().unwrap();
    let out = Command::new(program)
        .arg(root().join("tests/clients").join(script))
        .arg("--url")
        .arg(format!("{}/mcp", server.base))
        .arg("--token")
        .arg(server.token("alice", &["files:read", "files:write"]))
        .arg("--readonly-token")
        .arg(server.token("alice", &["files:read"]))
        .arg("--other-token")
        .arg(server.token("bob", &["files:read", "files:write"]))
        .arg("--workdir")
        .arg(work.path())
        .current_dir(root().join("tests/clients"))
        .output()
        .unwrap_or_else(|e| {
            panic!("{program} could not run ({e}): run `make test`, which installs the MCP clients")
        });
    let checks = crate::util::client_checks(script, &out);
    for expected in [
        "request_upload + curl",
        "get_download_url + curl, bytes identical",
        "list_files pages",
        "other user refused",
        "401 and 403",
    ] {
        assert!(
            checks.iter().any(|c| c == expected),
            "{script} skipped {expected:?}: {checks:?}"
        );
    }
    assert!(
        checks.iter().any(|c| c.contains("of the 1 MiB flow")),
        "{checks:?}"
    );
}

#[test]
fn the_python_sdk_client_runs_the_whole_flow() {
    let python = root().join(".venv/bin/python");
    run_client(python.to_str().unwrap(), "flow.py");
}

#[test]
fn the_typescript_sdk_client_runs_the_whole_flow() {
    assert!(
        root()
            .join("tests/clients/node_modules/@modelcontextprotocol/sdk")
            .exists(),
        "the TypeScript SDK is not installed: run `make test`"
    );
    run_client("node", "flow.mjs");
}

/// The MCP Inspector CLI (pinned in `tests/clients/package.json`), as a
/// person checking a server runs it: `--strict` finds no schema problem,
/// and a file goes up and comes back through the lines its tool calls
/// return, run as returned.
#[test]
fn the_mcp_inspector_cli_finds_no_problem_and_round_trips_a_file() {
    let inspector = root().join("tests/clients/node_modules/.bin/mcp-inspector");
    assert!(
        inspector.exists(),
        "the MCP Inspector is not installed: run `make test`"
    );
    let (server, _dir) = Server::start();
    let auth = format!(
        "Authorization: Bearer {}",
        server.token("alice", &["files:read", "files:write"])
    );
    let url = format!("{}/mcp", server.base);
    let inspect = |args: &[&str]| {
        let out = Command::new(&inspector)
            .args(["--cli", &url, "--header", &auth])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            crate::util::out_text(&out)
        );
        out
    };
    let listed = inspect(&["--method", "tools/list", "--strict"]);
    let report = String::from_utf8_lossy(&listed.stderr);
    // It prints each problem ("Warning: tool …", "Error: …") and a count
    // ("0 errors, 7 warnings across 2 tools"); with none, nothing.
    assert!(
        !report.contains("Warning") && !report.contains("warnings across"),
        "{report}"
    );
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("\"request_upload\""),
        "the tools are listed"
    );

    let work = tempfile::tempdir().unwrap();
    let (up, down) = (work.path().join("up"), work.path().join("down"));
    std::fs::create_dir_all(&up).unwrap();
    std::fs::create_dir_all(&down).unwrap();
    let data = crate::util::bytes(300_000, 31);
    std::fs::write(up.join("inspected.bin"), &data).unwrap();
    let call = |tool: &str, args: &[String]| -> serde_json::Value {
        let mut argv = vec!["--method", "tools/call", "--tool-name", tool, "--tool-arg"];
        argv.extend(args.iter().map(String::as_str));
        let out = inspect(&argv);
        let result: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{tool}: {e}: {}", crate::util::out_text(&out)));
        assert_eq!(result["isError"], false, "{result}");
        result["structuredContent"].clone()
    };
    let ticket = call(
        "request_upload",
        &[
            "filename=inspected.bin".into(),
            format!("size={}", data.len()),
            format!("sha256={}", sluice::Sha256::of(&data).to_hex()),
        ],
    );
    let ran = crate::util::sh(ticket["command"].as_str().unwrap(), &up);
    assert!(ran.status.success(), "{}", crate::util::out_text(&ran));
    let link = call(
        "get_download_url",
        &[format!("file={}", ticket["handle"].as_str().unwrap())],
    );
    let ran = crate::util::sh(link["command"].as_str().unwrap(), &down);
    assert!(ran.status.success(), "{}", crate::util::out_text(&ran));
    assert_eq!(std::fs::read(down.join("inspected.bin")).unwrap(), data);
}

/// The lines sluice prints for Codex and Gemini CLI, run as printed, with
/// the CLIs from npm (pinned in `tests/clients/package.json`): each keeps
/// only the variable's name in its settings, never the token, and connects
/// with the token from `SLUICE_TOKEN`: Codex lists sluice's tools (through
/// its app server), Gemini CLI says it is connected.
#[test]
fn the_printed_codex_and_gemini_lines_connect_with_the_token_from_the_environment() {
    let bin = root().join("tests/clients/node_modules/.bin");
    for cli in ["codex", "gemini"] {
        assert!(
            bin.join(cli).exists(),
            "{cli} is not installed: run `make test`"
        );
    }
    let (server, _dir) = Server::start();
    let export = server.printed_after(
        "connect Codex, Gemini CLI or VS Code: they read the token from SLUICE_TOKEN:",
    );
    let token = export
        .strip_prefix("export SLUICE_TOKEN=")
        .unwrap_or_else(|| panic!("{export}"))
        .to_owned();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let home = tempfile::tempdir().unwrap();
    let run = |line: &str, env: &[(&str, &std::path::Path)]| {
        let out = Command::new("sh")
            .args(["-c", line])
            .env("PATH", &path)
            .env("SLUICE_TOKEN", &token)
            .envs(env.iter().map(|(k, v)| (*k, v.as_os_str())))
            .current_dir(home.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{line}: {}",
            crate::util::out_text(&out)
        );
        out
    };
    let settings_hold_no_token = |file: &std::path::Path| {
        let text = std::fs::read_to_string(file).unwrap();
        assert!(text.contains("SLUICE_TOKEN"), "{}: {text}", file.display());
        assert!(
            !text.contains(&token),
            "the token in clear in {}",
            file.display()
        );
    };

    // Codex: `codex mcp add …`, then its app server lists sluice's tools.
    let codex_home = home.path().join("codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    run(
        &server.printed_after("connect Codex:"),
        &[("CODEX_HOME", &codex_home)],
    );
    settings_hold_no_token(&codex_home.join("config.toml"));
    let listed = Command::new("node")
        .arg(root().join("tests/clients/codex-tools.mjs"))
        .arg(bin.join("codex"))
        .env("CODEX_HOME", &codex_home)
        .env("SLUICE_TOKEN", &token)
        .output()
        .unwrap();
    assert!(
        listed.status.success(),
        "{}",
        crate::util::out_text(&listed)
    );
    let servers: serde_json::Value = serde_json::from_slice(
        listed
            .stdout
            .split(|b| *b == b'\n')
            .find(|l| l.starts_with(b"{"))
            .unwrap_or_default(),
    )
    .unwrap_or_else(|e| panic!("{e}: {}", crate::util::out_text(&listed)));
    let tools = &servers["servers"]["sluice"]["tools"];
    for tool in [
        "request_upload",
        "get_download_url",
        "request_browser_upload",
    ] {
        assert!(
            tools
                .as_array()
                .is_some_and(|t| t.iter().any(|n| n == tool)),
            "Codex does not see {tool}: {servers}"
        );
    }

    // Gemini CLI: `gemini mcp add --scope user …` writes the user's
    // settings (HOME), and `gemini mcp list` connects (in a folder it is
    // told to trust: it loads no server in one it does not).
    let gemini_home = home.path().join("gemini");
    std::fs::create_dir_all(&gemini_home).unwrap();
    run(
        &server.printed_after("connect Gemini CLI:"),
        &[("HOME", &gemini_home)],
    );
    settings_hold_no_token(&gemini_home.join(".gemini/settings.json"));
    // What `gemini mcp list` says, with the token in the variable or not.
    let gemini_list = |token: Option<&str>| {
        let mut command = Command::new(bin.join("gemini"));
        command
            .args(["mcp", "list"])
            .env("PATH", &path)
            .env("HOME", &gemini_home)
            .env_remove("SLUICE_TOKEN")
            .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
            .current_dir(home.path());
        if let Some(token) = token {
            command.env("SLUICE_TOKEN", token);
        }
        crate::util::out_text(&command.output().unwrap())
    };
    let text = gemini_list(Some(&token));
    assert!(
        text.lines()
            .any(|l| l.contains("sluice") && l.contains("- Connected")),
        "{text}"
    );
    // Without the variable, the same settings do not connect: the token
    // really comes from it.
    let text = gemini_list(None);
    assert!(
        text.lines()
            .any(|l| l.contains("sluice") && l.contains("Disconnected")),
        "{text}"
    );
}

/// Runs a client script of `tests/clients` that makes a whole round trip
/// against a fresh server (`--url`, `--token` for files, `--workdir`, then
/// `extra`); gives its checks.
pub(crate) fn round_trip(program: &std::path::Path, script: &str, extra: &[&str]) -> Vec<String> {
    let (server, _dir) = Server::start();
    let work = tempfile::tempdir().unwrap();
    let out = Command::new(program)
        .arg(root().join("tests/clients").join(script))
        .args(["--url", &format!("{}/mcp", server.base)])
        .args([
            "--token",
            &server.token("alice", &["files:read", "files:write"]),
        ])
        .arg("--workdir")
        .arg(work.path())
        .args(extra)
        .current_dir(root().join("tests/clients"))
        .output()
        .unwrap_or_else(|e| panic!("{script}: {e}: run `make test`"));
    crate::util::client_checks(script, &out)
}

/// FastMCP's client (PyPI, pinned), as its users connect to a server.
#[test]
fn the_fastmcp_client_round_trips_a_file() {
    let checks = round_trip(&root().join(".venv/bin/python"), "fastmcp_flow.py", &[]);
    assert_eq!(checks.len(), 2, "{checks:?}");
    assert!(checks[1].contains("bytes identical"), "{checks:?}");
}

/// mcp-remote (npm, pinned), the stdio bridge that stdio-only clients run,
/// driven by the official Python SDK's stdio client.
#[test]
fn the_mcp_remote_bridge_round_trips_a_file() {
    let bridge = root().join("tests/clients/node_modules/.bin/mcp-remote");
    assert!(
        bridge.exists(),
        "mcp-remote is not installed: run `make test`"
    );
    let checks = round_trip(
        &root().join(".venv/bin/python"),
        "remote_flow.py",
        &["--bridge", bridge.to_str().unwrap()],
    );
    assert_eq!(checks.len(), 2, "{checks:?}");
    assert!(checks[1].contains("bytes identical"), "{checks:?}");
}
