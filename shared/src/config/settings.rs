//! What a setting is: its variable, its group, its parser, its default,
//! and one line of doc. Each group's settings are rows kept beside the code
//! that reads them (`config/<group>.rs`, its `ROWS`), so a setting is one
//! file; [`super::table`] gathers them into the one table that
//! [`super::Config::from_env`] reads through (a variable not in it cannot be
//! read), and that the configuration page's configuration section renders
//! ([`markdown`]; a test keeps them equal).

/// Which part of sluice a setting concerns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// Where sluice runs and how it is reached.
    Core,
    /// Lifetimes, sizes, rates and timeouts.
    Limits,
    /// Bearer tokens and the authorization server.
    Auth,
    /// The aws backend.
    Aws,
    /// Actions and their upstreams.
    Actions,
    /// Files fetched from a URL (`import_file`).
    Imports,
    /// Malware scanning before a file is used.
    Scan,
    /// Events to the team's backend, and metrics.
    Operations,
}

impl Group {
    /// Every group, in the configuration page's order.
    pub const ALL: [Group; 8] = [
        Group::Core,
        Group::Limits,
        Group::Auth,
        Group::Aws,
        Group::Actions,
        Group::Imports,
        Group::Scan,
        Group::Operations,
    ];

    fn title(self) -> &'static str {
        match self {
            Group::Core => "Core",
            Group::Limits => "Limits",
            Group::Auth => "Auth",
            Group::Aws => "AWS",
            Group::Actions => "Actions",
            Group::Imports => "Imports",
            Group::Scan => "Malware scanning",
            Group::Operations => "Webhooks and metrics",
        }
    }
}

/// How a setting's value is read; a value that does not parse stops the
/// process with a message naming the variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parse {
    /// Any text.
    Text,
    /// A whole number above zero.
    Positive,
    /// A whole number of seconds above zero.
    Seconds,
    /// `true`/`false` (`1`/`0`, `on`/`off`).
    Flag,
    /// An IP address.
    Ip,
    /// A port, 0 to 65535.
    Port,
    /// An `http(s)://` URL with a host, no credentials, query or fragment.
    Url,
    /// Comma-separated [`Parse::Url`]s.
    Urls,
    /// Comma-separated names.
    List,
    /// A master secret of at least 32 bytes (never echoed).
    Secret,
    /// A key id.
    KeyId,
    /// A log filter: a level, or targets with levels.
    LogFilter,
    /// One of the listed words.
    OneOf(&'static [&'static str]),
}

/// What a setting is when its variable is unset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Default {
    /// This value, read as if it were set.
    Value(&'static str),
    /// Nothing, or something worked out at start; the words say what.
    Unset(&'static str),
}

/// One setting.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    /// The environment variable.
    pub name: &'static str,
    /// Its group.
    pub group: Group,
    /// How its value is read.
    pub parse: Parse,
    /// Its default.
    pub default: Default,
    /// What it means, in one line.
    pub doc: &'static str,
}

pub(super) const fn s(
    name: &'static str,
    group: Group,
    parse: Parse,
    default: Default,
    doc: &'static str,
) -> Setting {
    Setting {
        name,
        group,
        parse,
        default,
        doc,
    }
}

/// The configuration page's tables (`docs/configuration.md`) for `table`:
/// one per group.
pub fn markdown(table: impl Iterator<Item = &'static Setting> + Clone) -> String {
    let mut out = String::new();
    for group in Group::ALL {
        out.push_str(&format!(
            "## {}\n\n| variable | default | meaning |\n|---|---|---|\n",
            group.title()
        ));
        for s in table.clone().filter(|s| s.group == group) {
            let default = match s.default {
                Default::Value(v) => format!("`{v}`"),
                Default::Unset(words) => words.to_owned(),
            };
            out.push_str(&format!("| `{}` | {default} | {} |\n", s.name, s.doc));
        }
        out.push('\n');
    }
    out
}
