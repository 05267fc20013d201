//! Uploads in parts: how a file is cut. No I/O.
//!
//! A file over `SLUICE_SINGLE_PUT_MAX_BYTES` is uploaded as numbered parts
//! (from 1) of one size, the last shorter, at most [`MAX_PARTS`] of them:
//! the part size grows with the file when the configured one would need
//! more. Each part is verified against the SHA-256 its sender declares;
//! the whole file against the size and SHA-256 declared when it was
//! issued, once every part is there (docs/ARCHITECTURE.md, "Upload in
//! parts").

use serde::Serialize;

/// The most parts of one upload (S3's limit).
pub const MAX_PARTS: u64 = 10_000;
/// The smallest part but the last (S3's limit).
pub const MIN_PART_BYTES: u64 = 5 * MIB;
/// The largest part (S3's limit), and the largest single PUT.
pub const MAX_PART_BYTES: u64 = 5 * 1024 * MIB;
const MIB: u64 = 1024 * 1024;

/// How a file of `size` bytes is cut into parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Plan {
    /// The file's size.
    pub size: u64,
    /// Every part's size but the last's (a whole number of MiB).
    pub part_size: u64,
    /// How many parts.
    pub count: u32,
}

impl Plan {
    /// The plan of a file of `size` bytes in parts of `part_size` (rounded
    /// up to whole MiB, and grown so that [`MAX_PARTS`] parts hold the file).
    pub fn new(size: u64, part_size: u64) -> Self {
        let needed = size.div_ceil(MAX_PARTS);
        let part_size = part_size.max(needed).max(1).div_ceil(MIB) * MIB;
        let count = size.div_ceil(part_size).max(1);
        Self {
            size,
            part_size,
            count: u32::try_from(count).unwrap_or(u32::MAX),
        }
    }

    /// The size of part `n` (from 1), or `None` if the plan has no such part.
    pub fn len(&self, n: u32) -> Option<u64> {
        if n == 0 || n > self.count {
            return None;
        }
        let start = u64::from(n - 1) * self.part_size;
        Some((self.size - start).min(self.part_size))
    }

    /// The parts of the plan, from 1.
    pub fn numbers(&self) -> std::ops::RangeInclusive<u32> {
        1..=self.count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_cover_the_file_exactly() {
        for (size, part) in [
            (1, 8 * MIB),
            (8 * MIB, 8 * MIB),
            (8 * MIB + 1, 8 * MIB),
            (100 * MIB + 7, 8 * MIB),
            (3 * MIB, 5 * MIB + 1),
        ] {
            let plan = Plan::new(size, part);
            assert_eq!(plan.part_size % MIB, 0);
            let total: u64 = plan.numbers().map(|n| plan.len(n).unwrap()).sum();
            assert_eq!(total, size, "{plan:?}");
            assert!(plan.numbers().all(|n| plan.len(n).unwrap() > 0));
            assert_eq!(plan.len(0), None);
            assert_eq!(plan.len(plan.count + 1), None);
        }
        assert_eq!(Plan::new(8 * MIB + 1, 8 * MIB).count, 2);
        assert_eq!(Plan::new(3 * MIB, 5 * MIB + 1).part_size, 6 * MIB);
    }

    #[test]
    fn the_part_size_grows_so_ten_thousand_parts_hold_any_file() {
        // S3's largest object: 48.8 TiB in 10,000 parts of at most 5 GiB.
        let largest = MAX_PARTS * MAX_PART_BYTES;
        let plan = Plan::new(largest, 64 * MIB);
        assert_eq!(u64::from(plan.count), MAX_PARTS);
        assert_eq!(plan.part_size, MAX_PART_BYTES);
        let plan = Plan::new(1024 * 1024 * MIB, 64 * MIB);
        assert!(u64::from(plan.count) <= MAX_PARTS, "{plan:?}");
        assert_eq!(plan.part_size, 105 * MIB);
    }
}
