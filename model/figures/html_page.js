/* Transformer Explorer's interactive page (model/figures/html_page.py writes it): reads the trace's JSON from
   #trace-data, draws the focus heatmap (an HTML table whose cells carry data-value) and the grid of every layer x
   head (one canvas per map), and redraws on every choice. Plain JavaScript, no library, nothing fetched. Token
   labels are only ever written as text (textContent, title), never as HTML. */
"use strict";
window.addEventListener("error", (event) => {
  const box = document.getElementById("error");
  box.textContent = "This page could not draw its views: " + event.message;
  box.hidden = false;
});
(function () {
  const data = JSON.parse(document.getElementById("trace-data").textContent);
  const $ = (id) => document.getElementById(id);
  const AGGREGATES = { mean: "mean over heads", max: "max over heads", rollout: "rollout" };
  const state = { kind: 0, layer: 0, head: "mean", step: data.n_steps };

  // --- colours: the colour map's stops, interpolated --------------------------------------------------------
  const stops = data.colormap.stops;
  function rgb(value) {
    const v = Math.min(1, Math.max(0, Number(value))) * (stops.length - 1);
    const low = Math.floor(v), high = Math.min(stops.length - 1, low + 1), t = v - low;
    const channel = (i) => Math.round(stops[low][i] + (stops[high][i] - stops[low][i]) * t);
    return "rgb(" + channel(0) + "," + channel(1) + "," + channel(2) + ")";
  }
  function format(value) {
    if (value === null || value === undefined) return "—";
    const v = Number(value);
    return v === 0 || Math.abs(v) >= 1e-4 ? v.toFixed(4) : v.toExponential(2);
  }

  // --- the selection: the request's, then the address's query and hash (layers and heads from 1) -----------
  function choose(text) {
    const params = new URLSearchParams(text.replace(/^[?#]/, ""));
    const kind = data.kinds.findIndex((k) => k.name === params.get("kind"));
    if (kind >= 0) state.kind = kind;
    const layer = parseInt(params.get("layer"), 10);
    if (layer >= 1) state.layer = layer - 1;
    const head = params.get("head");
    if (head !== null) state.head = /^\d+$/.test(head) ? parseInt(head, 10) - 1 : head;
    const step = parseInt(params.get("step"), 10);
    if (step >= 0) state.step = step;
  }
  function fit() {
    const kind = data.kinds[state.kind];
    state.layer = Math.min(Math.max(0, state.layer), kind.weights.length - 1);
    if (!kind.choices.includes(state.head)) state.head = kind.choices.includes("mean") ? "mean" : kind.choices[0];
    state.step = Math.min(Math.max(0, state.step), data.n_steps);
  }
  function address() {
    const head = typeof state.head === "number" ? String(state.head + 1) : state.head;
    return "kind=" + data.kinds[state.kind].name + "&layer=" + (state.layer + 1) + "&head=" + head + "&step=" + state.step;
  }

  // --- the matrices, as the app computes them from the trace at the step ------------------------------------
  function shape(kind) {  // [rows, keys] shown at the current step
    const rows = kind.rows_at_step ? kind.rows_at_step[state.step] : kind.queries.length;
    return [rows, kind.causal ? rows : kind.keys.length];
  }
  function cut(map, rows, keys) {
    return map.slice(0, rows).map((row) => row.slice(0, keys));
  }
  function meanOfHeads(heads) {
    return heads[0].map((row, i) => row.map((_, j) => heads.reduce((sum, h) => sum + h[i][j], 0) / heads.length));
  }
  function rollout(kind, layer, rows) {
    let total = null;
    for (let l = 0; l <= layer; l++) {
      const mean = meanOfHeads(kind.weights[l].map((map) => cut(map, rows, rows)));
      const mixed = mean.map((row, i) => {
        const r = row.map((v, j) => 0.5 * v + (i === j ? 0.5 : 0));
        const sum = r.reduce((a, b) => a + b, 0);
        return r.map((v) => v / sum);
      });
      total = total === null ? mixed : mixed.map((row) => total[0].map((_, j) => row.reduce((a, v, k) => a + v * total[k][j], 0)));
    }
    return total;
  }
  function matrix(kind, layer, head) {
    const [rows, keys] = shape(kind);
    if (!rows || !keys) return [];
    if (typeof head === "number") return cut(kind.weights[layer][head], rows, keys);
    const heads = kind.weights[layer].map((map) => cut(map, rows, keys));
    if (head === "mean") return meanOfHeads(heads);
    if (head === "max") return heads[0].map((row, i) => row.map((_, j) => Math.max(...heads.map((h) => h[i][j]))));
    return rollout(kind, layer, rows);
  }

  // --- the controls -----------------------------------------------------------------------------------------
  function options(select, items) {
    select.replaceChildren(...items.map(([value, text]) => Object.assign(document.createElement("option"), { value, textContent: text })));
  }
  function headName(kind, choice) {
    return typeof choice === "number" ? kind.head_titles[choice] : AGGREGATES[choice];
  }
  function fillControls() {
    const kind = data.kinds[state.kind];
    options($("kind"), data.kinds.map((k, i) => [String(i), k.label]));
    options($("layer"), kind.layer_titles.map((t, i) => [String(i), t]));
    options($("head"), kind.choices.map((c) => [String(c), headName(kind, c)]));
    $("kind").value = String(state.kind);
    $("layer").value = String(state.layer);
    $("head").value = String(state.head);
    $("step").max = String(data.n_steps);
    $("step").value = String(state.step);
    $("step-control").hidden = !data.n_steps;
    const token = state.step ? " · “" + data.step_tokens[state.step - 1] + "”" : " · nothing decoded yet";
    $("step-label").textContent = "step " + state.step + " of " + data.n_steps + token;
  }

  // --- the focus heatmap ------------------------------------------------------------------------------------
  const measure = document.createElement("canvas").getContext("2d");
  function textWidth(labels, font) {
    measure.font = font;
    return Math.max(0, ...labels.map((label) => measure.measureText(label).width));
  }
  function drawFocus() {
    const kind = data.kinds[state.kind];
    const values = matrix(kind, state.layer, state.head);
    const [rows, keys] = shape(kind);
    const nq = kind.queries.length, nk = kind.keys.length;
    const queryWidth = Math.min(textWidth(kind.queries, "12px sans-serif"), 170);
    const room = Math.min(window.innerWidth * 0.58, 980) - queryWidth - 110;
    const cell = Math.max(12, Math.min(40, Math.floor(room / Math.max(nk, 1))));
    const table = $("focus");
    table.style.setProperty("--cell", cell + "px");
    table.classList.toggle("rotated", textWidth(kind.keys, "12px sans-serif") + 6 > cell);
    const current = kind.rows_at_step && rows ? rows - 1 : -1;
    const head = document.createElement("tr");
    head.appendChild(document.createElement("th"));
    kind.keys.forEach((label, j) => {
      const th = Object.assign(document.createElement("th"), { className: "key", title: label, scope: "col" });
      th.appendChild(Object.assign(document.createElement("span"), { textContent: label }));
      if (j >= keys) th.style.visibility = "hidden";
      head.appendChild(th);
    });
    const body = document.createElement("tbody");
    for (let i = 0; i < nq; i++) {
      const tr = document.createElement("tr");
      tr.className = i === current ? "current" : i >= rows ? "later" : "";
      const th = Object.assign(document.createElement("th"), { className: "query", scope: "row", textContent: kind.queries[i], title: kind.queries[i] });
      if (i >= rows) th.style.visibility = "hidden";
      tr.appendChild(th);
      for (let j = 0; j < nk; j++) {
        const td = document.createElement("td");
        if (i < rows && j < keys && values[i][j] !== null) {
          td.className = "cell" + (j === 0 ? " first" : "") + (j === keys - 1 ? " last" : "");
          td.dataset.row = i;
          td.dataset.col = j;
          td.dataset.value = String(values[i][j]);
          td.style.background = rgb(values[i][j]);
        }
        tr.appendChild(td);
      }
      body.appendChild(tr);
    }
    const thead = document.createElement("thead");
    thead.appendChild(head);
    table.replaceChildren(thead, body);
    const shownHead = typeof state.head === "number" ? String(state.head + 1) : state.head;  // as in the address, from 1
    Object.assign(table.dataset, { kind: kind.name, layer: state.layer + 1, head: shownHead, step: state.step, rows, keys });
    $("empty").hidden = rows > 0 && keys > 0;
    $("empty").textContent = "No rows yet (step 0): step forward to see them.";
    $("focus-title").textContent = kind.titles[state.layer][kind.choices.indexOf(state.head)];
    [$("query-axis").textContent, $("key-axis").textContent] = kind.axis_names;
    drawColourBar(Math.max(nq * cell, 140));
  }
  function drawColourBar(height) {
    const bar = $("colour-bar");
    bar.style.height = height + "px";
    const gradient = stops.map((s, i) => "rgb(" + s.join(",") + ") " + ((100 * i) / (stops.length - 1)).toFixed(2) + "%");
    bar.querySelector(".bar").style.background = "linear-gradient(to top, " + gradient.join(", ") + ")";
    const ticks = [0, 0.25, 0.5, 0.75, 1].map((v) => {
      const span = Object.assign(document.createElement("span"), { textContent: v.toFixed(2) });
      span.style.bottom = 100 * v + "%";
      return span;
    });
    bar.querySelector(".ticks").replaceChildren(...ticks);
    bar.querySelector(".bar-name").textContent = data.value_label;
  }

  // --- the grid of every layer x head -----------------------------------------------------------------------
  function drawGrid() {
    const kind = data.kinds[state.kind];
    const [rows, keys] = shape(kind);
    const nq = Math.max(kind.queries.length, 1), nk = Math.max(kind.keys.length, 1);
    const nLayers = kind.weights.length, nHeads = kind.head_titles.length;
    const grid = $("grid");
    const width = grid.parentElement.clientWidth || 600;
    const labelWidth = textWidth(kind.layer_titles, "12px sans-serif") + 12;
    const cell = Math.max(1, Math.min(16, (width - labelWidth - 8 * nHeads) / nHeads / nk));  // CSS pixels, maybe fractional
    const scale = Math.max(1, Math.min(nq * cell > 2000 ? 1 : 2, window.devicePixelRatio || 1));
    const edges = (count) => Array.from({ length: count + 1 }, (_, i) => Math.round(i * cell * scale));  // device pixels
    const xs = edges(nk), ys = edges(nq);
    grid.style.gridTemplateColumns = "auto repeat(" + nHeads + ", auto)";
    const parts = [document.createElement("span")];
    kind.head_titles.forEach((t) => parts.push(Object.assign(document.createElement("span"), { className: "head-title", textContent: t })));
    for (let layer = 0; layer < nLayers; layer++) {
      const selected = layer === state.layer ? " selected" : "";
      parts.push(Object.assign(document.createElement("span"), { className: "layer-title" + selected, textContent: kind.layer_titles[layer] }));
      for (let head = 0; head < nHeads; head++) {
        const canvas = document.createElement("canvas");
        canvas.width = xs[nk];
        canvas.height = ys[nq];
        canvas.style.width = xs[nk] / scale + "px";
        canvas.style.height = ys[nq] / scale + "px";
        Object.assign(canvas.dataset, { layer, head, cell });
        canvas.title = kind.layer_titles[layer] + ", " + kind.head_titles[head];
        canvas.classList.toggle("selected", layer === state.layer && head === state.head);
        const context = canvas.getContext("2d");
        context.fillStyle = "#f4f5f7";
        context.fillRect(0, 0, xs[nk], ys[nq]);
        const map = kind.weights[layer][head];
        for (let i = 0; i < rows; i++) {
          for (let j = 0; j < keys; j++) {
            if (map[i][j] === null) continue;
            context.fillStyle = rgb(map[i][j]);
            context.fillRect(xs[j], ys[i], xs[j + 1] - xs[j], ys[i + 1] - ys[i]);
          }
        }
        if (kind.rows_at_step && rows) {
          const line = Math.max(1, Math.min(2 * scale, Math.round((ys[rows] - ys[rows - 1]) / 3)));
          context.strokeStyle = data.highlight;
          context.lineWidth = line;
          context.strokeRect(line / 2, ys[rows - 1] + line / 2, xs[keys] - line, ys[rows] - ys[rows - 1] - line);
        }
        parts.push(canvas);
      }
    }
    grid.replaceChildren(...parts);
    $("grid-title").textContent = kind.label + ": every layer and head";
  }

  // --- the caption, hover and wiring ------------------------------------------------------------------------
  function drawCaption() {
    const output = data.outputs[Math.min(state.step, data.outputs.length - 1)];
    const lines = [data.source, output, data.values[state.step], ...data.details].filter((line) => line);
    $("caption").replaceChildren(...lines.map((line) => Object.assign(document.createElement("p"), { textContent: line })));
  }
  function refresh(remember) {
    fit();
    fillControls();
    drawCaption();
    drawFocus();
    drawGrid();
    if (remember) {
      try { history.replaceState(null, "", "#" + address()); } catch (error) { /* some browsers refuse it on file: pages */ }
    }
  }
  function show(event, lines) {
    const tip = $("tooltip");
    tip.replaceChildren(...lines.map((line) => Object.assign(document.createElement("div"), { textContent: line })));
    tip.hidden = false;
    const x = Math.min(event.clientX + 14, window.innerWidth - tip.offsetWidth - 4);
    const y = event.clientY + 16 + tip.offsetHeight > window.innerHeight ? event.clientY - tip.offsetHeight - 8 : event.clientY + 16;
    Object.assign(tip.style, { left: x + "px", top: y + "px" });
    $("readout").textContent = lines.join(" · ");
  }
  function cellLines(kind, i, j, value, where) {
    return [where, kind.axis_names[0] + ": “" + kind.queries[i] + "” (" + (i + 1) + ")",
      kind.axis_names[1] + ": “" + kind.keys[j] + "” (" + (j + 1) + ")", data.value_label + ": " + format(value)];
  }
  $("focus").addEventListener("mousemove", (event) => {
    const td = event.target.closest("td.cell");
    if (!td) { $("tooltip").hidden = true; return; }
    const kind = data.kinds[state.kind];
    show(event, cellLines(kind, Number(td.dataset.row), Number(td.dataset.col), td.dataset.value, $("focus-title").textContent));
  });
  $("grid").addEventListener("mousemove", (event) => {
    const canvas = event.target.closest("canvas");
    if (!canvas) { $("tooltip").hidden = true; return; }
    const kind = data.kinds[state.kind], [rows, keys] = shape(kind), cell = Number(canvas.dataset.cell);
    const i = Math.floor(event.offsetY / cell), j = Math.floor(event.offsetX / cell);
    const layer = Number(canvas.dataset.layer), head = Number(canvas.dataset.head);
    if (i >= rows || j >= keys) { $("tooltip").hidden = true; return; }
    show(event, cellLines(kind, i, j, kind.weights[layer][head][i][j], canvas.title));
  });
  for (const id of ["focus", "grid"]) $(id).addEventListener("mouseleave", () => { $("tooltip").hidden = true; });
  $("grid").addEventListener("click", (event) => {
    const canvas = event.target.closest("canvas");
    if (!canvas) return;
    state.layer = Number(canvas.dataset.layer);
    const kind = data.kinds[state.kind];
    state.head = kind.choices.includes(Number(canvas.dataset.head)) ? Number(canvas.dataset.head) : kind.choices[0];
    refresh(true);
  });
  $("kind").addEventListener("change", () => { state.kind = Number($("kind").value); refresh(true); });
  $("layer").addEventListener("change", () => { state.layer = Number($("layer").value); refresh(true); });
  $("head").addEventListener("change", () => {
    const value = $("head").value;
    state.head = /^\d+$/.test(value) ? Number(value) : value;
    refresh(true);
  });
  $("step").addEventListener("input", () => { state.step = Number($("step").value); refresh(true); });
  let resizing = 0;
  window.addEventListener("resize", () => { clearTimeout(resizing); resizing = setTimeout(() => refresh(false), 150); });
  window.addEventListener("hashchange", () => { choose(location.hash); refresh(false); });

  state.kind = Math.max(0, data.kinds.findIndex((k) => k.name === data.initial.kind));
  Object.assign(state, { layer: data.initial.layer, head: data.initial.head, step: data.initial.step });
  choose(location.search);
  choose(location.hash);
  refresh(false);
  document.documentElement.dataset.ready = "yes";
})();
