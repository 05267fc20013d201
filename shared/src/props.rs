//! Property tests of the codecs that read untrusted strings: whatever they
//! are given, they answer with a typed error, never a panic, and what they
//! make holds its invariants. `make fuzz` runs each with a million cases
//! (`PROPTEST_CASES`); the test suite with proptest's default (256).

use proptest::prelude::*;

use crate::curl;
use crate::datauri::DataUri;
use crate::filename::{MAX_NAME_BYTES, content_disposition, safe_name};
use crate::keys::{KeyId, Keyring, MasterSecret};
use crate::sha::Sha256;
use crate::token::{Short, ShortKind};

fn keys() -> Keyring {
    Keyring::new(
        (
            KeyId::new("k1").unwrap(),
            MasterSecret::new(vec![7; 32]).unwrap(),
        ),
        None,
    )
}

/// Any string, with a bias towards the shapes the parsers look for.
fn hostile() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[A-Za-z0-9_.-]{0,40}\\.[A-Za-z0-9_.-]{0,80}\\.[A-Za-z0-9_-]{0,60}",
        "\\$uploadedFile:[A-Za-z0-9_.=-]{0,200}",
        "data:[a-z/;=%0-9A-F.-]{0,40},[A-Za-z0-9+/=@ ]{0,80}",
        "(Bearer|bearer|Basic)?[ \\t]{0,3}[ -~]{0,60}",
    ]
}

proptest! {
    #[test]
    fn token_and_handle_parsers_never_panic(s in hostile()) {
        let keys = keys();
        for kind in [ShortKind::Handle, ShortKind::Upload, ShortKind::Download] {
            let _ = Short::decode(&keys, &s, kind, 0);
            let token = s.strip_prefix(crate::token::HANDLE_PREFIX).unwrap_or(&s);
            let _ = Short::decode(&keys, token, kind, i64::MAX);
        }
        let _ = Sha256::parse(&s);
        let _ = Sha256::from_base64(&s);
    }

    #[test]
    fn data_uris_parse_or_say_why_and_round_trip(
        s in hostile(),
        mime in "[a-z]{1,10}/[a-z0-9.+-]{1,15}",
        name in any::<String>(),
        data in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        let _ = DataUri::parse(&s);
        let uri = DataUri::encode(&mime, Some(&name), &data);
        let parsed = DataUri::parse(&uri).unwrap();
        prop_assert_eq!(parsed.data, data);
        prop_assert_eq!(parsed.name, Some(name).filter(|n| !n.is_empty()));
    }

    #[test]
    fn bearer_headers_never_panic(value in "[ -~]{0,80}") {
        let mut headers = http::HeaderMap::new();
        if let Ok(v) = http::HeaderValue::from_str(&value) {
            headers.insert(http::header::AUTHORIZATION, v);
        }
        let _ = crate::auth::bearer(&headers);
    }

    /// A safe name is one path component a shell and a file system take
    /// as it is.
    #[test]
    fn safe_names_hold_their_invariants(label in any::<String>()) {
        let safe = safe_name(&label);
        prop_assert!(!safe.is_empty());
        prop_assert!(safe.len() <= MAX_NAME_BYTES);
        prop_assert!(!safe.contains(".."), "{safe:?}");
        prop_assert!(!safe.starts_with('.') && !safe.starts_with('-'), "{safe:?}");
        for c in safe.chars() {
            prop_assert!(!c.is_control(), "{safe:?}");
            prop_assert!(!['/', '\\', '"', '\'', ';', '$', '`'].contains(&c), "{safe:?}");
            prop_assert!(!matches!(c as u32, 0x200B..=0x200F | 0x2028..=0x202E | 0x2066..=0x2069 | 0xFEFF), "{safe:?}");
        }
        prop_assert_eq!(safe_name(&safe), safe.clone(), "safe names are fixed points");
        let _ = content_disposition(&label);
    }

    /// Every curl line splits, as a POSIX shell splits it, into exactly the
    /// arguments intended: no label, URL or header value can add one.
    #[test]
    fn curl_lines_split_into_exactly_the_intended_arguments(
        url in "[ -~]{0,80}",
        header in "[ -~]{0,40}",
        label in "[^\\x00]{0,60}",
    ) {
        let file = curl::local_file_name(&label);
        let line = curl::upload_command(&url, [("X-H", header.as_str())], file);
        let argv = shlex::split(&line).expect("a curl line is valid shell");
        let local = if file.starts_with('-') { format!("./{file}") } else { file.to_owned() };
        let expected: Vec<String> = ["curl", "--fail-with-body", "-sS", "-X", "PUT", "-H"]
            .into_iter()
            .map(str::to_owned)
            .chain([format!("X-H: {header}"), "--upload-file".into(), local, url.clone()])
            .collect();
        prop_assert_eq!(argv, expected);
        let out = safe_name(&label);
        let line = curl::download_command(&url, &out, 2, &crate::sha::Sha256::of(b"ab"));
        let argv = shlex::split(&line).expect("a curl line is valid shell");
        prop_assert_eq!(&argv[0], &format!("f={out};"));
        let get = ["curl", "-fsSL", "-C", "-", "-o", "$p", &format!("{url};")];
        prop_assert!(argv.windows(get.len()).any(|w| w == get), "{line}");
    }
}

/// The same round trip through a real `sh`, on a sample: `printf` stands in
/// for curl and prints the arguments it was given.
#[test]
fn curl_lines_round_trip_through_a_real_shell() {
    let mut runner = proptest::test_runner::TestRunner::new(proptest::test_runner::Config {
        cases: 64,
        ..Default::default()
    });
    runner
        .run(&("[^\\x00]{0,40}", "[ -~]{0,60}"), |(label, url)| {
            let file = curl::local_file_name(&label);
            let line = curl::upload_command(&url, [("X-A", "b 'c'")], file);
            let shown = line.replacen("curl", "printf '%s\\0'", 1);
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(&shown)
                .output()
                .unwrap();
            let printed = String::from_utf8_lossy(&out.stdout).into_owned();
            let mut args: Vec<String> = printed.split('\0').map(str::to_owned).collect();
            // After the last argument's terminator there is nothing.
            let tail = args.pop();
            prop_assert_eq!(tail.as_deref(), Some(""));
            prop_assert_eq!(args, shlex::split(&line).unwrap()[1..].to_vec());
            Ok(())
        })
        .unwrap();
}

/// The import guard over address forms: an IPv4 address and every IPv6
/// form that carries it (mapped, compatible, NAT64, 6to4) get the same
/// verdict; a refused address is refused in every spelling the URL parser
/// reads (dotted, one decimal number, hexadecimal); and any URL at all is
/// answered with a verdict, never a panic.
mod guard_props {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    use proptest::prelude::*;
    use url::Url;

    use crate::fetch::guard::{Guard, Reach};

    fn public() -> Guard {
        Guard {
            reach: Reach::Public,
            allow_loopback: false,
            ports: Vec::new(),
        }
    }

    /// IPv4 addresses, half of them drawn from the refused table's ranges.
    fn v4() -> impl Strategy<Value = Ipv4Addr> {
        let ranged = (0..crate::fetch::guard::REFUSED_V4.len(), any::<u32>()).prop_map(|(i, r)| {
            let (net, len, _) = crate::fetch::guard::REFUSED_V4[i];
            let host = r.checked_shr(u32::from(len)).unwrap_or(0);
            Ipv4Addr::from(u32::from(net) | host)
        });
        prop_oneof![any::<u32>().prop_map(Ipv4Addr::from), ranged]
    }

    proptest! {
        #[test]
        fn every_form_carrying_an_ipv4_address_gets_its_verdict(v4 in v4()) {
            let guard = public();
            let verdict = guard.refused_range(IpAddr::V4(v4)).is_some();
            let n = u32::from(v4);
            let forms = [
                v4.to_ipv6_mapped(),
                Ipv6Addr::from(0x0064_ff9b_0000_0000_0000_0000_0000_0000u128 | u128::from(n)),
                Ipv6Addr::from((0x2002u128 << 112) | (u128::from(n) << 80) | 1),
            ];
            for form in forms {
                prop_assert_eq!(guard.refused_range(IpAddr::V6(form)).is_some(), verdict, "{} as {}", v4, form);
            }
            if n > 1 {
                let compatible = Ipv6Addr::from(u128::from(n));
                prop_assert_eq!(guard.refused_range(IpAddr::V6(compatible)).is_some(), verdict, "{} as {}", v4, compatible);
            }
        }

        /// IPv6 is admitted, not denied: any address outside global
        /// unicast (2000::/3) that carries no IPv4 address is refused,
        /// whatever range it is in (IPv4-translated `::ffff:0:a.b.c.d`
        /// among them).
        #[test]
        fn an_ipv6_address_outside_global_unicast_is_refused(bits in any::<u128>()) {
            let v6 = Ipv6Addr::from(bits);
            prop_assume!(bits >> 125 != 0b001);
            prop_assume!(crate::fetch::guard::embedded_v4(v6).is_none());
            prop_assert!(public().refused_range(IpAddr::V6(v6)).is_some(), "{} admitted", v6);
            let translated = Ipv6Addr::from((0xffff_u128 << 48) | (bits & 0xffff_ffff));
            prop_assert!(public().refused_range(IpAddr::V6(translated)).is_some(), "{} admitted", translated);
        }

        #[test]
        fn an_address_spelled_otherwise_is_the_address(v4 in v4()) {
            let guard = public();
            let verdict = guard.refused_range(IpAddr::V4(v4)).is_some();
            let n = u32::from(v4);
            for spelled in [format!("{v4}"), format!("{n}"), format!("0x{n:x}")] {
                let url = Url::parse(&format!("http://{spelled}/x")).unwrap();
                prop_assert_eq!(guard.check_url(&url).is_err(), verdict, "{}", spelled);
            }
        }

        #[test]
        fn any_url_gets_a_verdict(s in "[a-z]{1,6}://[ -~]{0,80}") {
            if let Ok(url) = Url::parse(&s) {
                let _ = public().check_url(&url);
            }
        }
    }
}
