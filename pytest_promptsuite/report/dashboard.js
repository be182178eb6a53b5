// @ts-check
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
  var SVG_NS = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, children) {
    var e = document.createElementNS(SVG_NS, tag);
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
  function money(v) {
    if (v === null || v === undefined) return "-";
    if (v >= 1) return "$" + v.toFixed(2);
    return v ? "$" + v.toFixed(6).replace(/0+$/, "").replace(/\.$/, "") : "$0";
  }
  function ms(v) { return v === null || v === undefined ? "-" : Math.round(v).toLocaleString("en") + " ms"; }
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
  function scroll(t) { return el("div", { class: "scroll" }, [t]); }

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
    var u = S.usage;
    if (u) {
      var tot = u.total;
      box.appendChild(el("p", { id: "totals", text: tot.calls + " calls, " + tot.cache_hits + " cache hits, " +
        (tot.tokens === null ? "tokens not reported" : tot.tokens.toLocaleString("en") + " tokens") + ", " +
        (tot.cost_usd !== null ? "cost " + money(tot.cost_usd) : u.priced ? "cost unknown (no token counts)"
          : "cost unknown (no [model] prices)") + ", " +
        (tot.latency_p95_ms === null ? "p95 latency not measured" : "p95 latency " + ms(tot.latency_p95_ms)) }));
    }
  }

  // -- chart -------------------------------------------------------------------------------------
  // bars: [{name, pass_rate, ci_low, ci_high, threshold, threshold_source, gate, baseline}]
  function drawChart(root, bars) {
    // drawn at the width it is shown at, so a phone reads the labels at full size
    var avail = document.getElementById("charts").clientWidth || 780, narrow = avail < 560;
    var label = narrow ? 96 : 190, right = narrow ? 58 : 70, rowH = 28, top = 24;
    var width = Math.max(140, Math.min(520, avail - label - right));
    var height = top + bars.length * rowH + 30;
    root.setAttribute("viewBox", "0 0 " + (label + width + right) + " " + height);
    root.setAttribute("width", String(label + width + right));
    root.setAttribute("height", String(height));
    function x(v) { return label + v * width; }
    [0, 0.25, 0.5, 0.75, 1].forEach(function (v) {
      root.appendChild(svg("line", { x1: x(v), x2: x(v), y1: top - 6, y2: height - 24, class: "grid" }));
      root.appendChild(svg("text", { x: x(v), y: height - 8, "text-anchor": "middle", class: "axis",
        text: (v * 100) + "%" }));
    });
    bars.forEach(function (s, i) {
      var y = top + i * rowH;
      var keep = narrow ? 12 : 26;
      var name = s.name.length > keep ? s.name.slice(0, keep - 1) + "\u2026" : s.name;
      root.appendChild(svg("text", { x: label - 8, y: y + 15, "text-anchor": "end", class: "label" },
        [name, svg("title", { text: s.name })]));
      root.appendChild(svg("rect", { x: x(0), y: y + 3, width: width, height: rowH - 10, class: "track" }));
      if (s.pass_rate !== null && s.pass_rate !== undefined) {
        root.appendChild(svg("rect", { x: x(0), y: y + 3, width: Math.max(0, s.pass_rate * width),
          height: rowH - 10, class: s.gate === "pass" ? "bar pass" : "bar fail", "data-slice": s.name },
          [svg("title", { text: s.name + ": " + pct(s.pass_rate) + " (95% CI " + pct(s.ci_low) +
            "-" + pct(s.ci_high) + ")" })]));
        var mid = y + 3 + (rowH - 10) / 2;
        root.appendChild(svg("line", { x1: x(s.ci_low), x2: x(s.ci_high), y1: mid, y2: mid, class: "ci" }));
        root.appendChild(svg("line", { x1: x(s.ci_low), x2: x(s.ci_low), y1: mid - 5, y2: mid + 5, class: "ci" }));
        root.appendChild(svg("line", { x1: x(s.ci_high), x2: x(s.ci_high), y1: mid - 5, y2: mid + 5, class: "ci" }));
      }
      root.appendChild(svg("line", { x1: x(s.threshold), x2: x(s.threshold), y1: y, y2: y + rowH - 4,
        class: "threshold" }, [svg("title", { text: "threshold " + pct(s.threshold) +
        (s.threshold_source ? " (" + s.threshold_source + ")" : "") })]));
      if (s.baseline !== null && s.baseline !== undefined) {
        var bx = x(s.baseline), by = y + rowH - 6;
        root.appendChild(svg("path", { d: "M" + bx + " " + (by - 7) + " l5 7 l-10 0 z", class: "baseline" },
          [svg("title", { text: "baseline " + pct(s.baseline) })]));
      }
      root.appendChild(svg("text", { x: x(1) + 8, y: y + 15, class: "value", text: pct(s.pass_rate) }));
    });
  }

  function modelOf(variant) {
    var models = S.run && S.run.models ? S.run.models : {};
    var m = models[variant] || null;
    return m && m.spec ? m.spec : "";
  }

  function renderChart() {
    var c = S.compared_variants;
    var root = document.getElementById("chart");
    if (!c || c.variants.length < 2) {
      drawChart(root, S.slices.map(function (s) {
        return { name: s.slice, pass_rate: s.pass_rate, ci_low: s.ci_low, ci_high: s.ci_high,
          threshold: s.threshold, threshold_source: s.threshold_source, gate: s.gate,
          baseline: s.baseline_pass_rate };
      }));
      return;
    }
    // one chart per variant, each bar gated on its own: pooling variants hides which one failed
    var box = clear(document.getElementById("charts"));
    c.variants.forEach(function (v) {
      var mine = c.slices.filter(function (s) { return s.variant === v; });
      var failing = mine.filter(function (s) { return s.gate !== "pass"; }).length;
      var chart = svg("svg", { class: "chart", role: "img", "aria-label": "pass rate by slice, variant " + v });
      drawChart(chart, mine.map(function (s) {
        var t = s.against_first;
        return { name: s.slice, pass_rate: s.pass_rate, ci_low: s.ci_low, ci_high: s.ci_high,
          threshold: s.threshold, gate: s.gate, baseline: t ? t.baseline_pass_rate : null };
      }));
      var model = modelOf(v);
      box.appendChild(el("figure", { class: "variant-chart", "data-variant": v }, [
        el("figcaption", null, [el("strong", { text: v }), model ? " \u00b7 " + model : "",
          el("span", { class: failing ? "gate-fail" : "gate-pass",
            text: failing ? "  gate FAILS in " + failing + " slice" + (failing === 1 ? "" : "s") : "  gate holds" })]),
        chart]));
    });
  }

  // -- tables ------------------------------------------------------------------------------------
  // with a baseline, verdict and gate stay beside the counts; the comparison's figures get a table of their own
  function renderSlices() {
    var hasBase = S.baseline !== null;
    var header = ["slice", "cases", "passed", "failed", "error", "review", "pass rate", "95% CI", "threshold"];
    if (hasBase) header.push("verdict");
    header.push("gate");
    var rows = S.slices.map(function (s) {
      var r = [s.slice, String(s.cases), String(s.passed), String(s.failed), String(s.error),
        String(s.review), pct(s.pass_rate), s.ci_low === null ? "-" : pct(s.ci_low) + " - " + pct(s.ci_high),
        pct(s.threshold) + " (" + s.threshold_source + ")"];
      if (hasBase) r.push(s.verdict || "-");
      r.push(s.gate.toUpperCase());
      return r;
    });
    var t = table(header, rows, [1, 2, 3, 4, 5, 6]);
    t.id = "slice-table";
    Array.prototype.forEach.call(t.tBodies[0].rows, function (tr, i) {
      tr.className = S.slices[i].gate === "pass" ? "gate-pass" : "gate-fail";
      if (hasBase) tr.cells[header.length - 2].className = "verdict";  // may wrap: the gate stays in view
    });
    var box = document.getElementById("slices");
    box.appendChild(t);
    if (hasBase) box.appendChild(baselineSliceTable());
  }

  function baselineSliceTable() {
    var rows = S.slices.map(function (s) {
      return [s.slice, pct(s.baseline_pass_rate), pts(s.delta), String(s.regressions), String(s.fixes),
        pval(s.p_value), pval(s.p_regression),
        s.detectable_drop === null || s.detectable_drop === undefined ? "-" : pct(s.detectable_drop)];
    });
    var t = table(["slice", "baseline", "delta (pts)", "regressions", "fixes", "p (McNemar)", "p (drop)",
      "detectable drop"], rows, [1, 2, 3, 4, 5, 6, 7]);
    t.id = "slice-baseline-table";
    return el("div", null, [el("h4", { text: "against the baseline" }), t]);
  }

  function groupTable(title, groups) {
    if (!groups || !groups.length) return null;
    return el("section", null, [el("h2", { text: title }), scroll(table(
      ["name", "cases", "passed", "failed", "error", "review", "pass rate", "95% CI"],
      groups.map(function (g) {
        return [g.name, String(g.cases), String(g.passed), String(g.failed), String(g.error),
          String(g.review), pct(g.pass_rate), g.ci_low === null ? "-" : pct(g.ci_low) + " - " + pct(g.ci_high)];
      }), [1, 2, 3, 4, 5, 6]))]);
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
    var children = [el("h2", { text: "Prompt variants side by side" }), scroll(table(header, rows, numeric))];
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
        scroll(table(["case", "variant", "slice", "passed", "runs", "pass fraction"], S.flaky.map(function (r) {
          return [r.case_id, r.variant || "", r.slice, String(r.passed), String(r.runs), pct(r.pass_fraction)];
        }), [3, 4, 5]))]));
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
  // "cut": 1 when the endpoint cut the answer at max_tokens (finish_reason "length"), absent otherwise
  var COL = { id: 0, slice: 1, variant: 2, repeat: 3, outcome: 4, detail: 5, input: 6, output: 7, failed: 8, cut: 9 };
  var CUT_NOTE = "the answer was cut at max_tokens (finish_reason \"length\")";
  var BASE = D.baseline_rows;

  // a row needing attention has its prompt and output in its details; a passed row their start
  function outputOf(r) { return r[COL.detail] >= 0 ? D.details[r[COL.detail]].output || "" : r[COL.output]; }
  function inputOf(r) { return r[COL.detail] >= 0 ? D.details[r[COL.detail]].prompt || "" : r[COL.input]; }
  function matches(i, q) {
    // case id, input and output, and the baseline's output
    var r = D.rows[i];
    if (r[COL.id].toLowerCase().indexOf(q) >= 0) return true;
    var out = outputOf(r), inp = inputOf(r);
    if (out && out.toLowerCase().indexOf(q) >= 0) return true;
    if (inp && inp.toLowerCase().indexOf(q) >= 0) return true;
    var b = BASE ? BASE[i] : 0;
    return !!(b && typeof b !== "string" && b[1] && b[1].toLowerCase().indexOf(q) >= 0);
  }

  function filterRows() {
    var out = [], rows = D.rows, q = state.search.toLowerCase();
    for (var i = 0; i < rows.length; i++) {
      var r = rows[i], o = r[COL.outcome];
      if (state.slice && r[COL.slice] !== state.slice) continue;
      if (state.outcome === "attention") {
        if (o !== "failed" && o !== "error" && o !== "review") continue;
      } else if (state.outcome && o !== state.outcome) continue;
      if (q && !matches(i, q)) continue;
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
        d.transcript ? transcript(d.transcript) : null,
        d.tool_calls ? el("div", null, [el("h4", { text: "tool calls" }), pre(d.tool_calls)]) : null,
        d.tool_stop ? el("p", { class: "error", text: "tool run stopped: " + d.tool_stop }) : null,
        d.finish_reason === "length" ? el("p", { class: "cut", text: CUT_NOTE }) : null,
        el("div", { class: "side-by-side" }, [
          el("div", null, [el("h4", { text: "prompt" }), pre(d.prompt)]),
          el("div", null, [el("h4", { text: "output" }), pre(d.output, "output")])
        ])
      ]);
    }
    return el("tr", { class: "detail-row" }, [cell]);
  }

  // a conversation as a chat: each turn's user message and reply, a failing turn marked
  function transcript(turns) {
    return el("div", { class: "transcript" }, [el("h4", { text: "conversation" })].concat(turns.map(function (t) {
      return el("div", { class: t.passed ? "turn" : "turn failing" }, [
        el("p", { class: "turn-head", text: "turn " + t.turn + (t.passed ? "" : " \u2014 failed") }),
        el("div", { class: "said user" }, [pre(t.user)]),
        el("div", { class: "said bot" }, [pre(t.reply)])
      ]);
    })));
  }

  // the first failing check of a row with details ("name: message"), else its error, shown without a click
  function firstFailure(r) {
    var d = r[COL.detail] >= 0 ? D.details[r[COL.detail]] : null;
    if (!d) return "";
    if (d.error) return "error: " + d.error;
    var failed = (d.checks || []).filter(function (c) { return !c.passed && !c.skipped; });
    return failed.length ? failed[0].name + ": " + failed[0].message : "";
  }
  function firstFailureCell(r) {
    if (r[COL.detail] < 0) return el("td", { class: "muted", text: "" });
    var text = firstFailure(r);
    if (text.length > 200) text = text.slice(0, 199) + "\u2026";
    return el("td", { class: "first-failure" }, [
      text ? el("span", { class: "failed-check", text: text }) : null,
      el("span", { class: "muted", text: (text ? "  " : "") + "details \u25be" })
    ]);
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
        el("td", { class: "outcome" }, [r[COL.outcome], r[COL.cut] === 1 ?
          el("span", { class: "cut", title: CUT_NOTE, text: " \u2702 cut" }) : null]),
        firstFailureCell(r)
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
    /** @type {HTMLButtonElement} */ (document.getElementById("prev")).disabled = state.page === 0;
    /** @type {HTMLButtonElement} */ (document.getElementById("next")).disabled = state.page >= pages - 1;
    renderGrid();
  }

  function renderCases() {
    var sel = /** @type {HTMLSelectElement} */ (document.getElementById("f-slice"));
    sel.appendChild(el("option", { value: "", text: "all slices" }));
    S.slices.forEach(function (s) { sel.appendChild(el("option", { value: s.slice, text: s.slice })); });
    var out = /** @type {HTMLSelectElement} */ (document.getElementById("f-outcome"));
    [["attention", "failed, error or review"], ["", "all outcomes"], ["passed", "passed"], ["failed", "failed"],
      ["error", "error"], ["review", "review"], ["skipped", "skipped"]].forEach(function (p) {
      out.appendChild(el("option", { value: p[0], text: p[1] }));
    });
    sel.addEventListener("change", function () { state.slice = sel.value; filterRows(); renderPage(); });
    out.addEventListener("change", function () { state.outcome = out.value; filterRows(); renderPage(); });
    var search = /** @type {HTMLInputElement} */ (document.getElementById("f-search"));
    search.addEventListener("input", function () { state.search = search.value; filterRows(); renderPage(); });
    document.getElementById("prev").addEventListener("click", function () { state.page--; renderPage(); });
    document.getElementById("next").addEventListener("click", function () { state.page++; renderPage(); });
    filterRows();
    renderPage();
  }


  // -- calls, tokens, cost, latency --------------------------------------------------------------
  function renderUsage() {
    var u = S.usage;
    if (!u || !u.total.rows) return;
    var rows = [];
    function perCase(v, before, write) {
      if (v === null || v === undefined) return "-";
      if (before === null || before === undefined) return write(v);
      return write(v) + " (baseline " + write(before) + (before ? ", " + (v / before >= 1 ? "+" : "") +
        Math.round((v / before - 1) * 100) + "%" : "") + ")";
    }
    function tok(v) { return v.toLocaleString("en", { maximumFractionDigits: 1, minimumFractionDigits: 1 }); }
    function usd(v) { return "$" + v.toFixed(6); }
    function add(kind, g) {
      var judge = g.judge_prompt_tokens == null && g.judge_completion_tokens == null ? "-" :
        (g.judge_prompt_tokens || 0).toLocaleString("en") + " + " + (g.judge_completion_tokens || 0).toLocaleString("en");
      rows.push([kind, g.name, String(g.calls), String(g.cache_hits),
        g.tokens === null ? "-" : g.tokens.toLocaleString("en"), money(g.cost_usd), ms(g.latency_p50_ms),
        ms(g.latency_p95_ms), perCase(g.tokens_per_case, g.baseline_tokens_per_case, tok),
        perCase(g.cost_per_case, g.baseline_cost_per_case, usd), judge]);
    }
    u.slices.forEach(function (g) { add("slice", g); });
    u.variants.forEach(function (g) { add("variant", g); });
    add("total", u.total);
    var t = table(["by", "name", "calls", "cache hits", "tokens", "cost", "p50 latency", "p95 latency",
      "tokens / case", "cost / case", "judge tokens"], rows, [2, 3, 4, 5, 6, 7, 8, 9, 10]);
    t.id = "usage-table";
    append(document.getElementById("usage"), [el("h2", { text: "Calls, tokens, cost and latency" }),
      u.priced ? null : el("p", { class: "muted", text: "No [model] prices in the config, so no cost." }),
      scroll(t)]);
  }

  // -- history -----------------------------------------------------------------------------------
  function sparkline(points, labels) {
    var w = 24, h = 60, pad = 6, width = pad * 2 + Math.max(1, points.length - 1) * w;
    var root = svg("svg", { class: "spark", viewBox: "0 0 " + width + " " + (h + pad * 2),
      width: String(width), height: String(h + pad * 2) });
    function y(v) { return pad + (1 - v) * h; }
    var path = "";
    points.forEach(function (p, i) {
      if (!p || p.pass_rate === null) return;
      var x = pad + i * w;
      if (p.ci_low !== null) root.appendChild(svg("line", { x1: x, x2: x, y1: y(p.ci_low), y2: y(p.ci_high), class: "ci" }));
      path += (path ? " L" : "M") + x + " " + y(p.pass_rate);
      root.appendChild(svg("circle", { cx: x, cy: y(p.pass_rate), r: i === points.length - 1 ? 4 : 3,
        class: p.gate === "fail" ? "dot fail" : "dot" }, [svg("title", { text: labels[i] + ": " +
        pct(p.pass_rate) + " (95% CI " + pct(p.ci_low) + "-" + pct(p.ci_high) + "), " + p.passed + "/" +
        p.counted }) ]));
    });
    root.insertBefore(svg("path", { d: path, class: "trend-line" }), root.firstChild);
    return root;
  }

  function renderTrend() {
    var h = D.history;
    if (!h || h.runs.length < 2) return;
    var labels = h.runs.map(function (r) { return r.label; });
    var names = {};
    h.runs.forEach(function (r) { Object.keys(r.slices).forEach(function (n) { names[n] = 1; }); });
    var rows = Object.keys(names).sort().map(function (name) {
      var points = h.runs.map(function (r) { return r.slices[name] || null; });
      var rates = points.filter(function (p) { return p && p.pass_rate !== null; });
      var change = rates.length > 1 ? rates[rates.length - 1].pass_rate - rates[0].pass_rate : null;
      return el("tr", null, [el("td", { text: name }), el("td", null, [sparkline(points, labels)]),
        el("td", { class: "num", text: pct(rates.length ? rates[rates.length - 1].pass_rate : null) }),
        el("td", { class: "num" + (change !== null && change < 0 ? " down" : ""), text: change === null ? "-" :
          pts(change) + " pts" })]);
    });
    var t = el("table", { id: "trend-table" }, [el("thead", null, [el("tr", null, [el("th", { text: "slice" }),
      el("th", { text: "pass rate, " + labels[0] + " \u2192 " + labels[labels.length - 1] }),
      el("th", { text: "now" }), el("th", { text: "change" })])]), el("tbody", null, rows)]);
    append(document.getElementById("trend"), [el("h2", { text: "Trend over the last " + h.runs.length + " runs" }),
      el("p", { class: "muted", text: "Each dot is a run's pass rate, each whisker its 95% interval; " +
        "the last dot is this run. Hover a dot for its figures." }), scroll(t)]);
  }

  // -- review decisions --------------------------------------------------------------------------
  var decisions = {};
  function reviewItem(i, reviewer, counter) {
    var r = D.rows[i], d = D.details[r[COL.detail]];
    var key = r[COL.id] + "\u0000" + (r[COL.variant] || "") + "\u0000" + r[COL.repeat];
    var comment = el("input", { type: "text", class: "comment", placeholder: "why (optional)" });
    var status = el("span", { class: "muted decision", text: "" });
    function decide(verdict) {
      decisions[key] = { case_id: r[COL.id], variant: r[COL.variant], slice: r[COL.slice], repeat: r[COL.repeat],
        output_sha256: d.output_sha256, decision: verdict, reviewer: reviewer.value,
        comment: comment.value, decided_at: new Date().toISOString().replace(/\.\d+Z$/, "Z") };
      status.textContent = "marked " + verdict;
      counter();
    }
    var pass = el("button", { type: "button", class: "mark-pass", text: "pass" });
    var fail = el("button", { type: "button", class: "mark-fail", text: "fail" });
    pass.addEventListener("click", function () { decide("pass"); });
    fail.addEventListener("click", function () { decide("fail"); });
    var reasons = d.checks.filter(function (c) { return c.details && c.details.review; })
      .map(function (c) { return c.details.review; }).join("; ");
    return el("li", { class: "review-item", "data-case": r[COL.id] }, [
      el("strong", { text: r[COL.id] + (r[COL.variant] ? " [" + r[COL.variant] + "]" : "") }),
      " " + r[COL.slice] + (reasons ? ": " + reasons : ""), pre(d.output, "output"),
      el("div", { class: "review-actions" }, [pass, fail, comment, status])]);
  }

  function renderReview() {
    var items = [];
    for (var i = 0; i < D.rows.length; i++) {
      var r = D.rows[i];
      if (r[COL.outcome] === "review" && r[COL.detail] >= 0 && D.details[r[COL.detail]].output_sha256) items.push(i);
    }
    if (!items.length) return;
    var reviewer = el("input", { type: "text", id: "reviewer", placeholder: "your name" });
    var download = el("button", { type: "button", id: "download-decisions", text: "download decisions (0)" });
    function counter() { download.textContent = "download decisions (" + Object.keys(decisions).length + ")"; }
    download.addEventListener("click", function () {
      var lines = Object.keys(decisions).map(function (k) { return JSON.stringify(decisions[k]); });
      var blob = new Blob([lines.join("\n") + (lines.length ? "\n" : "")], { type: "application/x-ndjson" });
      var a = el("a", { download: "review-decisions.jsonl", href: URL.createObjectURL(blob) });
      document.body.appendChild(a);
      a.click();
      document.body.removeChild(a);
    });
    var list = el("ol", { id: "review-list" }, items.slice(0, 200).map(function (i) { return reviewItem(i, reviewer, counter); }));
    append(document.getElementById("review"), [el("h2", { text: "Review queue (" + items.length + ")" }),
      el("p", { class: "muted", text: "Mark each output pass or fail, then download the decisions and run " +
        "with --prompt-reviews FILE: they apply to the same output of the same case on later runs." }),
      el("div", { class: "filters" }, [el("label", null, ["reviewer ", reviewer]), download]), list,
      items.length > 200 ? el("p", { class: "muted", text: (items.length - 200) + " more in review.jsonl" }) : null]);
  }

  // -- outputs grid ------------------------------------------------------------------------------
  var GRID_PAGE = 50;
  var columns = (S.compared_variants && S.compared_variants.variants.length) ? S.compared_variants.variants : [null];
  var byCase = {};
  D.rows.forEach(function (r, i) {
    var k = r[COL.id] + "\u0000" + r[COL.repeat];
    (byCase[k] = byCase[k] || {})[r[COL.variant] === null ? "" : r[COL.variant]] = i;
  });

  function words(text) { return text.split(/(\s+)/).filter(function (w) { return w.length; }); }
  function wordDiff(a, b) {
    // longest common subsequence of words: what b removed from a (del) and added (add)
    var x = words(a), y = words(b), n = x.length, m = y.length, L = [], i, j;
    for (i = 0; i <= n; i++) { L.push(new Array(m + 1).fill(0)); }
    for (i = n - 1; i >= 0; i--) for (j = m - 1; j >= 0; j--) {
      L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
    }
    var out = el("pre", { class: "diff" });
    i = 0; j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && x[i] === y[j]) { out.appendChild(document.createTextNode(x[i])); i++; j++; }
      else if (j < m && (i >= n || L[i][j + 1] >= L[i + 1][j])) { out.appendChild(el("span", { class: "add", text: y[j] })); j++; }
      else { out.appendChild(el("span", { class: "del", text: x[i] })); i++; }
    }
    return out;
  }

  function gridCell(outcome, text, failed, first, diff) {
    var td = el("td", { class: "cell " + outcome });
    td.appendChild(el("span", { class: "badge " + outcome, text: outcome }));
    td.appendChild(diff && first !== null ? wordDiff(first, text || "") : pre(text, "output"));
    if (failed) td.appendChild(el("p", { class: "failed-checks", text: "\u2717 " + failed }));
    return td;
  }

  function renderGrid() {
    var head = clear(document.getElementById("grid-head"));
    var body = clear(document.getElementById("grid-rows"));
    var cols = columns.map(function (c) { return c === null ? "output" : c; });
    if (BASE) cols.push("baseline");
    head.appendChild(el("tr", null, [el("th", { text: "case" }), el("th", { text: "slice" })]
      .concat(cols.map(function (c) { return el("th", { text: c }); })).concat([el("th", { text: "" })])));
    var seen = {}, keys = [];
    var start = state.page * PAGE;
    state.matches.slice(start, start + PAGE).forEach(function (i) {
      var r = D.rows[i], k = r[COL.id] + "\u0000" + r[COL.repeat];
      if (!seen[k]) { seen[k] = 1; keys.push(k); }
    });
    keys.slice(0, GRID_PAGE).forEach(function (k) {
      var cells = byCase[k];
      /** @type {number | null} */ var any = null;
      Object.keys(cells).forEach(function (v) { if (any === null) any = cells[v]; });
      var r0 = D.rows[any];
      var tr = el("tr", { class: "grid-row", "data-case": r0[COL.id] });
      function fill(diff) {
        clear(tr);
        tr.appendChild(el("td", null, [el("div", { text: r0[COL.id] + (r0[COL.repeat] ? " [repeat-" + r0[COL.repeat] + "]" : "") }),
          r0[COL.input] ? el("div", { class: "muted input", text: r0[COL.input] }) : null]));  // passed rows
        tr.appendChild(el("td", { text: r0[COL.slice] }));
        var first = null;
        columns.forEach(function (v, n) {
          var i = v === null ? any : cells[v];
          if (i === undefined) { tr.appendChild(el("td", { class: "muted", text: "-" })); return; }
          var r = D.rows[i];
          tr.appendChild(gridCell(r[COL.outcome], outputOf(r), r[COL.failed], n === 0 ? null : first, diff));
          if (n === 0) first = outputOf(r) || "";
        });
        if (BASE) {
          var b = BASE[columns[0] === null ? any : cells[columns[0]]];
          if (typeof b === "string") b = [b, first];  // the same output as this run's first column
          tr.appendChild(b ? gridCell(b[0], b[1], "", first, diff) : el("td", { class: "muted", text: "not in the baseline" }));
        }
        var button = el("button", { type: "button", class: "diff-toggle", text: diff ? "plain" : "diff" });
        button.addEventListener("click", function () { fill(!diff); });
        tr.appendChild(el("td", null, [button]));
      }
      fill(false);
      body.appendChild(tr);
    });
  }

  document.getElementById("grid-note").textContent = "Each case a row, each variant (and the baseline) a " +
    "column; the filters above apply. Failed checks are marked under each output; \"diff\" compares a row " +
    "with its first column. The grid and the search see up to 4,000 characters of the prompt and output " +
    "of a case that failed, errored or awaits review, and the first " + D.grid_text + " characters of a " +
    "passed case's output and " + Math.floor(D.grid_text / 2) + " of its input (results.jsonl has them whole).";
  renderVerdict();
  renderChart();
  renderSlices();
  renderTrend();
  renderUsage();
  renderGroups();
  renderDiff();
  renderReview();
  renderCases();
  document.documentElement.setAttribute("data-rendered", "1");
})();
