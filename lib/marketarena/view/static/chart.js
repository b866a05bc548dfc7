// marketarena episode viewer: the timeline's small line charts, drawn as SVG by this module (a
// few KB) where plotly.js (4.8 MB) drew them before. What a chart shows, as plotly's did: its
// title, one line per seat (a gap where a value is missing; a lone value as a dot), a legend when
// there are 2 to 12 lines, ticks on both axes, the x axis titled "step", and a dotted vertical
// marker at the step selected. Every text (title, names, ticks) is set with textContent: a name
// an agent chose stays text.
const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 440, HEIGHT = 240;
const MARGIN = { left: 50, right: 12, top: 24, bottom: 34 };
const LEGEND = { width: 118, row: 14, max: 12 };
const COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                 "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#ad494a"];
const numberFormat = new Intl.NumberFormat("en", { maximumSignificantDigits: 4 });
const compactFormat = new Intl.NumberFormat("en", { notation: "compact",
                                                    maximumSignificantDigits: 3 });

function node(name, attributes = {}, parent = null) {
  const el = document.createElementNS(SVG, name);
  Object.entries(attributes).forEach(([k, v]) => el.setAttribute(k, String(v)));
  if (parent) parent.appendChild(el);
  return el;
}

function label(parent, text, attributes) {
  const el = node("text", attributes, parent);
  el.textContent = text;
  return el;
}

// about `count` round values (1, 2 or 5 times a power of ten) spanning [lo, hi]
function ticks(lo, hi, count) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = power * ([1, 2, 5, 10].find((m) => m * power >= raw) || 10);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
    out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  }
  return out;
}

function tickText(v) {
  return Math.abs(v) >= 1e5 ? compactFormat.format(v) : numberFormat.format(v);
}

function extent(values) {
  let lo = Infinity, hi = -Infinity;
  values.forEach((v) => {
    if (v !== null && Number.isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
  });
  if (lo > hi) return [0, 1];
  if (lo === hi) { lo -= 1; hi += 1; }
  return [lo, hi];
}

// the path of one line: a new segment after each missing value, a lone value as a dot
function pathOf(xs, ys, x, y) {
  const known = (v) => v !== null && v !== undefined && Number.isFinite(v);
  let d = "", drawing = false;
  xs.forEach((xv, i) => {
    const yv = ys[i];
    if (!known(yv)) { drawing = false; return; }
    const alone = !drawing && !known(ys[i + 1]);
    d += `${drawing ? "L" : "M"}${x(xv).toFixed(1)},${y(yv).toFixed(1)}${alone ? "h0" : ""}`;
    drawing = true;
  });
  return d;
}

// draw `plot` ({title, lines: [{name, x, y}]}) into `box`; returns {svg, mark(step or null)}
export function lineChart(box, plot) {
  const legend = plot.lines.length > 1 && plot.lines.length <= LEGEND.max;
  const right = WIDTH - MARGIN.right - (legend ? LEGEND.width : 0);
  const bottom = HEIGHT - MARGIN.bottom;
  const svg = node("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: "chart", role: "img",
                            "font-family": "system-ui, sans-serif", "font-size": 10 }, box);
  svg.setAttribute("aria-label", plot.title);
  label(svg, plot.title, { x: MARGIN.left, y: 15, "font-size": 12, fill: "#222", class: "title" });
  const [x0, x1] = extent(plot.lines.flatMap((l) => l.x));
  const [lo, hi] = extent(plot.lines.flatMap((l) => l.y));
  const [y0, y1] = [lo - (hi - lo) * 0.05, hi + (hi - lo) * 0.05];  // lines clear of the frame
  const x = (v) => MARGIN.left + (v - x0) / (x1 - x0) * (right - MARGIN.left);
  const y = (v) => bottom - (v - y0) / (y1 - y0) * (bottom - MARGIN.top);
  const axes = node("g", { class: "axes", stroke: "#ccc", "stroke-width": 1 }, svg);
  const frame = { stroke: "#888" };
  node("line", { x1: MARGIN.left, x2: right, y1: bottom, y2: bottom, ...frame }, axes);
  node("line", { x1: MARGIN.left, x2: MARGIN.left, y1: MARGIN.top, y2: bottom, ...frame }, axes);
  ticks(x0, x1, 6).filter(Number.isInteger).forEach((v) => {  // steps are whole numbers
    node("line", { x1: x(v), x2: x(v), y1: bottom, y2: bottom + 4, stroke: "#888" }, axes);
    label(svg, tickText(v), { x: x(v), y: bottom + 14, "text-anchor": "middle", fill: "#444",
                              class: "tick x" });
  });
  ticks(y0, y1, 5).forEach((v) => {
    node("line", { x1: MARGIN.left, x2: right, y1: y(v), y2: y(v),
                   "stroke-dasharray": "1 2" }, axes);  // a grid line
    label(svg, tickText(v), { x: MARGIN.left - 4, y: y(v) + 3, "text-anchor": "end", fill: "#444",
                              class: "tick y" });
  });
  label(svg, "step", { x: (MARGIN.left + right) / 2, y: HEIGHT - 4, "text-anchor": "middle",
                       fill: "#444" });
  plot.lines.forEach((line, i) => {
    const colour = COLOURS[i % COLOURS.length];
    const path = node("path", { d: pathOf(line.x, line.y, x, y), fill: "none", stroke: colour,
                                "stroke-width": 1.5, "stroke-linecap": "round",
                                "stroke-linejoin": "round", class: "line" }, svg);
    node("title", {}, path).textContent = line.name;  // its name on hover
    if (legend) {
      const row = MARGIN.top + 4 + i * LEGEND.row;
      const item = node("g", { class: "legend" }, svg);
      node("line", { x1: right + 8, x2: right + 22, y1: row, y2: row, stroke: colour,
                     "stroke-width": 2 }, item);
      const name = line.name.length > 18 ? line.name.slice(0, 17) + "…" : line.name;
      label(item, name, { x: right + 26, y: row + 3, fill: "#222" });
      node("title", {}, item).textContent = line.name;
    }
  });
  const marker = node("line", { y1: MARGIN.top, y2: bottom, stroke: "#888", "stroke-width": 1,
                                "stroke-dasharray": "2 3", class: "marker",
                                visibility: "hidden" }, svg);
  return {
    svg,
    mark(step) {
      const shown = step !== null && step >= x0 && step <= x1;
      marker.setAttribute("visibility", shown ? "visible" : "hidden");
      if (shown) { marker.setAttribute("x1", x(step)); marker.setAttribute("x2", x(step)); }
    },
  };
}
