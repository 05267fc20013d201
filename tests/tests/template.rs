//! The deployment template and the code cannot drift: every environment
//! variable the template sets is one the config reads, the AWS backend's
//! required ones are all set, and the API has exactly DESIGN.md's routes.

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
            sluice::config::VARIABLES.contains(&name.as_str()),
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
    // Only the mcp function sets anything of its own (the actions catalog,
    // which the other functions never read), and that is checked too.
    for (name, resource) in t["Resources"].as_hash().unwrap() {
        let own = &resource["Properties"]["Environment"]["Variables"];
        if own.is_badvalue() {
            continue;
        }
        assert_eq!(
            name.as_str(),
            Some("McpFunction"),
            "per-function environment"
        );
        let own: Vec<&str> = own
            .as_hash()
            .unwrap()
            .keys()
            .map(|k| k.as_str().unwrap())
            .collect();
        assert_eq!(own, ["SLUICE_ACTIONS_S3_KEY"]);
    }
}

#[test]
fn the_api_has_exactly_the_designed_routes() {
    let t = template();
    let mut routes = BTreeSet::new();
    for (name, resource) in t["Resources"].as_hash().unwrap() {
        if resource["Type"].as_str() != Some("AWS::Serverless::Function") {
            continue;
        }
        let function = name.as_str().unwrap().to_owned();
        for (_, event) in resource["Properties"]["Events"].as_hash().unwrap() {
            assert_eq!(event["Type"].as_str(), Some("HttpApi"));
            let p = &event["Properties"];
            routes.insert((
                function.clone(),
                p["Method"].as_str().unwrap().to_owned(),
                p["Path"].as_str().unwrap().to_owned(),
            ));
        }
    }
    let expected: BTreeSet<(String, String, String)> = [
        ("McpFunction", "POST", "/mcp"),
        ("McpFunction", "GET", "/mcp"),
        (
            "McpFunction",
            "GET",
            "/.well-known/oauth-protected-resource",
        ),
        (
            "McpFunction",
            "GET",
            "/.well-known/oauth-protected-resource/mcp",
        ),
        ("IssuerFunction", "POST", "/uploads"),
        ("ResolverFunction", "GET", "/links/{token}"),
        ("ResolverFunction", "POST", "/resolve"),
    ]
    .into_iter()
    .map(|(f, m, p)| (f.to_owned(), m.to_owned(), p.to_owned()))
    .collect();
    assert_eq!(routes, expected);
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
