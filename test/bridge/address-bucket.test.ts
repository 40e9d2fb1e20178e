import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { uniq } from "../helpers/http";

function bucket(name: string) {
  return env.ADDRESS_BUCKETS.get(env.ADDRESS_BUCKETS.idFromName(name)) as unknown as DurableObjectStub & {
    take(capacity: number): Promise<{ allowed: boolean; notify?: boolean }>;
  };
}

describe("AddressBucket object", () => {
  it("refuses past capacity and reports the notice once per window", async () => {
    const b = bucket(uniq("bucket"));
    expect(await b.take(2)).toEqual({ allowed: true });
    expect(await b.take(2)).toEqual({ allowed: true });
    expect(await b.take(2)).toMatchObject({ allowed: false, notify: true });
    expect(await b.take(2)).toMatchObject({ allowed: false, notify: false });
  });

  it("arms one alarm per lifetime that re-arms until full, then forgets the bucket", async () => {
    const b = bucket(uniq("bucket"));
    await b.take(3);
    const armed = await runInDurableObject(b, (_o, state) => state.storage.getAlarm());
    expect(armed).not.toBeNull();
    await b.take(3);
    // Not full yet when the alarm fires: it stays and re-arms.
    expect(await runDurableObjectAlarm(b)).toBe(true);
    expect(await runInDurableObject(b, (_o, state) => state.storage.get("bucket"))).toBeDefined();
    expect(await runInDurableObject(b, (_o, state) => state.storage.getAlarm())).not.toBeNull();
    // An hour later (rewritten state) the bucket is full: the alarm forgets it.
    await runInDurableObject(b, async (_o, state) => {
      const stored = (await state.storage.get<{ state: { tokens: number; updatedAtMs: number }; capacity: number }>("bucket"))!;
      await state.storage.put("bucket", { ...stored, state: { ...stored.state, updatedAtMs: Date.now() - 3_600_000 } });
    });
    expect(await runDurableObjectAlarm(b)).toBe(true);
    expect(await runInDurableObject(b, (_o, state) => state.storage.get("bucket"))).toBeUndefined();
  });
});
