// marketarena episode viewer: the page's tables (DataTables, from the itables package's bundle),
// the step filter of the timeline and its small plots (plotly.js, from the plotly package).
// Both libraries are served by the viewer itself (/vendor/), never from a CDN.
import DataTable from "/vendor/dt_bundle.js";

const text = DataTable.render.text();  // cells are text, never HTML
const tables = [];

function payloadOf(id) {
  return JSON.parse(document.getElementById(id).textContent);
}

document.querySelectorAll("table[data-source]").forEach((el) => {
  const payload = payloadOf(el.dataset.source);
  const columns = payload.columns.map((c) => ({ title: c, render: text }));
  const links = el.dataset.links;
  const at = (name) => payload.columns.indexOf(name);
  if (links) {  // the decisions: a link to each decision's page
    columns.unshift({
      title: "", orderable: false, data: null,
      render: (_, type, row) => {
        const q = new URLSearchParams({ step: row[at("step")], round: row[at("round")],
                                        phase: row[at("phase")], agent: row[at("agent_id")] });
        const a = document.createElement("a");
        a.href = links + "?" + q.toString();
        a.textContent = row[at("llm")] ? "open (LLM)" : "open";
        a.className = row[at("llm")] ? "llm-decision" : "decision";
        return a.outerHTML;
      },
    });
    columns.slice(1).forEach((c, i) => { c.data = i; });
  }
  const dt = new DataTable(el, {
    data: payload.data, columns, deferRender: true, pageLength: 25,
    lengthMenu: [10, 25, 100, 1000], order: [],
  });
  tables.push({ el, dt, payload, step: at("step") });
});

function show(entry, rows) {
  entry.dt.clear();
  entry.dt.rows.add(rows);
  entry.dt.draw();
}

// plotly.js (4.8 MB) loads after the tables are drawn, so it does not hold the page up
const plots = [];
let plotsReady = Promise.resolve();
const plotBoxes = document.querySelectorAll("[data-plots]");
if (plotBoxes.length) {
  plotsReady = new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = "/vendor/plotly.min.js";
    script.onload = resolve;
    script.onerror = () => reject(new Error("plotly.min.js did not load"));
    document.head.appendChild(script);
  }).then(() => plotBoxes.forEach((box) => {
    payloadOf(box.dataset.plots).forEach((p) => {
      const div = document.createElement("div");
      div.className = "plot";
      box.appendChild(div);
      const traces = p.lines.map((l) => ({ x: l.x, y: l.y, name: l.name, type: "scatter",
                                           mode: "lines", line: { width: 1.5 } }));
      window.Plotly.newPlot(div, traces, {
        title: { text: p.title, font: { size: 13 } }, margin: { l: 45, r: 10, t: 30, b: 30 },
        showlegend: p.lines.length > 1 && p.lines.length <= 12, legend: { font: { size: 10 } },
        xaxis: { title: { text: "step" } },
      }, { displayModeBar: false, responsive: true });
      plots.push(div);
    });
  }));
}

const select = document.getElementById("step");
function selectStep() {
  const s = select.value;
  tables.filter((t) => t.el.classList.contains("timeline") && t.step >= 0).forEach((t) => {
    show(t, s === "" ? t.payload.data : t.payload.data.filter((r) => String(r[t.step]) === s));
  });
  plotsReady.then(() => plots.forEach((div) => window.Plotly.relayout(div, {
    shapes: s === "" ? [] : [{ type: "line", xref: "x", yref: "paper", x0: +s, x1: +s, y0: 0, y1: 1,
                               line: { color: "#888", dash: "dot", width: 1 } }],
  })));
}
if (select) {
  select.addEventListener("change", selectStep);
  const move = (d) => {
    const i = Math.min(select.options.length - 1, Math.max(1, select.selectedIndex + d));
    select.selectedIndex = i;
    selectStep();
  };
  document.getElementById("prev-step").addEventListener("click", () => move(-1));
  document.getElementById("next-step").addEventListener("click", () => move(1));
}

// the decisions: LLM decisions only, invalid attempts only, re-asked decisions only (combined)
const decisionsTable = tables.find((x) => x.el.id === "decisions-table");
const filterBoxes = ["llm-only", "invalid-only", "reasked-only"].map((id) => document.getElementById(id));
if (decisionsTable) {
  const col = (name) => decisionsTable.payload.columns.indexOf(name);
  const tests = [(r) => r[col("llm")], (r) => r[col("valid")] === false, (r) => r[col("reasked")]];
  const filter = () => {
    const on = tests.filter((_, i) => filterBoxes[i] && filterBoxes[i].checked);
    show(decisionsTable, decisionsTable.payload.data.filter((r) => on.every((t) => t(r))));
  };
  filterBoxes.forEach((box) => box && box.addEventListener("change", filter));
}
