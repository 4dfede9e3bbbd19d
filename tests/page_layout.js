(function (columnSelector, chartSelector) {
  // Where a page's text column, charts and legends sit, and what sticks out of the window (tests/page_layout.py).
  function box(el) {
    var r = el.getBoundingClientRect();
    return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width};
  }
  function name(el) {
    var classes = Array.from(el.classList).slice(0, 3).map(function (c) { return "." + c; }).join("");
    return el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + classes;
  }
  var view = document.documentElement.clientWidth;
  var main = document.querySelector(columnSelector);
  var column = {left: 0, right: view, width: view, found: !!main};
  if (main) {  // the column's content box: its text runs between the paddings
    var style = getComputedStyle(main), r = main.getBoundingClientRect();
    column.left = r.left + parseFloat(style.paddingLeft);
    column.right = r.right - parseFloat(style.paddingRight);
    column.width = column.right - column.left;
  }
  var charts = Array.from(document.querySelectorAll(chartSelector)).map(function (el) {
    var scroller = el.closest(".lab-chart-scroll");
    if (scroller && getComputedStyle(scroller).overflowX === "visible") scroller = null;  // a box that does not scroll
    var drawn = el.querySelector(".lab-chart-view") || el.querySelector("svg") || el;
    var figure = el.closest("[id^='fig-']");
    var svg = el.querySelector("svg");
    return {id: el.id, figure: figure ? figure.id : null, scrolls: !!scroller, box: box(scroller || drawn),
            svg: svg ? box(svg) : null, legends: Array.from(el.querySelectorAll("svg .role-legend")).map(box)};
  });
  // Every table shown, and whether it is wider than the box it sits in (which then scrolls sideways or clips it).
  var tables = Array.from(main ? main.querySelectorAll("table") : []).filter(function (el) {
    return el.offsetWidth > 0;
  }).map(function (el, i) {
    var up = el.parentElement, style = getComputedStyle(up);
    var room = up.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    var caption = el.closest("[id^='tbl-']");
    return {name: caption ? caption.id : "table " + (i + 1), width: el.offsetWidth, room: room,
            cards: el.classList.contains("lab-cards"), box: box(el)};
  });
  // What sticks out of the window with no box around it that scrolls or clips it: the outermost such elements.
  var wide = [];
  Array.from(document.body.querySelectorAll("*")).forEach(function (el) {
    var r = el.getBoundingClientRect();
    if (r.right <= view + 1 || r.width === 0 || getComputedStyle(el).position === "fixed") return;
    for (var up = el.parentElement; up && up !== document.body; up = up.parentElement) {
      if (getComputedStyle(up).overflowX !== "visible") return;
      if (up.getBoundingClientRect().right > view + 1) return;
    }
    wide.push({element: name(el), right: Math.round(r.right)});
  });
  return JSON.stringify({view: view, scroll: document.documentElement.scrollWidth, column: column, charts: charts, tables: tables,
                         wide: wide.slice(0, 5)});
})
