//! The HTTP adapter of the service, shared by the three functions: how a
//! service [`Error`] becomes a response ([`HttpError`], the one place), the
//! JSON body extractor whose refusals have the same shape, and bearer
//! authentication with its challenge ([`auth`]).

pub mod auth;
mod routes;

pub use routes::{Routes, Served};

/// The deadline a request's body has to arrive whole, set where a server
/// reads requests (`sluice_runtime::serve`), for every route but those that
/// lift it: an upload's body has limits of its own (an idle timeout between
/// chunks and its link's deadline), and a large file takes as long as its
/// link allows. Lifted by route ([`own_body_limits`]), never by path.
#[derive(Debug, Clone, Default)]
pub struct BodyDeadline(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl BodyDeadline {
    /// This request's body is under its route's own limits from now on.
    pub fn lift(&self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether a route lifted it.
    pub fn lifted(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Middleware for a route whose body has its own limits (an upload's):
/// lifts the request's [`BodyDeadline`], if a server set one.
pub async fn own_body_limits(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if let Some(deadline) = request.extensions().get::<BodyDeadline>() {
        deadline.lift();
    }
    next.run(request).await
}

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};

use crate::error::Error;

/// An error on its way to the wire: a service error, a bearer challenge,
/// or a method the route does not serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// What the service refused, with its status from [`status_of`].
    #[error(transparent)]
    Service(#[from] Error),
    /// 401 or 403 with a bearer challenge ([`auth::challenge`]): answered
    /// with `WWW-Authenticate` and, for gateways that rename that header,
    /// the same challenge in the body's `www_authenticate`.
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
    /// 405, with the methods that are allowed.
    #[error("method not allowed")]
    MethodNotAllowed(&'static str),
    /// 400 or 413: a request body that is not the JSON the route takes.
    #[error("{message}")]
    Body {
        /// 400 or 413.
        status: StatusCode,
        /// What the JSON reader said.
        message: String,
    },
}

/// The HTTP status of a service error.
pub fn status_of(e: &Error) -> StatusCode {
    match e {
        Error::Invalid(_)
        | Error::HandleExpired
        | Error::NotAHandle
        | Error::UnknownFile(_)
        | Error::FileExpired(_)
        | Error::TooLargeInline { .. }
        | Error::BodyMismatch(_)
        | Error::BodyBroken(_)
        | Error::UnknownAction(_)
        | Error::Field { .. }
        | Error::FormNotAnObject
        | Error::NotAnUploadId
        | Error::ForeignCursor
        | Error::PartsNotTheFile(_)
        | Error::NotTheFile(_)
        | Error::DigestToCome => StatusCode::BAD_REQUEST,
        Error::DigestFirst => StatusCode::PRECONDITION_REQUIRED,
        Error::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
        Error::OtherUsersHandle | Error::PageRefused(_) | Error::NotGranted(_) => {
            StatusCode::FORBIDDEN
        }
        Error::NotFound => StatusCode::NOT_FOUND,
        Error::LinkBudgetSpent | Error::ZipNotBuilt(_) => StatusCode::GONE,
        Error::NotUploaded
        | Error::Verifying
        | Error::Scanning
        | Error::ScanRejected(_)
        | Error::StoredMismatch
        | Error::PageConflict(_)
        | Error::DigestDeclared(_)
        | Error::AlreadyUploaded
        | Error::UploadInProgress
        | Error::OffsetConflict(_)
        | Error::Completing => StatusCode::CONFLICT,
        Error::UploadExpired | Error::BodyStalled => StatusCode::REQUEST_TIMEOUT,
        Error::Limited { .. } => StatusCode::TOO_MANY_REQUESTS,
        Error::Busy(_)
        | Error::StoreUnavailable
        | Error::LedgerUnavailable
        | Error::ReceiptPending(_) => StatusCode::SERVICE_UNAVAILABLE,
        Error::StoreFull | Error::DiskFull => StatusCode::INSUFFICIENT_STORAGE,
        Error::Upstream(_) => StatusCode::BAD_GATEWAY,
        Error::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// What a REST client reads: the service's words, and for the few errors
/// that call for a next step, the step a program takes over HTTP.
fn message_of(e: &Error) -> String {
    match e {
        Error::Internal(inner) => {
            tracing::error!(error = %inner, "internal error");
            "internal error".to_owned()
        }
        Error::HandleExpired => {
            format!("{e}: request a new upload (POST /uploads) and upload the file to the new URL")
        }
        Error::NotUploaded => {
            format!("{e}: send its bytes to the upload URL its upload request returned first")
        }
        Error::UploadExpired => format!("{e}: request a new upload and send the file to its URL"),
        other => other.to_string(),
    }
}

impl HttpError {
    /// The HTTP status of this error.
    pub fn status(&self) -> StatusCode {
        match self {
            HttpError::Service(e) => status_of(e),
            HttpError::Challenge { status, .. } | HttpError::Body { status, .. } => *status,
            HttpError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
        }
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        HttpError::Service(self).into_response()
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let status = self.status();
        crate::telemetry::refused(match &self {
            HttpError::Service(e) => e.reason(),
            HttpError::Challenge { .. } => "unauthorized",
            HttpError::Body { .. } => "bad_body",
            HttpError::MethodNotAllowed(_) => "method_not_allowed",
        });
        let body = match &self {
            // The challenge in the body too, for gateways that rename the header.
            HttpError::Challenge {
                error,
                message,
                challenge,
                ..
            } => serde_json::json!({
                "error": error,
                "message": message,
                "www_authenticate": challenge,
            }),
            HttpError::Service(e) => serde_json::json!({ "message": message_of(e) }),
            other => serde_json::json!({ "message": other.to_string() }),
        };
        let mut response = (status, Json(body)).into_response();
        let headers = response.headers_mut();
        match &self {
            HttpError::Challenge { challenge, .. } => {
                if let Ok(v) = HeaderValue::from_str(challenge) {
                    headers.insert(header::WWW_AUTHENTICATE, v);
                }
            }
            HttpError::MethodNotAllowed(allow) => {
                headers.insert(header::ALLOW, HeaderValue::from_static(allow));
            }
            HttpError::Service(Error::Limited { retry_after, .. }) => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(*retry_after));
            }
            HttpError::Service(e) if status_of(e) == StatusCode::SERVICE_UNAVAILABLE => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            }
            _ => {}
        }
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    }
}

/// A JSON request body whose rejections are [`HttpError`]s, so a malformed
/// body gets the same `{message}` shape as every other refusal.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonBody<T>(pub T);

impl<S, T> axum::extract::FromRequest<S> for JsonBody<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = HttpError;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(v)) => Ok(Self(v)),
            Err(rejection) => Err(HttpError::Body {
                status: match rejection.status() {
                    StatusCode::PAYLOAD_TOO_LARGE => StatusCode::PAYLOAD_TOO_LARGE,
                    _ => StatusCode::BAD_REQUEST,
                },
                message: rejection.body_text(),
            }),
        }
    }
}

/// The fallback of a route: 405 naming the methods it serves.
pub async fn only(allow: &'static str) -> HttpError {
    HttpError::MethodNotAllowed(allow)
}

/// A `text/plain` answer that no cache keeps: what the lines' scripts
/// read (part targets, lists of files, the scripts themselves).
pub fn text(body: impl Into<String>) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body.into(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_rest_answer_names_a_tool() {
        let id = crate::file::FileId::random();
        for e in [
            Error::HandleExpired,
            Error::NotUploaded,
            Error::UploadExpired,
            Error::UnknownFile(id.clone()),
            Error::FileExpired(id),
            Error::NotAHandle,
            Error::FormNotAnObject,
            Error::NotAnUploadId,
            Error::ForeignCursor,
            Error::PartsNotTheFile(crate::sha::Mismatch::TooShort {
                expected: 2,
                actual: 1,
            }),
            Error::field("doc", crate::error::FieldError::NotAFile),
            Error::field("doc", crate::error::FieldError::NotUploaded("a.pdf".into())),
            Error::field("doc", crate::error::FieldError::StoredMismatch),
        ] {
            let message = message_of(&e);
            for tool in [
                "request_upload",
                "list_files",
                "get_download_url",
                "list_actions",
                "request_browser_upload",
                "curl",
            ] {
                assert!(!message.contains(tool), "{message}");
            }
        }
    }

    #[test]
    fn unavailable_answers_say_when_to_come_back() {
        let r = HttpError::from(Error::LedgerUnavailable).into_response();
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(r.headers()[header::RETRY_AFTER], "5");
        let r = HttpError::from(Error::Limited {
            message: "slow down".into(),
            retry_after: 7,
        })
        .into_response();
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(r.headers()[header::RETRY_AFTER], "7");
    }

    #[test]
    fn an_internal_error_says_nothing_of_its_cause() {
        let e = HttpError::from(Error::internal(std::io::Error::other("disk /secret/path")));
        assert_eq!(e.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let HttpError::Service(inner) = &e else {
            panic!("{e:?}")
        };
        assert_eq!(message_of(inner), "internal error");
    }
}
