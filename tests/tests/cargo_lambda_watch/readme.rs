//! The README's watch steps, word for word, under the real `cargo lambda watch`;
//! the metrics each function writes as EMF.

use super::*;

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
    crate::util::assert_checks(
        &checks,
        &[
            "request_upload + curl",
            "get_download_url + curl, bytes identical",
            "401 and 403",
        ],
    );

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
