//! Serving a router on a listener until a shutdown signal, with the
//! limits on connections, headers, bodies and writes.

use std::future::Future;
use std::io;
use std::sync::Arc;

use axum::Router;
use tokio::net::TcpListener;
use url::Url;

use sluice::config::Config;

use super::StartError;
use super::error::io_error;

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
