(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("promptsuite-data").textContent);
  var S = D.summary;
  var PAGE = 100;
  var FLIP_PAGE = 50;

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    setAttrs(e, attrs);
    append(e, children);
    return e;
  }
  function setAttrs(e, attrs) {
    if (!attrs) return;
    Object.keys(attrs).forEach(function (k) {
      if (k === "class") e.setAttribute("class", attrs[k]);
      else if (k === "text") e.textContent = attrs[k];
      else e.setAttribute(k, attrs[k]);
    });
  }
  function append(e, children) {
    (children || []).forEach(function (c) {
      if (c === null || c === undefined) return;
      e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
  }
  function svg(tag, attrs, children) {
    var root = document.getElementById("chart");
    var e = document.createElementNS(root.namespaceURI, tag);
    setAttrs(e, attrs);
    append(e, children);
    return e;
  }
  function clear(e) {
    while (e.firstChild) e.removeChild(e.firstChild);
    return e;
  }
  function pct(v) {
    return v === null || v === undefined ? "-" : (v * 100).toFixed(1) + "%";
  }
  function pts(v) {
    return v === null || v === undefined ? "-" : (v >= 0 ? "+" : "") + (v * 100).toFixed(1);
  }
  function pval(v) {
    return v === null || v === undefined ? "-" : Number(v.toPrecision(3)).toString();
  }
  function table(header, rows, numeric) {
    var thead = el("thead", null, [el("tr", null, header.map(function (h) {
      return el("th", { text: h });
    }))]);
    var tbody = el("tbody", null, rows.map(function (r) {
      return el("tr", null, r.map(function (c, i) {
        var td = el("td", { text: c });
        if (numeric && numeric.indexOf(i) >= 0) td.className = "num";
        return td;
      }));
    }));
    return el("table", null, [thead, tbody]);
  }

  // -- verdict -----------------------------------------------------------------------------------
  function renderVerdict() {
    var box = document.getElementById("verdict");
    var ok = S.gate.passed;
    box.className = ok ? "verdict pass" : "verdict fail";
    box.appendChild(el("h1", { text: "promptsuite gate: " + (ok ? "PASSED" : "FAILED") }));
    if (S.gate.reasons.length) {
      box.appendChild(el("ul", null, S.gate.reasons.map(function (r) { return el("li", { text: r }); })));
    }
    var t = S.totals;
    box.appendChild(el("p", { text: t.cases + " cases: " + t.passed + " passed, " + t.failed +
      " failed, " + t.error + " error, " + t.review + " review" }));
  }

  // -- chart -------------------------------------------------------------------------------------
  function renderChart() {
    var root = document.getElementById("chart");
    var slices = S.slices;
    var label = 190, width = 520, rowH = 28, top = 24, right = 70;
    var height = top + slices.length * rowH + 30;
    root.setAttribute("viewBox", "0 0 " + (label + width + right) + " " + height);
    root.setAttribute("width", String(label + width + right));
    root.setAttribute("height", String(height));
    function x(v) { return label + v * width; }
    [0, 0.25, 0.5, 0.75, 1].forEach(function (v) {
      root.appendChild(svg("line", { x1: x(v), x2: x(v), y1: top - 6, y2: height - 24, class: "grid" }));
      root.appendChild(svg("text", { x: x(v), y: height - 8, "text-anchor": "middle", class: "axis",
        text: (v * 100) + "%" }));
    });
    slices.forEach(function (s, i) {
      var y = top + i * rowH;
      var name = s.slice.length > 26 ? s.slice.slice(0, 25) + "\u2026" : s.slice;
      root.appendChild(svg("text", { x: label - 8, y: y + 15, "text-anchor": "end", class: "label" },
        [name, svg("title", { text: s.slice })]));
      root.appendChild(svg("rect", { x: x(0), y: y + 3, width: width, height: rowH - 10, class: "track" }));
      if (s.pass_rate !== null) {
        root.appendChild(svg("rect", { x: x(0), y: y + 3, width: Math.max(0, s.pass_rate * width),
          height: rowH - 10, class: s.gate === "pass" ? "bar pass" : "bar fail" },
          [svg("title", { text: s.slice + ": " + pct(s.pass_rate) + " (95% CI " + pct(s.ci_low) +
            "-" + pct(s.ci_high) + ")" })]));
        var mid = y + 3 + (rowH - 10) / 2;
        root.appendChild(svg("line", { x1: x(s.ci_low), x2: x(s.ci_high), y1: mid, y2: mid, class: "ci" }));
        root.appendChild(svg("line", { x1: x(s.ci_low), x2: x(s.ci_low), y1: mid - 5, y2: mid + 5, class: "ci" }));
        root.appendChild(svg("line", { x1: x(s.ci_high), x2: x(s.ci_high), y1: mid - 5, y2: mid + 5, class: "ci" }));
      }
      root.appendChild(svg("line", { x1: x(s.threshold), x2: x(s.threshold), y1: y, y2: y + rowH - 4,
        class: "threshold" }, [svg("title", { text: "threshold " + pct(s.threshold) + " (" +
        s.threshold_source + ")" })]));
      if (s.baseline_pass_rate !== null && s.baseline_pass_rate !== undefined) {
        var bx = x(s.baseline_pass_rate), by = y + rowH - 6;
        root.appendChild(svg("path", { d: "M" + bx + " " + (by - 7) + " l5 7 l-10 0 z", class: "baseline" },
          [svg("title", { text: "baseline " + pct(s.baseline_pass_rate) })]));
      }
      root.appendChild(svg("text", { x: x(1) + 8, y: y + 15, class: "value", text: pct(s.pass_rate) }));
    });
  }

  // -- tables ------------------------------------------------------------------------------------
  function renderSlices() {
    var hasBase = S.baseline !== null;
    var header = ["slice", "cases", "passed", "failed", "error", "review", "pass rate", "95% CI",
      "threshold", "source"];
    if (hasBase) header = header.concat(["baseline", "delta (pts)", "regressions", "fixes", "p (McNemar)",
      "p (drop)", "verdict", "detectable drop"]);
    header.push("gate");
    var rows = S.slices.map(function (s) {
      var r = [s.slice, String(s.cases), String(s.passed), String(s.failed), String(s.error),
        String(s.review), pct(s.pass_rate), s.ci_low === null ? "-" : pct(s.ci_low) + " - " + pct(s.ci_high),
        pct(s.threshold), s.threshold_source];
      if (hasBase) r = r.concat([pct(s.baseline_pass_rate), pts(s.delta), String(s.regressions),
        String(s.fixes), pval(s.p_value), pval(s.p_regression), s.verdict || "-",
        s.detectable_drop === null || s.detectable_drop === undefined ? "-" : pct(s.detectable_drop)]);
      r.push(s.gate.toUpperCase());
      return r;
    });
    var t = table(header, rows, [1, 2, 3, 4, 5, 6, 8, 10, 11, 12, 13, 14, 15, 17]);
    t.id = "slice-table";
    Array.prototype.forEach.call(t.tBodies[0].rows, function (tr, i) {
      tr.className = S.slices[i].gate === "pass" ? "gate-pass" : "gate-fail";
    });
    document.getElementById("slices").appendChild(t);
  }

  function groupTable(title, groups) {
    if (!groups || !groups.length) return null;
    return el("section", null, [el("h2", { text: title }), table(
      ["name", "cases", "passed", "failed", "error", "review", "pass rate", "95% CI"],
      groups.map(function (g) {
        return [g.name, String(g.cases), String(g.passed), String(g.failed), String(g.error),
          String(g.review), pct(g.pass_rate), g.ci_low === null ? "-" : pct(g.ci_low) + " - " + pct(g.ci_high)];
      }), [1, 2, 3, 4, 5, 6])]);
  }

  function idList(ids) {
    var shown = ids.slice(0, 50).join(", ");
    return ids.length > 50 ? shown + " ... and " + (ids.length - 50) + " more" : shown;
  }

  function variantsTable() {
    // prompt versions side by side: each slice's pass rate per variant, flips first -> second
    var c = S.compared_variants;
    if (!c || !c.slices.length) return null;
    var names = c.variants, pair = names.length >= 2, bySlice = {};
    c.slices.forEach(function (v) {
      var counted = v.cases - v.review - v.skipped;
      (bySlice[v.slice] = bySlice[v.slice] || {})[v.variant] =
        pct(v.pass_rate) + " (" + v.passed + "/" + counted + ")" + (v.gate === "pass" ? "" : " FAIL");
    });
    var header = ["slice"].concat(names);
    if (pair) header = header.concat(["flips " + names[0] + " \u2192 " + names[1] + " (\u2212/+)", "p"]);
    var rows = Object.keys(bySlice).sort().map(function (name) {
      var row = [name].concat(names.map(function (n) { return bySlice[name][n] || "-"; }));
      if (pair) {
        var f = c.flips_by_slice[name] || {};
        row = row.concat(["\u2212" + (f.regressions || 0) + "/+" + (f.fixes || 0), pval(f.p_value)]);
      }
      return row;
    });
    var numeric = header.map(function (h, i) { return i; }).slice(1);
    var children = [el("h2", { text: "Prompt variants side by side" }), table(header, rows, numeric)];
    if (pair && c.regressions.length) {
      children.push(el("p", { text: names[1] + " breaks (passed in " + names[0] + "): " + idList(c.regressions) }));
    }
    if (pair && c.fixes.length) {
      children.push(el("p", { text: names[1] + " fixes (failed in " + names[0] + "): " + idList(c.fixes) }));
    }
    return el("section", { id: "variants" }, children);
  }

  function renderGroups() {
    var box = document.getElementById("groups");
    append(box, [variantsTable(), groupTable("By variant", S.variants), groupTable("By tag", S.tags)]);
    if (S.flaky && S.flaky.length) {
      box.appendChild(el("section", null, [el("h2", { text: "Flaky cases (passed in some repeats only)" }),
        table(["case", "variant", "slice", "passed", "runs", "pass fraction"], S.flaky.map(function (r) {
          return [r.case_id, r.variant || "", r.slice, String(r.passed), String(r.runs), pct(r.pass_fraction)];
        }), [3, 4, 5])]));
    }
  }

  // -- baseline diff -----------------------------------------------------------------------------
  function pre(text, cls) {
    return el("pre", { class: cls || "", text: text === null || text === undefined ? "(none)" : text });
  }
  function diffPre(text) {
    var p = el("pre", { class: "diff" });
    text.split("\n").forEach(function (line) {
      var cls = line.charAt(0) === "+" ? "add" : line.charAt(0) === "-" ? "del" : "";
      p.appendChild(el("span", { class: cls, text: line + "\n" }));
    });
    return p;
  }
  function checksTable(checks) {
    if (!checks || !checks.length) return el("p", { class: "muted", text: "no checks" });
    return table(["layer", "check", "verdict", "message"], checks.map(function (c) {
      return [c.layer, c.name, c.skipped ? "skipped" : c.passed ? "passed" : "FAILED", c.message];
    }));
  }
  function flipBox(f) {
    var body = el("div", { class: "flip-body" }, [
      el("div", { class: "side-by-side" }, [
        el("div", null, [el("h4", { text: "baseline output (" + f.old_outcome + ")" }), pre(f.old_output)]),
        el("div", null, [el("h4", { text: "current output (" + f.new_outcome + ")" }), pre(f.new_output)])
      ]),
      f.prompt_diff ? el("div", null, [el("h4", { text: "prompt diff" }), diffPre(f.prompt_diff)])
        : el("p", { class: "muted", text: "prompt unchanged" }),
      el("h4", { text: "checks now" }), checksTable(f.checks)
    ]);
    return el("details", { class: "flip " + f.kind }, [
      el("summary", { text: f.id + "  [" + f.slice + "]  " + f.old_outcome + " \u2192 " + f.new_outcome }),
      body
    ]);
  }
  function renderDiff() {
    var box = document.getElementById("diff");
    var b = S.baseline;
    if (!b) {
      box.appendChild(el("p", { class: "muted", text: "No baseline (run with --prompt-baseline PATH)." }));
      return;
    }
    box.appendChild(el("p", { text: "Against " + b.source + ": " + S.regressions.length + " regressions, " +
      S.fixes.length + " fixes, " + S.new.length + " new, " + S.removed.length + " removed. Allowed drop " +
      (b.max_regression * 100).toFixed(1) + " points (" + b.max_regression_source + ")." }));
    var flips = D.flips;
    var list = el("div", { id: "flip-list" });
    var shown = 0;
    var more = el("button", { type: "button", text: "show more" });
    function showMore() {
      flips.slice(shown, shown + FLIP_PAGE).forEach(function (f) { list.appendChild(flipBox(f)); });
      shown = Math.min(flips.length, shown + FLIP_PAGE);
      more.hidden = shown >= flips.length;
      more.textContent = "show more (" + (flips.length - shown) + " left)";
    }
    more.addEventListener("click", showMore);
    box.appendChild(list);
    box.appendChild(more);
    showMore();
    [["New cases", S.new], ["Removed cases", S.removed]].forEach(function (pair) {
      if (!pair[1].length) return;
      box.appendChild(el("details", null, [el("summary", { text: pair[0] + " (" + pair[1].length + ")" }),
        el("p", { class: "ids", text: pair[1].join(", ") })]));
    });
  }

  // -- cases -------------------------------------------------------------------------------------
  var state = { slice: "", outcome: "attention", search: "", page: 0, matches: [] };
  var COL = { id: 0, slice: 1, variant: 2, repeat: 3, outcome: 4, detail: 5 };

  function filterRows() {
    var out = [], rows = D.rows, q = state.search.toLowerCase();
    for (var i = 0; i < rows.length; i++) {
      var r = rows[i], o = r[COL.outcome];
      if (state.slice && r[COL.slice] !== state.slice) continue;
      if (state.outcome === "attention") {
        if (o !== "failed" && o !== "error" && o !== "review") continue;
      } else if (state.outcome && o !== state.outcome) continue;
      if (q && r[COL.id].toLowerCase().indexOf(q) < 0) continue;
      out.push(i);
    }
    state.matches = out;
    state.page = 0;
  }

  function detailRow(r) {
    var d = r[COL.detail] >= 0 ? D.details[r[COL.detail]] : null;
    var cell = el("td", { colspan: "6", class: "detail" });
    if (!d) {
      cell.appendChild(el("p", { class: "muted", text: "Passed: no details kept in the dashboard (see results.jsonl)." }));
    } else {
      append(cell, [
        el("p", { text: "location: " + (d.location || "-") + (d.tags && d.tags.length ? "   tags: " + d.tags.join(", ") : "") }),
        d.error ? el("p", { class: "error", text: "error: " + d.error }) : null,
        checksTable(d.checks),
        el("div", { class: "side-by-side" }, [
          el("div", null, [el("h4", { text: "prompt" }), pre(d.prompt)]),
          el("div", null, [el("h4", { text: "output" }), pre(d.output, "output")])
        ])
      ]);
    }
    return el("tr", { class: "detail-row" }, [cell]);
  }

  function renderPage() {
    var body = clear(document.getElementById("case-rows"));
    var n = state.matches.length, pages = Math.max(1, Math.ceil(n / PAGE));
    state.page = Math.min(state.page, pages - 1);
    state.matches.slice(state.page * PAGE, (state.page + 1) * PAGE).forEach(function (i) {
      var r = D.rows[i];
      var tr = el("tr", { class: "case " + r[COL.outcome], tabindex: "0" }, [
        el("td", { text: r[COL.id] }), el("td", { text: r[COL.slice] }),
        el("td", { text: r[COL.variant] === null ? "" : r[COL.variant] }),
        el("td", { class: "num", text: String(r[COL.repeat]) }),
        el("td", { class: "outcome", text: r[COL.outcome] }),
        el("td", { class: "muted", text: r[COL.detail] >= 0 ? "details \u25be" : "" })
      ]);
      var open = null;
      function toggle() {
        if (open) { open.parentNode.removeChild(open); open = null; return; }
        open = detailRow(r);
        tr.parentNode.insertBefore(open, tr.nextSibling);
      }
      tr.addEventListener("click", toggle);
      tr.addEventListener("keydown", function (ev) { if (ev.key === "Enter") toggle(); });
      body.appendChild(tr);
      if (n <= 10 && r[COL.detail] >= 0) toggle();
    });
    document.getElementById("page-info").textContent = n + " matching rows; page " + (state.page + 1) +
      " of " + pages;
    document.getElementById("prev").disabled = state.page === 0;
    document.getElementById("next").disabled = state.page >= pages - 1;
  }

  function renderCases() {
    var sel = document.getElementById("f-slice");
    sel.appendChild(el("option", { value: "", text: "all slices" }));
    S.slices.forEach(function (s) { sel.appendChild(el("option", { value: s.slice, text: s.slice })); });
    var out = document.getElementById("f-outcome");
    [["attention", "failed, error or review"], ["", "all outcomes"], ["passed", "passed"], ["failed", "failed"],
      ["error", "error"], ["review", "review"], ["skipped", "skipped"]].forEach(function (p) {
      out.appendChild(el("option", { value: p[0], text: p[1] }));
    });
    sel.addEventListener("change", function () { state.slice = sel.value; filterRows(); renderPage(); });
    out.addEventListener("change", function () { state.outcome = out.value; filterRows(); renderPage(); });
    var search = document.getElementById("f-search");
    search.addEventListener("input", function () { state.search = search.value; filterRows(); renderPage(); });
    document.getElementById("prev").addEventListener("click", function () { state.page--; renderPage(); });
    document.getElementById("next").addEventListener("click", function () { state.page++; renderPage(); });
    filterRows();
    renderPage();
  }

  renderVerdict();
  renderChart();
  renderSlices();
  renderGroups();
  renderDiff();
  renderCases();
  document.documentElement.setAttribute("data-rendered", "1");
})();
