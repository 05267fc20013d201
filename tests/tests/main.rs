//! End-to-end tests, built as one binary so the workspace links once.
//! Each test starts the real `sluice` binary on port 0 (or a function
//! under an emulated runtime, or in-process through `sluice_testkit`) and
//! drives it with the clients users run, running the exact command lines
//! the server returns. Each module in a line:

// spawning the real binary, tokens, curl, replies: the helpers every module uses
mod util;

// actions with File and FileList fields through the official MCP clients, an independent upstream
mod actions;
// the AWS backends on s3s-fs and dynalite: the curl lines against SigV4, two replicas
mod aws;
// bytes and records chosen apart: S3 bytes with SQLite records on one machine
mod backends;
// many files in one call and one line, up and down, locally and on S3
mod batch;
// a line whose host cannot be reached names it and what to do instead
mod blocked;
// the upload page in Chromium: pick, hash, send (stream or parts), resume
mod browser;
// what a store adds to its core: the stream, parts, ranged reads, presigning
mod capabilities;
// Claude Code itself as a client: `claude mcp add`, OAuth without the header
mod claude;
// the `sluice` command line: help, tokens, refusals naming the argument
mod cli;
// single use under contention: one redemption wins
mod concurrency;
// one contract suite per storage trait, run against every implementation
mod contract;
// deleting a file: record, bytes and uploads under way gone, on every replica
mod delete;
// the flows through the deployment's own routes under `cargo lambda watch`
mod deployed;
// `GET /l/{token}`: single use, headers, bytes verified on the way out
mod download;
// faults injected into real parts: S3 killed, disk full
mod faults;
// the HTTP API read from `template.yaml`, in front of the real functions
mod front;
// API Gateway's payload and the Lambda runtime API, emulated on loopback
mod gateway;
// bounded resources under hostile and careless clients
mod hardening;
// files from the web: import_file behind the SSRF guard, against servers on loopback
mod imports;
// production auth: RS256/ES256 tokens verified against a JWKS
mod jwks;
// each function binary under the Lambda runtime API
mod lambda;
// the official MCP SDKs, FastMCP, the Inspector, mcp-remote round-trip a file
mod mcp_clients;
// the MCP endpoint at the HTTP level: methods, challenges, metadata, bad bodies
mod mcp_http;
// `GET /metrics` read by Prometheus's own parser; the audit line
mod metrics;
// OAuth end to end with oidc-provider and the SDKs' own OAuth clients
mod oauth;
// one guard per policy: quota, waits, spool, caps, scope and form before a fetch, rates
mod policies;
// files in parts where S3 receives the bytes: the line, resumes, the proof
mod parts;
// the documented commands, run as written
mod readme;
// links a preview cannot burn: HEAD, the person's page, Range, a byte budget
mod ranges;
// receipts of custody: signed, verified by joserfc from the JWKS, rotated
mod receipts;
// bad input: a clear status and message; no token taken for another kind
mod refusals;
// the ledger is durable and shared across restarts and processes
mod restart;
// rotating the master secret the Secrets Manager way
mod rotation;
// the whole flow with the lines the server returns
mod roundtrip;
// the bytes' real type: noted, or refused when they contradict the declared one
mod types;
// each router in-process: what its routes answer, errors in one shape
mod routes;
// the malware gate with a real clamd: scanning, clean, infected, the scanner stopped
mod scanning;
// the service called directly over the local backends
mod service;
// what the model reads of a transfer: at most a kilobyte
mod sizes;
// `template.yaml` and the code cannot drift
mod template;
// the MCP tools in-process: answers and refusals with next steps
mod tools;
// the upload link as a tus stream: HEAD, PATCH, refusals, two writers, tus clients
mod tus;
// the upload link's one PUT: exact size and digest, first success wins, quota
mod upload;
// `cargo lambda watch` for real, as docs/aws.md runs it
mod cargo_lambda_watch;
// webhooks verified by the Standard Webhooks library; events on a bus
mod webhooks;
// the in-chat widget (MCP Apps) in a host built on ext-apps, in Chromium
mod widget;
// traces over OTLP to a receiver decoding them with opentelemetry-proto
mod traces;
// many files as one zip: streamed as built, read by unzip and Python
mod zip;
