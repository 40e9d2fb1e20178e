/**
 * Media in answers: what a participant sends with the answering inbound is fetched
 * through the network edge (http(s) URLs through the address guard; Telegram file ids through the
 * Bot API), stored in R2 under a 43-character id, and served by `GET /api/interactions/media/{id}`
 * with its content type, nosniff and an attachment disposition, to callers who may see the
 * interaction. Anything that cannot be fetched is kept as its reference, with the reason.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { send } from "../helpers/bridge";
import { settingsOf } from "../targets/helpers";
import { fakeFetch, fakeNetwork } from "../helpers/network";
import { BASE, admin, call, mintKey, dispatch } from "../helpers/http";
import { storeAnswerMedia } from "../../src/interactions/media";
import { askRoute, listedAs, pendingOf } from "./helpers";

const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3, 4]);

describe("media in an answer", () => {
  it("is stored and served to callers who may see the interaction", async () => {
    const owner = await mintKey({ scopes: ["interactions"] });
    const aud = await mintKey({ scopes: ["interactions"], owner_user_id: owner.user_id });
    const other = await mintKey({ scopes: ["interactions"], owner_user_id: owner.user_id });
    const route = await askRoute({ audience: aud.user_id, options: false });
    const first = await send(route.name, { external_user_id: "pix", text: "Send a photo of the damage", wait_seconds: 10 });
    const [pending] = await pendingOf(first.body.data.thread_id);
    fakeNetwork((req) => {
      if (req.url === "https://media.example/damage.png") return new Response(PNG, { headers: { "content-type": "image/png" } });
      throw new Error(`unexpected outbound request: ${req.url}`);
    });
    const answer = await send(route.name, {
      external_user_id: "pix",
      text: "here",
      attachments: [
        { kind: "image", url: "https://media.example/damage.png", caption: "front" },
        { kind: "document", url: "http://127.0.0.1/private.pdf", filename: "private.pdf" },
      ],
      wait_seconds: 10,
    });
    expect(answer.body.data.answer).toBe("You chose: here");
    const done = await listedAs(pending.interaction_id, "answered");
    const [stored, refused] = done.answer.media;
    expect(stored).toEqual({
      kind: "image",
      media_id: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      url: `/api/interactions/media/${stored.media_id}`,
      content_type: "image/png",
      bytes: PNG.byteLength,
      caption: "front",
    });
    expect(refused).toMatchObject({ kind: "document", media_id: null, url: "http://127.0.0.1/private.pdf", filename: "private.pdf" });
    expect(refused.problem).toMatch(/^the media URL is refused by the outbound address guard: /);

    const res = await dispatch(`${BASE}${stored.url}`, { headers: { "x-api-key": await admin() } });
    expect(res.status).toBe(200);
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(PNG);
    expect(res.headers.get("content-type")).toBe("image/png");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("content-disposition")).toBe(`attachment; filename="media-${stored.media_id.slice(0, 12)}"`);
    expect(res.headers.get("content-security-policy")).toBe("default-src 'none'; sandbox");
    // Restricted callers: the audience may, another identity may not (404, as if absent).
    expect((await dispatch(`${BASE}${stored.url}`, { headers: { "x-api-key": aud.key } })).status).toBe(200);
    const denied = await call("GET", stored.url, { key: other.key });
    expect(denied.status).toBe(404);
    expect(denied.body).toEqual({ error: "media not found" });
    expect((await call("GET", `/api/interactions/media/${"A".repeat(43)}`, { key: await admin() })).status).toBe(404);
    expect((await call("GET", "/api/interactions/media/short", { key: await admin() })).status).toBe(400);
    // The audience's user_id issued again (docs/access-control.md, "Identities"): the new holder
    // of the id never sees what was addressed to the first.
    expect((await call("DELETE", `/api/auth/api-keys/${aud.user_id}`, { key: await admin() })).status).toBe(200);
    const again = await call("POST", "/api/auth/api-keys", {
      key: await admin(),
      body: { user_id: aud.user_id, scopes: ["interactions"], owner_user_id: owner.user_id },
    });
    expect(again.status).toBe(200);
    expect(await call("GET", stored.url, { key: again.body.data.api_key })).toMatchObject({ status: 404, body: { error: "media not found" } });
  });

  it("resolves a Telegram file id through getFile; keeps other references and oversized items as references", async () => {
    const settings = settingsOf({ INTERACTIONS_MEDIA_MAX_BYTES: "1024" });
    const edge = fakeFetch((req) => {
      if (req.url === "https://telegram.fake/bot123456:telegram-test-token/getFile") return Response.json({ ok: true, result: { file_path: "photos/f1.jpg" } });
      if (req.url === "https://telegram.fake/file/bot123456:telegram-test-token/photos/f1.jpg")
        return new Response(PNG, { headers: { "content-type": "image/jpeg" } });
      if (req.url === "https://media.example/big.bin") return new Response(new Uint8Array(2048), { headers: { "content-type": "application/octet-stream" } });
      if (req.url === "https://media.example/gone") return new Response("no", { status: 404 });
      throw new Error(`unexpected outbound request: ${req.url}`);
    });
    const media = await storeAnswerMedia(env, settings, edge.fetch, { interaction_id: "i-media", audience: null }, [
      { kind: "image", url: "telegram-file:F1" },
      { kind: "audio", url: "whatsapp-media:W1" },
      { kind: "document", url: "https://media.example/big.bin", filename: "big.bin" },
      { kind: "document", url: "https://media.example/gone" },
    ]);
    expect(edge.calls[0].json).toEqual({ file_id: "F1" });
    expect(media[0]).toMatchObject({ kind: "image", content_type: "image/jpeg", bytes: PNG.byteLength });
    const obj = await env.INTERACTION_MEDIA.get(`media/${media[0].media_id}`);
    expect(obj?.customMetadata).toEqual({ interaction_id: "i-media", audience: "", kind: "image" });
    expect(media[1]).toEqual({
      kind: "audio",
      media_id: null,
      url: "whatsapp-media:W1",
      content_type: null,
      bytes: null,
      problem: "this provider reference is not fetched; it is kept as sent",
    });
    expect(media[2]).toMatchObject({ media_id: null, problem: "the media is larger than 1024 bytes" });
    expect(media[3]).toMatchObject({ media_id: null, problem: "the media fetch answered HTTP 404" });
  });
});
