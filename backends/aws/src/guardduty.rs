//! GuardDuty Malware Protection for S3, as sluice reads it: GuardDuty
//! scans each new object under the plan's prefix (`files/`) itself and,
//! with tagging on, tags it `GuardDutyMalwareScanStatus` with its result:
//! `NO_THREATS_FOUND`, `THREATS_FOUND`, or `UNSUPPORTED`, `ACCESS_DENIED`,
//! `FAILED` for an object it did not scan (over its size limit, say). No
//! tag yet: the scan goes on. The tag carries no threat's name (GuardDuty's
//! finding does).

use sluice::FileMeta;
use sluice::scan::{Finding, ScanError, Scanner};
use sluice::store::ObjectStore;

use crate::S3Store;

/// The tag GuardDuty writes on each object it scanned.
pub const SCAN_STATUS_TAG: &str = "GuardDutyMalwareScanStatus";

/// Who the verdict is by.
const BY: &str = "GuardDuty Malware Protection for S3";

/// Reads GuardDuty's tag on the bucket's objects.
#[derive(Debug, Clone)]
pub struct GuardDutyTags {
    bucket: S3Store,
}

impl GuardDutyTags {
    /// The tags on `bucket`'s objects.
    pub fn new(bucket: S3Store) -> Self {
        Self { bucket }
    }
}

/// What GuardDuty's tag value says.
pub fn finding(status: Option<&str>) -> Finding {
    match status {
        None => Finding::Waiting,
        Some("NO_THREATS_FOUND") => Finding::Clean { by: BY.into() },
        Some("THREATS_FOUND") => Finding::Infected {
            signature: "a threat GuardDuty found (its finding names it)".into(),
            by: BY.into(),
        },
        Some(other) => Finding::Unscannable {
            why: format!("GuardDuty did not scan it ({other})"),
        },
    }
}

#[async_trait::async_trait]
impl Scanner for GuardDutyTags {
    fn reads_bytes(&self) -> bool {
        false
    }

    async fn scan(&self, file: &FileMeta, _store: &dyn ObjectStore) -> Result<Finding, ScanError> {
        let status = self
            .bucket
            .tag(&file.object_key(), SCAN_STATUS_TAG)
            .await?
            .ok_or(ScanError::Gone)?;
        Ok(finding(status.as_deref()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tag_value_is_read() {
        assert_eq!(finding(None), Finding::Waiting);
        assert!(matches!(
            finding(Some("NO_THREATS_FOUND")),
            Finding::Clean { .. }
        ));
        assert!(matches!(
            finding(Some("THREATS_FOUND")),
            Finding::Infected { .. }
        ));
        for other in ["UNSUPPORTED", "ACCESS_DENIED", "FAILED"] {
            assert!(
                matches!(finding(Some(other)), Finding::Unscannable { ref why } if why.contains(other)),
                "{other}"
            );
        }
    }
}
