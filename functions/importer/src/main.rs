//! Runs the `importer` function under the Lambda runtime: one import a
//! invocation.

fn main() -> std::process::ExitCode {
    sluice_importer::main()
}
