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
    if (f.tl) { timelineFrame(f); }
    document.body.setAttribute("data-frames", String(Number(document.body.getAttribute("data-frames") || 0) + 1));
  }

  // The timeline: the server draws the rows there are when the page
  // loads; frames bring the rows that changed (start, end, node, status in
  // Unix ms) and the server's time. Rows are added at the bottom and every
  // bar is placed again on one scale, so the bars grow and nothing above
  // moves. Running bars keep growing between frames, from the server's
  // time and the tab's clock.
  var tl = null;
  var SVG = "http://www.w3.org/2000/svg";
  function timelineInit() {
    var svg = document.getElementById("timeline");
    if (!svg) { return null; }
    var t = { svg: svg, label: Number(svg.getAttribute("data-label")), bar: Number(svg.getAttribute("data-bar")),
      rowh: Number(svg.getAttribute("data-rowh")), run: svg.getAttribute("data-run"), rows: {}, n: 0, now: 0, at: 0, timer: 0 };
    svg.querySelectorAll("a.tl").forEach(function (a) {
      t.rows[a.getAttribute("data-step")] = { el: a, b: Number(a.getAttribute("data-b")), e: Number(a.getAttribute("data-e")) };
      t.n++;
    });
    return t;
  }
  function timelineRow(id) {
    var y = tl.n * tl.rowh;
    var a = document.createElementNS(SVG, "a");
    a.setAttribute("href", "/runs/" + encodeURIComponent(tl.run) + "?step=" + encodeURIComponent(id));
    a.setAttribute("data-step", id);
    a.appendChild(document.createElementNS(SVG, "title"));
    var label = document.createElementNS(SVG, "text");
    label.setAttribute("x", "4");
    label.setAttribute("y", String(y + 14));
    label.textContent = id;
    var node = document.createElementNS(SVG, "text");
    node.setAttribute("class", "tlnode");
    node.setAttribute("x", "160");
    node.setAttribute("y", String(y + 14));
    var rect = document.createElementNS(SVG, "rect");
    rect.setAttribute("y", String(y + 4));
    rect.setAttribute("height", "12");
    rect.setAttribute("rx", "2");
    a.appendChild(label);
    a.appendChild(node);
    a.appendChild(rect);
    tl.svg.appendChild(a);
    tl.n++;
    var h = tl.n * tl.rowh + 4;
    tl.svg.setAttribute("height", String(h));
    tl.svg.setAttribute("viewBox", "0 0 " + tl.svg.getAttribute("width") + " " + h);
    return { el: a, b: 0, e: 0 };
  }
  function timelineNow() { return tl.now + (performance.now() - tl.at); }
  function timelineScale() {
    var now = timelineNow(), t0 = Infinity, end = 0, running = false;
    Object.keys(tl.rows).forEach(function (id) {
      var r = tl.rows[id];
      t0 = Math.min(t0, r.b);
      end = Math.max(end, r.e || now);
      running = running || !r.e;
    });
    if (t0 === Infinity) { return false; }
    var span = Math.max(end - t0, 1000);
    Object.keys(tl.rows).forEach(function (id) {
      var r = tl.rows[id], rect = r.el.querySelector("rect");
      var x = Math.floor((r.b - t0) / span * tl.bar);
      var w = Math.max(2, Math.floor(((r.e || now) - r.b) / span * tl.bar));
      rect.setAttribute("x", String(tl.label + x));
      rect.setAttribute("width", String(Math.min(w, tl.bar - x + 2)));
    });
    return running;
  }
  function timelineFrame(f) {
    if (!tl) { tl = timelineInit(); }
    if (!tl) { return; }
    tl.now = f.now || Date.now();
    tl.at = performance.now();
    Object.keys(f.tl).forEach(function (id) {
      var d = f.tl[id], r = tl.rows[id];
      if (!r) { r = tl.rows[id] = timelineRow(id); }
      r.b = d.b;
      r.e = d.e || 0;
      setState(r.el, "tl", d.s);
      var node = r.el.querySelector(".tlnode");
      if (node) { node.textContent = d.n || ""; }
      r.el.querySelector("title").textContent = id + " on " + (d.n || "?") + ": attempt " + d.a + ", " + d.s +
        (d.x ? ", exit " + d.x : "");
    });
    var note = document.getElementById("tl-note");
    if (note && tl.n > 0) {
      note.textContent = "Attempts by start time (the latest attempt of each step)" + (f.tlHidden ? "; " + f.tlHidden + " more not drawn" : "") + ".";
    }
    var running = timelineScale();
    if (running && !tl.timer) {
      tl.timer = setInterval(function () { if (!timelineScale()) { clearInterval(tl.timer); tl.timer = 0; } }, 1000);
    }
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

  // A step's output, live: the panel's #output follows its own stream,
  // text appended with textContent (stderr in a span of its own), a line
  // where a new attempt begins, and at most OUTPUT_MAX characters kept.
  var OUTPUT_MAX = 262144;
  var output = null;
  function followOutput() {
    if (output) { output.close(); output = null; }
    var pre = document.getElementById("output");
    if (!pre) { return; }
    var state = document.getElementById("output-state");
    var attempt = 0, size = 0;
    output = new EventSource(pre.getAttribute("data-src"));
    output.addEventListener("open", function () { if (state) { state.textContent = "live from the logs stream"; } });
    output.addEventListener("error", function () { if (state) { state.textContent = "reconnecting…"; } });
    output.addEventListener("problem", function (ev) { if (state) { state.textContent = JSON.parse(ev.data); } });
    output.addEventListener("output", function (ev) {
      var f = JSON.parse(ev.data);
      function put(text, cls) {
        var el = cls ? document.createElement("span") : document.createTextNode(text);
        if (cls) { el.className = cls; el.textContent = text; }
        pre.appendChild(el);
        size += text.length;
      }
      if (f.skipped) { put("[… " + f.skipped + " bytes not shown: the page fell behind]\n", "skipped"); }
      f.chunks.forEach(function (c) {
        if (c.a !== attempt) {
          if (attempt !== 0 || c.a > 1) { put("--- attempt " + c.a + " ---\n", "attempt"); }
          attempt = c.a;
        }
        put(c.t, c.s === "stderr" ? "stderr" : "");
      });
      while (size > OUTPUT_MAX && pre.firstChild) {
        size -= pre.firstChild.textContent.length;
        pre.removeChild(pre.firstChild);
      }
      pre.scrollTop = pre.scrollHeight;
      pre.setAttribute("data-frames", String(Number(pre.getAttribute("data-frames") || 0) + 1));
    });
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
        followOutput();
      });
  }

  document.addEventListener("DOMContentLoaded", function () {
    // A performance mark once the graph has been painted (the callback
    // of the frame that draws it, then a task after that paint): make
    // bench reads the time from navigation to it.
    if (document.getElementById("dag")) {
      requestAnimationFrame(function () { setTimeout(function () { performance.mark("agentic:dag-drawn"); }, 0); });
    }
    var url = document.body.getAttribute("data-live");
    if (url) {
      var head = document.querySelector(".run-head");
      if (head) {
        url += (url.indexOf("?") >= 0 ? "&" : "?") + "rev=" + encodeURIComponent(head.getAttribute("data-revision"));
      }
      connect(url);
    }
    followOutput();
    ["dag", "timeline"].forEach(function (id) {
      var el = document.getElementById(id);
      if (el) { el.addEventListener("click", openStep); }
    });
  });
})();
