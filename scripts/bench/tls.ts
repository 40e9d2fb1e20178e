/**
 * A throwaway certificate authority and a server certificate for 127.0.0.1 / localhost, made at
 * test time with the `openssl` CLI. workerd trusts the CA when `wrangler dev` runs with
 * `SSL_CERT_FILE` (and `NODE_EXTRA_CA_CERTS`) pointing at `caPath`, so the Worker can POST to an
 * HTTPS receiver on loopback without any test-only code path in the service.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TestPki {
  dir: string;
  /** PEM file of the CA certificate: hand it to wrangler as SSL_CERT_FILE / NODE_EXTRA_CA_CERTS. */
  caPath: string;
  /** PEM of the CA certificate (for Node clients that should trust the receiver). */
  ca: string;
  /** Server certificate (SAN IP:127.0.0.1, DNS:localhost) and its key, PEM. */
  cert: string;
  key: string;
  /** Removes the directory. */
  cleanup: () => void;
}

function openssl(args: string[], cwd: string): void {
  execFileSync("openssl", args, { cwd, stdio: ["ignore", "ignore", "pipe"] });
}

/** Generates a CA and a server certificate signed by it into a fresh temp directory. */
export function makeTestPki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), "bridge-e2e-pki-"));
  // EC keys keep generation fast; two days of validity is plenty for a test run.
  openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca.key"], dir);
  openssl(
    [
      "req",
      "-x509",
      "-new",
      "-key",
      "ca.key",
      "-sha256",
      "-days",
      "2",
      "-subj",
      "/CN=conversation-bridge e2e test CA",
      "-out",
      "ca.pem",
      "-addext",
      "basicConstraints=critical,CA:TRUE",
      "-addext",
      "keyUsage=critical,keyCertSign,cRLSign",
    ],
    dir,
  );
  openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "server.key"], dir);
  openssl(["req", "-new", "-key", "server.key", "-subj", "/CN=127.0.0.1", "-out", "server.csr"], dir);
  writeFileSync(
    join(dir, "server.ext"),
    [
      "basicConstraints=critical,CA:FALSE",
      "keyUsage=critical,digitalSignature,keyEncipherment",
      "extendedKeyUsage=serverAuth",
      "subjectAltName=IP:127.0.0.1,DNS:localhost",
      "authorityKeyIdentifier=keyid",
      "subjectKeyIdentifier=hash",
      "",
    ].join("\n"),
  );
  openssl(
    [
      "x509",
      "-req",
      "-in",
      "server.csr",
      "-CA",
      "ca.pem",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-sha256",
      "-days",
      "2",
      "-extfile",
      "server.ext",
      "-out",
      "server.pem",
    ],
    dir,
  );
  return {
    dir,
    caPath: join(dir, "ca.pem"),
    ca: readFileSync(join(dir, "ca.pem"), "utf8"),
    cert: readFileSync(join(dir, "server.pem"), "utf8"),
    key: readFileSync(join(dir, "server.key"), "utf8"),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** The environment that makes a `wrangler dev` child (workerd) trust the test CA. */
export function trustEnv(pki: TestPki): Record<string, string> {
  return { SSL_CERT_FILE: pki.caPath, NODE_EXTRA_CA_CERTS: pki.caPath };
}
