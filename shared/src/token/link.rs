//! Link tokens: the last path segment of `/links/<token>` and `/uploads/<token>`,
//! sealed like handles.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::error::TokenError;
use super::handle::FileClaims;
use super::sealed::{self, LINK};
use crate::file::FileMeta;
use crate::keys::random_id;
use crate::keys::{Keyring, Purpose};

/// What a link lets its bearer do, once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Method {
    /// Download the file.
    #[serde(rename = "GET")]
    Get,
    /// Upload the file's bytes.
    #[serde(rename = "PUT")]
    Put,
}

impl Method {
    /// The HTTP method name.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Put => "PUT",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A verified link token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkToken {
    /// What the link allows.
    pub method: Method,
    /// The file it is bound to.
    pub file: FileMeta,
    /// The token's unique id: what the ledger records and the logs show.
    pub jti: String,
    /// Expiry, seconds since the Unix epoch.
    pub expires_at: i64,
}

#[derive(Serialize, Deserialize)]
struct Claims {
    m: Method,
    #[serde(flatten)]
    file: FileClaims,
    jti: String,
}

impl LinkToken {
    /// A new link for `file` with a fresh `jti`.
    pub fn new(method: Method, file: FileMeta, expires_at: i64) -> Self {
        Self {
            method,
            file,
            jti: random_id::<12>(),
            expires_at,
        }
    }

    /// Signs the link token.
    pub fn encode(&self, keys: &Keyring) -> String {
        let claims = Claims {
            m: self.method,
            file: FileClaims::of(&self.file),
            jti: self.jti.clone(),
        };
        sealed::seal(keys, Purpose::Link, LINK, claims, self.expires_at)
    }

    /// Verifies a link token and checks that it allows `method`.
    pub fn decode(keys: &Keyring, token: &str, method: Method) -> Result<Self, TokenError> {
        let (c, exp): (Claims, i64) = sealed::open(keys, Purpose::Link, LINK, token)?;
        if c.m != method {
            return Err(TokenError::WrongType);
        }
        Ok(Self {
            method: c.m,
            file: c.file.file()?,
            jti: c.jti,
            expires_at: exp,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token::Handle;
    use crate::token::handle::tests::sample_file;
    use crate::token::tests::ring;

    #[test]
    fn a_link_round_trips_for_its_own_method_only() {
        let keys = ring("k1", 1);
        let link = LinkToken::new(Method::Get, sample_file(), crate::time::now_unix() + 60);
        let t = link.encode(&keys);
        assert_eq!(LinkToken::decode(&keys, &t, Method::Get), Ok(link));
        assert_eq!(
            LinkToken::decode(&keys, &t, Method::Put),
            Err(TokenError::WrongType)
        );
    }

    #[test]
    fn links_and_handles_are_never_interchangeable() {
        let keys = ring("k1", 1);
        let exp = crate::time::now_unix() + 60;
        let link = LinkToken::new(Method::Get, sample_file(), exp).encode(&keys);
        assert_eq!(Handle::decode(&keys, &link), Err(TokenError::WrongType));
        let handle = Handle {
            file: sample_file(),
            expires_at: exp,
        }
        .encode(&keys);
        let jwt = handle.strip_prefix(crate::token::handle::PREFIX).unwrap();
        assert_eq!(
            LinkToken::decode(&keys, jwt, Method::Get),
            Err(TokenError::WrongType)
        );
    }

    #[test]
    fn every_link_has_its_own_jti() {
        let exp = crate::time::now_unix() + 60;
        let a = LinkToken::new(Method::Get, sample_file(), exp);
        let b = LinkToken::new(Method::Get, sample_file(), exp);
        assert_ne!(a.jti, b.jti);
    }
}
