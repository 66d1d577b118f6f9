// hostguard from Node, built-in modules only: a client with a short
// timeout trips the guard through the proxy, over http:// (absolute-URI
// requests) and over CONNECT (what https:// uses), and recognises the
// fast-fail by its Proxy-Status header. Asserts what it shows.
//
//   HOSTGUARD_API=http://127.0.0.1:7411 HOSTGUARD_PROXY=http://127.0.0.1:7412 node fastfail.mjs
import http from 'node:http';
import net from 'node:net';

const api = new URL(process.env.HOSTGUARD_API ?? 'http://127.0.0.1:7411');
const proxy = new URL(process.env.HOSTGUARD_PROXY ?? 'http://127.0.0.1:7412');

function fail(msg) {
  console.error('FAIL: ' + msg);
  process.exit(1);
}

// A local host that accepts connections and never answers.
function deadUpstream() {
  const held = [];
  const srv = net.createServer((c) => { held.push(c); c.on('error', () => {}); c.resume(); });
  return new Promise((resolve) => srv.listen(0, '127.0.0.1', () => { srv.unref(); resolve(srv.address().port); }));
}

// A fast-fail is hostguard refusing without contacting the host.
const isFastFail = (status, headers) =>
  status === 503 && /^hostguard;.*error=destination_unavailable/.test(headers['proxy-status'] ?? '');

function get(target, timeoutMs) {
  return new Promise((resolve) => {
    const req = http.request({ host: proxy.hostname, port: proxy.port, path: target, headers: { host: new URL(target).host } });
    const timer = setTimeout(() => { req.destroy(); resolve({ gaveUp: true }); }, timeoutMs);
    req.on('response', (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => { clearTimeout(timer); resolve({ status: res.statusCode, headers: res.headers, body }); });
    });
    req.on('error', () => {});
    req.end();
  });
}

function connect(hostport, timeoutMs) {
  return new Promise((resolve) => {
    const req = http.request({ host: proxy.hostname, port: proxy.port, method: 'CONNECT', path: hostport });
    req.on('connect', (res, socket) => {
      if (res.statusCode !== 200) {
        socket.destroy();
        resolve({ status: res.statusCode, reason: res.statusMessage, headers: res.headers });
        return;
      }
      // The client speaks (as a TLS ClientHello would) and the target
      // says nothing; the client gives up.
      socket.write('hello');
      socket.on('error', () => {});
      setTimeout(() => { socket.destroy(); resolve({ gaveUp: true }); }, timeoutMs);
    });
    req.on('error', (e) => resolve({ error: e }));
    req.end();
  });
}

async function state(ep) {
  const res = await fetch(new URL('/v1/guard', api));
  const { endpoints } = await res.json();
  return endpoints.find((e) => e.endpoint === ep) ?? { state: 'closed', tickets_out: 0 };
}

async function settled(ep) {
  const until = Date.now() + 5000;
  while ((await state(ep)).tickets_out && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
}

const httpPort = await deadUpstream();
const httpEp = `http://127.0.0.1:${httpPort}`;
for (let i = 1; i <= 2; i++) {
  const r = await get(`${httpEp}/list`, 1500);
  if (!r.gaveUp) fail(`http request ${i} got an answer: ${r.status}`);
  await settled(httpEp);
  console.log(`http request ${i}: gave up`);
}
let began = Date.now();
const r3 = await get(`${httpEp}/list`, 10000);
if (!isFastFail(r3.status, r3.headers) || !JSON.parse(r3.body).fast_fail || Date.now() - began > 1000)
  fail(`http: no fast-fail: ${r3.status} ${JSON.stringify(r3.headers)}`);
console.log(`http request 3: fast-fail recognised in ${Date.now() - began} ms`);

const tlsPort = await deadUpstream();
const tlsEp = `https://127.0.0.1:${tlsPort}`;
for (let i = 1; i <= 2; i++) {
  const r = await connect(`127.0.0.1:${tlsPort}`, 1500);
  if (!r.gaveUp) fail(`CONNECT ${i}: ${r.status ?? r.error}`);
  await settled(tlsEp);
  console.log(`CONNECT ${i}: gave up`);
}
began = Date.now();
const c3 = await connect(`127.0.0.1:${tlsPort}`, 10000);
if (!isFastFail(c3.status, c3.headers ?? {})) fail(`CONNECT: no fast-fail: ${c3.status} ${JSON.stringify(c3.headers)}`);
console.log(`CONNECT 3: fast-fail recognised in ${Date.now() - began} ms: "${c3.reason}"`);
console.log('ok');
