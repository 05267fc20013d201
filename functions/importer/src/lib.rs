//! The `importer` function: on AWS a function is frozen once it answers, so
//! an import (`import_file`, `POST /imports`) cannot be fetched in the
//! background of the MCP or issuer function that was asked. That function
//! checks the request, issues the file when its size and SHA-256 are
//! declared, writes the import's record as pending, and starts this one
//! with the job (an asynchronous invocation). This function runs it to its
//! end ([`sluice::service::imports::Imports::run_job`]): the guarded fetch,
//! the bytes into S3 checked against what was declared or hashed on the
//! way, the file ready or the import rejected, and the outcome written to
//! the import's record, where the function that was asked reads it. A job
//! delivered again after it ended is answered as it ended, not run twice.

use std::process::ExitCode;

use sluice::Config;
use sluice::service::imports::ImportJob;

/// The function's `main`: configuration, the backends, then one import per
/// invocation until the runtime stops.
pub fn main() -> ExitCode {
    let config = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("sluice-importer: {e}");
            return ExitCode::from(2);
        }
    };
    sluice_runtime::init_tracing(&config);
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("sluice-importer: {e}");
            return ExitCode::FAILURE;
        }
    };
    // No link this function makes is handed to anyone: the public URL only
    // has to be one.
    let public = config
        .urls
        .public
        .clone()
        .unwrap_or_else(|| url::Url::parse("https://importer.invalid/").expect("a URL"));
    let sluice = match rt.block_on(sluice_runtime::open_backends(&config)) {
        Ok(backends) => backends.sluice(&config, public),
        Err(e) => {
            eprintln!("sluice-importer: {e}");
            return ExitCode::from(2);
        }
    };
    let sluice = &sluice;
    let run = rt.block_on(lambda_runtime::run(lambda_runtime::service_fn(
        move |event: lambda_runtime::LambdaEvent<ImportJob>| async move {
            let job = event.payload;
            let ticket = sluice
                .imports()
                .run_job(job)
                .await
                .map_err(|e| lambda_runtime::Error::from(e.to_string()))?;
            Ok::<_, lambda_runtime::Error>(serde_json::to_value(&ticket)?)
        },
    )));
    match run {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sluice-importer: lambda runtime: {e}");
            ExitCode::FAILURE
        }
    }
}
