"use strict";
// The dashboard: renders GET /v1/status and refreshes it in place. Every
// name and figure goes into the page as text (textContent, attributes),
// never as HTML: endpoints and host names come from the daemon's clients.
(() => {
  const boot = JSON.parse(document.getElementById("hg-data").textContent);
  const refreshMS = boot.refresh_ms || 5000;
  let lastGood = null; // the report last shown
  let refreshes = 0;

  // --- building blocks -------------------------------------------------

  function el(tag, props, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else e.setAttribute(k, v === true ? "" : String(v));
    }
    for (const kid of kids.flat(Infinity)) {
      if (kid === undefined || kid === null || kid === false) continue;
      e.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return e;
  }

  function svg(tag, attrs) {
    const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    return e;
  }

  // table builds a table whose cells carry their column's label, which
  // the phone layout shows in front of each value. A column may say
  // {label, n: true} for a right-aligned figure, {label, name: true} for
  // the row's name.
  function table(cols, rows, keep) {
    const cls = (c) => [c.n ? "n" : c.name ? "name" : null, c.cls].filter(Boolean).join(" ") || null;
    const head = el("tr", null, cols.map((c) => el("th", { class: cls(c), scope: "col", text: c.label })));
    // A row with span instead of cells is one cell across the table: the
    // head of a group of the rows after it.
    const body = rows.map((r) => r.span
      ? el("tr", { "data-key": r.key, class: r.cls }, el("td", { class: "group", colspan: cols.length }, r.span))
      : el("tr", { "data-key": r.key, class: r.cls },
        r.cells.map((cell, i) => el("td", { class: cls(cols[i]), "data-label": cols[i].label }, cell))));
    return el("table", { class: keep ? "keep" : null }, el("thead", null, head), el("tbody", null, body));
  }

  const code = (s) => el("code", { text: s });
  const muted = (s) => el("span", { class: "muted", text: s });

  // --- actions ---------------------------------------------------------
  //
  // Each button posts to one of the daemon's action routes with the
  // session's CSRF token (the cookie alone is refused), and shows beside
  // it the command that does the same from a script. A wide action asks
  // first: its first click turns it into a confirm and a cancel button,
  // kept across refreshes until one is clicked.

  let confirming = null; // the key of the action waiting for its confirm
  let acting = false;

  // sh quotes a word for a POSIX shell when it needs it.
  const sh = (w) => /^[A-Za-z0-9._:\/@%+=-]+$/.test(w) ? w : "'" + w.replace(/'/g, "'\\''") + "'";

  // action is a button for one action, with its command: a = {key, label,
  // method, path, body, cli, confirm (the question, for a wide one), done}.
  function action(a) {
    const cli = el("code", { class: "cli", title: "the same from a script", text: a.cli });
    if (confirming === a.key) {
      return el("span", { class: "action confirm" },
        el("span", { class: "warn", text: a.confirm + " " }),
        el("button", { type: "button", class: "danger", "data-action": a.key, "data-confirmed": "true", text: "Yes, " + a.label.toLowerCase() }),
        el("button", { type: "button", "data-cancel": a.key, text: "Cancel" }), " ", cli);
    }
    return el("span", { class: "action" }, el("button", { type: "button", "data-action": a.key, text: a.label }), " ", cli);
  }

  // actions holds the actions drawn by the last render, by key.
  let actions = new Map();
  function act(a) {
    actions.set(a.key, a);
    return action(a);
  }

  const said = document.getElementById("said");
  function say(text, bad) {
    said.className = bad ? "problem" : "done";
    said.textContent = text;
  }

  async function run(a) {
    if (acting) return;
    acting = true;
    try {
      const init = { method: a.method, cache: "no-store", credentials: "same-origin",
        headers: { Accept: "application/json", "X-Hostguard-CSRF": boot.csrf || "" } };
      if (a.body !== undefined) {
        init.headers["Content-Type"] = "application/json";
        init.body = JSON.stringify(a.body);
      }
      const r = await fetch(a.path, init);
      if (!r.ok) {
        let why = "HTTP " + r.status;
        try { why = (await r.json()).error || why; } catch (e) { /* not JSON */ }
        say(a.label + " failed: " + why, true);
      } else {
        say(a.done);
      }
    } catch (err) {
      say(a.label + " failed: the daemon is unreachable", true);
    } finally {
      acting = false;
    }
    await refresh();
  }

  document.addEventListener("click", (ev) => {
    const b = ev.target.closest("button[data-action], button[data-cancel]");
    if (!b) return;
    if (b.dataset.cancel) {
      confirming = null;
      rerender();
      return;
    }
    const a = actions.get(b.dataset.action);
    if (!a) return;
    if (a.confirm && !b.dataset.confirmed) {
      confirming = a.key;
      rerender();
      return;
    }
    confirming = null;
    run(a);
  });

  // --- formats ---------------------------------------------------------

  function dur(seconds) {
    let s = Math.max(0, Math.round(seconds));
    if (s < 60) return s + " s";
    const d = Math.floor(s / 86400); s -= d * 86400;
    const h = Math.floor(s / 3600); s -= h * 3600;
    const m = Math.floor(s / 60); s -= m * 60;
    if (d > 0) return d + " d" + (h ? " " + h + " h" : "");
    if (h > 0) return h + " h" + (m ? " " + m + " m" : "");
    return m + " m" + (s ? " " + s + " s" : "");
  }

  const absFmt = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "long" });
  const clockFmt = new Intl.DateTimeFormat(undefined, { timeStyle: "medium" });

  // when shows a time relative to the report's own time (the daemon's
  // clock, so a skewed browser clock does not matter), with the absolute
  // local time and zone as its tooltip.
  function when(t, now, none) {
    if (!t) return muted(none || "never");
    const at = new Date(t);
    if (isNaN(at)) return muted(none || "never");
    const d = (at - now) / 1000;
    const text = Math.abs(d) < 1 ? "now" : d < 0 ? dur(-d) + " ago" : "in " + dur(d);
    return el("time", { datetime: at.toISOString(), title: absFmt.format(at), text });
  }

  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  function bytes(n) {
    let v = n, u = 0;
    while (Math.abs(v) >= 1024 && u < units.length - 1) { v /= 1024; u++; }
    return (u === 0 ? String(v) : v.toFixed(v < 10 ? 2 : v < 100 ? 1 : 0)) + " " + units[u];
  }
  const count = (n) => Number(n || 0).toLocaleString();
  const plural = (n, word) => count(n) + " " + word + (Number(n) === 1 ? "" : "s");

  // bar shows used of allowance, with the reserved part at its end.
  function bar(used, allowance, reserve, full, label) {
    const b = el("div", { class: "bar", role: "img", "aria-label": label });
    if (allowance > 0) {
      const fill = el("div", { class: full ? "fill full" : "fill" });
      fill.style.width = Math.min(100, (100 * used) / allowance) + "%";
      b.append(fill);
      if (reserve > 0) {
        const r = el("div", { class: "reserve", title: "kept back for head polls" });
        const w = Math.min(100, (100 * reserve) / allowance);
        r.style.left = 100 - w + "%";
        r.style.width = w + "%";
        b.append(r);
      }
    }
    return b;
  }

  // timeline draws a host's recent outcomes, oldest on the left, in
  // slots for the most the daemon keeps.
  function timeline(recent) {
    const size = 7, gap = 2, n = 20;
    const w = n * (size + gap) - gap;
    const s = svg("svg", { class: "timeline", width: w, height: size, viewBox: "0 0 " + w + " " + size, role: "img",
      "aria-label": recent.length ? recent.map((o) => o.outcome).join(", ") : "no outcomes recorded by this node" });
    for (let i = 0; i < n; i++) {
      const o = recent[i];
      const r = svg("rect", { x: i * (size + gap), y: 0, width: size, height: size, rx: 1.5, class: o ? o.outcome : "slot" });
      if (o) {
        const t = svg("title", {});
        t.textContent = o.outcome + ", " + absFmt.format(new Date(o.at));
        r.append(t);
      }
      s.append(r);
    }
    return s;
  }

  function panel(id, ...kids) {
    document.querySelector("#" + id + " .body").replaceChildren(...kids.flat().filter(Boolean));
  }

  // --- panels ----------------------------------------------------------

  function header(rep, now) {
    const lead = rep.leader || {};
    let leader = lead.leading ? "this node" : "another node";
    if (!lead.leading && lead.lease && lead.lease.holder) leader = lead.lease.holder;
    const items = [
      ["version", code(rep.version || "?")],
      ["node", rep.node ? code(rep.node) : muted("single")],
      ["leader", lead.leading ? el("span", { class: "good", text: leader }) : el("span", { class: "warn", text: leader })],
      ["up", el("span", { title: "since " + absFmt.format(new Date(rep.started_at)), text: dur(rep.uptime_seconds) })],
      ["store", rep.store ? code(rep.store) : muted("not said")],
    ];
    document.getElementById("meta").replaceChildren(...items.map(([k, v]) =>
      el("div", null, el("dt", { text: k }), el("dd", null, v))));
    const probs = (rep.problems || []).map((p) => el("p", { class: "problem", role: "alert", text: p }));
    document.getElementById("problems").replaceChildren(...probs);
  }

  // hostOf is the host of an endpoint, as the host tracker names it.
  function hostOf(endpoint) {
    try { return new URL(endpoint).hostname.toLowerCase().replace(/^\[|\]$/g, ""); } catch (e) { return endpoint; }
  }

  const idle = (e) => e.state === "half-open" && !e.probing && !e.trial_out && !e.tickets_out;

  // trackerSays is what the host tracker thinks of a host: its record
  // among the unhealthy hosts of the report, or none.
  function trackerSays(rep, x) {
    if (!rep.hosts) return muted("no tracker");
    if (!x) {
      const h = rep.hosts;
      return muted(h.unhealthy > (h.unhealthy_hosts || []).length ? "not among the first " + (h.unhealthy_hosts || []).length : "no failure recorded");
    }
    return x.available ? el("span", { class: "warn", text: "unhealthy, " + plural(x.consecutive_fails, "failure") + " in a row" })
      : el("span", { class: "bad", text: "backoff, retry in " + dur(x.retry_in_seconds) });
  }

  // byHost groups what the guard and the host tracker say by host name:
  // one entry for each host with an endpoint that is not closed or a
  // failure with the tracker.
  function byHost(rep) {
    const m = new Map();
    const get = (name) => {
      if (!m.has(name)) m.set(name, { name, shown: [], idle: 0, open: 0, halfOpen: 0, tracker: null });
      return m.get(name);
    };
    for (const e of rep.guard.not_closed || []) {
      const h = get(hostOf(e.endpoint));
      if (e.state === "open") h.open++; else h.halfOpen++;
      if (idle(e)) h.idle++; else h.shown.push(e);
    }
    for (const x of (rep.hosts && rep.hosts.unhealthy_hosts) || []) get(x.name).tracker = x;
    return [...m.values()];
  }

  // The endpoints panel: one row per host saying what hostguard thinks of
  // it, the guard's endpoints on it and the tracker's record, with the
  // endpoints someone is waiting on beneath it. Hosts with an open
  // endpoint or in backoff come first; half-open endpoints nobody asks for
  // are only counted, since nothing happens to them until a request comes.
  function endpoints(rep, now) {
    const g = rep.guard;
    const bs = g.by_state || {};
    const summary = el("p", { class: "counts" },
      el("span", null, count(g.endpoints) + " known"),
      el("span", null, count(bs.closed) + " closed"),
      el("span", { class: bs.open ? "bad" : null }, count(bs.open) + " open"),
      el("span", { class: bs["half-open"] ? "warn" : null }, count(bs["half-open"]) + " half-open"),
      el("span", null, count(g.remote_tickets) + " remote tickets out"));
    const all = act({ key: "reset-all", label: "Retry all", method: "POST", path: "/v1/guard/reset-all",
      cli: "hostguard reset --all", confirm: "Forget the failures of every endpoint?", done: "Every endpoint was reset: requests go through." });
    const none = g.not_closed.length ? null : el("p", { class: "muted", text: "Every endpoint is closed: requests go through." });
    const backoff = (h) => h.tracker && !h.tracker.available;
    const urgent = (h) => h.open > 0 || backoff(h);
    // A host only idle half-open endpoints keep here is counted, not shown.
    const hosts = byHost(rep).filter((h) => h.shown.length || h.tracker)
      .sort((a, b) => urgent(b) - urgent(a) || b.open - a.open || a.name.localeCompare(b.name));
    const rows = [];
    for (const h of hosts) {
      const guard = [h.open && h.open + " open", h.halfOpen && h.halfOpen + " half-open"].filter(Boolean).join(", ") || "closed";
      const quiet = h.idle ? " (" + count(h.idle) + " with no request waiting)" : "";
      rows.push({ key: "host " + h.name, cls: "host", span: [
        code(h.name), " ",
        el("span", { class: "says" }, "guard: ", el("span", { class: h.open ? "bad" : h.halfOpen ? "warn" : null, text: guard + quiet })),
        " ",
        el("span", { class: "says" }, "host tracker: ", trackerSays(rep, h.tracker)),
        h.tracker ? [" ", act({ key: "host " + h.name, label: h.tracker.available ? "Forget failures" : "Clear backoff", method: "POST",
          path: "/v1/hosts/" + encodeURIComponent(h.name) + "/reset", cli: "hostguard hosts --reset " + sh(h.name),
          done: (h.tracker.display || h.name) + " was reset: it is healthy again." })] : null,
      ] });
      h.shown.sort((a, b) => (a.state === "open" ? 0 : 1) - (b.state === "open" ? 0 : 1) || a.endpoint.localeCompare(b.endpoint));
      for (const e of h.shown) {
        let trial;
        if (e.state === "open") trial = e.retry_after_seconds >= 1 ? "trial in " + dur(e.retry_after_seconds) : "trial due";
        else if (e.probing) trial = "probe running";
        else if (e.trial_out) trial = "trial in flight";
        else trial = "trial next request";
        rows.push({ key: e.endpoint, cls: "endpoint", cells: [
          code(e.endpoint),
          el("span", { class: "state-" + e.state, text: e.state }),
          when(e.since, now, "unknown"),
          count(e.failures),
          e.last_failure ? code(e.last_failure) : muted("-"),
          el("span", { title: e.openings ? e.openings + " openings in a row" : null, text: trial }),
          count(e.tickets_out),
          act({ key: "reset " + e.endpoint, label: "Retry now", method: "POST", path: "/v1/guard/reset", body: { url: e.endpoint },
            cli: "hostguard reset " + sh(e.endpoint), done: e.endpoint + " was reset: its next request goes through." }),
        ] });
      }
    }
    const quiet = g.not_closed.filter(idle).length;
    const collapsed = quiet
      ? el("p", { class: "muted quiet" }, count(quiet) + " half-open " + (quiet === 1 ? "endpoint" : "endpoints") +
        " with no request waiting: each lets its next request through as a trial. GET /v1/guard?state=half-open lists them.")
      : null;
    panel("endpoints", summary, el("p", { class: "actions" }, all), none, rows.length ? table([
      { label: "endpoint", name: true }, { label: "state" }, { label: "since" }, { label: "failures", n: true },
      { label: "last failure" }, { label: "probe or trial" }, { label: "tickets", n: true }, { label: "action", cls: "act" },
    ], rows) : null, collapsed);
  }

  function hosts(rep, now) {
    const h = rep.hosts;
    if (!h) return panel("hosts", el("p", { class: "muted", text: "This daemon has no host tracker." }));
    const summary = el("p", { class: "counts" },
      el("span", null, count(h.known) + " known"),
      el("span", { class: h.unhealthy ? "warn" : null }, count(h.unhealthy) + " unhealthy"),
      el("span", { class: h.backoff ? "bad" : null }, count(h.backoff) + " in backoff"));
    const list = h.unhealthy_hosts || [];
    // The tracker holds the hosts its clients touch; the proxy and fetch
    // report to the guard alone, so a host can fail there and be unknown
    // here. Say so rather than let "0 known" look like "all is well".
    const tracked = new Set(list.map((x) => x.name));
    const guardOnly = [...new Set((rep.guard.not_closed || []).filter((e) => e.state === "open").map((e) => hostOf(e.endpoint)))]
      .filter((n) => !tracked.has(n)).sort();
    const note = guardOnly.length ? el("p", { class: "muted guard-only" }, "Open endpoints on " + guardOnly.slice(0, 5).join(", ") +
      (guardOnly.length > 5 ? " and " + (guardOnly.length - 5) + " more" : "") +
      ": the guard's view, under Endpoints. The host tracker records only the hosts its clients touch (POST /v1/hosts/{name}/touch); the proxy and fetch report to the guard.") : null;
    if (!list.length) return panel("hosts", summary, el("p", { class: "muted", text: "Every known host answered last time." }), note);
    const guardOf = {};
    for (const e of rep.guard.not_closed || []) {
      const k = hostOf(e.endpoint);
      guardOf[k] = guardOf[k] || {};
      guardOf[k][e.state] = (guardOf[k][e.state] || 0) + 1;
    }
    const guardSays = (name) => {
      const by = guardOf[name];
      if (!by) return muted("closed");
      return el("span", { class: by.open ? "bad" : "warn",
        text: Object.entries(by).map(([st, n]) => n + " " + st).join(", ") });
    };
    const rows = list.map((x) => ({ key: x.name, cells: [
      code(x.display || x.name),
      guardSays(x.name),
      x.available ? el("span", { class: "warn", text: "unhealthy" }) : el("span", { class: "bad", text: "backoff" }),
      count(x.consecutive_fails),
      x.available ? muted("now") : dur(x.retry_in_seconds),
      when(x.last_success, now),
      when(x.last_failure, now),
      timeline(x.recent || []),
      act({ key: "host " + x.name, label: x.available ? "Forget failures" : "Clear backoff", method: "POST",
        path: "/v1/hosts/" + encodeURIComponent(x.name) + "/reset", cli: "hostguard hosts --reset " + sh(x.name),
        done: (x.display || x.name) + " was reset: it is healthy again." }),
    ] }));
    const more = h.unhealthy > list.length
      ? el("p", { class: "muted", text: "Showing " + list.length + " of " + count(h.unhealthy) + "; GET /v1/hosts?view=unhealthy lists them all." })
      : null;
    panel("hosts", summary, table([
      { label: "host", name: true }, { label: "guard" }, { label: "state" }, { label: "failures in a row", n: true }, { label: "retry in", n: true },
      { label: "last success" }, { label: "last failure" }, { label: "recent (this node)", cls: "fit" }, { label: "action", cls: "act" },
    ], rows), more, el("p", { class: "legend" },
      el("span", { class: "success", text: "success" }), " ", el("span", { class: "failure", text: "failure" }), " ",
      el("span", { class: "ignored", text: "ignored (outage)" })), note);
  }

  // How the buckets of items_due are labelled; they come in order.
  const dueLabels = { now: "due now", "1h": "< 1 h", "1d": "< 1 d", "7d": "< 7 d", "30d": "< 30 d", later: "later" };

  function queue(rep, now) {
    const q = rep.items;
    if (!q) return panel("queue", el("p", { class: "muted", text: "This daemon has no retry scheduler." }));
    const lag = q.oldest_due_lag_seconds > 0 ? "oldest due for " + dur(q.oldest_due_lag_seconds) : null;
    const summary = el("p", { class: "counts" }, el("span", null, count(q.total) + " items"),
      el("span", { class: q.due_now ? "warn" : null }, count(q.due_now) + " due now"), lag && el("span", null, lag),
      q.leases_expired ? el("span", { class: "warn", title: "leases that ran out: claimable again, not counted as due now",
        text: plural(q.leases_expired, "lease") + " expired" }) : null);
    const states = ["pending", "scheduled", "leased", "done"];
    for (const s of Object.keys(q.by_state || {})) if (!states.includes(s)) states.push(s);
    const byState = table([{ label: "state", name: true }, { label: "items", n: true }],
      states.map((s) => ({ key: s, cells: [s, count((q.by_state || {})[s])] })), true);
    const classes = Object.keys(q.by_class || {}).sort();
    const byClass = classes.length
      ? table([{ label: "waiting after", name: true }, { label: "items", n: true }],
        classes.map((c) => ({ key: c, cells: [code(c), count(q.by_class[c])] })), true)
      : el("p", { class: "muted", text: "No scheduled item is waiting out a failure." });
    let hist;
    const d = rep.items_due;
    if (!d) {
      hist = el("p", { class: "muted", text: "This daemon does not report waiting items by due time." });
    } else {
      const buckets = d.buckets || [];
      const total = buckets.reduce((a, b) => a + b.count, 0);
      hist = el("div", { class: "hist" }, buckets.flatMap((b) => {
        const label = dueLabels[b.name] || b.name;
        return [
          el("span", { text: label }),
          bar(b.count, Math.max(total, 1), 0, false, label + ": " + b.count),
          el("span", { class: "n", text: count(b.count) }),
        ];
      }));
      hist = [el("p", null, count(d.waiting) + " waiting", d.oldest_due ? [", the oldest due ", when(d.oldest_due, now)] : null), hist];
    }
    panel("queue", summary, el("h3", { text: "by state" }), byState, el("h3", { text: "scheduled, by the failure they wait out" }), byClass,
      el("h3", { text: "waiting, by next due" }), hist, schedule(q.schedule, rep.store));
  }

  // goDur reads a Go duration string ("1h30m0s", "500ms") as seconds.
  function goDur(s) {
    const unit = { h: 3600, m: 60, s: 1, ms: 1e-3, us: 1e-6, "µs": 1e-6, ns: 1e-9 };
    let total = 0;
    for (const [, n, u] of String(s).matchAll(/([\d.]+)(h|ms|m|s|µs|us|ns)/g)) total += Number(n) * unit[u];
    return total;
  }

  const ladder = (steps) => (steps || []).map((d) => dur(goDur(d))).join(" · ");

  // schedule shows the retry settings in force on this node: the ladders,
  // what steps them, and how sightings and done items are handled.
  function schedule(sc, store) {
    if (!sc) return null;
    const classes = Object.keys(sc.classes || {}).sort();
    const rows = [{ key: "", cells: [muted("any other class"), ladder(sc.default), "failures in a row"] }].concat(
      classes.map((c) => ({ key: c, cells: [code(c), ladder(sc.classes[c].ladder),
        sc.classes[c].escalate === "sources" ? "distinct sources" : "failures in a row"] })));
    const keep = sc.keep_done === "forever" ? "kept for ever" : "kept " + dur(goDur(sc.keep_done));
    return [el("h3", { text: "schedule" }),
      table([{ label: "class", name: true }, { label: "waits" }, { label: "stepped by" }], rows, true),
      el("p", { class: "muted" }, "A sighting makes a waiting item due within " + dur(goDur(sc.reactivate_within)) +
        "; done items are " + keep + "; " + (store === "sqlite" ? "commits (SQLite) do not wait for the disk."
          : "sightings " + (sc.sync_sightings ? "wait" : "do not wait") + " for the disk."))];
  }

  const limitFrom = { reported: "reported by the source", owner: "set by the owner", default: "the default" };

  function budget(rep, now) {
    const b = rep.budget;
    if (!b) return panel("budget", el("p", { class: "muted", text: "This daemon has no admission budget." }));
    const total = b.total || {};
    const summary = el("p", { class: "counts" },
      b.paused ? el("span", { class: "bad", text: "background work is paused" }) : null,
      el("span", null, "resets ", when(b.reset_at, now)),
      el("span", null, "all sources: " + count(total.used) + (total.limited ? " of " + count(total.allowance) : "") + " requests"));
    const srcRows = (b.sources || []).map((s) => {
      const full = s.exhausted;
      return { key: s.name, cells: [
        code(s.name),
        bar(s.used, s.allowance, s.head_poll_reserve, full, s.used + " of " + s.allowance),
        count(s.used) + " / " + count(s.allowance),
        count(s.head_poll_reserve),
        el("span", { title: limitFrom[s.limit_from] || s.limit_from, text: count(s.daily_limit) + " (" + (s.limit_from || "?") + ")" }),
        s.paused ? el("span", { class: "bad", text: "paused" })
          : full ? el("span", { class: "bad" }, "exhausted", s.exhausted_until ? [" until ", when(s.exhausted_until, now)] : null)
            : count(s.remaining) + " left",
        // One source is a narrow action: no confirm.
        s.paused
          ? act({ key: "resume-source " + s.name, label: "Resume", method: "POST", path: "/v1/budget/sources/" + encodeURIComponent(s.name) + "/pause",
            body: { paused: false }, cli: "hostguard budget resume --source " + sh(s.name), done: "The work of " + s.name + " resumed." })
          : act({ key: "pause-source " + s.name, label: "Pause", method: "POST", path: "/v1/budget/sources/" + encodeURIComponent(s.name) + "/pause",
            body: { paused: true }, cli: "hostguard budget pause --source " + sh(s.name), done: "The work of " + s.name + " is paused; the other sources go on." }),
      ] };
    });
    const sources = srcRows.length
      ? table([{ label: "source", name: true }, { label: "used" }, { label: "used / allowance", n: true }, { label: "head-poll reserve", n: true },
        { label: "daily limit (from)" }, { label: "remaining" }, { label: "action", cls: "act" }], srcRows)
      : el("p", { class: "muted", text: "No sources are configured." });
    // The source bars have two parts: say which is which.
    const legend = srcRows.length ? el("p", { class: "legend" }, el("span", { class: "used", text: "used" }), " ",
      el("span", { class: "reserve", text: "head-poll reserve (kept back at the end of the allowance)" })) : null;
    const kindRows = (b.kinds || []).map((k) => {
      const f = k.kind === "bytes" ? bytes : count;
      return { key: k.kind, cells: [
        k.kind,
        k.limited ? bar(k.used, k.allowance, 0, k.remaining <= 0, f(k.used) + " of " + f(k.allowance)) : muted("recorded only"),
        f(k.used) + (k.limited ? " / " + f(k.allowance) : ""),
        k.limited ? f(k.remaining) : muted("-"),
      ] };
    });
    const pause = b.paused
      ? act({ key: "resume", label: "Resume", method: "POST", path: "/v1/budget/pause", body: { paused: false },
        cli: "hostguard budget resume", done: "Background work resumed." })
      : act({ key: "pause", label: "Pause all", method: "POST", path: "/v1/budget/pause", body: { paused: true },
        cli: "hostguard budget pause", confirm: "Pause all background work on every node?", done: "Background work is paused." });
    panel("budget", summary, el("p", { class: "actions" }, pause), el("h3", { text: "per source" }), sources, legend, el("h3", { text: "per kind of work" }),
      table([{ label: "kind", name: true }, { label: "used" }, { label: "used / allowance", n: true }, { label: "remaining", n: true }], kindRows));
  }

  function feeds(rep, now) {
    const fs = rep.feeds || [];
    if (!fs.length) return panel("feeds", el("p", { class: "muted", text: "No feeds are configured or stored." }));
    const rows = fs.map((f) => ({ key: f.name, cells: [
      el("span", null, code(f.name), f.configured ? null : muted(" (not configured)")),
      when(f.last_success, now),
      f.last_error ? el("span", { class: "problem", text: f.last_error }) : f.last_stop ? muted(f.last_stop) : muted("-"),
      count(f.failures),
      count(f.gaps),
      f.next_head_poll ? when(f.next_head_poll, now) : muted(f.leading ? "-" : "another node polls"),
    ] }));
    panel("feeds", table([{ label: "feed", name: true }, { label: "last success" }, { label: "last error" }, { label: "failures", n: true },
      { label: "gaps", n: true }, { label: "next poll" }], rows));
  }

  function node(rep, now) {
    const l = rep.leader || {};
    const parts = [];
    parts.push(el("p", null, l.leading
      ? el("span", { class: "good", text: "This node runs the periodic work (feed polls, pruning)." })
      : el("span", { class: "warn", text: "Another node runs the periodic work." })));
    if (l.lease) {
      parts.push(el("p", null, "term " + l.lease.term,
        l.lease.holder ? [", held by ", code(l.lease.holder)] : null,
        l.lease.expires_at ? [", lease ends ", when(l.lease.expires_at, now)] : null));
    }
    const e = rep.evidence;
    if (!e) parts.push(el("p", { class: "muted", text: "No evidence book." }));
    else if (!e.known) parts.push(el("p", { class: "muted", text: "Evidence: not computed yet." }));
    else parts.push(el("p", null, "Evidence: " + count(e.available) + " subjects available, " + count(e.unavailable) + " unavailable",
      e.computed_at ? [", as of ", when(e.computed_at, now)] : null));
    panel("node", parts);
  }

  // --- the item list -------------------------------------------------
  //
  // GET /v1/items with the filters of the form above the list, a page at a
  // time; it is read with each refresh, beside the status.

  const filter = { state: "", class: "", due_before: "" };
  let pages = [""]; // the cursors of the pages seen; the last is shown
  const payloads = new Map(); // id -> the payload as shown, once asked for

  function itemsQuery() {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(filter)) if (v) q.set(k, v);
    q.set("limit", "20");
    if (pages[pages.length - 1]) q.set("after", pages[pages.length - 1]);
    return "/v1/items?" + q.toString();
  }

  // shown decodes a payload (base64 in JSON) as text when it is UTF-8
  // without control characters, and otherwise says how many bytes.
  function shown(b64) {
    if (!b64) return "(no payload)";
    const bin = atob(b64);
    const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
    try {
      const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
      if (!/[\u0000-\u0008\u000e-\u001f\u007f]/.test(text)) return text;
    } catch (e) { /* not UTF-8 */ }
    return bytes.length + " bytes, not text";
  }

  async function showPayload(id) {
    const r = await fetch("/v1/items/" + encodeURIComponent(id), { cache: "no-store", credentials: "same-origin", headers: { Accept: "application/json" } });
    payloads.set(id, r.ok ? shown((await r.json()).payload) : "could not be read (HTTP " + r.status + ")");
    rerender();
  }

  function itemList(rep, list, now) {
    if (!rep.items) return panel("itemlist", el("p", { class: "muted", text: "This daemon has no retry scheduler." }));
    if (!list) return panel("itemlist", el("p", { class: "muted", text: "The item list could not be read." }));
    const rows = (list.items || []).map((it) => {
      const waiting = it.state === "pending" || it.state === "scheduled";
      const p = payloads.get(it.id);
      return { key: it.id, cells: [
        code(it.id),
        it.state,
        waiting ? when(it.next_at, now) : muted("-"),
        count(it.failures),
        it.last_class ? code(it.last_class) : muted("-"),
        p !== undefined ? el("span", { class: "payload", text: p }) : el("button", { type: "button", class: "link", "data-payload": it.id, text: "show" }),
        el("span", { class: "acts" },
          waiting ? act({ key: "due " + it.id, label: "Due now", method: "POST", path: "/v1/items/" + encodeURIComponent(it.id) + "/due-now",
            cli: "hostguard items due-now " + sh(it.id), done: it.id + " is due now." }) : null,
          act({ key: "forget " + it.id, label: "Drop", method: "DELETE", path: "/v1/items/" + encodeURIComponent(it.id),
            cli: "hostguard items forget " + sh(it.id), confirm: "Delete " + it.id + " for good?", done: it.id + " was dropped." })),
      ] };
    });
    const nav = el("p", { class: "pager" },
      pages.length > 1 ? el("button", { type: "button", "data-page": "first", text: "First page" }) : null, " ",
      list.next ? el("button", { type: "button", "data-page": "next", "data-next": list.next, text: "Next page" }) : null);
    panel("itemlist", rows.length
      ? table([{ label: "id", name: true }, { label: "state" }, { label: "due" }, { label: "failures", n: true },
        { label: "last failure" }, { label: "payload" }, { label: "action", cls: "act" }], rows)
      : el("p", { class: "muted", text: "No item matches." }), nav);
  }

  document.addEventListener("click", (ev) => {
    const b = ev.target.closest("button[data-page], button[data-payload]");
    if (!b) return;
    if (b.dataset.payload) {
      showPayload(b.dataset.payload);
      return;
    }
    if (b.dataset.page === "first") pages = [""];
    else pages.push(b.dataset.next);
    refresh();
  });

  document.getElementById("itemfilter").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const f = new FormData(ev.target);
    filter.state = f.get("state") || "";
    filter.class = (f.get("class") || "").trim();
    const due = f.get("due_before");
    filter.due_before = due ? new Date(due).toISOString() : "";
    pages = [""];
    refresh();
  });

  // --- refresh ---------------------------------------------------------

  let lastList = null; // the item page shown with lastGood

  // draw fills every panel from one snapshot: the status report and the
  // item page read with it.
  function draw(rep, list) {
    const now = new Date(rep.time);
    actions = new Map();
    header(rep, now);
    endpoints(rep, now);
    hosts(rep, now);
    queue(rep, now);
    itemList(rep, list, now);
    budget(rep, now);
    feeds(rep, now);
    node(rep, now);
  }

  function render(rep, list) {
    draw(rep, list);
    lastGood = rep;
    lastList = list;
    refreshes++;
    document.body.dataset.refreshes = String(refreshes);
  }

  // rerender draws the last snapshot again, after a change of the page's
  // own state (a confirm asked, a payload shown).
  function rerender() {
    if (lastGood) draw(lastGood, lastList);
  }

  const status = document.getElementById("refresh");
  function showFresh() {
    status.className = "";
    status.textContent = "updated " + clockFmt.format(new Date()) + ", every " + Math.round(refreshMS / 1000) + " s";
  }
  function showFailed(why) {
    status.className = "stale";
    status.textContent = "refresh failed at " + clockFmt.format(new Date()) + " (" + why + ")" +
      (lastGood ? "; showing the figures of " + clockFmt.format(new Date(lastGood.time)) : "");
    document.body.dataset.stale = "true";
  }

  const get = (path) => fetch(path, { cache: "no-store", credentials: "same-origin", headers: { Accept: "application/json" } });

  async function refresh() {
    try {
      const [r, l] = await Promise.all([get("/v1/status"), boot.report.items ? get(itemsQuery()) : null]);
      if (r.status === 401) {
        showFailed("logged out; reload the page to log in");
        return;
      }
      if (!r.ok) {
        showFailed("HTTP " + r.status);
        return;
      }
      render(await r.json(), l && l.ok ? await l.json() : null);
      delete document.body.dataset.stale;
      showFresh();
    } catch (err) {
      showFailed(err && err.name === "SyntaxError" ? "not JSON" : "daemon unreachable");
    }
  }

  async function loop() {
    await refresh();
    setTimeout(loop, refreshMS);
  }

  document.getElementById("logout").hidden = !boot.session;
  render(boot.report, null);
  showFresh();
  // The item list is not in the page's data: the first refresh reads it.
  loop();
})();
