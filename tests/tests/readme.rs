//! The documented commands (the README's and `docs/`'s), run as written
//! against a real server: the
//! only changes are the server's address (a test picks a free port), the
//! `sluice` command (the binary under test, on its data directory, instead
//! of `cargo run --profile fast`) and the `$uploadedFile:…` placeholders,
//! which the README tells the reader to fill in with the handle it got.

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use sluice_testkit::root;

use crate::util::{BIN, Server, out_text, sh};

/// The fenced `sh` blocks of section `heading` of the document at `path`
/// (up to the next heading of the same or a higher level).
pub(crate) fn sh_blocks(path: &str, heading: &str) -> Vec<String> {
    let readme = std::fs::read_to_string(root().join(path)).unwrap();
    let start = readme
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading:?}"));
    let level = heading.chars().take_while(|c| *c == '#').count();
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in readme[start + heading.len()..].lines() {
        let trimmed = line.trim_end();
        match &mut current {
            None if trimmed == "```sh" => current = Some(String::new()),
            None if trimmed.starts_with("```") => current = Some(String::from("\u{0}")),
            None if trimmed.starts_with('#')
                && trimmed.chars().take_while(|c| *c == '#').count() <= level =>
            {
                break;
            }
            Some(block) if trimmed.starts_with("```") => {
                if !block.starts_with('\u{0}') {
                    blocks.push(std::mem::take(block));
                }
                current = None;
            }
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
            None => {}
        }
    }
    blocks
}

/// A README block made runnable against `server`.
fn adapted(block: &str, server: &Server) -> String {
    block
        .replace(
            "cargo run -q --profile fast -p sluice-local --",
            &format!("SLUICE_DATA_DIR='{}' '{BIN}'", server.data_dir.display()),
        )
        .replace("http://127.0.0.1:8787", &server.base)
}

/// Runs `script` in `dir`; its stdout, which must be a success.
fn run(script: &str, dir: &Path) -> String {
    let out = Command::new("bash")
        .args(["-c", script])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{script}\n{}", out_text(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// The JSON objects a script printed, one per line or run together.
fn answers(stdout: &str) -> Vec<Value> {
    serde_json::Deserializer::from_str(stdout)
        .into_iter::<Value>()
        .map(|v| v.unwrap())
        .collect()
}

#[test]
fn the_readme_program_commands_upload_and_download_as_written() {
    let (server, _dir) = Server::start();
    let blocks = sh_blocks("docs/http-api.md", "## From a program");
    assert_eq!(blocks.len(), 2, "{blocks:?}");
    let work = tempfile::tempdir().unwrap();
    let data = sluice_testkit::bytes(5000, 3);
    std::fs::write(work.path().join("report.pdf"), &data).unwrap();
    let ticket = &answers(&run(&adapted(&blocks[0], &server), work.path()))[0];
    let uploaded = sh(ticket["command"].as_str().unwrap(), work.path());
    assert!(uploaded.status.success(), "{}", out_text(&uploaded));
    // The second block uses the first one's TOKEN: one shell, as a reader's.
    let handle = ticket["handle"].as_str().unwrap();
    let both = format!(
        "{}\n{}",
        adapted(&blocks[0], &server).replace("curl -sS", "curl -sS -o /dev/null"),
        adapted(&blocks[1], &server).replace("$uploadedFile:…", handle)
    );
    let download = &answers(&run(&both, work.path()))[0];
    let down = tempfile::tempdir().unwrap();
    let fetched = sh(download["command"].as_str().unwrap(), down.path());
    assert!(fetched.status.success(), "{}", out_text(&fetched));
    assert_eq!(std::fs::read(down.path().join("report.pdf")).unwrap(), data);
}

#[test]
fn the_readme_action_commands_run_as_written() {
    let (server, _dir) = Server::start();
    let blocks = sh_blocks(
        "docs/actions.md",
        "## Actions: backend operations whose File fields take handles",
    );
    let block = blocks
        .iter()
        .find(|b| b.contains("action_attach_document"))
        .expect("the actions example");
    let work = tempfile::tempdir().unwrap();
    let data = b"%PDF-1.7 a small report\n";
    std::fs::write(work.path().join("report.pdf"), data).unwrap();
    let script = adapted(block, &server);
    // Up to the comment that says to run the returned line.
    let (first, rest) = script
        .split_once("# run the \"command\" line it returns")
        .expect("the README says to run the returned line");
    let issued = answers(&run(first, work.path()));
    let ticket = &issued[0]["result"]["structuredContent"];
    let uploaded = sh(ticket["command"].as_str().unwrap(), work.path());
    assert!(uploaded.status.success(), "{}", out_text(&uploaded));
    let setup: String = first
        .lines()
        .filter(|l| !l.starts_with("mcp "))
        .map(|l| format!("{l}\n"))
        .collect();
    let rest = rest.split_once('\n').map_or("", |(_, r)| r);
    let ran = answers(&run(
        &format!(
            "{setup}{}",
            rest.replace("$uploadedFile:…", ticket["handle"].as_str().unwrap())
        ),
        work.path(),
    ));
    assert_eq!(ran.len(), 2, "{ran:?}");
    for answer in &ran {
        assert_ne!(answer["result"]["isError"], true, "{answer}");
    }
    let report = &ran[1]["result"]["structuredContent"];
    let curl = report.to_string();
    assert!(
        curl.contains("curl"),
        "the report comes back as a link: {report}"
    );
}

/// ARCHITECTURE's table of each flow's path is `make hops`'s output for
/// this tree, as it stands: a change that lengthens or shortens a path
/// changes the table with it (`make hops`, then paste its lines between the
/// markers).
#[test]
fn the_architecture_hop_table_is_the_scripts_output() {
    const BEGIN: &str = "<!-- hops: begin (generated by `make hops`) -->\n";
    const END: &str = "<!-- hops: end -->";
    let doc = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let (start, end) = (
        doc.find(BEGIN).expect("the hops markers") + BEGIN.len(),
        doc.find(END).expect("the hops markers"),
    );
    let out = Command::new("python3")
        .arg("docs/flow-hops.py")
        .current_dir(root())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", out_text(&out));
    let printed = String::from_utf8(out.stdout).unwrap();
    assert!(printed.lines().count() > 3, "{printed}");
    assert_eq!(
        doc[start..end],
        printed,
        "docs/ARCHITECTURE.md's hop table is not `make hops`'s output"
    );
}

/// The README's table of tools is the server's: each tool `tools/list`
/// gives (but the per-action `action_<name>` tools, one row for all) has a
/// row, and no row names a tool the server lacks.
#[test]
fn the_readme_lists_the_tools_the_server_gives() {
    let (server, _dir) = Server::start();
    let token = server.token("alice", &[]);
    let listed: Vec<String> = crate::util::tool_names(&server.base, &token)
        .into_iter()
        .filter(|t| !t.starts_with("action_"))
        .collect();
    let readme = std::fs::read_to_string(crate::mcp_clients::root().join("README.md")).unwrap();
    let rows: Vec<String> = readme
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .map(|l| {
            l.split(|c: char| !(c.is_ascii_lowercase() || c == '_' || c == '<' || c == '>'))
                .next()
                .unwrap()
                .to_owned()
        })
        .filter(|name| name.contains('_') || name == "list_actions")
        .filter(|name| !name.starts_with("SLUICE"))
        .collect();
    for tool in &listed {
        assert!(
            rows.contains(tool),
            "README.md has no row for {tool}: {rows:?}"
        );
    }
    for row in &rows {
        assert!(
            listed.contains(row) || row == "action_<name>",
            "README.md lists {row}, which the server does not give: {listed:?}"
        );
    }
}
