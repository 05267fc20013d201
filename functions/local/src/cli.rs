//! The `sluice` command line: `sluice` (serve), `sluice token` and
//! `sluice receipt` (verify, rotate).

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use sluice::{Config, Scope};
use sluice_runtime::{self as runtime, StartError};

/// sluice: move files between AI clients and storage without the bytes
/// passing through the model.
#[derive(Debug, Parser)]
#[command(
    name = "sluice",
    version,
    after_help = "Configuration comes from SLUICE_* environment variables; see docs/configuration.md."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve every route on SLUICE_HOST:SLUICE_PORT (127.0.0.1:8787); the default.
    Serve {
        /// Refuse to start when a SLUICE_* variable is not a setting (a
        /// typo), as SLUICE_STRICT=true does; otherwise each is named at
        /// start and ignored.
        #[arg(long)]
        strict: bool,
    },
    /// Print a local development bearer token for this data directory.
    Token {
        /// The user the token names (its `sub`).
        #[arg(long, default_value = "dev")]
        user: String,
        /// Scopes to grant, one or more (`--scope a b` or `--scope a --scope b`);
        /// by default files:read files:write actions:execute.
        #[arg(long = "scope", num_args = 1.., value_parser = parse_scope)]
        scopes: Vec<Scope>,
    },
    /// Receipts of custody: verify one offline, or rotate the signing key.
    Receipt {
        #[command(subcommand)]
        action: ReceiptCommand,
    },
}

#[derive(Debug, Subcommand)]
enum ReceiptCommand {
    /// Check a receipt against a JWKS (a file: fetch it once from
    /// /.well-known/jwks.json), and a file on disk against the receipt.
    Verify {
        /// The receipt (a compact JWS), or `@PATH` of a file holding it.
        receipt: String,
        /// The JWKS file.
        #[arg(long)]
        jwks: std::path::PathBuf,
        /// A file whose size and SHA-256 must be the receipt's.
        #[arg(long)]
        file: Option<std::path::PathBuf>,
    },
    /// Retire this data directory's signing key (its public key stays in
    /// the JWKS) and make a new one; restart the server to sign with it.
    Rotate,
}

fn parse_scope(s: &str) -> Result<Scope, String> {
    Scope::parse(s).ok_or_else(|| {
        format!(
            "unknown scope {s:?}; known: {}",
            Scope::ALL.map(|s| s.as_str()).join(" ")
        )
    })
}

/// Runs the command line; returns the process exit code.
pub fn main() -> ExitCode {
    // Arguments first: `--help` works whatever the environment holds.
    let cli = Cli::parse();
    let config = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("sluice: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(Command::Serve { strict: true }) = cli.command
        && let Err(e) = config.refuse_unknown()
    {
        eprintln!("sluice: {e}");
        return ExitCode::from(2);
    }
    let result = match cli.command {
        None | Some(Command::Serve { .. }) => serve(config),
        Some(Command::Token { user, scopes }) => token(&config, &user, scopes),
        Some(Command::Receipt { action }) => receipt(&config, action),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sluice: {e}");
            ExitCode::FAILURE
        }
    }
}

/// How long the token printed at start is valid.
const PRINTED_TOKEN_TTL: std::time::Duration = std::time::Duration::from_secs(12 * 3600);

fn default_scopes() -> Vec<Scope> {
    crate::example::dev_scopes()
}

fn token(config: &Config, user: &str, mut scopes: Vec<Scope>) -> Result<(), StartError> {
    if scopes.is_empty() {
        scopes = default_scopes();
    }
    let keys = runtime::local_keyring(config)?;
    // The audience of a development token does not depend on the URL.
    let placeholder = url::Url::parse("http://127.0.0.1/").expect("a valid URL");
    let access = runtime::access_verifier(config, keys, &config.urls.mcp_at(&placeholder));
    match access.mint(user, &scopes, config.auth.dev_token_ttl) {
        Some(token) => {
            println!("{token}");
            Ok(())
        }
        None => Err(StartError::Io {
            what:
                "SLUICE_AUTH_JWKS_URL is set: bearer tokens come from that authorization server, \
                   and `sluice token` mints only local development tokens"
                    .into(),
            source: std::io::Error::from(std::io::ErrorKind::InvalidInput),
        }),
    }
}

fn receipt(config: &Config, action: ReceiptCommand) -> Result<(), StartError> {
    let refused = |what: String| StartError::Io {
        what,
        source: std::io::Error::from(std::io::ErrorKind::InvalidData),
    };
    match action {
        ReceiptCommand::Rotate => {
            let (old, new) = runtime::rotate_receipt_key(&config.data.path)?;
            println!("retired key {old} (still in the JWKS); receipts are now signed with {new}");
            Ok(())
        }
        ReceiptCommand::Verify {
            receipt,
            jwks,
            file,
        } => {
            let read = |path: &std::path::Path| {
                std::fs::read(path).map_err(|source| StartError::Io {
                    what: format!("reading {}", path.display()),
                    source,
                })
            };
            let receipt = match receipt.strip_prefix('@') {
                Some(path) => String::from_utf8_lossy(&read(path.as_ref())?)
                    .trim()
                    .to_owned(),
                None => receipt.trim().to_owned(),
            };
            let set: jsonwebtoken::jwk::JwkSet = serde_json::from_slice(&read(&jwks)?)
                .map_err(|e| refused(format!("{} is not a JWKS: {e}", jwks.display())))?;
            let claims = sluice::receipts::verify(&receipt, &set)
                .map_err(|e| refused(format!("the receipt does not verify: {e}")))?;
            println!(
                "valid: file {} ({} bytes, sha256 {}) held for {} by {}, {} at {}",
                claims.file.id,
                claims.file.size,
                claims.file.sha256,
                claims.sub,
                claims.iss,
                claims.event,
                sluice::time::rfc3339(claims.iat)
            );
            if let Some(path) = file {
                let bytes = read(&path)?;
                if bytes.len() as u64 != claims.file.size {
                    return Err(refused(format!(
                        "{} is {} bytes, not the receipt's {}",
                        path.display(),
                        bytes.len(),
                        claims.file.size
                    )));
                }
                let sha = sluice::Sha256::of(&bytes);
                if sha != claims.file.sha256 {
                    return Err(refused(format!(
                        "{} has sha256 {sha}, not the receipt's {}",
                        path.display(),
                        claims.file.sha256
                    )));
                }
                println!("{}: the file the receipt names", path.display());
            }
            Ok(())
        }
    }
}

fn serve(config: Config) -> Result<(), StartError> {
    runtime::init_tracing(&config);
    let rt = tokio::runtime::Runtime::new().map_err(|source| StartError::Io {
        what: "starting the async runtime".into(),
        source,
    })?;
    let served = rt.block_on(async move {
        let (listener, url) = runtime::bind(&config).await?;
        let addr = listener.local_addr().map_err(|source| StartError::Io {
            what: "reading the bound address".into(),
            source,
        })?;
        let mut backends = sluice_runtime::open_backends(&config).await?;
        // The example upstream: on by default when nothing else is configured.
        let examples = config.actions.examples.unwrap_or(
            config.records_here() && config.actions.source.is_none(),
        );
        let example_key = crate::example::ExampleKey::random();
        if examples {
            backends.add_actions(
                "example actions (SLUICE_EXAMPLE_ACTIONS=false turns them off)",
                crate::example::catalog(addr, &example_key),
            )?;
        }
        let local = backends.local();
        let sluice = backends.sluice(&config, url);
        announce(&config, &sluice, addr);
        // Checked before anything is served: a bad secret stops the start.
        match (runtime::webhooks(&config)?, local.as_ref()) {
            (Some(webhooks), Some(local)) => {
                // Events of custody carry their receipt, signed as they go.
                let receipts = sluice.receipts().clone();
                let webhooks = webhooks.stamped(std::sync::Arc::new(move |body: String| {
                    let receipts = receipts.clone();
                    Box::pin(async move { receipts.stamp(&body).await.map_err(|e| e.to_string()) })
                }));
                tokio::spawn(webhooks.run(std::sync::Arc::new(local.records.clone())));
            }
            (Some(_), None) => tracing::warn!(
                "webhooks: with the records in DynamoDB the events function delivers them, from the table's stream; this server does not"
            ),
            (None, _) => {}
        }
        // Scans the last run left unfinished start again (clamd's run in
        // this process, so they ended with it), once the metrics count them.
        let resume = match (config.scan.on(), local.as_ref()) {
            (true, Some(local)) => Some((sluice.files().clone(), local.records.clone())),
            _ => None,
        };
        if let Some(local) = local {
            tokio::spawn(crate::sweep_forever(
                local,
                config.transfers.handle_ttl,
                config.transfers.link_ttl,
            ));
        }
        let mut app = crate::app(sluice);
        if config.operations.metrics {
            match crate::metrics::install() {
                Ok(handle) => {
                    let public = crate::metrics::is_public(config.urls.public.as_ref());
                    app = app.merge(crate::metrics::router(
                        handle,
                        config.operations.metrics_token.clone(),
                        public,
                    ));
                }
                Err(e) => tracing::warn!(error = %e, "metrics are off"),
            }
        }
        if examples {
            app = app.merge(crate::example::router(example_key));
        }
        if let Some((files, records)) = resume {
            tokio::spawn(async move {
                match records.awaiting_scan(sluice::time::now_unix(), 10_000).await {
                    Ok(left) => files.resume_scans(left.into_iter().map(|r| r.file).collect()).await,
                    Err(e) => tracing::warn!(error = %e, "the scans left by the last run were not found"),
                }
            });
        }
        runtime::serve(
            listener,
            app,
            runtime::ServeLimits::from_config(&config),
            runtime::shutdown_signal(),
        )
        .await
        .map_err(|source| StartError::Io {
            what: "serving".into(),
            source,
        })
    });
    runtime::flush_traces();
    served
}

/// The line that connects each client to the MCP endpoint `mcp` with the
/// bearer token `token`: Claude Code with the token in its header; Codex,
/// Gemini CLI and VS Code reading it from `SLUICE_TOKEN` (set by the line
/// before theirs), so that none of them writes it into a settings file in
/// clear (`gemini mcp add` would, into the project's `.gemini/settings.json`,
/// without `--scope user` and the variable).
pub fn connection_lines(mcp: &str, token: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "Claude Code",
            format!(
                "claude mcp add --transport http sluice {mcp} --header \"Authorization: Bearer {token}\""
            ),
        ),
        (
            "Codex, Gemini CLI or VS Code: they read the token from SLUICE_TOKEN",
            format!("export SLUICE_TOKEN={token}"),
        ),
        (
            "Codex",
            format!("codex mcp add sluice --url {mcp} --bearer-token-env-var SLUICE_TOKEN"),
        ),
        (
            "Gemini CLI",
            format!(
                "gemini mcp add --scope user --transport http sluice {mcp} \
                 --header 'Authorization: Bearer ${{SLUICE_TOKEN}}'"
            ),
        ),
        (
            "VS Code",
            format!(
                "code --add-mcp '{{\"name\":\"sluice\",\"type\":\"http\",\"url\":\"{mcp}\",\
                 \"headers\":{{\"Authorization\":\"Bearer ${{env:SLUICE_TOKEN}}\"}}}}'"
            ),
        ),
    ]
}

/// What the server prints at start: the address it bound, the public URL
/// when one is set, its backend, its actions, and a short-lived
/// development token with the line that connects Claude Code.
fn announce(config: &Config, sluice: &sluice::Sluice, bound: std::net::SocketAddr) {
    let base = sluice.base_url().to_owned();
    // The first line is machine-readable: scripts and tests wait for it.
    println!("sluice listening on http://{bound}");
    if config.urls.public.is_some() {
        println!("public URL (what clients and links use): {base}");
    }
    if config.bytes_here() && config.records_here() {
        println!("data directory: {}", config.data.path.display());
    } else {
        println!("backends: {}", config.backends_said());
    }
    let actions: Vec<&str> = sluice
        .actions()
        .configured()
        .catalog()
        .actions()
        .iter()
        .map(|a| a.name.as_str())
        .collect();
    if actions.is_empty() {
        println!("actions: none (set SLUICE_ACTIONS_FILE to add some)");
    } else {
        println!("actions: {}", actions.join(", "));
    }
    // Printed tokens end up in terminals and scrollback: short-lived.
    // `sluice token` mints longer-lived ones, when asked.
    let printed_ttl = PRINTED_TOKEN_TTL.min(config.auth.dev_token_ttl);
    match sluice.access().mint("dev", &default_scopes(), printed_ttl) {
        Some(dev) => {
            println!(
                "dev bearer token (user 'dev', files:read files:write actions:execute; valid {} h, \
                 `sluice token` mints more):\n  {dev}",
                printed_ttl.as_secs() / 3600
            );
            for (client, line) in connection_lines(&format!("{base}/mcp"), &dev) {
                println!("connect {client}:\n  {line}");
            }
            println!(
                "(Claude Code, Codex and Gemini CLI install from npm; VS Code asks before it trusts the server)"
            );
        }
        None => {
            println!("bearer tokens: from the authorization server (SLUICE_AUTH_JWKS_URL)")
        }
    }
}
