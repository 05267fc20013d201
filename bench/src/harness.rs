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

/// Whose CPU time [`cpu_seconds`] reads.
#[derive(Clone, Copy)]
pub enum Whose {
    /// The process's own.
    Own,
    /// That of the children it has waited for (`cutime + cstime`): what
    /// the commands a bench runs (curl, a shell line) spent.
    WaitedChildren,
}

/// User + system CPU seconds of process `pid` (`/proc/<pid>/stat`).
pub fn cpu_seconds(pid: u32, whose: Whose) -> anyhow::Result<f64> {
    parse_cpu_seconds(
        &std::fs::read_to_string(format!("/proc/{pid}/stat"))?,
        whose,
    )
}

/// [`cpu_seconds`] from a `/proc/<pid>/stat` line. Its fields are counted
/// after the command's name, which is in parentheses and may hold spaces;
/// the times are in USER_HZ, which Linux fixes at 100 for every program.
fn parse_cpu_seconds(stat: &str, whose: Whose) -> anyhow::Result<f64> {
    const USER_HZ: f64 = 100.0;
    let after_name = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .ok_or_else(|| anyhow::anyhow!("no command name in {stat:?}"))?;
    // Field 3 (the state) is the first after the name; utime and stime
    // are fields 14 and 15, cutime and cstime 16 and 17.
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let at = match whose {
        Whose::Own => 11,
        Whose::WaitedChildren => 13,
    };
    let tick = |i: usize| -> anyhow::Result<f64> {
        let field = fields
            .get(i)
            .ok_or_else(|| anyhow::anyhow!("short stat line {stat:?}"))?;
        Ok(field.parse::<u64>()? as f64 / USER_HZ)
    };
    Ok(tick(at)? + tick(at + 1)?)
}

#[cfg(test)]
mod tests {
    #[test]
    fn cpu_seconds_are_read_after_the_command_name() {
        // A name with a space and a parenthesis, as a thread may have.
        let stat = "4242 (tokio rt) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 \
                    250 75 12 3 20 0 9 0 100 0 0";
        let own = super::parse_cpu_seconds(stat, super::Whose::Own).unwrap();
        let children = super::parse_cpu_seconds(stat, super::Whose::WaitedChildren).unwrap();
        assert!((own - 3.25).abs() < 1e-9, "{own}");
        assert!((children - 0.15).abs() < 1e-9, "{children}");
        assert!(super::parse_cpu_seconds("4242 S 1", super::Whose::Own).is_err());
    }

    #[test]
    fn the_median_is_the_middle_of_the_sorted_rounds() {
        assert_eq!(super::median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(super::median(vec![4, 1, 3, 2]), 3);
        assert_eq!(super::rate_ratio(2.0, 3.0), 1.5);
    }
}
