// The built client against the real daemon, on loopback ports.
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { after, before, describe, test } from "node:test";

import {
  BadRequest,
  BudgetExhausted,
  BudgetPaced,
  BudgetPaused,
  Client,
  DaemonUnreachable,
  FastFail,
  LeaseLost,
  NotFound,
  Unauthorized,
  UpstreamFailed,
  decodePayload,
} from "../build/index.js";
import { deadPort, startDaemon } from "./daemon.mjs";

const TOKEN = "test-token-0123456789";
let daemon;
const client = () => new Client({ addr: daemon.api, token: TOKEN, timeout: 10 });
const uniq = (p) => `${p}-${process.hrtime.bigint()}`;

before(async () => {
  daemon = await startDaemon(["--budget-source", "tiny:10", "--budget-source", "big:1000"], TOKEN);
});
after(async () => {
  await daemon?.stop();
});

/** A request of one's own to a dead port: rejects with ECONNREFUSED. */
function refused(port) {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, "127.0.0.1");
    s.once("connect", () => { s.destroy(); resolve(); });
    s.once("error", reject);
  });
}

async function upstream(status, body, type = "text/plain") {
  const srv = http.createServer((_req, res) => {
    res.writeHead(status, { "Content-Type": type });
    res.end(body);
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${srv.address().port}`, close: () => new Promise((r) => srv.close(r)) };
}

describe("guard", () => {
  test("two failed reports, then a fast-fail", async () => {
    const hg = client();
    const origin = `http://${uniq("down")}.example`;
    for (let i = 0; i < 2; i++) {
      const t = await hg.guard.acquire(origin + "/x?q=1");
      assert.equal(t.trial, false);
      await hg.guard.report(t, "failed", "timeout");
    }
    const err = await hg.guard.acquire(origin + "/x").catch((e) => e);
    assert.ok(err instanceof FastFail, String(err));
    assert.equal(err.status, 503);
    assert.equal(err.endpoint, origin);
    assert.ok(err.retryAfter > 0);
    assert.ok((await hg.guard.list("open")).some((e) => e.endpoint === origin));
    await hg.guard.reset(origin);
    await hg.guard.report(await hg.guard.acquire(origin), "answered");
    assert.ok(!(await hg.guard.list("open")).some((e) => e.endpoint === origin));
  });

  test("guarded counts refusals, then fails fast without calling fn", async () => {
    const hg = client();
    const port = await deadPort();
    const url = `http://127.0.0.1:${port}/feed`;
    let calls = 0;
    const request = () => { calls++; return refused(port); };
    for (let i = 0; i < 2; i++) {
      await assert.rejects(hg.guarded(url, request), (e) => e.code === "ECONNREFUSED");
    }
    const err = await hg.guarded(url, request).catch((e) => e);
    assert.ok(err instanceof FastFail, String(err));
    assert.equal(calls, 2);
    assert.equal(err.endpoint, `http://127.0.0.1:${port}`);
  });

  test("guarded with the platform fetch classifies its failures", async () => {
    const hg = client();
    const port = await deadPort();
    const url = `http://127.0.0.1:${port}/`;
    for (let i = 0; i < 2; i++) await assert.rejects(hg.guarded(url, () => fetch(url)), TypeError);
    await assert.rejects(hg.guarded(url, () => fetch(url)), FastFail);
  });

  test("guarded passes results on and ignores errors that are not the host's", async () => {
    const hg = client();
    const origin = `http://${uniq("fine")}.example`;
    assert.equal(await hg.guarded(origin + "/", async () => 42), 42);
    for (let i = 0; i < 3; i++) {
      await assert.rejects(hg.guarded(origin + "/", () => { throw new RangeError("a bug of the caller's"); }), RangeError);
    }
    const st = (await hg.guard.list()).find((e) => e.endpoint === origin);
    assert.equal(st.state, "closed");
  });

  test("a bad URL is a bad request naming url", async () => {
    const err = await client().guard.acquire("not a url").catch((e) => e);
    assert.ok(err instanceof BadRequest);
    assert.equal(err.field, "url");
  });

  test("extend renews the lease until the ticket is reported", async () => {
    const hg = client();
    const origin = `http://extend-${process.hrtime.bigint()}.example`;
    const t = await hg.guard.acquire(`${origin}/x`);
    const x = await hg.guard.extend(t);
    assert.equal(x.ticket, t.ticket);
    assert.equal(x.endpoint, origin);
    assert.equal(x.lease_seconds, t.lease_seconds);
    assert.ok(Date.parse(x.expires_at) >= Date.parse(t.expires_at));
    assert.equal((await hg.guard.extend(t.ticket)).ticket, t.ticket);
    await hg.guard.report(t, "answered");
    const gone = await hg.guard.extend(t).catch((e) => e);
    assert.ok(gone instanceof NotFound);
    assert.equal(gone.field, "ticket");
    const bad = await hg.guard.extend("not-hex").catch((e) => e);
    assert.ok(bad instanceof BadRequest);
    assert.equal(bad.field, "ticket");
  });

  test("an unknown ticket is not found", async () => {
    const err = await client().guard.report("0".repeat(32), "answered").catch((e) => e);
    assert.ok(err instanceof NotFound);
    assert.equal(err.field, "ticket");
  });
});

describe("fetch", () => {
  test("refusals, then a fast-fail", async () => {
    const hg = client();
    const port = await deadPort();
    const url = `http://127.0.0.1:${port}/x?a=1&b=2`;
    for (let i = 0; i < 2; i++) {
      const err = await hg.fetch(url).catch((e) => e);
      assert.ok(err instanceof UpstreamFailed, String(err));
      assert.equal(err.errorClass, "refused");
      assert.equal(err.status, 502);
    }
    const start = Date.now();
    const err = await hg.fetch(url).catch((e) => e);
    assert.ok(err instanceof FastFail, String(err));
    assert.ok(Date.now() - start < 1000);
    assert.equal(err.endpoint, `http://127.0.0.1:${port}`);
  });

  test("upstream answers pass through, an upstream 503 included", async () => {
    const hg = client();
    const busy = await upstream(503, '{"error":"busy"}', "application/json");
    try {
      for (let i = 0; i < 3; i++) {
        const r = await hg.fetch(busy.url + "/busy?x=1");
        assert.equal(r.status, 503);
        assert.deepEqual(await r.json(), { error: "busy" });
      }
    } finally {
      await busy.close();
    }
    const ok = await upstream(200, "hello");
    try {
      const r = await hg.fetch(ok.url + "/", { exempt: true });
      assert.equal(r.status, 200);
      assert.equal(await r.text(), "hello");
    } finally {
      await ok.close();
    }
  });
});

describe("items", () => {
  test("every operation", async () => {
    const hg = client();
    const p = uniq("it") + "-";
    assert.deepEqual(await hg.items.add([{ id: p + "a", priority: 2, payload: new Uint8Array([0, 100]) }, p + "b", p + "c", p + "d"]),
      { added: 4, existing: 0 });
    const leases = await hg.items.claim(1000, 60, { worker: "ts" });
    const mine = Object.fromEntries(leases.filter((l) => l.id.startsWith(p)).map((l) => [l.id, l]));
    assert.equal(Object.keys(mine).length, 4);
    assert.deepEqual([...decodePayload(mine[p + "a"])], [0, 100]);
    assert.equal((await hg.items.succeed(mine[p + "a"])).state, "done");
    const failed = await hg.items.fail(mine[p + "b"], "not_found", { note: "404", host: "Files.Example" });
    assert.equal(failed.host, "files.example");
    assert.equal(failed.state, "scheduled");
    assert.equal(failed.last_class, "not_found");
    assert.equal((await hg.items.extend(p + "c", 300, mine[p + "c"].lease)).id, p + "c");
    assert.equal((await hg.items.release(mine[p + "d"])).state, "pending");
    assert.equal((await hg.items.observe(p + "b")).state, "scheduled");
    const many = await hg.items.observeMany([p + "b", p + "zz"]);
    assert.equal(many[1].unknown, true);
    assert.equal((await hg.items.get(p + "b")).observations, 2);
    const results = await hg.items.settle([
      { id: p + "c", lease: mine[p + "c"].lease, op: "succeed" },
      { id: p + "a", lease: "0".repeat(32), op: "release" },
    ]);
    assert.deepEqual(results.map((r) => r.ok), [true, false]);
    assert.equal(results[1].error, "lease_lost");
    assert.ok((await hg.items.stats()).by_state.done >= 2);
  });

  test("list pages", async () => {
    const hg = client();
    const p = uniq("ls") + "-";
    await hg.items.add([...[0, 1, 2, 3, 4].map((i) => p + i), { id: p + "later", not_before: "2099-01-01T00:00:00Z" }]);
    const ids = [];
    for await (const it of hg.items.iter({ pageSize: 2 })) if (it.id.startsWith(p)) ids.push(it.id);
    assert.deepEqual(ids, ["0", "1", "2", "3", "4", "later"].map((s) => p + s));
    const due = [];
    for await (const it of hg.items.iter({ state: ["pending", "scheduled"], dueBefore: new Date("2098-01-01T00:00:00Z") })) {
      if (it.id.startsWith(p)) due.push(it.id);
    }
    assert.equal(due.length, 5);
    const page = await hg.items.list({ limit: 1 });
    assert.equal(page.items.length, 1);
    assert.ok(page.next);
    assert.ok(page.items.every((it) => it.payload === undefined));
    const err = await hg.items.list({ state: "sleeping" }).catch((e) => e);
    assert.ok(err instanceof BadRequest);
    assert.equal(err.field, "state");
  });

  test("a lost lease", async () => {
    const hg = client();
    const id = uniq("lost");
    await hg.items.add([id]);
    const lease = (await hg.items.claim(1000, 60)).find((l) => l.id === id);
    await hg.items.release(lease);
    const err = await hg.items.succeed(lease).catch((e) => e);
    assert.ok(err instanceof LeaseLost, String(err));
    assert.equal(err.status, 409);
    assert.equal(err.field, "lease");
    await assert.rejects(hg.items.fail(lease, "timeout"), LeaseLost);
  });

  test("a bad request names the field", async () => {
    const hg = client();
    const err = await hg.items.claim(0, 30).catch((e) => e);
    assert.ok(err instanceof BadRequest, String(err));
    assert.equal(err.status, 400);
    assert.equal(err.field, "n");
    const err2 = await hg.items.add([{ id: "ok" }, { id: "" }]).catch((e) => e);
    assert.equal(err2.field, "items[1].id");
  });

  test("a claim waits for work", async () => {
    const hg = client();
    while ((await hg.items.claim(1000, 600)).length > 0);
    let start = Date.now();
    assert.deepEqual(await hg.items.claim(5, 30, { waitSeconds: 0.6 }), []);
    assert.ok(Date.now() - start >= 500);
    const id = uniq("woken");
    start = Date.now();
    const adding = new Promise((r) => setTimeout(r, 300)).then(() => client().items.add([id]));
    const leases = await hg.items.claim(5, 30, { waitSeconds: 10 });
    await adding;
    assert.deepEqual(leases.map((l) => l.id), [id]);
  });
});

describe("budget", () => {
  test("an exhausted allowance", async () => {
    // tiny's daily limit of 10 leaves searches no allowance at all.
    const err = await client().budget.admit("search", { source: "tiny" }).catch((e) => e);
    assert.ok(err instanceof BudgetExhausted, String(err));
    assert.equal(err.status, 429);
    const now = new Date();
    assert.equal(err.resetsAt.getTime(), Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
    assert.ok(err.retryAfter > 0);
  });

  test("a paced source", async () => {
    const hg = client();
    assert.equal((await hg.budget.admit("head_poll", { source: "big" })).source, "big");
    const err = await hg.budget.admit("head_poll", { source: "big" }).catch((e) => e);
    assert.ok(err instanceof BudgetPaced, String(err));
    assert.ok(err.retryAfter >= 1);
  });

  test("paused work", async () => {
    const hg = client();
    await hg.budget.pause(true);
    try {
      await assert.rejects(hg.budget.admit("validation"), BudgetPaused);
    } finally {
      await hg.budget.pause(false);
    }
    await hg.budget.admit("validation");
  });

  test("one paused source", async () => {
    const hg = client();
    assert.deepEqual(await hg.budget.pauseSource("tiny"), { name: "tiny", paused: true });
    try {
      await assert.rejects(hg.budget.admit("search", { source: "tiny" }), BudgetPaused);
      const paused = Object.fromEntries((await hg.budget.report()).sources.map((s) => [s.name, s.paused]));
      assert.deepEqual(paused, { tiny: true, big: false });
      await hg.budget.admit("validation");
    } finally {
      assert.deepEqual(await hg.budget.pauseSource("tiny", false), { name: "tiny", paused: false });
    }
    const err = await hg.budget.pauseSource("nowhere").catch((e) => e);
    assert.ok(err instanceof NotFound, String(err));
    assert.equal(err.field, "name");
  });

  test("a bytes grant", async () => {
    const hg = client();
    const g = await hg.budget.admit("bytes", { cost: 4096 });
    assert.ok(g.id);
    assert.deepEqual(await hg.budget.settle(g, 1024), { id: g.id, actual: 1024 });
    assert.ok("total" in (await hg.budget.report()));
  });

  test("an unknown source", async () => {
    const err = await client().budget.admit("search", { source: "nowhere" }).catch((e) => e);
    assert.ok(err instanceof NotFound);
    assert.equal(err.field, "source");
  });
});

describe("operator actions", () => {
  test("hosts.reset, items.dueNow, items.forget", async () => {
    const hg = client();
    await hg.hosts.touch("good.example", true);
    await hg.hosts.touch("reset-me.example", false);
    assert.equal(await hg.hosts.reset("reset-me.example"), true);
    assert.ok((await hg.hosts.get("reset-me.example").catch((e) => e)) instanceof NotFound);
    assert.equal(await hg.hosts.reset("reset-me.example"), false);
    const id = uniq("due-now");
    await hg.items.add([{ id, not_before: new Date(Date.now() + 3600e3).toISOString() }]);
    assert.equal((await hg.items.dueNow(id)).moved, true);
    assert.equal((await hg.items.dueNow(id)).moved, false);
    await hg.items.forget(id);
    assert.ok((await hg.items.get(id).catch((e) => e)) instanceof NotFound);
    assert.ok((await hg.items.forget(id).catch((e) => e)) instanceof NotFound);
  });
});

describe("hosts", () => {
  test("touch, filter, get, list", async () => {
    const hg = client();
    await hg.hosts.touch("good.example", true);
    const r = await hg.hosts.touch("bad.example", false);
    assert.equal(r.healthy, false);
    assert.equal(typeof r.counted, "boolean");
    const backoff = [];
    for await (const h of hg.hosts.filter("backoff")) backoff.push(h.name);
    assert.ok(backoff.includes("bad.example"));
    assert.ok(!backoff.includes("good.example"));
    assert.equal((await hg.hosts.get("good.example")).healthy, true);
    assert.ok((await hg.hosts.get(uniq("never") + ".example").catch((e) => e)) instanceof NotFound);
    const page = await hg.hosts.list("all", { limit: 1 });
    assert.equal(page.hosts.length, 1);
    assert.ok(page.next);
  });

  test("a bad name", async () => {
    const err = await client().hosts.touch("bad\u0007name.example", true).catch((e) => e);
    assert.ok(err instanceof BadRequest);
    assert.equal(err.field, "name");
  });
});

describe("configuration", () => {
  test("the environment gives the address and the token", async () => {
    const saved = { addr: process.env.HOSTGUARD_ADDR, token: process.env.HOSTGUARD_TOKEN };
    process.env.HOSTGUARD_ADDR = daemon.api.slice("http://".length);
    process.env.HOSTGUARD_TOKEN = TOKEN;
    try {
      const hg = new Client();
      assert.equal(hg.addr, daemon.api);
      assert.ok("items" in (await hg.status()));
    } finally {
      for (const [k, v] of [["HOSTGUARD_ADDR", saved.addr], ["HOSTGUARD_TOKEN", saved.token]]) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  test("a wrong token", async () => {
    const err = await new Client({ addr: daemon.api, token: "wrong" }).items.stats().catch((e) => e);
    assert.ok(err instanceof Unauthorized);
    assert.equal(err.status, 401);
  });

  test("healthz needs no token", async () => {
    assert.deepEqual(await new Client({ addr: daemon.api, token: "" }).healthz(), { status: "ok" });
  });

  test("an unreachable daemon", async () => {
    const err = await new Client({ addr: `127.0.0.1:${await deadPort()}`, timeout: 2 }).items.stats().catch((e) => e);
    assert.ok(err instanceof DaemonUnreachable, String(err));
    assert.equal(err.status, 0);
  });
});
