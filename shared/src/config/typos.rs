//! `SLUICE_*` variables that are not settings: a typo, or a name from
//! another tool, which would otherwise be ignored without a word while the
//! server runs on a default the operator did not mean. Each is named at
//! start with the nearest setting ([`named`]); `SLUICE_STRICT` (and
//! `sluice serve --strict`) refuses to start instead.

use super::settings::Setting;

/// Names people reach for that sluice spells otherwise: the setting (or
/// settings) they mean.
const MEANT: &[(&str, &str)] = &[
    ("SLUICE_LISTEN", "SLUICE_HOST and SLUICE_PORT"),
    ("SLUICE_ADDR", "SLUICE_HOST and SLUICE_PORT"),
    ("SLUICE_ADDRESS", "SLUICE_HOST and SLUICE_PORT"),
    ("SLUICE_BIND", "SLUICE_HOST and SLUICE_PORT"),
    ("SLUICE_LISTEN_ADDR", "SLUICE_HOST and SLUICE_PORT"),
    ("SLUICE_URL", "SLUICE_PUBLIC_URL"),
    ("SLUICE_BASE_URL", "SLUICE_PUBLIC_URL"),
    ("SLUICE_DATA", "SLUICE_DATA_DIR"),
    ("SLUICE_LOG_LEVEL", "SLUICE_LOG"),
    ("SLUICE_SECRET", "SLUICE_MASTER_SECRET"),
    ("SLUICE_BUCKET", "SLUICE_S3_BUCKET"),
    ("SLUICE_TABLE", "SLUICE_DYNAMODB_TABLE"),
    ("SLUICE_REGION", "SLUICE_AWS_REGION"),
];

/// One line for each of `set` (variable names) that no setting of `table`
/// has, in name order: "X is not a setting: did you mean Y?", or, with
/// nothing near, where the settings are listed.
pub(super) fn named<'a>(
    set: impl Iterator<Item = &'a str>,
    table: &[&'static Setting],
) -> Vec<String> {
    let mut unknown: Vec<&str> = set
        .filter(|name| name.starts_with("SLUICE_"))
        .filter(|name| !table.iter().any(|s| s.name == *name))
        .collect();
    unknown.sort_unstable();
    unknown
        .into_iter()
        .map(|name| match nearest(name, table) {
            Some(meant) => format!("{name} is not a setting: did you mean {meant}?"),
            None => format!(
                "{name} is not a setting, and is ignored (every setting: docs/configuration.md)"
            ),
        })
        .collect()
}

/// The setting `name` most likely meant: a known other spelling, else the
/// closest name within a few edits (a third of the name's own letters,
/// past the prefix, at most).
fn nearest(name: &str, table: &[&'static Setting]) -> Option<String> {
    if let Some((_, meant)) = MEANT.iter().find(|(other, _)| *other == name) {
        return Some((*meant).to_owned());
    }
    let own = name.trim_start_matches("SLUICE_");
    let within = (own.len() / 3).max(2);
    table
        .iter()
        .map(|s| {
            let theirs = s.name.trim_start_matches("SLUICE_");
            (strsim::damerau_levenshtein(own, theirs), s.name)
        })
        .filter(|(edits, _)| *edits <= within)
        .min_by_key(|(edits, name)| (*edits, *name))
        .map(|(_, name)| name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Vec<&'static Setting> {
        super::super::table().collect()
    }

    /// The issue's own case, a misspelt name, a name too far from any,
    /// and a setting: named with the nearest, said plainly, not named.
    #[test]
    fn each_variable_that_is_no_setting_is_named_with_the_nearest() {
        let named = named(
            [
                "SLUICE_LISTEN",
                "SLUICE_MAX_UPLAOD_BYTES",
                "SLUICE_SCNA",
                "SLUICE_COMPLETELY_DIFFERENT_THING",
                "SLUICE_PORT",
                "HOME",
            ]
            .into_iter(),
            &table(),
        );
        assert_eq!(
            named,
            [
                "SLUICE_COMPLETELY_DIFFERENT_THING is not a setting, and is ignored (every setting: docs/configuration.md)",
                "SLUICE_LISTEN is not a setting: did you mean SLUICE_HOST and SLUICE_PORT?",
                "SLUICE_MAX_UPLAOD_BYTES is not a setting: did you mean SLUICE_MAX_UPLOAD_BYTES?",
                "SLUICE_SCNA is not a setting: did you mean SLUICE_SCAN?",
            ]
        );
    }

    /// Every spelling meant names settings that exist.
    #[test]
    fn every_spelling_meant_names_real_settings() {
        let table = table();
        for (other, meant) in MEANT {
            assert!(
                !table.iter().any(|s| s.name == *other),
                "{other} is a setting"
            );
            for name in meant.split(" and ") {
                assert!(table.iter().any(|s| s.name == name), "{name} for {other}");
            }
        }
    }
}
