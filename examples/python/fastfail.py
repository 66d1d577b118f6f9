"""hostguard from Python, standard library only.

Shows how a client with a short timeout trips the guard through the proxy
(its give-ups are evidence), how it recognises a fast-fail by the
Proxy-Status header rather than the status code, and a retry-queue worker
loop against the API. Asserts what it shows; exits non-zero otherwise.

    HOSTGUARD_API=http://127.0.0.1:7411 HOSTGUARD_PROXY=http://127.0.0.1:7412 python3 fastfail.py
"""
import http.client
import json
import os
import socket
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

API = os.environ.get("HOSTGUARD_API", "http://127.0.0.1:7411")
PROXY = os.environ.get("HOSTGUARD_PROXY", "http://127.0.0.1:7412")

# Requests to the API itself must not go through the proxy (that is what
# no_proxy=127.0.0.1,localhost does for clients that read the environment).
direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def api(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(API + path, data=data, method=method, headers={"Content-Type": "application/json"})
    with direct.open(req, timeout=10) as resp:
        raw = resp.read()
        return json.loads(raw) if raw else None


def dead_upstream():
    """A local host that accepts connections and never answers."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    held = []

    def serve():
        while True:
            conn, _ = srv.accept()
            held.append(conn)

    threading.Thread(target=serve, daemon=True).start()
    return "http://127.0.0.1:%d" % srv.getsockname()[1]


def is_fast_fail(code, headers):
    """A fast-fail is hostguard refusing without contacting the host: it
    carries Proxy-Status with error=destination_unavailable. An upstream's
    own 503 has no Proxy-Status. (With urllib, an HTTPError e gives
    e.code and e.headers; with requests, r.status_code and r.headers.)"""
    status = headers.get("Proxy-Status", "") if headers else ""
    return code == 503 and status.startswith("hostguard;") and "error=destination_unavailable" in status


def endpoint_state(ep):
    for e in api("GET", "/v1/guard")["endpoints"]:
        if e["endpoint"] == ep:
            return e
    return {"state": "closed", "tickets_out": 0}


def main():
    ep = dead_upstream()
    # Two give-ups: the client's own 1.5 s timeout against a host that
    # never answers.
    # http.client, so that the connection is closed the moment the client
    # gives up: that close is what the daemon sees.
    p = urllib.parse.urlsplit(PROXY)
    for i in range(2):
        conn = http.client.HTTPConnection(p.hostname, p.port, timeout=1.5)
        try:
            conn.request("GET", ep + "/feed.xml")
            conn.getresponse()
            fail("the dead upstream answered")
        except (socket.timeout, TimeoutError) as e:
            print("request %d: gave up (%s)" % (i + 1, type(e).__name__))
        finally:
            conn.close()
        deadline = time.time() + 5
        while endpoint_state(ep).get("tickets_out", 0) and time.time() < deadline:
            time.sleep(0.05)
    began = time.time()
    conn = http.client.HTTPConnection(p.hostname, p.port, timeout=10)
    conn.request("GET", ep + "/feed.xml")
    resp = conn.getresponse()
    took = time.time() - began
    if not is_fast_fail(resp.status, resp.headers):
        fail("no fast-fail marker: %s %s" % (resp.status, resp.headers.get("Proxy-Status")))
    body = json.loads(resp.read())
    conn.close()
    if not body.get("fast_fail") or took > 1:
        fail("unexpected fast-fail: %r after %.2fs" % (body, took))
    print("request 3: fast-fail recognised in %.0f ms: %s" % (took * 1000, body["error"]))

    # A retry-queue worker loop: claim, do the work, settle.
    api("POST", "/v1/items", {"items": [{"id": "py-example-1"}, {"id": "py-example-2"}]})
    done = 0
    for _ in range(10):
        leases = api("POST", "/v1/items/claim", {"n": 10, "lease_seconds": 30, "worker": "py-example"})["leases"]
        if not leases:
            break
        for l in leases:
            api("POST", "/v1/items/%s/succeed" % l["id"], {"lease": l["lease"]})
            done += 1
    if done < 2:
        fail("the worker settled %d items" % done)
    print("worker: settled %d items" % done)
    print("ok")


main()
