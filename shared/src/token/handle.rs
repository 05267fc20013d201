//! `$uploadedFile:<token>` handles: what the model passes around instead of
//! bytes. The token is a short one of kind handle ([`super::Short`]),
//! naming its file by id; the file's record says the rest.

/// The prefix that marks a handle in tool arguments.
pub const PREFIX: &str = "$uploadedFile:";

/// The prefix that marks a batch's handle (`request_uploads`): a FileList
/// field takes it for the batch's files.
pub const BATCH_PREFIX: &str = "$uploadedFiles:";
