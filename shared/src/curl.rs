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

/// The one line that uploads `local_file` in parts through the upload link
/// `link`: it fetches the link's script (`GET <link>/sh`,
/// [`parts_script`]) and runs it with `sh`. Running the same line again
/// after any interruption resumes: only parts not yet stored are sent.
pub fn parts_command(link: &str, local_file: &str) -> String {
    format!(
        "s=$(curl -fsS {}) && sh -c \"$s\" sluice {}",
        shell_quote(&format!("{link}/sh")),
        path_arg(local_file)
    )
}

/// The POSIX `sh` script (with `curl` and coreutils: `wc`, `dd`,
/// `sha256sum`, `cut`, `mktemp`; it hashes with `openssl` where there is
/// one, four times as fast here, and `shasum` where there is no
/// `sha256sum`, as on macOS) that uploads the file named by its first
/// argument in the parts of `plan` through the upload link `link`. It asks
/// which parts are stored already; then, [`PARTS_IN_FLIGHT`] at a time, for
/// each other part it hashes it (read straight from the file with `dd`),
/// asks `POST <link>/parts/<n>?sha256=<hex>` where to send it (an answer in
/// curl's config format: the URL and exactly the headers to send), and
/// streams it there with its exact length; finally it asks
/// `POST <link>/complete`, which proves the whole file, again while it
/// answers 202 (a proof longer than one request goes on at the next). A part that fails
/// ends the run after its batch, saying to run the same line again, which
/// sends only what is missing. Every part size is a whole number of MiB, so
/// `dd` cuts with plain POSIX operands.
pub fn parts_script(link: &str, plan: &crate::multipart::Plan) -> String {
    const MIB: u64 = 1024 * 1024;
    format!(
        r#"set -eu
f=$1 L={link} N={count} S={size} M={mibs} K={in_flight}
[ -f "$f" ] || {{ echo "sluice: there is no file $f here: run the line where the file is, or give its path" >&2; exit 1; }}
[ "$(wc -c < "$f")" -eq "$S" ] || {{ echo "sluice: $f is not $S bytes: it is not the file this upload was asked for" >&2; exit 1; }}
p=$(curl -fsS "$L/parts") || {{ echo "sluice: this upload has expired or is unknown: call request_upload again" >&2; exit 1; }}
have=" $(printf '%s' "$p" | tr '\n' ' ') "
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
if command -v openssl >/dev/null 2>&1; then H='openssl dgst -sha256 -r'
elif command -v sha256sum >/dev/null 2>&1; then H=sha256sum
else H='shasum -a 256'; fi
part() {{ dd if="$f" bs=1048576 skip=$(( ($1 - 1) * M )) count="$M" 2>/dev/null; }}
send() {{
  n=$(( $1 < N ? M * 1048576 : S - (N - 1) * M * 1048576 ))
  h=$(part "$1" | $H | cut -c1-64)
  curl -fsS -X POST -o "$d/$1.cfg" "$L/parts/$1?sha256=$h"
  part "$1" | curl -K "$d/$1.cfg" --fail-with-body -sS -X PUT -T - -H "Content-Length: $n" -H 'Transfer-Encoding:'
  : > "$d/$1.ok"
  echo "sluice: part $1 of $N sent" >&2
}}
i=1
while [ "$i" -le "$N" ]; do
  sent=
  while [ "$i" -le "$N" ] && [ "$(printf '%s' "$sent" | wc -w)" -lt "$K" ]; do
    case "$have" in *" $i "*) ;; *) send "$i" & sent="$sent $i" ;; esac
    i=$((i + 1))
  done
  wait
  for j in $sent; do
    [ -e "$d/$j.ok" ] || {{ echo "sluice: part $j was not stored: run the same line again to resume" >&2; exit 1; }}
  done
done
while :; do
  c=$(curl -sS -o "$d/done" -w '%{{http_code}}' -X POST "$L/complete") || exit 1
  case "$c" in
  200) cat "$d/done"; echo; exit 0 ;;
  202) echo "sluice: verifying the whole file's sha256…" >&2 ;;
  *) cat "$d/done" >&2; echo >&2; exit 1 ;;
  esac
done
"#,
        link = shell_quote(link),
        count = plan.count,
        size = plan.size,
        mibs = plan.part_size / MIB,
        in_flight = PARTS_IN_FLIGHT,
    )
}

/// How many parts the upload script sends at once: enough to keep the
/// client's hashing, the network and the store busy together, few enough
/// to stay within one user's share of transfer slots.
pub const PARTS_IN_FLIGHT: usize = 4;

/// The answer to a part's `POST`, in curl's config format (read with
/// `curl -K -`): the URL to PUT the part to and the headers to send.
pub fn part_config<'a>(url: &str, headers: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let quoted = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    let mut out = format!("url = \"{}\"\n", quoted(url));
    for (name, value) in headers {
        out.push_str(&format!(
            "header = \"{}: {}\"\n",
            quoted(name),
            quoted(value)
        ));
    }
    out
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
/// current directory, resumably and verified:
///
/// - the bytes go to `<out_name>.part`, and `-C -` continues one left by an
///   interrupted run (`Range`; a fresh link's line picks up where the last
///   stopped);
/// - `-f` writes no error body there (a spent or expired link leaves the
///   partial file as it was, for the next link to continue), and a partial
///   file already of the whole size is not asked for again;
/// - the whole file's SHA-256 must be `sha256` before it is renamed to
///   `out_name`; a partial file that does not verify is removed, so the next
///   run starts afresh rather than extending it.
///
/// `out_name` is a safe name ([`crate::filename::safe_name`]): no quote, no
/// backslash, no control character.
pub fn download_command(url: &str, out_name: &str, size: u64, sha256: &str) -> String {
    // The name once, in a variable: a long name costs the model its length
    // once, not six times. A name too long for `.part` (a file name has at
    // most 255 bytes) gives up its last five characters for it. A partial file already whole (the last run
    // stopped after curl) asks for nothing: a range past the end is a 416,
    // which `-f` fails on.
    format!(
        "f={}; p=\"$f.part\"; [ ${{#p}} -le 255 ] || p=\"${{f%?????}}.part\"; {{ [ -f \"$p\" ] && [ \"$(wc -c < \"$p\")\" -eq {size} ] || \
         curl -fsSL -C - -o \"$p\" {}; }} && if [ \"$(sha256sum < \"$p\" | cut -c1-64)\" = {sha256} ]; \
         then mv -f \"$p\" \"$f\"; else rm -f \"$p\"; echo \"$p: not the file's sha256, removed: ask for a new link\" >&2; false; fi",
        path_arg(out_name),
        shell_quote(url),
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

    /// Runs `line` in a real `sh` in `dir`, with a stand-in `curl` first on
    /// the PATH that appends `body` to its `-o` file (as `-C -` does) or
    /// exits with `exit` writing nothing (as `-f` does on an error).
    fn run_download(dir: &std::path::Path, line: &str, body: &str, exit: i32) -> bool {
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let fake = bin.join("curl");
        std::fs::write(
            &fake,
            "#!/bin/sh\nout=\nwhile [ $# -gt 0 ]; do case \"$1\" in -o) out=$2; shift;; esac; shift; done\n\
             [ \"$FAKE_EXIT\" = 0 ] || exit \"$FAKE_EXIT\"\nprintf '%s' \"$FAKE_BODY\" >> \"$out\"\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
        Command::new("sh")
            .arg("-c")
            .arg(line)
            .current_dir(dir)
            .env("PATH", path)
            .env("FAKE_BODY", body)
            .env("FAKE_EXIT", exit.to_string())
            .status()
            .unwrap()
            .success()
    }

    #[test]
    fn a_download_is_verified_resumed_and_never_clobbers_with_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let (name, part) = (dir.path().join("r.txt"), dir.path().join("r.txt.part"));
        let sha = crate::sha::Sha256::of(b"hello world").to_hex();
        let line = download_command("http://h/l/x", "r.txt", 11, &sha);
        // A failed transfer leaves the file already there as it was.
        std::fs::write(&name, "keep").unwrap();
        assert!(!run_download(dir.path(), &line, "", 22));
        assert_eq!(std::fs::read_to_string(&name).unwrap(), "keep");
        // Interrupted half-way: the next run continues the partial file.
        std::fs::write(&part, "hello ").unwrap();
        assert!(run_download(dir.path(), &line, "world", 0));
        assert_eq!(std::fs::read_to_string(&name).unwrap(), "hello world");
        assert!(!part.exists());
        // Already whole: curl is not run (it would fail here).
        std::fs::write(&part, "hello world").unwrap();
        assert!(run_download(dir.path(), &line, "", 22));
        assert!(!part.exists());
        // Bytes that do not verify are removed, and the file is not replaced.
        assert!(!run_download(dir.path(), &line, "hello there", 0));
        assert!(!part.exists());
        assert_eq!(std::fs::read_to_string(&name).unwrap(), "hello world");
    }

    #[test]
    fn a_name_too_long_for_its_part_suffix_still_downloads() {
        let dir = tempfile::tempdir().unwrap();
        let name = format!("{}.pdf", "n".repeat(251));
        let sha = crate::sha::Sha256::of(b"x").to_hex();
        let line = download_command("http://h/l/x", &name, 1, &sha);
        assert!(run_download(dir.path(), &line, "x", 0), "{line}");
        assert_eq!(std::fs::read(dir.path().join(&name)).unwrap(), b"x");
    }

    #[test]
    fn names_that_look_like_options_are_made_paths() {
        let line = download_command("http://h/l", "-", 2, "ab");
        assert!(line.starts_with("f='./-'; "), "{line}");
        assert!(upload_command("u", [], "-rf").contains("--upload-file './-rf'"));
    }
}
