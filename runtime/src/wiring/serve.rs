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
    let listener = TcpListener::bind((config.serve.host, config.serve.port))
        .await
        .map_err(io_error(format!(
            "listening on {}:{}",
            config.serve.host, config.serve.port
        )))?;
    let addr = listener
        .local_addr()
        .map_err(io_error("reading the bound address"))?;
    let url = match &config.urls.public {
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
            max_connections: config.serve.max_connections,
            header_read_timeout: config.serve.header_read_timeout,
            write_timeout: config.serve.write_timeout,
            body_read_timeout: config.serve.body_read_timeout,
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
    let app = app
        .layer(axum::middleware::from_fn(sluice::traces::http_span))
        .layer(axum::middleware::from_fn_with_state(
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
        // Who is asking, for the routes that answer loopback peers only
        // (`/metrics`); axum's `ConnectInfo` extractor reads it.
        let peer = stream.peer_addr().ok();
        let mut stream = tokio_io_timeout::TimeoutStream::new(stream);
        stream.set_write_timeout(Some(limits.write_timeout));
        let service = tower::ServiceExt::map_request(
            app.clone(),
            move |mut request: http::Request<hyper::body::Incoming>| {
                if let Some(peer) = peer {
                    request
                        .extensions_mut()
                        .insert(axum::extract::ConnectInfo(peer));
                }
                request
            },
        );
        let service = hyper_util::service::TowerToHyperService::new(service);
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
///
/// A route that answers without reading its request's body to the end (a
/// 401 before a POST's body arrived, a refused upload) gets `Connection:
/// close` on its answer. HTTP/1.1 cannot tell where the next request on
/// that connection would begin, so the server closes it either way
/// (RFC 9112, section 9.6); saying so keeps a client from sending its next
/// request on a connection being closed, which it would see as "server
/// disconnected without sending a response".
async fn body_deadline(
    axum::extract::State(limit): axum::extract::State<std::time::Duration>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let lifted = sluice::http::BodyDeadline::default();
    request.extensions_mut().insert(lifted.clone());
    let (parts, body) = request.into_parts();
    let ended = Arc::new(std::sync::atomic::AtomicBool::new(
        http_body::Body::is_end_stream(&body),
    ));
    let timed = Timed {
        inner: body,
        deadline: Box::pin(tokio::time::sleep(limit)),
        lifted,
        ended: ended.clone(),
        failed: false,
    };
    let mut response = next
        .run(axum::extract::Request::from_parts(
            parts,
            axum::body::Body::new(timed),
        ))
        .await;
    if !ended.load(std::sync::atomic::Ordering::Acquire) {
        response.headers_mut().insert(
            http::header::CONNECTION,
            http::HeaderValue::from_static("close"),
        );
    }
    response
}

/// A request body under the server's read deadline, which records whether
/// it was read to its end.
struct Timed {
    inner: axum::body::Body,
    deadline: std::pin::Pin<Box<tokio::time::Sleep>>,
    lifted: sluice::http::BodyDeadline,
    ended: Arc<std::sync::atomic::AtomicBool>,
    failed: bool,
}

impl http_body::Body for Timed {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        use std::task::Poll;
        let this = self.get_mut();
        if this.failed {
            return Poll::Ready(None);
        }
        let frame = std::pin::Pin::new(&mut this.inner).poll_frame(cx);
        let end = || this.ended.store(true, std::sync::atomic::Ordering::Release);
        match frame {
            Poll::Ready(None) => {
                end();
                Poll::Ready(None)
            }
            Poll::Ready(Some(Ok(frame))) => {
                if this.inner.is_end_stream() {
                    end();
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.failed = true;
                Poll::Ready(Some(Err(e)))
            }
            Poll::Pending => {
                if this.lifted.lifted() || this.deadline.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                this.failed = true;
                Poll::Ready(Some(Err(axum::Error::new(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the request body did not arrive in time",
                )))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.failed || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
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
