//! What a link lets its bearer do: download (`/l/<token>`) or upload
//! (`/u/<token>`) one file, once. The token is a short one
//! ([`super::Short`]) of the matching kind.

use std::fmt;

use serde::{Deserialize, Serialize};

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
