//! How the bench measures, said once, so each section states only its
//! intent: a step run for some rounds, the median of what they took, and
//! a ratio against a baseline measured in the same rounds (this machine
//! is shared and noisy: figures are taken side by side, never held
//! against a number stored from another run).

/// The median of `v` (the upper one of an even count).
pub fn median<T: PartialOrd + Copy>(mut v: Vec<T>) -> T {
    assert!(!v.is_empty(), "a median of nothing");
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v[v.len() / 2]
}

/// Runs `step` for `n` rounds (told which, from 1), saying so on stderr
/// under `what`, and gives each round's result.
pub fn rounds<T>(
    n: usize,
    what: &str,
    mut step: impl FnMut(usize) -> anyhow::Result<T>,
) -> anyhow::Result<Vec<T>> {
    (1..=n)
        .map(|round| {
            eprintln!("{what}: round {round} of {n}…");
            step(round)
        })
        .collect()
}

/// How our rate compares with the reference's, from the seconds each took
/// to move the same bytes: above 1, ours is faster.
pub fn rate_ratio(ours_secs: f64, reference_secs: f64) -> f64 {
    if ours_secs > 0.0 {
        reference_secs / ours_secs
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_median_is_the_middle_of_the_sorted_rounds() {
        assert_eq!(super::median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(super::median(vec![4, 1, 3, 2]), 3);
        assert_eq!(super::rate_ratio(2.0, 3.0), 1.5);
    }
}
