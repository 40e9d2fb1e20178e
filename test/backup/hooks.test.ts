/**
 * The hooks sections (docs/backup.md, docs/hooks.md "Backup"): `hooks` carries the hooks (with the
 * programs their fires run) and the topic verifier bindings without their literal secrets;
 * `hook-secrets` carries those secrets sealed for their topic under the exporting deployment's
 * SETTINGS_ENCRYPTION_KEY (never in the clear), only when named, and an import opens them with its
 * own keys and seals them again under its current one. Trigger links never travel. A hook fired
 * after a restore into a wiped deployment (under another settings key, holding the source's as a
 * previous key) verifies with the restored secret and runs as the restored key; a refused import
 * names the section, the row and the field, and writes nothing.
 */
import { createHmac } from "node:crypto";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { BASE, type CallOptions, type CallResult, admin, call, fetchWithEnv, mintKey, readResult, uniq } from "../helpers/http";
import { bindVerifier, deliver, githubSignature, hook } from "../hooks/helpers";
import { endedRun, traceOf } from "../tool-runs/helpers";
import { count, exportDoc, exported, importDoc, wipeDeployment } from "./helpers";

const GITHUB_SECRET = "GITHUBHOOKSECRETVALUE";
const BUILD_SECRET = "build-secret-from-the-env";
/** The importing deployment's own settings key: another 32 random bytes than wrangler.toml's. */
const TARGET_SETTINGS_KEY = btoa(String.fromCharCode(...Array.from({ length: 32 }, (_, i) => (i * 37 + 11) % 256)));
const SECTIONS = ["keys", "text-resources", "hooks", "hook-secrets"];
/** The exporting deployment's settings key (wrangler.toml's): the importing one holds it as a previous key. */
const SOURCE_SETTINGS_KEY = String((env as unknown as Record<string, unknown>).SETTINGS_ENCRYPTION_KEY);

/**
 * A call to this Worker as the importing deployment: the same D1 and objects, its own
 * SETTINGS_ENCRYPTION_KEY, and the source's as SETTINGS_ENCRYPTION_KEY_PREVIOUS (what opens the
 * document's sealed secrets).
 */
async function onTarget(method: string, path: string, opts: CallOptions = {}, vars: Record<string, string> = {}): Promise<CallResult> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.key) headers["x-api-key"] = opts.key;
  let body = opts.rawBody;
  if (body === undefined && opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers["content-type"] ??= "application/json";
  }
  return readResult(
    await fetchWithEnv(
      { ...env, SETTINGS_ENCRYPTION_KEY: TARGET_SETTINGS_KEY, SETTINGS_ENCRYPTION_KEY_PREVIOUS: SOURCE_SETTINGS_KEY, ...vars },
      new Request(`${BASE}${path}`, { method, headers, body }),
    ),
  );
}

const fx = { runner: "", document: null as any };

const hookRows = (doc: any) => doc.sections.hooks.filter((r: any) => r.type === "hook");
const verifierRows = (doc: any) => doc.sections.hooks.filter((r: any) => r.type === "verifier");

beforeAll(async () => {
  const key = await admin();
  // A least-privilege runner, a GitHub-verified topic with a hook, a generic topic whose secret is an
  // env reference with a hook whose condition is a rendered text resource, and a trigger link.
  fx.runner = (await mintKey({ user_id: "hook-runner", scopes: ["tool:echo"] })).user_id;
  await bindVerifier("gh-push", { kind: "github", secret: GITHUB_SECRET });
  await hook({
    name: "announce-main",
    topic: "gh-push",
    tool: "echo",
    execution_key: fx.runner,
    condition: '.ref == "refs/heads/main"',
    expr: "{message: .head_commit.message}",
    tool_kwargs: { tag: "gh" },
  });
  await bindVerifier("builds", { kind: "hmac_sha256", secret: { env: "SECRET_HOOK_TEST" }, signature_header: "X-Build-Signature", delivery_header: null });
  expect((await call("POST", "/api/storage/resources", { key, body: { id: "status-is", content: '.status == "{{status}}"' } })).status).toBe(200);
  await hook({
    name: "build-failed",
    topic: "builds",
    tool: "echo",
    execution_key: fx.runner,
    condition_id: "status-is",
    condition_kwargs: { status: "failed" },
    expr: "{message: .id}",
  });
  const link = await call("POST", "/api/hooks/trigger-links", {
    key,
    body: { topic: "gh-push", execution_key: fx.runner, name: "manual-deploy", ttl_seconds: null },
  });
  expect(link.status, JSON.stringify(link.body)).toBe(200);
  fx.document = await exported(SECTIONS);
});

describe("export", () => {
  it("hooks with their rendered programs and bindings without literal secrets; hook-secrets holds those; trigger links never", async () => {
    const doc = fx.document;
    expect(verifierRows(doc)).toEqual([
      {
        type: "verifier",
        topic: "builds",
        kind: "hmac_sha256",
        secret: { env: "SECRET_HOOK_TEST" },
        signature_header: "X-Build-Signature",
        delivery_header: null,
        created_by: "root",
        created_at: expect.any(String),
        updated_at: expect.any(String),
      },
      {
        type: "verifier",
        topic: "gh-push",
        kind: "github",
        secret: "<redacted>",
        signature_header: null,
        delivery_header: null,
        created_by: "root",
        created_at: expect.any(String),
        updated_at: expect.any(String),
      },
    ]);
    const fingerprint = await env.DB.prepare("SELECT key_fingerprint FROM api_keys WHERE user_id = 'hook-runner'").first<string>("key_fingerprint");
    expect(hookRows(doc)).toEqual([
      {
        type: "hook",
        name: "announce-main",
        topic: "gh-push",
        tool: "echo",
        execution_key: "hook-runner",
        execution_key_fingerprint: fingerprint,
        tool_kwargs: { tag: "gh" },
        condition: '.ref == "refs/heads/main"',
        condition_id: null,
        condition_kwargs: null,
        expr: "{message: .head_commit.message}",
        expr_id: null,
        expr_kwargs: null,
        state_binding: null,
        created_by: "root",
        created_at: expect.any(String),
        updated_at: expect.any(String),
        condition_program: '.ref == "refs/heads/main"',
        expr_program: "{message: .head_commit.message}",
      },
      expect.objectContaining({
        name: "build-failed",
        condition: null,
        condition_id: "status-is",
        condition_kwargs: { status: "failed" },
        condition_program: '.status == "failed"',
      }),
    ]);
    // Only the literal secret travels, only in hook-secrets, and sealed; the env reference stays a reference.
    expect(doc.sections["hook-secrets"]).toEqual([
      { topic: "gh-push", secret: { sealed: { kid: expect.any(String), iv: expect.any(String), ct: expect.any(String) } } },
    ]);
    expect(JSON.stringify(doc)).not.toContain(GITHUB_SECRET);
    const text = JSON.stringify(doc);
    expect(text).not.toContain("manual-deploy");
    expect(text).not.toContain("trg-");
  });

  it("hook-secrets only when named: the default export and an export of hooks hold no secret", async () => {
    const all = await exportDoc();
    expect(all.status).toBe(200);
    expect(Object.keys(all.body.sections)).toContain("hooks");
    expect(Object.keys(all.body.sections)).not.toContain("hook-secrets");
    for (const doc of [all.body, await exported(["hooks"])]) {
      const text = JSON.stringify(doc);
      expect(text).not.toContain(GITHUB_SECRET);
      expect(text).not.toContain('"ct"');
    }
    expect(Object.keys((await exported(["hook-secrets"])).sections)).toEqual(["hook-secrets"]);
  });

  it("needs the tool runs' store, as the hooks doors do: left out of the default export, 501 when named", async () => {
    const key = await admin();
    const post = (body: unknown) =>
      fetchWithEnv(
        { ...env, TOOL_RUNS_STORE_URL: "" },
        new Request(`${BASE}/api/backup/export`, {
          method: "POST",
          headers: { "x-api-key": key, "content-type": "application/json" },
          body: JSON.stringify(body),
        }),
      );
    const all = await post({});
    expect(all.status).toBe(200);
    expect(Object.keys(((await all.json()) as any).sections)).not.toContain("hooks");
    for (const section of ["hooks", "hook-secrets"]) {
      const named = await post({ sections: [section] });
      expect(named.status).toBe(501);
      expect(await named.json()).toMatchObject({ code: "tool-runs-not-configured" });
    }
  });

  it("a sealed secret that does not open under this deployment's key cannot be exported (409), and says no more", async () => {
    const key = await admin();
    const r = await readResult(
      await fetchWithEnv(
        { ...env, SETTINGS_ENCRYPTION_KEY: TARGET_SETTINGS_KEY },
        new Request(`${BASE}/api/backup/export`, {
          method: "POST",
          headers: { "x-api-key": key, "content-type": "application/json" },
          body: JSON.stringify({ sections: ["hook-secrets"] }),
        }),
      ),
    );
    expect(r.status).toBe(409);
    expect(r.body.error).toContain("SETTINGS_ENCRYPTION_KEY");
    expect(JSON.stringify(r.body)).not.toContain("gh-push");
  });
});

describe("restore into a wiped deployment with its own settings key", () => {
  it("round trip: the same rows come back, the secret sealed under the new key, no trigger link; a signed GitHub delivery fires as the restored key", async () => {
    const before = fx.document;
    await wipeDeployment();
    expect(await count("SELECT COUNT(*) AS n FROM hooks")).toBe(0);
    expect(await count("SELECT COUNT(*) AS n FROM hook_verifiers")).toBe(0);

    const key = await admin();
    // A deployment that does not hold the exporting key cannot open the sealed secret: 400, nothing written.
    const keyless = await readResult(
      await fetchWithEnv(
        { ...env, SETTINGS_ENCRYPTION_KEY: TARGET_SETTINGS_KEY },
        new Request(`${BASE}/api/backup/import`, {
          method: "POST",
          headers: { "x-api-key": key, "content-type": "application/json" },
          body: JSON.stringify({ document: before }),
        }),
      ),
    );
    expect(keyless.status).toBe(400);
    expect(keyless.body.error).toContain("sections.hook-secrets.0.secret");
    expect(await count("SELECT COUNT(*) AS n FROM hook_verifiers")).toBe(0);
    const r = await onTarget("POST", "/api/backup/import", { key, body: { document: before } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const outcome = Object.fromEntries(r.body.data.sections.map((s: any) => [s.name, s]));
    expect(outcome.hooks).toEqual({ name: "hooks", applied: 4 });
    expect(outcome["hook-secrets"]).toEqual({ name: "hook-secrets", applied: 1 });

    // Row for row, as this deployment (its key) exports them.
    const after = await onTarget("POST", "/api/backup/export", { key, body: { sections: SECTIONS } });
    expect(after.status, JSON.stringify(after.body)).toBe(200);
    expect(after.body.sections.hooks).toEqual(before.sections.hooks);
    // The secret travels sealed again, now under the importing deployment's own key.
    expect(after.body.sections["hook-secrets"]).toEqual([{ topic: "gh-push", secret: { sealed: expect.objectContaining({ ct: expect.any(String) }) } }]);
    expect(after.body.sections["hook-secrets"][0].secret.sealed.kid).not.toBe(before.sections["hook-secrets"][0].secret.sealed.kid);
    // Sealed, never in plain text, and under the importing deployment's key: the source's key no longer opens it.
    const sealed = await env.DB.prepare("SELECT secret_sealed FROM hook_verifiers WHERE topic = 'gh-push'").first<string>("secret_sealed");
    expect(sealed).toContain('"ct"');
    expect(sealed).not.toContain(GITHUB_SECRET);
    expect((await exportDoc(["hook-secrets"])).status).toBe(409);
    expect(await count("SELECT COUNT(*) AS n FROM hook_trigger_links")).toBe(0);

    // A delivery signed as GitHub signs it, with the restored secret.
    const body = JSON.stringify({ ref: "refs/heads/main", head_commit: { id: "abc123", message: "ship it" } });
    const signed = {
      "content-type": "application/json",
      "x-hub-signature-256": githubSignature(GITHUB_SECRET, body),
      "x-github-delivery": crypto.randomUUID(),
      "x-github-event": "push",
    };
    const fired = await onTarget("POST", "/api/hooks/incoming/gh-push", { rawBody: body, headers: signed });
    expect(fired.status, JSON.stringify(fired.body)).toBe(202);
    expect(fired.body.data).toEqual({ status: "accepted", fired: [{ hook: "announce-main", run_id: expect.any(String) }], skipped: [] });
    const run = await endedRun(fired.body.data.fired[0].run_id);
    expect(run).toMatchObject({
      status: "succeeded",
      result: "ship it",
      caller: "hook-runner",
      origin: "hook",
      hook_name: "announce-main",
      arguments: { message: "ship it", tag: "gh" },
    });
    expect((await traceOf(run.run_id)).listed).toMatchObject({ kind: "hook_fire", trigger: "hook", user_id: "hook-runner", outcome: "ok" });
    // A forged signature still fails closed.
    const forged = await onTarget("POST", "/api/hooks/incoming/gh-push", {
      rawBody: body,
      headers: { ...signed, "x-hub-signature-256": githubSignature("not-the-secret", body), "x-github-delivery": crypto.randomUUID() },
    });
    expect(forged.status).toBe(401);
    // The env-referenced secret travelled as the reference: the target's env supplies it; the
    // condition restored as rendered from its text resource.
    const build = '{"status":"failed","id":"b1"}';
    const buildHeaders = {
      "content-type": "application/json",
      "x-build-signature": `sha256=${createHmac("sha256", BUILD_SECRET).update(build, "utf8").digest("hex")}`,
    };
    const onBuild = await onTarget("POST", "/api/hooks/incoming/builds", { rawBody: build, headers: buildHeaders }, { SECRET_HOOK_TEST: BUILD_SECRET });
    expect(onBuild.status, JSON.stringify(onBuild.body)).toBe(202);
    expect(onBuild.body.data.fired.map((f: any) => f.hook)).toEqual(["build-failed"]);
    expect((await endedRun(onBuild.body.data.fired[0].run_id)).result).toBe("b1");
    await traceOf(onBuild.body.data.fired[0].run_id);
    // Without the variable in the target's env, it fails closed.
    expect((await onTarget("POST", "/api/hooks/incoming/builds", { rawBody: build, headers: buildHeaders })).status).toBe(401);

    // Importing the same document again changes nothing.
    const again = await onTarget("POST", "/api/backup/import", { key, body: { document: before } });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect((await onTarget("POST", "/api/backup/export", { key, body: { sections: ["hooks"] } })).body.sections.hooks).toEqual(before.sections.hooks);
  });
});

describe("import rules", () => {
  const NOW = "2026-01-01T00:00:00.000Z";
  const doc = (sections: Record<string, unknown[]>) => ({ version: 1, exported_at: NOW, sections });
  const hookRow = (name: string, extra: Record<string, unknown> = {}) => ({
    type: "hook",
    name,
    topic: "rules",
    tool: "echo",
    execution_key: "root",
    execution_key_fingerprint: "from-the-source",
    tool_kwargs: {},
    condition: null,
    condition_id: null,
    condition_kwargs: null,
    expr: null,
    expr_id: null,
    expr_kwargs: null,
    state_binding: null,
    created_by: "root",
    created_at: NOW,
    updated_at: NOW,
    condition_program: null,
    expr_program: null,
    ...extra,
  });
  const verifierRow = (topic: string, extra: Record<string, unknown> = {}) => ({
    type: "verifier",
    topic,
    kind: "github",
    secret: "<redacted>",
    signature_header: null,
    delivery_header: null,
    created_by: "root",
    created_at: NOW,
    updated_at: NOW,
    ...extra,
  });
  const nothingOf = async (names: string[], topics: string[], user?: string) => {
    expect(await count(`SELECT COUNT(*) AS n FROM hooks WHERE name IN (${names.map(() => "?").join(", ")})`, ...names)).toBe(0);
    expect(await count(`SELECT COUNT(*) AS n FROM hook_verifiers WHERE topic IN (${topics.map(() => "?").join(", ")})`, ...topics)).toBe(0);
    if (user) expect(await count("SELECT COUNT(*) AS n FROM api_keys WHERE user_id = ?", user)).toBe(0);
  };

  it("a hook naming an unknown tool or key is refused naming the section, row and field, and nothing of the import is written", async () => {
    const keys = (await exported(["keys"])).sections.keys;
    const root = keys.find((k: any) => k.user_id === "root");
    const user = uniq("k");
    const newKey = { ...root, user_id: user, key_hash: "a".repeat(64), key_fingerprint: "fp-new", versions: [] };
    const [ok, bad] = [uniq("h").toLowerCase(), uniq("h").toLowerCase()];
    const topic = uniq("t").toLowerCase();
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ tool: "NOSUCHTOOLANYWHERE" }, "sections.hooks.2.tool", "NOSUCHTOOLANYWHERE"],
      [{ execution_key: "no-such-key-here" }, "sections.hooks.2.execution_key", "no-such-key-here"],
    ];
    for (const [broken, field, value] of cases) {
      const r = await importDoc(
        doc({
          keys: [newKey],
          hooks: [verifierRow(topic), hookRow(ok, { topic, execution_key: user }), hookRow(bad, { topic, ...broken })],
          "hook-secrets": [{ topic, secret: "a-restored-secret" }],
        }),
      );
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.error).toContain(field);
      expect(r.body.error).not.toContain(value);
      await nothingOf([ok, bad], [topic], user);
    }
    // Fixed, the same import goes through: the hook may bind the key the same import brings.
    const fixed = await importDoc(
      doc({
        keys: [newKey],
        hooks: [verifierRow(topic), hookRow(ok, { topic, execution_key: user })],
        "hook-secrets": [{ topic, secret: "a-restored-secret" }],
      }),
    );
    expect(fixed.status, JSON.stringify(fixed.body)).toBe(200);
    expect(await env.DB.prepare("SELECT execution_key_fingerprint FROM hooks WHERE name = ?").bind(ok).first("execution_key_fingerprint")).toBe("fp-new");
  });

  it("refuses what the doors refuse, by place and never by value, writing nothing", async () => {
    const name = uniq("h").toLowerCase();
    const topic = uniq("t").toLowerCase();
    const cases: Array<[Record<string, unknown[]>, string]> = [
      [{ hooks: [verifierRow(topic)] }, "sections.hooks.0.secret"],
      [{ hooks: [verifierRow(topic)], "hook-secrets": [{ topic, secret: "short" }] }, "sections.hook-secrets.0.secret"],
      [{ hooks: [verifierRow(topic, { kind: "standard_webhooks" })], "hook-secrets": [{ topic, secret: "not base64 at all!" }] }, "sections.hooks.0: secret"],
      [{ hooks: [verifierRow(topic, { secret: { env: "CONVERSATIONS_STORE_URL" } })] }, "sections.hooks.0: secret"],
      [
        { hooks: [verifierRow(topic, { signature_header: "X-Sig" })], "hook-secrets": [{ topic, secret: "a-restored-secret" }] },
        "sections.hooks.0.signature_header",
      ],
      [
        { hooks: [verifierRow(topic, { secret: { env: "SECRET_HOOK_TEST" } })], "hook-secrets": [{ topic, secret: "a-restored-secret" }] },
        "sections.hook-secrets.0.topic",
      ],
      [{ "hook-secrets": [{ topic, secret: "a-restored-secret" }] }, "sections.hook-secrets.0.topic"],
      [{ hooks: [hookRow("incoming")] }, "sections.hooks.0.name"],
      [{ hooks: [hookRow(name, { condition: ".a", condition_program: ".b" })] }, "sections.hooks.0.condition_program"],
      [{ hooks: [hookRow(name, { expr: "{", expr_program: "{" })] }, "sections.hooks.0.expr_program"],
      [{ hooks: [hookRow(name, { condition: ".a" })] }, "sections.hooks.0.condition_program"],
      [{ hooks: [hookRow(name, { condition: ".a", condition_program: ".a", condition_id: "x" })] }, "sections.hooks.0.condition"],
      [{ hooks: [hookRow(name, { condition_kwargs: { a: 1 } })] }, "sections.hooks.0.condition_kwargs"],
      [{ hooks: [hookRow(name), hookRow(name)] }, "sections.hooks.1.name"],
      [{ hooks: [hookRow(name, { tool: "maintenance.prune_expired" })] }, "sections.hooks.0.tool"],
      [
        { hooks: [hookRow(name, { state_binding: { states: [{ state: "no-such-state-anywhere", subject_expr: { content: ".id" } }] } })] },
        "sections.hooks.0.state_binding.states.0.state",
      ],
    ];
    for (const [sections, place] of cases) {
      const r = await importDoc(doc(sections));
      expect(r.status, `${place}: ${JSON.stringify(r.body)}`).toBe(400);
      expect(r.body.error).toContain(place);
      expect(r.body.error).not.toContain("a-restored-secret");
      await nothingOf([name, "incoming"], [topic]);
    }
  });

  it("a state binding is checked as the door checks it when the section applies: a refusal writes nothing of the section", async () => {
    const state = uniq("st").toLowerCase();
    const topic = uniq("t").toLowerCase();
    const [good, bad] = [uniq("h").toLowerCase(), uniq("h").toLowerCase()];
    expect(
      (
        await call("PUT", `/api/states/${state}`, {
          key: await admin(),
          body: { schema: { type: "object", properties: { n: { type: "integer" } } }, subject_kinds: ["repo"] },
        })
      ).status,
    ).toBe(200);
    const binding = (subject: string) => ({ states: [{ state, subject_expr: { content: subject } }] });
    const rows = [verifierRow(topic), hookRow(good, { topic, state_binding: binding(".repo") }), hookRow(bad, { topic, state_binding: binding("{") })];
    const r = await importDoc(doc({ hooks: rows, "hook-secrets": [{ topic, secret: "a-restored-secret" }] }));
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error).toContain("import stopped at section hooks");
    expect(r.body.error).toContain("sections.hooks.2");
    await nothingOf([good, bad], [topic]);
    const fixed = await importDoc(doc({ hooks: rows.slice(0, 2), "hook-secrets": [{ topic, secret: "a-restored-secret" }] }));
    expect(fixed.status, JSON.stringify(fixed.body)).toBe(200);
    const listed = await call("GET", `/api/hooks?topic=${topic}`, { key: await admin() });
    expect(listed.body.data).toMatchObject({ items: [{ name: good, state_binding: { states: [{ state }] } }], topic_verifiers: { [topic]: "github" } });
  });

  it("a topic may not end up with more than 32 hooks", async () => {
    const topic = uniq("t").toLowerCase();
    const rows = Array.from({ length: 33 }, (_, i) => hookRow(`${topic}-${i}`, { topic }));
    const r = await importDoc(doc({ hooks: rows }));
    expect(r.status).toBe(400);
    expect(r.body.error).toContain("sections.hooks.32.topic");
    expect(await count("SELECT COUNT(*) AS n FROM hooks WHERE topic = ?", topic)).toBe(0);
    expect((await importDoc(doc({ hooks: rows.slice(0, 32) }))).status).toBe(200);
  });

  it("hook-secrets on its own re-seals the secret of a binding the deployment has; a binding without its secret keeps the deployment's", async () => {
    const topic = uniq("t").toLowerCase();
    const name = uniq("h").toLowerCase();
    await bindVerifier(topic, { kind: "github", secret: "the-old-secret" });
    await hook({ name, topic, tool: "echo", execution_key: "root", tool_kwargs: { message: "hi" } });
    /** Delivers a fresh body (the signed body is the replay key) signed with `secret`; a fired run is waited for until its trace is in. */
    const signedWith = async (secret: string) => {
      const body = JSON.stringify({ a: crypto.randomUUID() });
      const r = await deliver(topic, body, { "x-hub-signature-256": githubSignature(secret, body), "x-github-delivery": crypto.randomUUID() });
      for (const f of r.status === 202 ? r.body.data.fired : []) await traceOf(f.run_id);
      return r;
    };
    const r = await importDoc(doc({ "hook-secrets": [{ topic, secret: "the-new-secret" }] }));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect((await signedWith("the-old-secret")).status).toBe(401);
    expect((await signedWith("the-new-secret")).status).toBe(202);
    // The binding re-imported without hook-secrets keeps the deployment's secret (opened and sealed again).
    const kept = await importDoc(doc({ hooks: [verifierRow(topic, { kind: "github", created_by: "someone" })] }));
    expect(kept.status, JSON.stringify(kept.body)).toBe(200);
    expect((await signedWith("the-new-secret")).status).toBe(202);
    expect(await env.DB.prepare("SELECT created_by FROM hook_verifiers WHERE topic = ?").bind(topic).first("created_by")).toBe("someone");
  });
});
