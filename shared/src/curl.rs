//! Ready-to-run `curl` lines. They are run by a shell the model controls, so
//! every argument is POSIX single-quoted, and no line ever carries a credential:
//! the link itself is the (single-use, short-lived) authority.

/// Quotes `s` for a POSIX shell: `'…'`, with each `'` written as `'\''`.
pub fn shell_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// A path argument that curl cannot take for an option or for stdin (`-`).
fn path_arg(name: &str) -> String {
    if name.starts_with('-') {
        shell_quote(&format!("./{name}"))
    } else {
        shell_quote(name)
    }
}

/// The file an upload command reads: the label's last path component, so a
/// label such as `/etc/passwd` or `../../secret` names a file in the current
/// directory, never a path elsewhere.
pub fn local_file_name(label: &str) -> &str {
    label
        .rsplit(['/', '\\'])
        .find(|part| !part.is_empty() && *part != "." && *part != "..")
        .unwrap_or("file")
}

/// `curl` that PUTs the local file `local_file` to `url` with exactly `headers`,
/// and fails loudly on any non-2xx.
pub fn upload_command<'a>(
    url: &str,
    headers: impl IntoIterator<Item = (&'a str, &'a str)>,
    local_file: &str,
) -> String {
    put_to(&shell_quote(url), headers, local_file)
}

/// `curl` that first asks the short upload link `link` where the bytes go
/// (a presigned URL of the store, minted then: it never enters the model's
/// context) and then PUTs the local file there with exactly `headers`.
/// Two requests rather than one PUT that a redirect sends on: behind API
/// Gateway, a function sees a request only once the gateway has read its
/// whole body (10 MB at most), so only the bytes' own request may carry
/// them.
pub fn upload_via_command<'a>(
    link: &str,
    headers: impl IntoIterator<Item = (&'a str, &'a str)>,
    local_file: &str,
) -> String {
    format!(
        "u=$(curl -fsS {}) && {}",
        shell_quote(link),
        put_to("\"$u\"", headers, local_file)
    )
}

/// `curl` that PUTs `local_file` to the shell word `url` (already quoted).
fn put_to<'a>(
    url: &str,
    headers: impl IntoIterator<Item = (&'a str, &'a str)>,
    local_file: &str,
) -> String {
    let mut line = String::from("curl --fail-with-body -sS -X PUT");
    for (name, value) in headers {
        line.push_str(" -H ");
        line.push_str(&shell_quote(&format!("{name}: {value}")));
    }
    line.push_str(" --upload-file ");
    line.push_str(&path_arg(local_file));
    line.push(' ');
    line.push_str(url);
    line
}

/// `curl` that downloads `url` (following a redirect) into `out_name` in the
/// current directory, and fails loudly on any non-2xx. The bytes go to
/// `<out_name>.part` and are renamed only once curl succeeded, so an error
/// (a spent or expired link) never replaces a file already there.
pub fn download_command(url: &str, out_name: &str) -> String {
    let part = path_arg(&format!("{out_name}.part"));
    format!(
        "curl --fail-with-body -sSL -o {part} {} && mv -f {part} {}",
        shell_quote(url),
        path_arg(out_name)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upload_reads_a_file_in_the_current_directory() {
        assert_eq!(local_file_name("report.pdf"), "report.pdf");
        assert_eq!(local_file_name("/etc/passwd"), "passwd");
        assert_eq!(local_file_name("../../secret.txt"), "secret.txt");
        assert_eq!(local_file_name("C:\\Users\\me\\a b.txt"), "a b.txt");
        assert_eq!(local_file_name("dir/.."), "dir");
        assert_eq!(local_file_name("/"), "file");
        assert_eq!(local_file_name(".."), "file");
    }
    use std::process::Command;

    fn sh_echo(arg: &str) -> String {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("printf '%s' {}", shell_quote(arg)))
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    }

    #[test]
    fn quoting_survives_a_real_shell() {
        for s in [
            "rapport final;v2 (été).pdf",
            "it's.txt",
            "$(touch pwned) `x` \"q\" \\ *",
            "",
            "'''",
        ] {
            assert_eq!(sh_echo(s), s);
        }
    }

    #[test]
    fn upload_line_sends_the_headers_and_the_file() {
        let line = upload_command(
            "http://h/uploads/t",
            [("Content-Type", "text/plain")],
            "it's.txt",
        );
        assert_eq!(
            line,
            "curl --fail-with-body -sS -X PUT -H 'Content-Type: text/plain' \
             --upload-file 'it'\\''s.txt' 'http://h/uploads/t'"
        );
    }

    #[test]
    fn names_that_look_like_options_are_made_paths() {
        assert!(download_command("http://h/l", "-").contains(" -o './-.part' "));
        assert!(download_command("http://h/l", "-").ends_with(" './-'"));
        assert!(upload_command("u", [], "-rf").contains("--upload-file './-rf'"));
    }
}
