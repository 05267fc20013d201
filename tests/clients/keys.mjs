// Generates an RS256 and an ES256 key pair for the JWKS tests: the private
// keys as PKCS#8 PEM, the public keys as JWKs.
import { generateKeyPairSync } from "node:crypto";

function pair(type, options, kid, alg) {
  const { publicKey, privateKey } = generateKeyPairSync(type, options);
  return {
    pem: privateKey.export({ type: "pkcs8", format: "pem" }),
    jwk: { ...publicKey.export({ format: "jwk" }), kid, alg, use: "sig" },
  };
}

console.log(
  JSON.stringify({
    rsa: pair("rsa", { modulusLength: 2048 }, "rsa-1", "RS256"),
    ec: pair("ec", { namedCurve: "P-256" }, "ec-1", "ES256"),
  }),
);
