// The Node clients hostguard is for, each with a 2 s timeout, against a
// host that answers in 300 ms, refuses two requests (the guard opens) and
// comes back, through a daemon with its default settings but a 1 s open
// period (the default 30 s would make the test wait 30 s). After the period
// each client sends four requests at once: one is the half-open trial, and
// the other three wait for its answer (guard.trial_wait) and go out,
// instead of being refused while it was out. The host hears the trial
// alone first. fetch with undici's ProxyAgent goes through CONNECT, so the
// tunnel's wait is covered too.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { isFastFail } from "../build/index.js";
import { axiosEnv, fetchProxyAgent, nodeHTTP, setProxyEnv } from "./clients.mjs";
import { startDaemon } from "./daemon.mjs";
import { comebackHost, waitFor } from "./targets.mjs";

const timeoutMs = 2000;
const fanOut = 4;
const clients = { "node:http": nodeHTTP, "fetch (ProxyAgent)": fetchProxyAgent, axios: axiosEnv };

let daemon, restoreEnv;

before(async () => {
  daemon = await startDaemon(["--guard-open-for", "1s"], "", { tuned: false });
  restoreEnv = setProxyEnv(`http://${daemon.proxy}`);
});

after(async () => {
  restoreEnv();
  await daemon.stop();
});

async function states() {
  const { endpoints } = await (await fetch(new URL("/v1/guard", daemon.api))).json();
  return new Map(endpoints.map((e) => [e.endpoint, e.state]));
}

// The answer's status; axios throws on a 502 with the answer attached, and
// undici's fetch through a refused CONNECT has only an error.
const status = (x) => x?.response?.status ?? x?.statusCode ?? x?.status ?? `${x?.message} / ${x?.cause?.message}`;

async function run(name, get) {
  const host = await comebackHost(300);
  try {
    const url = `http://127.0.0.1:${host.port}/catalogue`;
    const proxy = `http://${daemon.proxy}`;
    const before = [await get(url, proxy, { timeoutMs })];
    await host.down();
    for (let i = 0; i < 2; i++) before.push(await get(url, proxy, { timeoutMs }));
    await host.up();
    // CONNECT keys the endpoint as https:// whatever the tunnel carries.
    const half = async () => [...(await states())].some(([ep, st]) => ep.endsWith(`://127.0.0.1:${host.port}`) && st === "half-open");
    await waitFor(half, `${name}: the open period to end`);
    host.forget();
    const got = await Promise.all(Array.from({ length: fanOut }, () => get(url, proxy, { timeoutMs })));
    return { before, got, events: host.events() };
  } finally {
    await host.close();
  }
}

test("a fan-out to a host that came back waits for the trial under the daemon's defaults", async () => {
  const results = await Promise.all(Object.entries(clients).map(async ([name, get]) => ({ name, ...(await run(name, get)) })));
  const failures = [];
  for (const { name, before, got, events } of results) {
    const b = before.map(status);
    const g = got.map(status);
    // Refused twice: failures of the host's, not the guard's fast-fails.
    if (b[0] !== 200 || b.slice(1).some((s) => s === 200) || before.some((x) => isFastFail(x))) {
      failures.push(`${name}: answered, then refused twice; got ${JSON.stringify(b)}`);
    }
    if (JSON.stringify(g) !== JSON.stringify(Array(fanOut).fill(200))) {
      failures.push(`${name}: the fan-out after the period got ${JSON.stringify(g)} (fast-fails ${JSON.stringify(got.map((x) => isFastFail(x)))})`);
    }
    if (JSON.stringify(events.slice(0, 2)) !== JSON.stringify(["in", "out"])) failures.push(`${name}: the host heard ${JSON.stringify(events)}; want the trial alone first`);
  }
  assert.deepEqual(failures, []);
});
