//! Process wiring shared by every binary: logging, the local backends, the
//! master secret of a local data directory, and serving a router until a
//! shutdown signal.

use std::future::Future;
use std::io;
use std::path::Path;
use std::sync::Arc;

use axum::Router;
use tokio::net::TcpListener;
use url::Url;

use sluice::actions::{Actions, Catalog};
use sluice::auth::AccessVerifier;
use sluice::config::Config;
use sluice::keys::{Keyring, MasterSecret};
#[cfg(feature = "local")]
use sluice::ledger::SqliteLedger;
use sluice::service::{Parts, Sluice};
#[cfg(feature = "local")]
use sluice::store::LocalStore;

/// The file in a data directory that keeps its generated master secret.
pub const SECRET_FILE: &str = "master.key";

/// Why a process could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The configuration was refused.
    #[error("configuration: {0}")]
    Config(#[from] sluice::config::ConfigError),
    /// The data directory or listener could not be set up.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The ledger could not be opened.
    #[error("ledger: {0}")]
    Ledger(#[from] sluice::ledger::LedgerError),
    /// The master secret could not be read.
    #[error("master secret: {0}")]
    Secret(String),
    /// The actions catalog was refused; the message names the action and field.
    #[error("actions catalog {origin}: {error}")]
    Actions {
        /// Where the catalog came from (a path, an S3 key).
        origin: String,
        /// What is wrong with it.
        error: sluice::actions::CatalogError,
    },
    /// The config names the local backends, which this binary was built without.
    #[error(
        "SLUICE_BACKEND=local, but this binary was built for AWS without the local backends: \
         set SLUICE_BACKEND=aws, run the `sluice` binary, or build with `--features local`"
    )]
    NoLocalBackend,
}

fn io_error(what: impl Into<String>) -> impl FnOnce(io::Error) -> StartError {
    let what = what.into();
    move |source| StartError::Io { what, source }
}

/// Starts logging with the configured filter (`info`, or targets and levels
/// such as `sluice=debug,info`). Tokens are never logged whole: only their `jti`.
pub fn init_tracing(config: &Config) {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let _ = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(io::stderr)
                // Colour for a person at a terminal, not for CloudWatch.
                .with_ansi(!config.lambda && io::IsTerminal::is_terminal(&io::stderr())),
        )
        .with(config.log.clone())
        .try_init();
}

/// The master secret of a local data directory: the configured one, or the
/// one generated on first run and kept (mode 0600) in [`SECRET_FILE`].
pub fn local_secret(config: &Config) -> Result<MasterSecret, StartError> {
    if let Some(secret) = &config.master_secret {
        return Ok(secret.clone());
    }
    let dir = &config.data_dir;
    sluice::store::private_dir(dir).map_err(io_error(format!("creating {}", dir.display())))?;
    let path = dir.join(SECRET_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => MasterSecret::new(trim_newline(bytes)).map_err(|e| StartError::Io {
            what: format!("reading {}", path.display()),
            source: io::Error::new(io::ErrorKind::InvalidData, e),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => create_secret(&path),
        Err(e) => Err(io_error(format!("reading {}", path.display()))(e)),
    }
}

fn trim_newline(mut bytes: Vec<u8>) -> Vec<u8> {
    while bytes.last().is_some_and(|b| b.is_ascii_whitespace()) {
        bytes.pop();
    }
    bytes
}

/// Writes a fresh secret without overwriting one a concurrent first run made.
fn create_secret(path: &Path) -> Result<MasterSecret, StartError> {
    use std::io::Write as _;
    let secret = sluice::keys::random_id::<32>();
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(mut f) => {
            f.write_all(secret.as_bytes())
                .and_then(|()| f.sync_all())
                .map_err(io_error(format!("writing {}", path.display())))?;
            Ok(MasterSecret::new(secret).expect("43 bytes is long enough"))
        }
        // Another process created it first: use theirs.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let bytes =
                std::fs::read(path).map_err(io_error(format!("reading {}", path.display())))?;
            MasterSecret::new(trim_newline(bytes)).map_err(|e| StartError::Io {
                what: format!("reading {}", path.display()),
                source: io::Error::new(io::ErrorKind::InvalidData, e),
            })
        }
        Err(e) => Err(io_error(format!("creating {}", path.display()))(e)),
    }
}

/// The keyring of a local data directory.
pub fn local_keyring(config: &Config) -> Result<Keyring, StartError> {
    Ok(Keyring::new(
        (config.key_id.clone(), local_secret(config)?),
        config.previous.clone(),
    ))
}

/// The MCP endpoint's URL: `SLUICE_MCP_URL`, or `public_url` + `/mcp`.
pub fn mcp_url(config: &Config, public_url: &Url) -> Url {
    config.mcp_url.clone().unwrap_or_else(|| {
        let base = public_url.as_str().trim_end_matches('/');
        Url::parse(&format!("{base}/mcp")).expect("a URL with /mcp appended is a URL")
    })
}

/// Bearer-token validation for `config`, for the MCP endpoint at `mcp_url`.
/// With an authorization server the audience is `SLUICE_AUTH_AUDIENCE`, or
/// the MCP URL itself (RFC 8707), or, where client ids are configured
/// (Cognito), none.
pub fn access_verifier(config: &Config, keys: Keyring, mcp_url: &Url) -> AccessVerifier {
    let issuer = config.auth_issuer.clone();
    match &config.auth_jwks_url {
        Some(url) => {
            let jwks = sluice::auth::Jwks::new(url.clone(), config.auth_jwks_refresh);
            let verifier = if config.auth_client_ids.is_empty() {
                let audience = config
                    .auth_audience
                    .clone()
                    .unwrap_or_else(|| mcp_url.as_str().to_owned());
                AccessVerifier::with_jwks(jwks, issuer, audience)
            } else {
                AccessVerifier::with_jwks_for_clients(
                    jwks,
                    issuer,
                    config.auth_client_ids.clone(),
                    config.auth_audience.clone(),
                )
            };
            verifier.with_scope_prefix(config.auth_scope_prefix.clone())
        }
        None => AccessVerifier::new(
            keys,
            issuer,
            config
                .auth_audience
                .clone()
                .unwrap_or_else(|| "sluice".to_owned()),
        ),
    }
}

/// Parses a TOML actions catalog read from `origin` (for messages).
pub fn parse_catalog(origin: &str, text: &str) -> Result<Catalog, StartError> {
    Catalog::from_toml(text).map_err(|error| StartError::Actions {
        origin: origin.to_owned(),
        error,
    })
}

/// Reads and validates the actions catalog file at `path`.
pub fn read_catalog_file(path: &Path) -> Result<Catalog, StartError> {
    let text = std::fs::read_to_string(path).map_err(io_error(format!(
        "reading the actions catalog {}",
        path.display()
    )))?;
    parse_catalog(&path.display().to_string(), &text)
}

/// Assembles sluice from its parts and the config.
pub fn assemble(
    config: &Config,
    public_url: Url,
    keys: Keyring,
    store: Arc<dyn sluice::store::ObjectStore>,
    ledger: Arc<dyn sluice::ledger::Ledger>,
    records: Arc<dyn sluice::records::RecordStore>,
    catalog: Catalog,
) -> Sluice {
    let mcp_url = mcp_url(config, &public_url);
    if config.dev_tokens && !matches!(config.backend, sluice::config::Backend::Local) {
        tracing::warn!(
            "SLUICE_DEV_TOKENS=true: bearer tokens minted from the master secret are accepted; \
             for development only, never in production"
        );
    }
    Sluice::new(Parts {
        access: access_verifier(config, keys.clone(), &mcp_url),
        keys,
        store,
        ledger,
        widget_origins: if config.widget_origins.is_empty() {
            vec![format!(
                "https://{}",
                sluice::web::claude_domain(mcp_url.as_str())
            )]
        } else {
            config.widget_origins.clone()
        },
        mcp_url,
        issuer_url: config
            .issuer_url
            .clone()
            .unwrap_or_else(|| public_url.clone()),
        resolver_url: config
            .resolver_url
            .clone()
            .unwrap_or_else(|| public_url.clone()),
        public_url,
        handle_ttl: config.handle_ttl,
        link_ttl: config.link_ttl,
        upload_ttl: config.upload_ttl,
        max_upload_bytes: config.max_upload_bytes,
        part_bytes: config.part_bytes,
        single_put_max_bytes: config.single_put_max_bytes,
        proof_budget: config.proof_budget,
        download_url_ttl: config.download_url_ttl,
        mcp_max_body_bytes: usize::try_from(config.mcp_max_body_bytes).unwrap_or(usize::MAX),
        auth_servers: config.auth_servers.clone(),
        actions: Actions::new(catalog, config.action_limits),
        body_idle_timeout: config.body_idle_timeout,
        limits: sluice::rate::Limits::new(config.rates),
        records,
        pending_caps: config.pending_caps,
    })
}

/// The local backends: a directory of objects, an SQLite ledger, SQLite
/// file records.
#[cfg(feature = "local")]
#[derive(Debug, Clone)]
pub struct LocalBackends {
    /// The objects.
    pub store: LocalStore,
    /// Spent tokens.
    pub ledger: Arc<SqliteLedger>,
    /// File records.
    pub records: sluice::records::SqliteRecords,
}

/// Opens the local backends in the data directory.
#[cfg(feature = "local")]
pub fn local_backends(config: &Config) -> Result<LocalBackends, StartError> {
    let store = LocalStore::open(&config.data_dir, config.quota_bytes, config.max_transfers)
        .map_err(|e| StartError::Io {
            what: format!("opening the store in {}", config.data_dir.display()),
            source: io::Error::other(e),
        })?
        .with_user_share(config.max_transfers_per_user);
    let ledger = SqliteLedger::open(&config.data_dir.join("ledger.sqlite3"))?;
    let records = sluice::records::SqliteRecords::open(&config.data_dir.join("files.sqlite3"))
        .map_err(|e| StartError::Io {
            what: format!("opening the file records in {}", config.data_dir.display()),
            source: io::Error::other(e),
        })?;
    Ok(LocalBackends {
        store,
        ledger: Arc::new(ledger),
        records,
    })
}

/// Assembles sluice on the local backends (a directory and an SQLite ledger).
#[cfg(feature = "local")]
pub fn local_sluice(
    config: &Config,
    public_url: Url,
) -> Result<(Sluice, LocalBackends), StartError> {
    let keys = local_keyring(config)?;
    let local = local_backends(config)?;
    let sluice = assemble(
        config,
        public_url,
        keys,
        Arc::new(local.store.clone()),
        local.ledger.clone(),
        Arc::new(local.records.clone()),
        Catalog::default(),
    );
    Ok((sluice, local))
}

/// Binds the configured address and works out the public URL: the configured
/// one, or the address actually bound (which matters when the port is 0).
pub async fn bind(config: &Config) -> Result<(TcpListener, Url), StartError> {
    let listener = TcpListener::bind((config.host, config.port))
        .await
        .map_err(io_error(format!(
            "listening on {}:{}",
            config.host, config.port
        )))?;
    let addr = listener
        .local_addr()
        .map_err(io_error("reading the bound address"))?;
    let url = match &config.public_url {
        Some(url) => url.clone(),
        None => Url::parse(&format!("http://{addr}/")).expect("a socket address makes a valid URL"),
    };
    Ok((listener, url))
}

/// How a server treats its connections.
#[derive(Debug, Clone, Copy)]
pub struct ServeLimits {
    /// Connections open at once; more wait in the listen backlog.
    pub max_connections: usize,
    /// How long a client may take to send a request's headers.
    pub header_read_timeout: std::time::Duration,
    /// How long a write to a client may wait: a client that stops reading
    /// (a download opened and never read) is cut off, and what it held (a
    /// transfer slot, a connection) is freed.
    pub write_timeout: std::time::Duration,
    /// How long a request body (other than an upload's, which streams under
    /// its own idle timeout and its link's deadline) may take to arrive
    /// whole: a body trickled a byte at a time holds no connection for ever.
    pub body_read_timeout: std::time::Duration,
}

impl ServeLimits {
    /// The limits `config` sets.
    pub fn from_config(config: &Config) -> Self {
        Self {
            max_connections: config.max_connections,
            header_read_timeout: config.header_read_timeout,
            write_timeout: config.write_timeout,
            body_read_timeout: config.body_read_timeout,
        }
    }
}

/// Serves `app` on `listener` until `shutdown` resolves, then drains.
/// Connections past `limits.max_connections` are not accepted until one
/// closes; one that does not send its headers in time, or stops reading
/// what it is sent for `limits.write_timeout`, is closed.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let app = app.layer(axum::middleware::from_fn_with_state(
        limits.body_read_timeout,
        body_deadline,
    ));
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors, say: wait rather than spin.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let mut stream = tokio_io_timeout::TimeoutStream::new(stream);
        stream.set_write_timeout(Some(limits.write_timeout));
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let connection =
            graceful.watch(http.serve_connection(TokioIo::new(Box::pin(stream)), service));
        tokio::spawn(async move {
            let _ = connection.await;
            drop(slot);
        });
    }
    drop(listener);
    // Let requests in flight finish, for a while.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(30), graceful.shutdown()).await;
    Ok(())
}

/// Gives a request's body [`ServeLimits::body_read_timeout`] to arrive
/// whole: past it the body ends in an error, which the route answers as a
/// body that broke off. A route whose body has limits of its own (an
/// upload's: a large file takes as long as its link allows) lifts the
/// deadline ([`sluice::http::BodyDeadline`]) before its handler reads.
async fn body_deadline(
    axum::extract::State(limit): axum::extract::State<std::time::Duration>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use futures_util::StreamExt as _;
    let lifted = sluice::http::BodyDeadline::default();
    request.extensions_mut().insert(lifted.clone());
    let (parts, body) = request.into_parts();
    let deadline = tokio::time::Instant::now() + limit;
    let timed = futures_util::stream::unfold(Some(body.into_data_stream()), move |state| {
        let lifted = lifted.lifted();
        async move {
            let mut data = state?;
            if lifted {
                return data
                    .next()
                    .await
                    .map(|chunk| (chunk.map_err(io::Error::other), Some(data)));
            }
            match tokio::time::timeout_at(deadline, data.next()).await {
                Ok(Some(Ok(chunk))) => Some((Ok(chunk), Some(data))),
                Ok(Some(Err(e))) => Some((Err(io::Error::other(e)), None)),
                Ok(None) => None,
                Err(_) => Some((
                    Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the request body did not arrive in time",
                    )),
                    None,
                )),
            }
        }
    });
    next.run(axum::extract::Request::from_parts(
        parts,
        axum::body::Body::from_stream(timed),
    ))
    .await
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}
