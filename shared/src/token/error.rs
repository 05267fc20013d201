//! [`TokenError`]: each way a token can be bad, its own variant.

/// Why a token was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// Nothing was given.
    #[error("the token is empty")]
    Empty,
    /// Not a JWT at all, or cut short.
    #[error("the token is malformed")]
    Malformed,
    /// A token of another kind (a link where a handle belongs, a bearer token…).
    #[error("the token is of another kind")]
    WrongType,
    /// Signed with a key id this instance does not have.
    #[error("the token was signed with an unknown key")]
    UnknownKey,
    /// The signature does not verify: the token was altered, or signed elsewhere.
    #[error("the token's signature does not verify")]
    BadSignature,
    /// Past its expiry.
    #[error("the token has expired")]
    Expired,
    /// Not valid yet: its `nbf` or `iat` is in the future.
    #[error("the token is not valid yet")]
    NotYetValid,
    /// A bearer token for another issuer or audience.
    #[error("the token was issued by another issuer or for another audience")]
    WrongAudience,
}
