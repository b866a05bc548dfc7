// marketarena episode viewer: the page's tables (DataTables, from the itables package's bundle),
// the step filter of the timeline, its small charts (SVG, drawn by ./chart.js) and the decisions'
// filters. DataTables is served by the viewer itself (/vendor/), never from a CDN.
import DataTable from "/vendor/dt_bundle.js";
import { lineChart } from "./chart.js";

const text = DataTable.render.text();  // cells are text, never HTML
const tables = [];

function payloadOf(id) {
  return JSON.parse(document.getElementById(id).textContent);
}

// reached from a player's page (?player=): that player's seats, marked in every table
const focus = document.getElementById("focus") ? payloadOf("focus") : { player: "", seats: [] };

function show(entry, rows) {
  entry.dt.clear();
  entry.dt.rows.add(rows);
  entry.dt.draw();
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
  const seat = at("agent_id");
  // the rows are added once it is built: DataTables deep-copies the data its options hold
  const dt = new DataTable(el, {
    columns, deferRender: true, pageLength: 25, lengthMenu: [10, 25, 100, 1000], order: [],
    autoWidth: false,  // no measuring of every column on a hidden copy of the table
    createdRow: (tr, row) => {
      if (seat >= 0 && focus.seats.includes(row[seat])) tr.classList.add("focus");
    },
  });
  const entry = { el, dt, payload, step: at("step") };
  show(entry, payload.data);
  tables.push(entry);
});

// the timeline's small charts: a few SVG elements each, drawn with the tables
const charts = [];
document.querySelectorAll("[data-plots]").forEach((box) => {
  payloadOf(box.dataset.plots).forEach((p) => {
    const div = document.createElement("div");
    div.className = "plot";
    box.appendChild(div);
    charts.push(lineChart(div, p));
  });
});

const select = document.getElementById("step");
function selectStep() {
  const s = select.value;
  tables.filter((t) => t.el.classList.contains("timeline") && t.step >= 0).forEach((t) => {
    show(t, s === "" ? t.payload.data : t.payload.data.filter((r) => String(r[t.step]) === s));
  });
  charts.forEach((c) => c.mark(s === "" ? null : +s));
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

// the decisions: the focused player's seats only (checked when there is one, so the first
// decision link opens its seat), LLM decisions only, invalid attempts only, re-asked decisions
// only (combined)
const decisionsTable = tables.find((x) => x.el.id === "decisions-table");
const filterBoxes = ["seat-only", "llm-only", "invalid-only", "reasked-only"]
  .map((id) => document.getElementById(id));
if (decisionsTable) {
  const col = (name) => decisionsTable.payload.columns.indexOf(name);
  const tests = [(r) => focus.seats.includes(r[col("agent_id")]), (r) => r[col("llm")],
                 (r) => r[col("valid")] === false, (r) => r[col("reasked")]];
  const filter = () => {
    const on = tests.filter((_, i) => filterBoxes[i] && filterBoxes[i].checked);
    show(decisionsTable, decisionsTable.payload.data.filter((r) => on.every((t) => t(r))));
  };
  filterBoxes.forEach((box) => box && box.addEventListener("change", filter));
  if (filterBoxes.some((box) => box && box.checked)) filter();
}
