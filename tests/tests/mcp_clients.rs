//! The official MCP clients (Python and TypeScript SDKs) against the real
//! server: connect, list tools, upload with the returned curl line, download
//! with the returned curl line, bytes identical; the 401, 403 and other-user
//! paths; and no MCP message of a 1 MiB file's flow over 4 KiB.
//!
//! The clients are installed by `make test` (a venv and `npm ci`).

use std::path::PathBuf;
use std::process::Command;

use crate::util::{Server, out_text};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

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
    assert!(out.status.success(), "{script}: {}", out_text(&out));
    let summary: serde_json::Value = serde_json::from_slice(
        out.stdout
            .split(|b| *b == b'\n')
            .find(|l| l.starts_with(b"{"))
            .unwrap_or_default(),
    )
    .unwrap_or_else(|e| panic!("{script} printed no summary ({e}): {}", out_text(&out)));
    let checks = summary["checks"].as_array().unwrap();
    for expected in [
        "request_upload + curl",
        "get_download_url + curl, bytes identical",
        "other user refused",
        "401 and 403",
    ] {
        assert!(
            checks.iter().any(|c| c == expected),
            "{script} skipped {expected:?}: {summary}"
        );
    }
    assert!(
        checks
            .iter()
            .any(|c| c.as_str().unwrap().contains("of the 1 MiB flow")),
        "{summary}"
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
