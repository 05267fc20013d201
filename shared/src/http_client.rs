//! The one HTTP client stack sluice uses for its own outbound calls (the
//! JWKS fetch, action upstreams): hyper over rustls on aws-lc, the crypto
//! library the AWS SDK already links, with the system's trust roots.

use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;

/// HTTPS with the system's trust roots (as the AWS SDK uses), or plain HTTP
/// for a URL that names it (a local authorization server or upstream).
pub fn https_connector() -> HttpsConnector<HttpConnector> {
    let mut http = HttpConnector::new();
    http.set_nodelay(true);
    https_over(http)
}

/// [`https_connector`] over `http`, a connector with its own resolver and
/// timeouts (the import client's: [`crate::fetch`]).
pub(crate) fn https_over<R>(mut http: HttpConnector<R>) -> HttpsConnector<HttpConnector<R>> {
    use hyper_rustls::ConfigBuilderExt as _;
    let builder = rustls::ClientConfig::builder_with_provider(
        rustls::crypto::aws_lc_rs::default_provider().into(),
    )
    .with_safe_default_protocol_versions()
    .expect("aws-lc supports the default protocol versions");
    let tls = builder
        .clone()
        .with_native_roots()
        .unwrap_or_else(|e| {
            // No trust roots on this machine: HTTPS URLs will fail to
            // verify, and say so, but an http:// one still works.
            tracing::warn!(error = %e, "no system trust roots for outbound HTTPS");
            builder.with_root_certificates(rustls::RootCertStore::empty())
        })
        .with_no_client_auth();
    http.enforce_http(false);
    hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http)
}
