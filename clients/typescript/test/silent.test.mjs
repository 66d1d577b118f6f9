// The Node clients hostguard is for, each with a 2 s timeout, against a
// host that accepts connections and never answers, through a daemon started
// with its default settings (as the README starts it, plus --allow-private
// for a loopback host): four requests each, over http:// and https://. The
// guard must trip on the give-ups, so that the later requests fail fast
// without reaching the host, and isFastFail must say so.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { isFastFail } from "../build/index.js";
import { axiosEnv, fetchProxyAgent, nodeHTTP, setProxyEnv } from "./clients.mjs";
import { startDaemon } from "./daemon.mjs";
import { silentHost, waitFor } from "./targets.mjs";

const timeoutMs = 2000;
const requests = 4;
const clients = { "node:http": nodeHTTP, "fetch (ProxyAgent)": fetchProxyAgent, axios: axiosEnv };

let daemon, restoreEnv;

before(async () => {
  daemon = await startDaemon([], "", { tuned: false });
  restoreEnv = setProxyEnv(`http://${daemon.proxy}`);
});

after(async () => {
  restoreEnv();
  await daemon.stop();
});

// The daemon learns of a give-up when the client's connection closes; the
// next request must find it counted.
async function settled(endpoint) {
  const { endpoints } = await (await fetch(new URL("/v1/guard", daemon.api))).json();
  return endpoints.every((e) => e.endpoint !== endpoint || e.tickets_out === 0);
}

async function run(name, get, scheme) {
  const host = await silentHost();
  try {
    const endpoint = `${scheme}://127.0.0.1:${host.port}`;
    const got = [];
    for (let i = 0; i < requests; i++) {
      got.push(await get(`${endpoint}/live/1.ts`, `http://${daemon.proxy}`, { timeoutMs }));
      await waitFor(() => settled(endpoint), `${name} ${scheme}: the daemon to settle the request`);
    }
    return { got, accepted: host.accepted };
  } finally {
    await host.close();
  }
}

test("short client timeouts trip the guard under the daemon's defaults", async () => {
  // Side by side: each client and scheme has a silent host of its own.
  const cases = Object.entries(clients).flatMap(([name, get]) => ["http", "https"].map((scheme) => ({ name, get, scheme })));
  const results = await Promise.all(cases.map(async (c) => ({ ...c, ...(await run(c.name, c.get, c.scheme)) })));
  const failures = [];
  for (const { name, scheme, got, accepted } of results) {
    const verdicts = got.map((x) => isFastFail(x));
    if (JSON.stringify(verdicts) !== JSON.stringify([false, false, true, true]) || accepted !== 2) {
      failures.push(`${name} ${scheme}: fast-fails ${JSON.stringify(verdicts)}, the host accepted ${accepted} connections; ` +
        got.map((x) => (x instanceof Error ? `${x.message} / ${x.cause?.message} / ${x.cause?.cause?.message}` : `status ${x?.statusCode ?? x?.status}`)).join("; "));
    }
  }
  assert.deepEqual(failures, []);
});
