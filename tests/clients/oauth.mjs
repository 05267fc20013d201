// The official MCP TypeScript SDK's own OAuth client against sluice and a
// real authorization server (authz.mjs): from an unauthenticated start, the
// SDK discovers, registers, sends the person to authorize (a cookie-keeping
// fetch loop plays the browser), and the app finishes with the code, as the
// SDK's documentation says; then a real upload and download with the
// returned curl lines, and the 403 insufficient_scope step-up. Prints a JSON
// summary of the checks.

import { randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

import { check, sh, sha256, text } from "./common.mjs";

const { values: args } = parseArgs({
  options: {
    url: { type: "string" },
    issuer: { type: "string" },
    alg: { type: "string" },
    workdir: { type: "string" },
    // Where 403s carry no challenge (API Gateway without the template's
    // mapping), no client can step up: skip that part.
    "skip-step-up": { type: "boolean", default: false },
  },
});
const REDIRECT = "http://127.0.0.1:9/callback";

/** Follows the authorization server's redirects, keeping its cookies, until
 * it sends the browser back to the redirect URI; returns the code. */
async function browse(start) {
  const cookies = new Map();
  let url = start;
  for (let i = 0; i < 12; i++) {
    const response = await fetch(url, {
      redirect: "manual",
      headers: { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join("; ") },
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const at = pair.indexOf("=");
      cookies.set(pair.slice(0, at), pair.slice(at + 1));
    }
    const location = response.headers.get("location");
    check(location, `the authorization server answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
    if (location.startsWith(REDIRECT)) {
      const code = new URL(location).searchParams.get("code");
      check(code, `no code in ${location}`);
      return code;
    }
    url = new URL(location, url).toString();
  }
  throw new Error("check failed: the authorization server never redirected back");
}

/** The SDK's OAuthClientProvider, in memory. */
class Provider {
  constructor(denyFirst) {
    this.denyFirst = denyFirst;
    this.visits = 0;
    this.code = undefined;
  }
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata() {
    return {
      // Without refresh tokens for the step-up client (see authz.mjs).
      client_name: this.denyFirst ? "sluice oauth test (ts) [no refresh]" : "sluice oauth test (ts)",
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens) {
    this.saved = tokens;
  }
  saveCodeVerifier(verifier) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
  async redirectToAuthorization(url) {
    if (this.denyFirst && this.visits === 0) url.searchParams.set("test_deny_scope", this.denyFirst);
    this.visits += 1;
    this.code = await browse(url.toString());
  }
}

/** Runs `work` with a connected client, completing authorization whenever
 * the SDK asks the app to (connect, or a call that needs more scope). */
async function withClient(provider, statuses, work) {
  const fetchLogged = async (url, init) => {
    const response = await fetch(url, init);
    statuses.push(response.status);
    return response;
  };
  const connect = async () => {
    const transport = new StreamableHTTPClientTransport(new URL(args.url), { authProvider: provider, fetch: fetchLogged });
    const client = new Client({ name: "sluice-oauth-ts", version: "1.0.0" });
    try {
      await client.connect(transport);
      return client;
    } catch (e) {
      if (!(e instanceof UnauthorizedError)) throw e;
      await transport.finishAuth(provider.code);
      const again = new Client({ name: "sluice-oauth-ts", version: "1.0.0" });
      await again.connect(new StreamableHTTPClientTransport(new URL(args.url), { authProvider: provider, fetch: fetchLogged }));
      return again;
    }
  };
  let client = await connect();
  const call = async (name, args_) => {
    try {
      return await client.callTool({ name, arguments: args_ });
    } catch (e) {
      if (!(e instanceof UnauthorizedError)) throw e;
      // Step-up: the SDK re-authorized with the scope the 403 named.
      await client.transport.finishAuth(provider.code);
      await client.close();
      client = await connect();
      return await client.callTool({ name, arguments: args_ });
    }
  };
  try {
    return await work(call);
  } finally {
    await client.close();
  }
}

const checks = [];
const up = join(args.workdir, "up");
const down = join(args.workdir, "down");
mkdirSync(up);
mkdirSync(down);
const data = randomBytes(500_000);
const name = "it's a report (v2) été.pdf";
writeFileSync(join(up, name), data);

const provider = new Provider();
const statuses = [];
await withClient(provider, statuses, async (call) => {
  let result = await call("request_upload", { filename: name, size: data.length, sha256: sha256(data) });
  check(!result.isError, text(result));
  sh(result.structuredContent.command, up);
  result = await call("get_download_url", { file: result.structuredContent.handle });
  check(!result.isError, text(result));
  sh(result.structuredContent.command, down);
  check(readFileSync(join(down, readdirSync(down)[0])).equals(data), "downloaded bytes identical");
});
check(statuses[0] === 401, `the flow starts from a 401: ${statuses}`);
check(provider.visits === 1, `one authorization: ${provider.visits}`);
const [header, body] = provider.saved.access_token
  .split(".")
  .slice(0, 2)
  .map((part) => JSON.parse(Buffer.from(part, "base64url").toString()));
check(header.alg === args.alg, `alg ${header.alg}`);
check(body.aud === args.url, `aud is the MCP URL: ${body.aud}`);
checks.push(`SDK OAuth: 401, discovery, registration, PKCE authorization, ${args.alg} token for the MCP URL`);
checks.push("upload and download with the returned curl lines");

if (args["skip-step-up"]) {
  console.log(JSON.stringify({ checks }));
  process.exit(0);
}
const stepProvider = new Provider("files:write");
const stepStatuses = [];
await withClient(stepProvider, stepStatuses, async (call) => {
  const result = await call("request_upload", { filename: "a.txt", size: 1, sha256: "0".repeat(64) });
  check(!result.isError, text(result));
});
check(stepStatuses.includes(403), `a 403 was seen: ${stepStatuses}`);
check(stepProvider.visits === 2, `re-authorized once: ${stepProvider.visits}`);
checks.push("403 insufficient_scope, then the SDK's step-up re-authorizes and the call succeeds");

console.log(JSON.stringify({ checks }));
process.exit(0);
