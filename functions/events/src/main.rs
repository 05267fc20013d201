//! Runs the `events` function under the Lambda runtime: the records
//! table's DynamoDB stream in, signed webhooks out.

fn main() -> std::process::ExitCode {
    sluice_events::main()
}
