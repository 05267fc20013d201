//! Process wiring for every sluice binary: the backends the config names
//! (local or AWS), and serving a router as a plain HTTP server or, inside
//! AWS Lambda, through the Lambda runtime API.

mod open;
mod wiring;

pub use open::{Backends, Built, Opened, open, open_backends};
pub use wiring::*;

use wiring as runtime;

use std::process::ExitCode;
#[cfg(feature = "lambda")]
use std::sync::Arc;

use axum::Router;
use sluice::{Config, Sluice};
#[cfg(feature = "lambda")]
use url::Url;

/// The public URL of an API Gateway request: `https://<domain>`, plus the
/// stage unless it is `$default`. API Gateway sets these, not the client.
#[cfg(feature = "lambda")]
fn url_of(req: &lambda_http::Request) -> Option<Url> {
    use lambda_http::RequestExt as _;
    use lambda_http::request::RequestContext;
    match req.request_context_ref()? {
        RequestContext::ApiGatewayV2(ctx) => {
            let domain = ctx.domain_name.as_deref()?;
            let stage = ctx.stage.as_deref().filter(|s| *s != "$default");
            let url = match stage {
                Some(stage) => format!("https://{domain}/{stage}"),
                None => format!("https://{domain}"),
            };
            Url::parse(&url).ok()
        }
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

/// The process's metrics recorder under Lambda: each invocation's counts
/// are written as CloudWatch Embedded Metric Format documents, in the
/// namespace `namespace` (`SLUICE_METRICS_NAMESPACE`) with the
/// dimension `Function` (the function's name), plus each metric's labels.
#[cfg(feature = "lambda")]
fn emf_collector(
    namespace: &str,
) -> Result<&'static metrics_cloudwatch_embedded::Collector, String> {
    let function = std::env::var("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_else(|_| "sluice".into());
    let collector = metrics_cloudwatch_embedded::Builder::new()
        .cloudwatch_namespace(namespace.to_owned())
        .with_dimension("Function", function)
        .init()
        .map_err(|e| format!("metrics: {e}"))?;
    sluice::telemetry::describe();
    Ok(collector)
}

/// Serves `router` under the Lambda runtime. The public URL is
/// `SLUICE_PUBLIC_URL` when set (a custom domain), otherwise the API's own
/// URL, taken from the first request: the deployment template cannot pass
/// it in, since the API depends on the functions.
#[cfg(feature = "lambda")]
async fn run_lambda(config: Config, router: fn(Sluice) -> Router) -> Result<(), String> {
    use tower::ServiceExt as _;
    let backends = open_backends(&config).await.map_err(|e| e.to_string())?;
    let emf = match config.operations.metrics {
        true => Some(emf_collector(&config.operations.metrics_namespace)?),
        false => None,
    };
    let app: Arc<tokio::sync::OnceCell<Router>> = Arc::new(tokio::sync::OnceCell::new());
    let (config, backends) = (Arc::new(config), Arc::new(backends));
    let handler = lambda_http::service_fn(move |req: lambda_http::Request| {
        let (app, config, backends) = (app.clone(), config.clone(), backends.clone());
        async move {
            let url = config.urls.public.clone().or_else(|| url_of(&req));
            let router = app
                .get_or_try_init(|| async {
                    let url =
                        url.ok_or("no SLUICE_PUBLIC_URL and no API Gateway domain in the event")?;
                    tracing::info!(%url, "public URL");
                    Ok::<_, &str>(
                        router(backends.sluice(&config, url))
                            .layer(axum::middleware::from_fn(sluice::traces::http_span)),
                    )
                })
                .await?
                .clone();
            let response = router
                .oneshot(req)
                .await
                .map_err(|e: std::convert::Infallible| -> lambda_http::Error { match e {} });
            // What this invocation counted, as CloudWatch Embedded Metric
            // Format lines on stdout: CloudWatch Logs makes them metrics,
            // with no agent and no call of ours.
            if let Some(Err(e)) = emf.map(|emf| emf.flush(std::io::stdout().lock())) {
                tracing::warn!(error = %e, "metrics not written");
            }
            response
        }
    });
    use lambda_http::lambda_runtime::{Runtime, layers};
    // As `lambda_http::run` makes it (each invocation in a span of its
    // request id), so that a layer can be added.
    let lambda =
        Runtime::new(lambda_http::Adapter::from(handler)).layer(layers::TracingLayer::new());
    let failed = |e: lambda_http::Error| format!("lambda runtime: {e}");
    // With traces exported, each invocation's spans leave once its response
    // has been posted and before the next event is asked for (the Lambda
    // runtime's own OpenTelemetry layer, which also makes the invocation a
    // `faas` span): no response waits on the collector, and no span waits
    // in a frozen instance.
    #[cfg(feature = "otlp")]
    if sluice::traces::exporting() {
        let flushing = layers::OpenTelemetryLayer::new(runtime::send_spans)
            .with_trigger(layers::OpenTelemetryFaasTrigger::Http);
        return lambda.layer(flushing).run().await.map_err(failed);
    }
    lambda.run().await.map_err(failed)
}

/// `main` for a function binary: configuration from the environment, the
/// configured backends, one router, run by the Lambda runtime when inside
/// Lambda and as a plain HTTP server otherwise.
pub fn main_with(router: fn(Sluice) -> Router) -> ExitCode {
    let config = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("sluice: {e}");
            return ExitCode::from(2);
        }
    };
    runtime::init_tracing(&config);
    let rt = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("sluice: starting the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result: Result<(), String> = rt.block_on(async {
        if config.lambda {
            #[cfg(feature = "lambda")]
            return run_lambda(config, router).await;
            #[cfg(not(feature = "lambda"))]
            return Err(
                "this build cannot run under Lambda: build the function with its default features"
                    .into(),
            );
        } else {
            let (listener, url) = runtime::bind(&config).await.map_err(|e| e.to_string())?;
            let bound = listener.local_addr().map_err(|e| e.to_string())?;
            let opened = open(&config, url.clone())
                .await
                .map_err(|e| e.to_string())?;
            println!("listening on http://{bound}");
            if config.urls.public.is_some() {
                println!("public URL: {url}");
            }
            runtime::serve(
                listener,
                router(opened.sluice),
                runtime::ServeLimits::from_config(&config),
                runtime::shutdown_signal(),
            )
            .await
            .map_err(|e| format!("serving: {e}"))
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sluice: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Config {
        Config::from_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string()))).unwrap()
    }

    /// What `sam build` ships has no local backends; asked for them, it says
    /// what to do instead of failing somewhere deeper.
    #[test]
    fn a_lambda_build_refuses_the_local_backend_and_says_why() {
        let lambda = open::Built {
            local: false,
            aws: true,
        };
        let err = lambda
            .has_backends(&config(&[("SLUICE_BACKEND", "local")]))
            .unwrap_err();
        assert!(matches!(err, StartError::NoLocalBackend), "{err}");
        let message = err.to_string();
        assert!(message.contains("SLUICE_BACKEND=aws"), "{message}");
        assert!(message.contains("--features local"), "{message}");
        // S3 bytes with SQLite records: the records are local too.
        let err = lambda
            .has_backends(&config(&[
                ("SLUICE_STORE", "s3"),
                ("SLUICE_S3_BUCKET", "b"),
                ("SLUICE_RECORDS", "sqlite"),
            ]))
            .unwrap_err();
        assert!(matches!(err, StartError::NoLocalBackend), "{err}");
    }

    /// The `sluice` binary's default build leaves the AWS SDK out (a first
    /// `cargo run` builds in minutes); asked for the AWS backends, it says
    /// how to build them in.
    #[test]
    fn a_build_without_aws_refuses_the_aws_backend_and_says_why() {
        let local = open::Built {
            local: true,
            aws: false,
        };
        let aws = config(&[
            ("SLUICE_BACKEND", "aws"),
            ("SLUICE_S3_BUCKET", "b"),
            ("SLUICE_DYNAMODB_TABLE", "t"),
            (
                "SLUICE_MASTER_SECRET",
                "a-master-secret-of-at-least-32-bytes",
            ),
            ("SLUICE_DEV_TOKENS", "true"),
        ]);
        let err = local.has_backends(&aws).expect_err("refused");
        assert!(matches!(err, StartError::NoAwsBackend), "{err}");
        assert!(err.to_string().contains("--features aws"), "{err}");
        assert!(
            local.has_backends(&config(&[])).is_ok(),
            "the default is local"
        );
        let both = open::Built {
            local: true,
            aws: true,
        };
        assert!(both.has_backends(&aws).is_ok());
    }

    #[cfg(feature = "local")]
    #[tokio::test]
    async fn the_local_build_opens_a_data_directory() {
        let dir = std::env::temp_dir().join(format!("sluice-runtime-{}", std::process::id()));
        let opened = open(
            &config(&[("SLUICE_DATA_DIR", dir.to_str().unwrap())]),
            "http://127.0.0.1:1/".parse().unwrap(),
        )
        .await
        .unwrap();
        assert!(opened.local.is_some());
        assert!(dir.join("ledger.sqlite3").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
