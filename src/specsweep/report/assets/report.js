// specsweep report: sortable tables (click or Enter on a header). The page is complete without it.
(function () {
  "use strict";
  function key(td, numeric) {
    if (!td) return numeric ? NaN : "";
    var raw = td.hasAttribute("data-sort") ? td.getAttribute("data-sort") : td.textContent.trim();
    if (!numeric) return raw.toLowerCase();
    var x = parseFloat(raw);
    return isFinite(x) ? x : NaN;
  }
  function sortBy(table, th) {
    var ths = Array.prototype.slice.call(th.parentNode.children);
    var col = ths.indexOf(th);
    var numeric = th.getAttribute("data-type") === "num";
    var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
    ths.forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
    var tbody = table.tBodies[0];
    var rows = Array.prototype.slice.call(tbody.rows).map(function (tr, i) {
      return { tr: tr, k: key(tr.cells[col], numeric), i: i };
    });
    rows.sort(function (a, b) {
      var an = numeric ? isNaN(a.k) : a.k === "", bn = numeric ? isNaN(b.k) : b.k === "";
      if (an || bn) return an === bn ? a.i - b.i : (an ? 1 : -1); // blanks last either way
      if (a.k < b.k) return -dir;
      if (a.k > b.k) return dir;
      return a.i - b.i; // stable
    });
    rows.forEach(function (r) { tbody.appendChild(r.tr); });
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.classList.add("js-sortable");
    table.querySelectorAll("thead th").forEach(function (th) {
      th.tabIndex = 0;
      th.addEventListener("click", function () { sortBy(table, th); });
      th.addEventListener("keydown", function (ev) {
        if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); sortBy(table, th); }
      });
    });
  });
})();
