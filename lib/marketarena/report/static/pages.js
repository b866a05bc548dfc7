// marketarena results site: a few lines of plain JavaScript, no library, loaded with a plain
// <script> (allowed from file://, unlike modules and fetch). Everything shown from the pipeline's
// files is set as text (textContent), never as HTML.
"use strict";

// How the run went (run-info.js, written beside the pages but not part of the results)
document.querySelectorAll("[data-run-info]").forEach(function (el) {
  var info = window.RUN_INFO && window.RUN_INFO[el.dataset.runInfo];
  if (!info || !info.episodes) { el.textContent = "not recorded"; return; }
  var calls = 0, cached = 0, retries = 0;
  Object.keys(info.llm).forEach(function (m) {
    calls += info.llm[m].calls; cached += info.llm[m].cached_calls; retries += info.llm[m].retries;
  });
  var text = info.wall_time_s.toFixed(1) + " s of episode wall time over " + info.episodes + " episodes";
  if (calls) {
    text += "; $" + info.cost_usd.toFixed(4) + " spent; " + cached + " of " + calls +
      " LLM calls from the cache, " + retries + " HTTP retries";
  } else { text += "; no LLM call"; }
  el.textContent = text;
});

// Sortable tables: a click on a column's header sorts by it (again: the other way). A cell sorts
// by its data-sort number, else by the number it starts with ("6.41 [5.52, 7.64]", "1,234",
// "62%"), else by its text; empty cells ("–") last either way.
function sortKey(cell) {
  if (!cell) { return null; }
  if (cell.dataset.sort !== undefined) { return parseFloat(cell.dataset.sort); }
  var text = cell.textContent.trim();
  var m = /^[-−]?[\d,]*\.?\d+(e[-+]?\d+)?/i.exec(text);
  if (m) { return parseFloat(m[0].replace(/,/g, "").replace("−", "-")); }
  return text === "" || text === "–" ? null : text.toLowerCase();
}

function compareKeys(a, b) {
  if (a === null || b === null) { return a === b ? 0 : a === null ? 1 : -1; }
  if (typeof a === typeof b) { return a < b ? -1 : a > b ? 1 : 0; }
  return typeof a === "number" ? -1 : 1;
}

function sortable(table) {
  var head = table.tHead;
  if (!head || !table.tBodies.length || head.rows.length !== 1) { return; }
  Array.prototype.forEach.call(head.rows[0].cells, function (th, column) {
    th.classList.add("sortable");
    th.tabIndex = 0;
    th.title = th.title || "sort by this column";
    var sort = function () {
      var body = table.tBodies[0];
      var down = th.getAttribute("aria-sort") !== "descending";
      var rows = Array.prototype.slice.call(body.rows);
      var keyed = rows.map(function (row, i) { return [sortKey(row.cells[column]), i, row]; });
      keyed.sort(function (x, y) {
        var c = compareKeys(x[0], y[0]);
        if (x[0] !== null && y[0] !== null && down) { c = -c; }
        return c || x[1] - y[1];
      });
      Array.prototype.forEach.call(head.rows[0].cells, function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", down ? "descending" : "ascending");
      keyed.forEach(function (k) { body.appendChild(k[2]); });
    };
    th.addEventListener("click", sort);
    th.addEventListener("keydown", function (e) { if (e.key === "Enter") { sort(); } });
  });
}
// (not the viewer's DataTables, data-source, nor its lists sorted on the server, .paged)
document.querySelectorAll("main table:not([data-source]):not(.paged)").forEach(sortable);

// Compare two players: their board rows side by side, and how they fared against each other
var form = document.getElementById("compare");
var pairs = document.getElementById("versus-data");
if (form && pairs) {
  var data = JSON.parse(pairs.textContent);
  var board = document.querySelector("table.board");
  var out = form.querySelector(".compared");
  var show = function () {
    var a = form.elements.a.value, b = form.elements.b.value;
    out.textContent = "";
    var p = document.createElement("p");
    var met = data.filter(function (r) { return r.player === a && r.opponent === b; })[0];
    if (a === b) {
      p.textContent = "Pick two different players.";
    } else if (met) {
      p.textContent = a + " scored above " + b + " in " + Math.round(100 * met.win_share) +
        "% of the " + met.games + " games they met (mean score difference " +
        met.mean_difference.toPrecision(3) + "). ";
      var link = document.createElement("a");
      link.href = form.dataset.viewer + "/i/" + encodeURIComponent(form.dataset.instance) +
        "/compare?" + new URLSearchParams({ a: a, b: b }).toString();
      link.textContent = "Their shared games in the viewer";
      p.appendChild(link);
    } else {
      p.textContent = a + " and " + b + " never met in a game.";
    }
    out.appendChild(p);
    if (board && a !== b) {
      var table = document.createElement("table");
      table.className = "compared-rows";
      table.appendChild(board.tHead.cloneNode(true));
      var body = document.createElement("tbody");
      Array.prototype.forEach.call(board.tBodies[0].rows, function (row) {
        var who = row.getAttribute("data-player");
        if (who === a || who === b) { body.appendChild(row.cloneNode(true)); }
      });
      table.appendChild(body);
      var box = document.createElement("div");
      box.className = "scroll";
      box.appendChild(table);
      out.appendChild(box);
    }
  };
  form.addEventListener("change", show);
  form.addEventListener("submit", function (e) { e.preventDefault(); show(); });
  show();
}
