// The dashboard's one script: it applies the diffs a page's live stream
// sends to the page the server drew, and opens a step's detail beside the
// graph. It never builds HTML from data: text goes in with textContent,
// state goes in as a class name from a fixed set.
"use strict";
(function () {
  var STATES = ["planned", "pending", "ready", "gated", "approved", "edited", "denied", "assigned", "running",
    "succeeded", "failed", "skipped", "cancelled", "submitted", "planning", "paused"];
  function state(s) { return STATES.indexOf(s) >= 0 ? s : "unknown"; }
  function setState(el, base, s) { el.setAttribute("class", base + " st-" + state(s)); }
  function byData(attr, v) {
    return document.querySelector("[" + attr + "=\"" + CSS.escape(v) + "\"]");
  }
  var live = document.getElementById("live");
  function mark(s) { if (live) { live.setAttribute("data-state", s); } }
  function badge(into, s) {
    var b = into.querySelector(".badge");
    if (b) { setState(b, "badge", s); b.textContent = s; }
  }

  function onState(ev) {
    var f = JSON.parse(ev.data);
    var rs = document.getElementById("run-status");
    if (rs) { badge(rs, f.run.status); }
    // The run's controls follow its status: a form shows only while the
    // status is one it is allowed in (a stale one would be refused).
    document.querySelectorAll(".run-actions [data-when]").forEach(function (el) {
      el.hidden = el.getAttribute("data-when").split(" ").indexOf(f.run.status) < 0;
    });
    var rd = document.getElementById("run-done");
    if (rd) { rd.textContent = f.run.done + "/" + f.run.steps; }
    Object.keys(f.nodes).forEach(function (id) {
      var el = byData("data-node", id);
      if (!el) { return; }
      var st = f.nodes[id];
      setState(el, "node", st.s);
      var c = el.querySelector(".counts");
      if (c) { c.textContent = st.c || st.s; }
      var bar = document.querySelector("#timeline [data-step=\"" + CSS.escape(id) + "\"]");
      if (bar) { setState(bar, "tl", st.s); }
    });
    document.body.setAttribute("data-frames", String(Number(document.body.getAttribute("data-frames") || 0) + 1));
  }

  function onRuns(ev) {
    var d = JSON.parse(ev.data);
    Object.keys(d).forEach(function (id) {
      var row = byData("data-run", id);
      if (!row) { return; }
      var st = row.querySelector(".status");
      if (st) { badge(st, d[id].s); }
      var done = row.querySelector(".done");
      if (done) { done.textContent = d[id].d; }
    });
  }

  function cell(tr, text, href) {
    var td = document.createElement("td");
    if (href) {
      var a = document.createElement("a");
      a.setAttribute("href", href);
      a.textContent = text;
      td.appendChild(a);
    } else {
      td.textContent = text;
    }
    tr.appendChild(td);
  }

  function onAudit(ev) {
    var l = JSON.parse(ev.data);
    var body = document.getElementById("audit-body");
    if (!body || byData("data-seq", String(l.seq))) { return; }
    var empty = body.querySelector(".empty-row");
    if (empty) { empty.remove(); }
    var tr = document.createElement("tr");
    tr.setAttribute("data-seq", String(l.seq));
    tr.className = "new";
    cell(tr, String(l.seq), "/events/" + encodeURIComponent(String(l.seq)));
    cell(tr, (l.time || "").replace("T", " ").replace(/\.\d+/, ""));
    cell(tr, l.type);
    cell(tr, l.run ? l.run.slice(0, 12) : "", l.run ? "/runs/" + encodeURIComponent(l.run) : "");
    cell(tr, l.node);
    body.insertBefore(tr, body.firstChild);
  }

  function connect(url) {
    var es = new EventSource(url);
    es.addEventListener("open", function () { mark("open"); });
    es.addEventListener("error", function () { mark("reconnecting"); });
    es.addEventListener("state", onState);
    es.addEventListener("runs", onRuns);
    es.addEventListener("audit", onAudit);
    es.addEventListener("resync", function () { es.close(); window.location.reload(); });
    es.addEventListener("problem", function (ev) { mark("problem"); if (live) { live.title = JSON.parse(ev.data); } });
    window.agenticStream = es;
  }

  // A step chosen on the graph or the timeline opens beside it, without a
  // reload; the link still works without the script.
  function openStep(ev) {
    var a = ev.target.closest("a");
    if (!a || ev.button !== 0 || ev.metaKey || ev.ctrlKey) { return; }
    var href = a.getAttribute("href") || "";
    var m = /[?&]step=([^&]+)/.exec(href);
    var head = document.querySelector(".run-head");
    var panel = document.getElementById("detail");
    if (!m || !head || !panel) { return; }
    ev.preventDefault();
    var run = head.getAttribute("data-run");
    fetch("/runs/" + encodeURIComponent(run) + "/steps/" + m[1] + "?fragment=1", { credentials: "same-origin" })
      .then(function (r) { return r.text().then(function (t) { return { ok: r.ok, t: t }; }); })
      .then(function (res) {
        var doc = new DOMParser().parseFromString(res.t, "text/html");
        panel.replaceChildren.apply(panel, Array.prototype.slice.call(doc.body.childNodes));
        history.replaceState(null, "", href);
      });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var url = document.body.getAttribute("data-live");
    if (url) {
      var head = document.querySelector(".run-head");
      if (head) {
        url += (url.indexOf("?") >= 0 ? "&" : "?") + "rev=" + encodeURIComponent(head.getAttribute("data-revision"));
      }
      connect(url);
    }
    ["dag", "timeline"].forEach(function (id) {
      var el = document.getElementById(id);
      if (el) { el.addEventListener("click", openStep); }
    });
  });
})();
