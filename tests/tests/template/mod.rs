//! The deployment template and the code cannot drift: every environment
//! variable the template sets is one the config reads, the AWS backend's
//! required ones are all set, and the API routes exactly what the functions serve (their
//! `routes()`), as API Gateway will, which `front.rs` emulates from this same reading.

mod alarms;
mod grants;

use std::collections::BTreeSet;

use yaml_rust2::{Yaml, YamlLoader};

fn template() -> Yaml {
    let text = std::fs::read_to_string(crate::mcp_clients::root().join("template.yaml")).unwrap();
    YamlLoader::load_from_str(&text).unwrap().remove(0)
}

fn key(y: &Yaml, k: &str) -> Yaml {
    y[k].clone()
}

#[test]
fn the_template_sets_only_variables_the_config_reads() {
    let t = template();
    let vars = key(
        &key(&key(&key(&t, "Globals"), "Function"), "Environment"),
        "Variables",
    );
    let names: BTreeSet<String> = vars
        .as_hash()
        .expect("Globals.Function.Environment.Variables")
        .keys()
        .map(|k| k.as_str().unwrap().to_owned())
        .collect();
    for name in &names {
        assert!(
            sluice::config::setting(name).is_some(),
            "{name} is not read by Config"
        );
    }
    for required in [
        "SLUICE_BACKEND",
        "SLUICE_S3_BUCKET",
        "SLUICE_DYNAMODB_TABLE",
        "SLUICE_MASTER_SECRET_ID",
        "SLUICE_AUTH_ISSUER",
        "SLUICE_AUTH_AUDIENCE",
        "SLUICE_AUTH_JWKS_URL",
    ] {
        assert!(
            names.contains(required),
            "the template does not set {required}"
        );
    }
    assert_eq!(vars["SLUICE_BACKEND"].as_str(), Some("aws"));
    // Only the mcp function (the actions catalog, which the other
    // functions never read), the mcp, issuer and events functions (the
    // receipt key, with which they alone sign), the events function (its
    // endpoint and bus, and the URL its receipts name) and the mcp, issuer
    // and resolver functions (where traces go, the functions that export)
    // set anything of their own, and that is checked too: each a setting the
    // config reads, or OpenTelemetry's.
    for (name, resource) in t["Resources"].as_hash().unwrap() {
        let own = &resource["Properties"]["Environment"]["Variables"];
        if own.is_badvalue() {
            continue;
        }
        let own: Vec<&str> = own
            .as_hash()
            .unwrap()
            .keys()
            .map(|k| k.as_str().unwrap())
            .collect();
        let expected: &[&str] = match name.as_str() {
            Some("McpFunction") => &[
                "SLUICE_ACTIONS_S3_KEY",
                "SLUICE_IMPORTER_FUNCTION",
                "SLUICE_RECEIPT_KMS_KEY",
                "SLUICE_RECEIPT_KMS_RETIRED",
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "OTEL_SERVICE_NAME",
            ],
            Some("IssuerFunction") => &[
                "SLUICE_IMPORTER_FUNCTION",
                "SLUICE_RECEIPT_KMS_KEY",
                "SLUICE_RECEIPT_KMS_RETIRED",
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "OTEL_SERVICE_NAME",
            ],
            Some("ResolverFunction") => &["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_SERVICE_NAME"],
            Some("EventsFunction") => &[
                "SLUICE_WEBHOOK_URL",
                "SLUICE_WEBHOOK_SECRET_ID",
                "SLUICE_EVENT_BUS",
                "SLUICE_RECEIPT_KMS_KEY",
                "SLUICE_PUBLIC_URL",
            ],
            other => panic!("per-function environment: {other:?}"),
        };
        assert_eq!(own, expected);
        for var in own {
            // Traces' variables are OpenTelemetry's own, read by its SDK
            // (the functions that export): the template's TracesEndpoint,
            // each function named.
            if let Some(otel) = var.strip_prefix("OTEL_") {
                // (The loader drops the tags: `!Ref TracesEndpoint` reads
                // as its name, `!If [c, a, b]` as the list.)
                let value = &resource["Properties"]["Environment"]["Variables"][var];
                match otel {
                    "EXPORTER_OTLP_ENDPOINT" => {
                        assert_eq!(value.as_str(), Some("TracesEndpoint"), "{name:?}")
                    }
                    _ => assert!(value.as_str().unwrap().starts_with("sluice-"), "{name:?}"),
                }
                let layers = &resource["Properties"]["Layers"];
                assert_eq!(layers[0].as_str(), Some("HasTracesLayer"), "{name:?}");
                assert_eq!(
                    layers[1][0].as_str(),
                    Some("TracesCollectorLayer"),
                    "{name:?} takes the collector's layer"
                );
                continue;
            }
            assert!(
                sluice::config::setting(var).is_some(),
                "{var} is no setting"
            );
        }
    }
}

/// One route of the HTTP API: which function's binary answers `method` at
/// `path` (`{name}` a path variable, `{name+}` a greedy one; `ANY` any method).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ApiRoute {
    /// The function's binary (`sluice-mcp`, `sluice-issuer`, `sluice-resolver`).
    pub function: String,
    pub method: String,
    pub path: String,
}

impl ApiRoute {
    /// Whether this route takes `method` at `path`.
    fn matches(&self, method: &str, path: &str) -> bool {
        if self.method != "ANY" && self.method != method {
            return false;
        }
        let (mut want, mut got) = (self.path.split('/'), path.split('/'));
        loop {
            match (want.next(), got.next()) {
                (None, None) => return true,
                (Some(w), Some(_)) if w.starts_with('{') && w.ends_with("+}") => return true,
                (Some(w), Some(g)) if w.starts_with('{') && w.ends_with('}') => {
                    if g.is_empty() {
                        return false;
                    }
                }
                (Some(w), Some(g)) if w == g => {}
                _ => return false,
            }
        }
    }

    /// How specific the route is: its literal segments, as API Gateway
    /// prefers a route with more of them.
    fn literal_segments(&self) -> usize {
        self.path.split('/').filter(|s| !s.starts_with('{')).count()
    }
}

/// Every route of the HTTP API, read from `template.yaml`: the functions'
/// `HttpApi` events and the routes declared on their own (for a response
/// mapping), each with the binary of the function it invokes.
pub fn api_routes() -> Vec<ApiRoute> {
    let t = template();
    let binary = |function: &str| {
        t["Resources"][function]["Metadata"]["BuildProperties"]["Binary"]
            .as_str()
            .unwrap_or_else(|| panic!("{function} names its binary"))
            .to_owned()
    };
    let mut routes = Vec::new();
    for (name, resource) in t["Resources"].as_hash().unwrap() {
        if resource["Type"].as_str() != Some("AWS::Serverless::Function") {
            continue;
        }
        let function = name.as_str().unwrap();
        let Some(events) = resource["Properties"]["Events"].as_hash() else {
            continue;
        };
        for (_, event) in events {
            if function == "EventsFunction" {
                // The events function is invoked by the table's stream only.
                assert_eq!(event["Type"].as_str(), Some("DynamoDB"));
                continue;
            }
            assert_eq!(event["Type"].as_str(), Some("HttpApi"));
            let p = &event["Properties"];
            routes.push(ApiRoute {
                function: binary(function),
                method: p["Method"].as_str().unwrap().to_ascii_uppercase(),
                path: p["Path"].as_str().unwrap().to_owned(),
            });
        }
    }
    for (_, resource) in t["Resources"].as_hash().unwrap() {
        if resource["Type"].as_str() != Some("AWS::ApiGatewayV2::Route") {
            continue;
        }
        let p = &resource["Properties"];
        let (method, path) = p["RouteKey"].as_str().unwrap().split_once(' ').unwrap();
        let integration = p["Target"]
            .as_str()
            .unwrap()
            .trim_start_matches("integrations/${")
            .trim_end_matches('}');
        let uri = t["Resources"][integration]["Properties"]["IntegrationUri"]
            .as_str()
            .unwrap();
        routes.push(ApiRoute {
            function: binary(uri.trim_end_matches(".Arn")),
            method: method.to_owned(),
            path: path.to_owned(),
        });
    }
    routes.sort();
    routes
}

/// The route API Gateway picks for `method` at `path`, if any: of those
/// that match, the most specific.
pub fn api_route<'a>(routes: &'a [ApiRoute], method: &str, path: &str) -> Option<&'a ApiRoute> {
    routes
        .iter()
        .filter(|r| r.matches(method, path))
        .max_by_key(|r| r.literal_segments())
}

/// What each function serves, as its `routes()` lists it.
fn served_routes() -> Vec<ApiRoute> {
    let local = sluice_testkit::inproc::Local::new();
    let lists = [
        ("sluice-mcp", sluice_mcp::routes(&local.sluice)),
        ("sluice-issuer", sluice_issuer::routes(&local.sluice)),
        ("sluice-resolver", sluice_resolver::routes(&local.sluice)),
    ];
    let mut routes: Vec<ApiRoute> = lists
        .iter()
        .flat_map(|(function, routes)| {
            routes.served().iter().map(|s| ApiRoute {
                function: (*function).to_owned(),
                method: s.method.to_owned(),
                path: s.path.to_owned(),
            })
        })
        .collect();
    routes.sort();
    routes
}

/// API Gateway answers 404 for a route its API does not declare: a route a
/// function serves and the template leaves out works locally and nowhere
/// deployed (as uploads in parts once did), and a route the template
/// declares that no function serves is a door to nothing.
#[test]
fn every_route_a_function_serves_is_in_the_template_and_nothing_else_is() {
    let declared = api_routes();
    let served = served_routes();
    let missing: Vec<_> = served.iter().filter(|r| !declared.contains(r)).collect();
    let extra: Vec<_> = declared.iter().filter(|r| !served.contains(r)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "served but not routed by template.yaml: {missing:#?}\nrouted but not served: {extra:#?}"
    );
}

/// Each route's list of methods is the whole truth: a method added to a
/// route's handlers and not to its list answers, and would not be routed.
#[tokio::test]
async fn a_route_answers_only_the_methods_it_lists() {
    use sluice_testkit::inproc::call;
    let local = sluice_testkit::inproc::Local::new();
    let routers = [
        ("sluice-mcp", sluice_mcp::router(local.sluice.clone())),
        ("sluice-issuer", sluice_issuer::router(local.sluice.clone())),
        (
            "sluice-resolver",
            sluice_resolver::router(local.sluice.clone()),
        ),
    ];
    let served = served_routes();
    for route in &served {
        let router = &routers
            .iter()
            .find(|(f, _)| *f == route.function)
            .unwrap()
            .1;
        let path = route.path.replace("{n}", "1").replace(['{', '}'], "x");
        for method in ["GET", "POST", "PUT", "DELETE", "PATCH"] {
            let listed = served.iter().any(|r| {
                r.function == route.function && r.path == route.path && r.method == method
            });
            let answer = call(router.clone(), method, &path, &[], "").await;
            assert_eq!(
                answer.status == http::StatusCode::METHOD_NOT_ALLOWED,
                !listed || (route.path == "/mcp" && method == "GET"),
                "{method} {path} ({}) answered {}",
                route.function,
                answer.status
            );
        }
    }
}

/// The response mapping of the mcp integration, as the template declares
/// it: (status, header set, body field it is set from). The emulated API
/// Gateway (`gateway.rs`) applies exactly this.
pub fn mcp_response_mappings() -> Vec<(u16, String, String)> {
    let t = template();
    let mut out = Vec::new();
    let mappings = &t["Resources"]["McpIntegration"]["Properties"]["ResponseParameters"];
    for (status, map) in mappings
        .as_hash()
        .expect("the mcp integration has response mappings")
    {
        for entry in map["ResponseParameters"].as_vec().unwrap() {
            let header = entry["Destination"].as_str().unwrap();
            let source = entry["Source"].as_str().unwrap();
            out.push((
                status.as_str().unwrap().parse().unwrap(),
                header.strip_prefix("overwrite:header.").unwrap().to_owned(),
                source.strip_prefix("$response.body.").unwrap().to_owned(),
            ));
        }
    }
    out
}

#[test]
fn the_mcp_route_restores_the_challenge_on_401_and_403() {
    let mappings = mcp_response_mappings();
    for status in [401, 403] {
        assert!(
            mappings.iter().any(|(s, h, f)| *s == status
                && h == "WWW-Authenticate"
                && f == "www_authenticate"),
            "{status}: {mappings:?}"
        );
    }
}

#[test]
fn each_function_is_built_from_its_own_crate_for_arm64() {
    let t = template();
    let globals = &t["Globals"]["Function"];
    assert_eq!(globals["Runtime"].as_str(), Some("provided.al2023"));
    assert_eq!(globals["Architectures"][0].as_str(), Some("arm64"));
    assert_eq!(globals["Handler"].as_str(), Some("bootstrap"));
    for (name, dir, binary) in [
        ("McpFunction", "functions/mcp", "sluice-mcp"),
        ("IssuerFunction", "functions/issuer", "sluice-issuer"),
        ("ResolverFunction", "functions/resolver", "sluice-resolver"),
        ("EventsFunction", "functions/events", "sluice-events"),
        ("ImporterFunction", "functions/importer", "sluice-importer"),
    ] {
        let f = &t["Resources"][name];
        assert_eq!(
            f["Metadata"]["BuildMethod"].as_str(),
            Some("rust-cargolambda"),
            "{name}"
        );
        assert_eq!(
            f["Metadata"]["BuildProperties"]["Binary"].as_str(),
            Some(binary),
            "{name}"
        );
        assert_eq!(f["Properties"]["CodeUri"].as_str(), Some(dir), "{name}");
        let manifest =
            std::fs::read_to_string(crate::mcp_clients::root().join(dir).join("Cargo.toml"))
                .unwrap();
        assert!(
            manifest.contains(&format!("name = \"{binary}\"")),
            "{dir} builds {binary}"
        );
    }
}

/// `infra/cargo-lambda.env` is a configuration the functions accept, with
/// the per-function prefixes right: links at the resolver's, the MCP
/// resource at the mcp function's.
#[test]
fn the_cargo_lambda_env_file_is_a_valid_configuration() {
    let text =
        std::fs::read_to_string(crate::mcp_clients::root().join("infra/cargo-lambda.env")).unwrap();
    let vars: Vec<(String, String)> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (k, v) = l.split_once('=').unwrap();
            (k.to_owned(), v.to_owned())
        })
        .collect();
    for (name, _) in &vars {
        if name.starts_with("SLUICE_") {
            assert!(
                sluice::config::setting(name).is_some(),
                "{name} is not read by Config"
            );
        }
    }
    let config = sluice::Config::from_vars(vars).unwrap();
    // Each link follows the function that serves it.
    let ends =
        |url: Option<url::Url>, suffix: &str| url.is_some_and(|u| u.as_str().ends_with(suffix));
    assert!(ends(
        config.urls.resolver.clone(),
        "/lambda-url/sluice-resolver"
    ));
    assert!(ends(
        config.urls.issuer.clone(),
        "/lambda-url/sluice-issuer"
    ));
    assert!(
        config
            .urls
            .mcp
            .unwrap()
            .as_str()
            .ends_with("/lambda-url/sluice-mcp/mcp")
    );
}

/// `samconfig.toml`'s dev and prod environments set only parameters the
/// template has, to values it allows; the teardown script parses.
#[test]
fn the_deploy_environments_and_teardown_fit_the_template() {
    let t = template();
    let params = key(&t, "Parameters");
    let text = std::fs::read_to_string(crate::mcp_clients::root().join("samconfig.toml")).unwrap();
    let config: toml::Table = toml::from_str(&text).unwrap();
    for env in ["dev", "prod"] {
        let deploy = &config[env]["deploy"]["parameters"];
        let overrides = deploy["parameter_overrides"].as_array().unwrap();
        assert!(!overrides.is_empty(), "{env}");
        for o in overrides {
            let (name, value) = o.as_str().unwrap().split_once('=').unwrap();
            let p = key(&params, name);
            assert!(
                !p.is_badvalue(),
                "{env}: {name} is not a template parameter"
            );
            if let Some(allowed) = p["AllowedValues"].as_vec() {
                let allowed: Vec<String> = allowed
                    .iter()
                    .map(|v| match v {
                        Yaml::Integer(i) => i.to_string(),
                        other => other.as_str().unwrap().to_owned(),
                    })
                    .collect();
                assert!(allowed.contains(&value.to_owned()), "{env}: {name}={value}");
            }
        }
        assert!(
            config[env]["global"]["parameters"]["stack_name"]
                .as_str()
                .unwrap()
                .contains(env)
        );
    }
    let script = crate::mcp_clients::root().join("infra/teardown.sh");
    crate::util::stdout_of(std::process::Command::new("bash").arg("-n").arg(&script));
}

/// At `trace` the Lambda runtime and the HTTP libraries log raw events,
/// bearer tokens included: a deployment can never ask for it.
#[test]
fn the_log_level_of_a_deployment_never_reaches_trace() {
    let params = key(&template(), "Parameters");
    let level = key(&params, "LogLevel");
    let allowed: Vec<&str> = level["AllowedValues"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        allowed.contains(&"debug") && allowed.contains(&"info"),
        "{allowed:?}"
    );
    assert!(!allowed.iter().any(|v| v.contains("trace")), "{allowed:?}");
}

/// The functions `template.yaml` deploys, by the short name of their
/// binary (`sluice-mcp` is `mcp`).
fn deployed_functions(t: &Yaml) -> Vec<String> {
    key(t, "Resources")
        .as_hash()
        .unwrap()
        .values()
        .filter(|r| key(r, "Type").as_str() == Some("AWS::Serverless::Function"))
        .map(|r| {
            let binary = key(&key(&key(r, "Metadata"), "BuildProperties"), "Binary");
            binary
                .as_str()
                .unwrap()
                .trim_start_matches("sluice-")
                .to_owned()
        })
        .collect()
}

/// docs/aws.md's deploy section says how many functions the template
/// deploys and names each; no page of docs/ (or the README) names a
/// function the template lacks (`` the `x` function ``, `` `x` function ``);
/// every function crate (`functions/`, but the local server) is deployed.
#[test]
fn the_docs_name_the_functions_the_template_deploys() {
    let deployed = deployed_functions(&template());
    let root = crate::mcp_clients::root();
    let aws = std::fs::read_to_string(root.join("docs/aws.md")).unwrap();
    let start = aws.find("## Deploy to AWS").unwrap();
    let section = &aws[start
        ..aws[start + 3..]
            .find("\n## ")
            .map_or(aws.len(), |i| i + start + 3)];
    let count = [
        "no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
    ][deployed.len()];
    assert!(
        section.contains(&format!("deploys {count} arm64 functions")),
        "docs/aws.md must say the template deploys {count} functions: {deployed:?}"
    );
    for name in &deployed {
        assert!(
            section.contains(&format!("`{name}`")),
            "docs/aws.md does not name {name}"
        );
    }
    let mut pages: Vec<std::path::PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.push(root.join("README.md"));
    for page in pages {
        let text = std::fs::read_to_string(&page).unwrap();
        for (at, _) in text.match_indices("` function") {
            let name = text[..at].rsplit('`').next().unwrap();
            let plain = name.chars().all(|c| c.is_ascii_lowercase() || c == '-');
            if plain && !name.is_empty() {
                assert!(
                    deployed
                        .iter()
                        .any(|d| d == name.trim_start_matches("sluice-")),
                    "{} names the `{name}` function; the template deploys {deployed:?}",
                    page.display()
                );
            }
        }
    }
    for crate_dir in std::fs::read_dir(root.join("functions")).unwrap().flatten() {
        let name = crate_dir.file_name().to_string_lossy().into_owned();
        assert!(
            name == "local" || deployed.contains(&name),
            "functions/{name} is not deployed by template.yaml"
        );
    }
}
