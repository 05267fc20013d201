//! The S3 and DynamoDB emulators, from the kit the tests share with the
//! benchmarks.

pub use sluice_testkit::emulators::*;
