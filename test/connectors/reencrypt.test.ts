/**
 * Key rotation (docs/connectors.md "Rotating the key"): with the new key in
 * CONNECTORS_ENCRYPTION_KEY and the old one in CONNECTORS_ENCRYPTION_KEY_PREVIOUS, tokens sealed
 * under the old key still resolve, and `POST /api/connectors/tokens/reencrypt` (admin only)
 * re-seals every connection's tokens and every open authorization's verifier under the new key,
 * answering counts; afterwards the old key can go. Own file: the counts cover the whole database.
 */
import { describe, expect, it } from "vitest";
import { keyId } from "../../src/connectors/sealing";
import { connectionStub } from "../../src/connectors/rpc";
import { env } from "cloudflare:workers";
import { admin, uniq } from "../helpers/http";
import { NEW_KEY, OLD_KEY, VARS, call, connect, connectorsUser, declareTool, expectNoSecrets, fakeProvider, runTool, storedRows } from "./helpers";
import { must } from "../../src/platform/must";

const REENCRYPT = "/api/connectors/tokens/reencrypt";
const ROTATING = { ...VARS, CONNECTORS_ENCRYPTION_KEY: NEW_KEY, CONNECTORS_ENCRYPTION_KEY_PREVIOUS: OLD_KEY };
const ROTATED = { ...VARS, CONNECTORS_ENCRYPTION_KEY: NEW_KEY, CONNECTORS_ENCRYPTION_KEY_PREVIOUS: "" };

const kidOf = async (id: string) => JSON.parse(String((await storedRows(id))[0].sealed)).kid as string;

describe("POST /api/connectors/tokens/reencrypt", () => {
  it("is admin only", async () => {
    const user = await connectorsUser();
    const r = await call("POST", REENCRYPT, { key: user.key });
    expect(r.status).toBe(403);
  });

  it("re-seals every token and open authorization under the new key; the old key can then be dropped", async () => {
    const fake = fakeProvider();
    const key = await admin();
    const a = await connect(fake);
    const b = await connect(fake, { sub_services: ["calendar"] });
    const title = uniq("conn-tool");
    expect((await declareTool(title, { authorization: { connection: a.id } })).status).toBe(200);
    // An authorization started under the old key, completed after the rotation.
    const pending = await call("POST", "/api/connectors/connections/start", { key, body: { provider_id: "acme", sub_services: ["files"] } });
    const consent = fake.consent(pending.body.data.authorization_url);
    const [oldId, newId] = [await keyId(OLD_KEY), await keyId(NEW_KEY)];
    expect(await kidOf(a.id)).toBe(oldId);

    // Mid-rotation: old ciphertexts still open through the previous key.
    expect((await runTool(title, {}, ROTATING)).status).toBe(200);
    expect(must(fake.toolCalls.at(-1), "fake.toolCalls.at(-1)").headers.authorization).toBe(`Bearer ${fake.issued[0]}`);

    const r = await call("POST", REENCRYPT, { key }, ROTATING);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toEqual({
      current_key_id: newId,
      connections: { total: 2, resealed: 2, already_current: 0, missing: 0, unopenable: 0 },
      authorizations: { resealed: 1, dropped: 0 },
    });
    expect(r.text).not.toContain(NEW_KEY);
    expect(r.text).not.toContain(OLD_KEY);
    expectNoSecrets(r.text, fake);
    expect(await kidOf(a.id)).toBe(newId);
    expect(await kidOf(b.id)).toBe(newId);
    for (const t of fake.issued) expect(JSON.stringify(await storedRows(a.id))).not.toContain(t);

    // The old key gone: tokens and the pending authorization still work.
    const after = await runTool(title, {}, ROTATED);
    expect(after.status, after.text).toBe(200);
    expect(must(fake.toolCalls.at(-1), "fake.toolCalls.at(-1)").headers.authorization).toBe(`Bearer ${fake.issued[0]}`);
    const done = await call("POST", "/api/connectors/oauth/complete", { key, body: { state: consent.state, code: consent.code } }, ROTATED);
    expect(done.status, done.text).toBe(200);
    const c = done.body.data.connection.connection_id;
    expect(await kidOf(c)).toBe(newId);

    // Run again: everything is current. An object that lost its tokens counts as missing.
    await connectionStub(env, b.id).erase();
    const again = await call("POST", REENCRYPT, { key }, ROTATED);
    expect(again.body.data.connections).toEqual({ total: 3, resealed: 0, already_current: 2, missing: 1, unopenable: 0 });
  });

  it("counts tokens no configured key opens as unopenable, and such a tool call fails naming the setting", async () => {
    const fake = fakeProvider();
    const key = await admin();
    const lost = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))));
    const { id } = await connect(fake, { vars: { ...VARS, CONNECTORS_ENCRYPTION_KEY: lost } });
    const title = uniq("conn-tool");
    expect((await declareTool(title, { authorization: { connection: id } })).status).toBe(200);
    const r = await runTool(title, {}, ROTATED);
    expect(r.status).toBe(500);
    expect(r.body.error).toBe("the connection's tokens are sealed with a key the service no longer has (see CONNECTORS_ENCRYPTION_KEY_PREVIOUS)");
    const counts = (await call("POST", REENCRYPT, { key }, ROTATED)).body.data.connections;
    expect(counts.unopenable).toBe(1);
    expect(await kidOf(id)).toBe(await keyId(lost));
  });
});
