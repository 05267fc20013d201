//! Each function under the Lambda runtime: a real process of the function
//! binary, `AWS_LAMBDA_RUNTIME_API` pointing at an emulation of the runtime
//! API (`gateway::LambdaFunction`) that hands it API Gateway HTTP API
//! (payload 2.0) events and collects its answers.

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

/// An API Gateway HTTP API (payload format 2.0) event for the API's own
/// domain, `files.example.com`.
pub fn event(method: &str, path: &str, headers: Value, body: Option<&str>) -> Value {
    let headers: Vec<(String, String)> = headers
        .as_object()
        .map(|h| {
            h.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default();
    crate::gateway::event(
        method,
        path,
        "",
        &headers,
        body.unwrap_or_default().as_bytes(),
        "files.example.com",
    )
}

/// Runs `function` under the emulated runtime for `events`; returns what it
/// answered to each, in order.
pub fn invoke(function: &str, env: &[(&str, String)], events: Vec<Value>) -> Vec<Value> {
    let function = crate::gateway::LambdaFunction::start(function, env);
    events.into_iter().map(|e| function.invoke(e)).collect()
}

#[test]
fn each_function_answers_api_gateway_events_under_the_lambda_runtime() {
    let emulators = crate::util::Emulators::start();
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(emulators.provision("lambda"));
    let mut env = emulators.env("lambda");
    env.push(("SLUICE_PUBLIC_URL", "https://files.example.com".into()));
    let secret = env
        .iter()
        .find(|(k, _)| *k == "SLUICE_MASTER_SECRET")
        .unwrap()
        .1
        .clone();
    let keys = sluice::Keyring::new(
        (
            sluice::KeyId::new("k1").unwrap(),
            sluice::MasterSecret::new(secret.into_bytes()).unwrap(),
        ),
        None,
    );
    let token = sluice::auth::AccessVerifier::new(keys, "sluice-local".into(), "sluice".into())
        .mint(
            "alice",
            &[sluice::Scope::FilesRead, sluice::Scope::FilesWrite],
            Duration::from_secs(60),
        )
        .unwrap();
    let auth = format!("Bearer {token}");
    let body = json!({"filename": "a.txt", "size": 1, "sha256": sluice::Sha256::of(b"a").to_hex()})
        .to_string();

    // issuer: POST /uploads → a short upload link, and GET of it → a
    // presigned S3 PUT minted then.
    let response = invoke(
        "issuer",
        &env,
        vec![event(
            "POST",
            "/uploads",
            json!({"authorization": auth, "content-type": "application/json"}),
            Some(&body),
        )],
    )
    .remove(0);
    assert_eq!(response["statusCode"], 200, "{response}");
    let ticket: Value = serde_json::from_str(response["body"].as_str().unwrap()).unwrap();
    let short = ticket["upload"]["url"].as_str().unwrap();
    let path = short
        .strip_prefix("https://files.example.com")
        .expect("a link of the public URL");
    assert!(path.starts_with("/u/"), "{short}");
    let response = invoke("issuer", &env, vec![event("GET", path, json!({}), None)]).remove(0);
    assert_eq!(response["statusCode"], 200, "{response}");
    assert!(
        response["body"]
            .as_str()
            .unwrap()
            .starts_with(&emulators.s3_url),
        "{response}"
    );
    let handle = ticket["handle"].as_str().unwrap().to_owned();

    // resolver: an unknown link is the uniform 404; /resolve of a file not
    // uploaded yet says so.
    let answers = invoke(
        "resolver",
        &env,
        vec![
            event("GET", "/l/nonsense", json!({}), None),
            event(
                "POST",
                "/resolve",
                json!({"authorization": auth, "content-type": "application/json"}),
                Some(&json!({"handle": handle}).to_string()),
            ),
        ],
    );
    let (first, second) = (&answers[0], &answers[1]);
    assert_eq!(first["statusCode"], 404, "{first}");
    assert_eq!(second["statusCode"], 409, "{second}");

    // mcp: initialize over the public host.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let response = invoke(
        "mcp",
        &env,
        vec![event(
            "POST",
            "/mcp",
            json!({"authorization": auth, "content-type": "application/json",
                   "accept": "application/json, text/event-stream", "host": "files.example.com"}),
            Some(&init.to_string()),
        )],
    )
    .remove(0);
    assert_eq!(response["statusCode"], 200, "{response}");
    let body: Value = serde_json::from_str(response["body"].as_str().unwrap()).unwrap();
    assert_eq!(body["result"]["serverInfo"]["name"], "sluice");
}

#[test]
fn without_a_configured_public_url_the_api_gateway_domain_is_used() {
    let emulators = crate::util::Emulators::start();
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(emulators.provision("domain"));
    let env = emulators.env("domain");
    let response = invoke(
        "mcp",
        &env,
        vec![event(
            "GET",
            "/.well-known/oauth-protected-resource/mcp",
            json!({"host": "files.example.com"}),
            None,
        )],
    )
    .remove(0);
    assert_eq!(response["statusCode"], 200, "{response}");
    let doc: Value = serde_json::from_str(response["body"].as_str().unwrap()).unwrap();
    assert_eq!(doc["resource"], "https://files.example.com/mcp");
}

/// What `sam build` compiles (the three function crates, alone) links one
/// crypto library, aws-lc (the AWS SDK's), and neither SQLite nor a second
/// TLS or crypto stack: each would add hundreds of KiB to every function.
#[test]
fn the_lambda_build_links_one_crypto_library_and_no_sqlite() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let tree = crate::util::stdout_of(
        Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .current_dir(&root)
            .args("tree --locked -e normal --prefix none".split(' '))
            .args("-p sluice-mcp -p sluice-issuer -p sluice-resolver".split(' ')),
    );
    let tree = String::from_utf8(tree).unwrap();
    let crates: std::collections::BTreeSet<&str> = tree
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    for present in ["aws-lc-rs", "aws-sdk-s3", "rmcp", "jsonwebtoken"] {
        assert!(crates.contains(present), "{present} missing from:\n{tree}");
    }
    for absent in [
        "rusqlite",
        "libsqlite3-sys",
        "ring",
        "rsa",
        "p256",
        "ed25519-dalek",
        "reqwest",
        "webpki-roots",
        "regex-automata",
    ] {
        assert!(
            !crates.contains(absent),
            "{absent} is linked into a function"
        );
    }
}
