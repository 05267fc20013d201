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
//!
//! It builds the zips of download batches the same way
//! ([`sluice::service::batches::Batches::build_zip`]): a function behind
//! API Gateway answers within 30 s and 10 MB, so on AWS a zip is written
//! into the bucket here, in parts, and the resolver hands out a presigned
//! GET of it.

use std::process::ExitCode;

use sluice::Config;
use sluice::service::imports::ImporterEvent;

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
        move |event: lambda_runtime::LambdaEvent<ImporterEvent>| async move {
            let failed = |e: sluice::Error| lambda_runtime::Error::from(e.to_string());
            match event.payload {
                ImporterEvent::Import(job) => {
                    let ticket = sluice.imports().run_job(*job).await.map_err(failed)?;
                    Ok::<_, lambda_runtime::Error>(serde_json::to_value(&ticket)?)
                }
                ImporterEvent::Zip { zip } => {
                    let built = sluice.batches().build_zip(&zip).await.map_err(failed)?;
                    Ok(serde_json::to_value(&built)?)
                }
            }
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
