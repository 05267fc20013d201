//! End-to-end tests, built as one binary so the workspace links once.
//! Each test starts the real `sluice` binary on port 0 and drives it with
//! curl, running the exact command lines the server returns.

mod util;

mod actions;
mod aws;
mod backends;
mod batch;
mod blocked;
mod browser;
mod capabilities;
mod claude;
mod cli;
mod concurrency;
mod contract;
mod delete;
mod deployed;
mod download;
mod faults;
mod front;
mod gateway;
mod hardening;
mod jwks;
mod lambda;
mod mcp_clients;
mod mcp_http;
mod metrics;
mod oauth;
mod parts;
mod readme;
mod refusals;
mod restart;
mod rotation;
mod roundtrip;
mod routes;
mod service;
mod sizes;
mod template;
mod tools;
mod tus;
mod upload;
mod watch;
mod webhooks;
mod widget;
