// An OAuth 2.1 authorization server for the end-to-end tests, configured as
// a production one for MCP would be, on oidc-provider (a certified OpenID
// Connect / OAuth server): authorization code with PKCE S256 (required),
// dynamic client registration, RFC 8707 resource indicators, and JWT access
// tokens whose `aud` is the resource, signed RS256 or ES256 (`--alg`).
//
// The login and consent interaction completes without a person: it signs in
// the user named by `login_hint` (default "alice") and grants the scopes the
// client asked for, less any named in `test_deny_scope` (a user who declined
// a scope; the resource server policy offers that request the rest only).
//
// GET /test/mint?aud=&sub=&scope= signs an access token with this server's
// own key for any audience, so a test can present a genuine token meant for
// another resource. The first line printed is "listening on <issuer>".

import { generateKeyPairSync, randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { parseArgs } from "node:util";

import { SignJWT, importJWK } from "jose";
import Provider from "oidc-provider";

const { values: args } = parseArgs({
  options: {
    alg: { type: "string", default: "RS256" },
    port: { type: "string", default: "0" },
  },
});

const SCOPES = ["files:read", "files:write", "actions:execute"];
const denied = (params) => new Set((params?.test_deny_scope || "").split(" ").filter(Boolean));

function privateJwk(alg) {
  const pair =
    alg === "ES256"
      ? generateKeyPairSync("ec", { namedCurve: "P-256" })
      : generateKeyPairSync("rsa", { modulusLength: 2048 });
  return { ...pair.privateKey.export({ format: "jwk" }), alg, use: "sig", kid: `${alg.toLowerCase()}-${randomUUID().slice(0, 8)}` };
}
const keys = [privateJwk("RS256"), privateJwk("ES256")];
const signingKey = keys.find((k) => k.alg === args.alg);

// Bind first, so the issuer names the real port.
const server = createServer();
await new Promise((resolve) => server.listen(Number(args.port), "127.0.0.1", resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  jwks: { keys },
  scopes: ["openid", "offline_access", ...SCOPES],
  clientDefaults: { token_endpoint_auth_method: "none", grant_types: ["authorization_code", "refresh_token"] },
  extraParams: ["test_deny_scope"],
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async () => undefined,
      useGrantedResource: async () => true,
      // What this request may be granted: every scope, less those the
      // (simulated) user declined with test_deny_scope.
      getResourceServerInfo: async (ctx) => ({
        scope: SCOPES.filter((s) => !denied(ctx.oidc?.params).has(s)).join(" "),
        accessTokenFormat: "jwt",
        accessTokenTTL: 600,
        jwt: { sign: { alg: args.alg, kid: signingKey.kid } },
      }),
    },
  },
  pkce: { required: () => true },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
  // Refresh tokens for every grant, but for a client whose name says
  // "[no refresh]": the TypeScript SDK's step-up tries its refresh token
  // first, which can never widen a grant.
  issueRefreshToken: async (_ctx, client) => !String(client.clientName ?? "").includes("[no refresh]"),
});
provider.proxy = false;

// The interaction, answered at once: sign in, then consent.
provider.use(async (ctx, next) => {
  const match = ctx.path.match(/^\/interaction\/([^/]+)$/);
  if (!match) return next();
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  const { prompt, params } = details;
  if (prompt.name === "login") {
    const result = { login: { accountId: params.login_hint || "alice" } };
    return provider.interactionFinished(ctx.req, ctx.res, result, { mergeWithLastSubmission: false });
  }
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: details.session.accountId, clientId: params.client_id });
  if (prompt.details.missingOIDCScope) grant.addOIDCScope(prompt.details.missingOIDCScope.join(" "));
  for (const [indicator, scopes] of Object.entries(prompt.details.missingResourceScopes || {})) {
    grant.addResourceScope(indicator, scopes.join(" "));
  }
  const grantId = await grant.save();
  const result = { consent: details.grantId ? {} : { grantId } };
  return provider.interactionFinished(ctx.req, ctx.res, result, { mergeWithLastSubmission: true });
});

// A genuine token of this server for any audience (see above).
const mintKey = await importJWK(signingKey, args.alg);
provider.use(async (ctx, next) => {
  if (ctx.path !== "/test/mint") return next();
  const { aud, sub = "alice", scope = SCOPES.join(" ") } = ctx.query;
  ctx.body = await new SignJWT({ scope, client_id: "test-mint" })
    .setProtectedHeader({ alg: args.alg, kid: signingKey.kid, typ: "at+jwt" })
    .setIssuer(issuer)
    .setAudience(aud)
    .setSubject(sub)
    .setIssuedAt()
    .setExpirationTime("10m")
    .setJti(randomUUID())
    .sign(mintKey);
});

server.on("request", provider.callback());
console.log(`listening on ${issuer}`);
