//! `$uploadedFile:<token>` handles: what the model passes around instead of
//! bytes. The token is a short one of kind handle ([`super::Short`]),
//! naming its file by id; the file's record says the rest.

/// The prefix that marks a handle in tool arguments.
pub const PREFIX: &str = "$uploadedFile:";
