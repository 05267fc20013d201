//! [`ApiError`]: the one place where errors become HTTP responses.
//!
//! Each variant maps to a status and a JSON body `{"message": …}`. Bad input
//! is answered as it is; internal failures answer "internal error" and are
//! logged once, here.

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};

use crate::auth::Scope;
use crate::ledger::LedgerError;
use crate::store::StoreError;

/// An error on its way to the wire.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// 400: the request is wrong, and the message says how.
    #[error("{0}")]
    BadRequest(String),
    /// 401: no valid bearer token.
    #[error("{0}")]
    Unauthorized(&'static str),
    /// 403: the token lacks a scope.
    #[error("this needs the '{0}' scope")]
    InsufficientScope(Scope),
    /// 401 or 403 with a bearer challenge (`auth::challenge`): answered with
    /// `WWW-Authenticate` and, for gateways that rename that header, the
    /// same challenge in the body's `www_authenticate`.
    #[error("{message}")]
    Challenge {
        /// 401 or 403.
        status: StatusCode,
        /// `unauthorized`, `invalid_token` or `insufficient_scope`.
        error: &'static str,
        /// What is wrong, for a person.
        message: String,
        /// The `WWW-Authenticate` value.
        challenge: String,
    },
    /// 403: the caller may not touch this.
    #[error("{0}")]
    Forbidden(String),
    /// 404, with one body whatever the reason, so a token's state never leaks.
    #[error("not found")]
    NotFound,
    /// 405, with the methods that are allowed.
    #[error("method not allowed")]
    MethodNotAllowed(&'static str),
    /// 409: the request conflicts with what is stored.
    #[error("{0}")]
    Conflict(String),
    /// 408: the client took too long (a stalled body, an expired upload).
    #[error("{0}")]
    Timeout(String),
    /// 413: the body is larger than allowed.
    #[error("{0}")]
    PayloadTooLarge(String),
    /// 502: an action's upstream failed, and the message quotes it.
    #[error("{0}")]
    Upstream(String),
    /// 429: this caller asked too often; answered with `Retry-After`.
    #[error("{message}")]
    TooManyRequests {
        /// What happened and when to come back, for a person.
        message: String,
        /// Seconds until a retry can succeed.
        retry_after: u64,
    },
    /// 503: refused for now (every slot is taken); answered with
    /// `Retry-After`.
    #[error("{0}")]
    Unavailable(String),
    /// 507: the store has no room.
    #[error("{0}")]
    InsufficientStorage(String),
    /// 500: logged, answered as "internal error".
    #[error("internal error: {0}")]
    Internal(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl ApiError {
    /// The HTTP status of this error.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::InsufficientScope(_) | ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::Challenge { status, .. } => *status,
            ApiError::NotFound => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::Timeout(_) => StatusCode::REQUEST_TIMEOUT,
            ApiError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Upstream(_) => StatusCode::BAD_GATEWAY,
            ApiError::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::InsufficientStorage(_) => StatusCode::INSUFFICIENT_STORAGE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// Wraps an internal failure.
    pub fn internal(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        ApiError::Internal(Box::new(e))
    }
}

impl From<LedgerError> for ApiError {
    fn from(e: LedgerError) -> Self {
        match e {
            LedgerError::Unavailable(why) => {
                tracing::warn!(reason = %why, "ledger unavailable");
                ApiError::Unavailable(
                    "the ledger cannot answer right now; nothing was spent: try again in a few seconds"
                        .into(),
                )
            }
            other => ApiError::internal(other),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::QuotaExceeded { .. } => ApiError::InsufficientStorage(
                "the store is full: nothing was stored; delete files or raise SLUICE_QUOTA_BYTES"
                    .into(),
            ),
            StoreError::AlreadyExists => ApiError::Conflict(
                "this file was already uploaded; the link cannot be used again".into(),
            ),
            StoreError::Busy(crate::store::Busy::Upload) => ApiError::Conflict(
                "an upload to this link is already in progress: a link stores one upload; \
                 wait for it to finish, then check the file"
                    .into(),
            ),
            StoreError::Busy(busy) => ApiError::Unavailable(format!(
                "{busy}: nothing was read or stored; try again in a few seconds"
            )),
            StoreError::Mismatch(m) => ApiError::BadRequest(format!(
                "{m}; nothing was stored and the link can be used again"
            )),
            StoreError::Body(e) if e.kind() == std::io::ErrorKind::TimedOut => ApiError::Timeout(
                "the upload stopped sending data, so it was ended; nothing was stored and the link can be used again"
                    .into(),
            ),
            StoreError::Body(e) => ApiError::BadRequest(format!(
                "the upload was interrupted ({e}); nothing was stored and the link can be used again"
            )),
            StoreError::Unavailable(why) => {
                tracing::warn!(reason = %why, "store unavailable");
                ApiError::Unavailable(
                    "file storage cannot answer right now; nothing was stored or spent: \
                     try again in a few seconds"
                        .into(),
                )
            }
            StoreError::Io(e) if e.kind() == std::io::ErrorKind::StorageFull => {
                tracing::error!(error = %e, "the disk holding the data directory is full");
                ApiError::InsufficientStorage(
                    "the server's disk is full: nothing was stored and the link can be used again \
                     once space is freed"
                        .into(),
                )
            }
            StoreError::Io(e) => ApiError::internal(e),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let message = match &self {
            ApiError::Internal(e) => {
                tracing::error!(error = %e, "internal error");
                "internal error".to_owned()
            }
            other => other.to_string(),
        };
        let body = match &self {
            // The challenge in the body too, for gateways that rename the header.
            ApiError::Challenge {
                error, challenge, ..
            } => serde_json::json!({
                "error": error,
                "message": message,
                "www_authenticate": challenge,
            }),
            _ => serde_json::json!({ "message": message }),
        };
        let mut response = (status, Json(body)).into_response();
        let headers = response.headers_mut();
        match &self {
            ApiError::Challenge { challenge, .. } => {
                if let Ok(v) = HeaderValue::from_str(challenge) {
                    headers.insert(header::WWW_AUTHENTICATE, v);
                }
            }
            ApiError::Unauthorized(_) => {
                headers.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"sluice\""),
                );
            }
            ApiError::InsufficientScope(scope) => {
                if let Ok(v) = HeaderValue::from_str(&format!(
                    "Bearer error=\"insufficient_scope\", scope=\"{scope}\""
                )) {
                    headers.insert(header::WWW_AUTHENTICATE, v);
                }
            }
            ApiError::MethodNotAllowed(allow) => {
                headers.insert(header::ALLOW, HeaderValue::from_static(allow));
            }
            ApiError::Unavailable(_) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            }
            ApiError::TooManyRequests { retry_after, .. } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(*retry_after));
            }
            _ => {}
        }
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    }
}

/// A JSON request body whose rejections are [`ApiError`]s, so a malformed
/// body gets the same `{message}` shape as every other refusal.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonBody<T>(pub T);

impl<S, T> axum::extract::FromRequest<S> for JsonBody<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(v)) => Ok(Self(v)),
            Err(rejection) => Err(match rejection.status() {
                StatusCode::PAYLOAD_TOO_LARGE => ApiError::PayloadTooLarge(rejection.body_text()),
                _ => ApiError::BadRequest(rejection.body_text()),
            }),
        }
    }
}
