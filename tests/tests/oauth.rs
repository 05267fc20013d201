//! OAuth end to end: a real authorization server (oidc-provider, configured
//! as a production one for MCP: `tests/clients/authz.mjs`) and the official
//! MCP clients' own OAuth implementations, from an unauthenticated start to
//! a real upload and download.

use std::process::{Child, Command, Stdio};

use crate::mcp_clients::root;
use crate::util::Server;

/// The authorization server; killed on drop.
pub struct AuthServer {
    child: Child,
    /// Its issuer URL (also its base URL).
    pub issuer: String,
}

impl AuthServer {
    /// Starts one signing access tokens with `alg` (`RS256` or `ES256`).
    pub fn start(alg: &str) -> Self {
        let mut command = Command::new("node");
        command
            .arg(root().join("tests/clients/authz.mjs"))
            .args(["--alg", alg])
            .current_dir(root().join("tests/clients"))
            .stderr(Stdio::null());
        let (child, issuer) = crate::util::spawn_announcing(command);
        Self { child, issuer }
    }

    /// The variables that point sluice at this server.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("SLUICE_AUTH_ISSUER", self.issuer.clone()),
            ("SLUICE_AUTH_JWKS_URL", format!("{}/jwks", self.issuer)),
        ]
    }
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What an OAuth client script printed against the MCP endpoint at
/// `mcp_url` (with `extra` arguments), succeeded or not.
pub fn oauth_client_output(
    program: &str,
    script: &str,
    mcp_url: &str,
    auth: &AuthServer,
    alg: &str,
    extra: &[&str],
) -> std::process::Output {
    let work = tempfile::tempdir().unwrap();
    Command::new(program)
        .arg(root().join("tests/clients").join(script))
        .args(["--url", mcp_url, "--issuer", &auth.issuer, "--alg", alg])
        .args(extra)
        .arg("--workdir")
        .arg(work.path())
        .current_dir(root().join("tests/clients"))
        .output()
        .unwrap_or_else(|e| panic!("{program} could not run ({e}): run `make test`"))
}

/// Runs an OAuth client script against the MCP endpoint at `mcp_url`;
/// returns its checks.
pub fn run_oauth_client(
    program: &str,
    script: &str,
    mcp_url: &str,
    auth: &AuthServer,
    alg: &str,
) -> Vec<String> {
    let out = oauth_client_output(program, script, mcp_url, auth, alg, &[]);
    crate::util::client_checks(script, &out)
}

/// What every OAuth client run must have checked.
pub fn assert_oauth_checks(checks: &[String], alg: &str) {
    for expected in [
        format!(
            "SDK OAuth: 401, discovery, registration, PKCE authorization, {alg} token for the MCP URL"
        ),
        "upload and download with the returned curl lines".to_owned(),
        "403 insufficient_scope, then the SDK's step-up re-authorizes and the call succeeds"
            .to_owned(),
    ] {
        assert!(
            checks.contains(&expected),
            "missing {expected:?}: {checks:?}"
        );
    }
}

fn server_for(auth: &AuthServer) -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let env = auth.env();
    let vars: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    (Server::start_in(dir.path(), &vars), dir)
}

#[test]
fn the_python_sdk_completes_oauth_against_a_real_authorization_server() {
    let auth = AuthServer::start("RS256");
    let (server, _dir) = server_for(&auth);
    let python = root().join(".venv/bin/python");
    let checks = run_oauth_client(
        python.to_str().unwrap(),
        "oauth.py",
        &format!("{}/mcp", server.base),
        &auth,
        "RS256",
    );
    assert_oauth_checks(&checks, "RS256");
    assert!(
        checks.contains(&"a token for another resource: 401 invalid_token".to_owned()),
        "{checks:?}"
    );
}

#[test]
fn the_typescript_sdk_completes_oauth_against_a_real_authorization_server() {
    let auth = AuthServer::start("ES256");
    let (server, _dir) = server_for(&auth);
    let checks = run_oauth_client(
        "node",
        "oauth.mjs",
        &format!("{}/mcp", server.base),
        &auth,
        "ES256",
    );
    assert_oauth_checks(&checks, "ES256");
}

/// The stack as deployed behind `topology`: emulated S3 and DynamoDB
/// (bucket and table `name`), an authorization server signing `alg`, and the
/// three functions, given the URL variables `urls` makes of the gateway's
/// base. Dropped in this order: the functions first.
struct Deployed {
    gateway: crate::gateway::Gateway,
    auth: AuthServer,
    _emulators: crate::util::Emulators,
}

fn deploy(
    topology: crate::gateway::Topology,
    name: &str,
    alg: &str,
    urls: impl Fn(&str) -> Vec<(&'static str, String)>,
) -> Deployed {
    let emulators = crate::util::Emulators::start();
    crate::util::provision(&emulators, name);
    let auth = AuthServer::start(alg);
    let gateway = crate::gateway::Gateway::start(topology, |base| {
        let mut env: Vec<(&'static str, String)> = emulators
            .env(name)
            .into_iter()
            .filter(|(k, _)| *k != "SLUICE_DEV_TOKENS")
            .collect();
        env.extend(auth.env());
        env.extend(urls(base));
        env
    });
    Deployed {
        gateway,
        auth,
        _emulators: emulators,
    }
}

/// A request with no token, as a client's first one: the 401 and its headers.
fn first_contact(mcp_url: &str) -> crate::util::Reply {
    crate::util::request(
        "POST",
        mcp_url,
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        Some(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
    )
}

/// As deployed: API Gateway in front of the three functions, with the
/// template's response mapping restoring the renamed challenge.
#[test]
fn the_python_sdk_completes_oauth_through_api_gateway_and_lambda() {
    let Deployed { gateway, auth, .. } = &deploy(
        crate::gateway::Topology::ApiGateway { restore: true },
        "oauth-apigw",
        "RS256",
        |base| vec![("SLUICE_PUBLIC_URL", base.to_owned())],
    );
    let mcp_url = format!("{}/mcp", gateway.base);
    let first = first_contact(&mcp_url);
    assert_eq!(first.status, 401);
    let challenge = first
        .header("www-authenticate")
        .expect("the mapping restores the challenge");
    assert!(
        challenge.contains(&format!(
            "resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
            gateway.base
        )),
        "{challenge}"
    );
    assert_eq!(
        first.header("x-amzn-remapped-www-authenticate"),
        Some(challenge)
    );
    let python = root().join(".venv/bin/python");
    let checks = run_oauth_client(
        python.to_str().unwrap(),
        "oauth.py",
        &mcp_url,
        auth,
        "RS256",
    );
    assert_oauth_checks(&checks, "RS256");
}

/// Without the mapping, a 401 through API Gateway carries no
/// `WWW-Authenticate`; clients fall back to the well-known paths, which the
/// `mcp` function serves at both places RFC 9728 allows.
#[test]
fn without_the_challenge_header_clients_discover_from_the_well_known_paths() {
    let Deployed { gateway, auth, .. } = &deploy(
        crate::gateway::Topology::ApiGateway { restore: false },
        "oauth-remapped",
        "ES256",
        |base| vec![("SLUICE_PUBLIC_URL", base.to_owned())],
    );
    let mcp_url = format!("{}/mcp", gateway.base);
    let first = first_contact(&mcp_url);
    assert_eq!(first.status, 401);
    assert_eq!(
        first.header("www-authenticate"),
        None,
        "renamed by API Gateway"
    );
    assert!(first.header("x-amzn-remapped-www-authenticate").is_some());
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let doc = crate::util::request("GET", &format!("{}{path}", gateway.base), &[], None);
        assert_eq!(doc.status, 200, "{path}");
        assert_eq!(doc.json()["resource"], mcp_url, "{path}");
    }
    let out = oauth_client_output(
        "node",
        "oauth.mjs",
        &mcp_url,
        auth,
        "ES256",
        &["--skip-step-up"],
    );
    let checks = crate::util::client_checks("oauth.mjs", &out);
    crate::util::assert_checks(
        &checks,
        &[
            "SDK OAuth: 401, discovery, registration, PKCE authorization, ES256 token for the MCP URL",
            "upload and download with the returned curl lines",
        ],
    );
}
