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
