(function (id, scripts, fallbackRoot, options) {
  // Loads the chart libraries once per page, then draws the chart fitted to the text column; a failure shows in
  // the page and the console. harness/book/render.py calls this once per chart; see its docstring for the why.
  var meta = document.querySelector('meta[name="quarto:offset"]');
  var root = meta ? meta.getAttribute("content") : fallbackRoot;
  if (root && root.slice(-1) !== "/") root += "/";
  function load(src) {
    return new Promise(function (resolve, reject) {
      var tag = document.createElement("script");
      tag.src = root + src;
      tag.onload = resolve;
      tag.onerror = function () { reject(new Error("cannot load " + tag.src)); };
      document.head.appendChild(tag);
    });
  }
  function viaScriptTags() {
    return scripts.reduce(function (ready, src) {
      return ready.then(function () { return load(src); });
    }, Promise.resolve()).then(function () { return window.vegaEmbed; });
  }
  // Where require.js is on the page (Quarto adds it, from a CDN, to pages with HTML cell outputs), the libraries'
  // UMD bundles register as AMD modules instead of globals, so they are asked of require.js by name.
  function viaRequireJs() {
    var paths = {};
    scripts.forEach(function (src) { paths[src.split("/")[1]] = root + src.replace(/\.js$/, ""); });
    window.requirejs.config({paths: paths});
    return new Promise(function (resolve, reject) {
      window.requirejs(["vega-embed"], resolve, function (err) {
        reject(new Error("cannot load the chart libraries through require.js: " + err.message));
      });
    });
  }

  // ---- fitting: every width in the spec times one factor, so the whole chart is as wide as the column ----
  var WIDTH_KEYS = {width: true, continuousWidth: true, discreteWidth: true};
  var DATA_KEYS = {data: true, datasets: true, values: true};  // rows are never sizes, whatever their columns
  function scaled(node, factor) {
    if (Array.isArray(node)) return node.map(function (item) { return scaled(item, factor); });
    if (node === null || typeof node !== "object") return node;
    var copy = {};
    Object.keys(node).forEach(function (key) {
      var value = node[key];
      if (WIDTH_KEYS[key] && typeof value === "number") copy[key] = Math.max(10, value * factor);
      else if (WIDTH_KEYS[key] && value && typeof value.step === "number")
        copy[key] = Object.assign({}, value, {step: Math.max(2, value.step * factor)});
      else copy[key] = DATA_KEYS[key] ? value : scaled(value, factor);
    });
    return copy;
  }
  function withDefaults(spec) {
    // Vega-Lite's own default view sizes, written out so that they scale too.
    var copy = Object.assign({}, spec);
    copy.config = Object.assign({}, spec.config);
    copy.config.view = Object.assign({continuousWidth: 300, discreteWidth: {step: 20}}, copy.config.view);
    return copy;
  }
  // Every legend of the spec (the config's and each encoding's own, which wins over the config's) in `columns`
  // columns, its labels cut at `labelLimit` px (0: never cut).
  function withLegendColumns(node, columns, labelLimit) {
    if (Array.isArray(node)) return node.map(function (item) { return withLegendColumns(item, columns, labelLimit); });
    if (node === null || typeof node !== "object") return node;
    var copy = {};
    Object.keys(node).forEach(function (key) {
      var value = node[key];
      if (key === "legend" && value && typeof value === "object")
        copy[key] = Object.assign({}, value, {columns: columns, labelLimit: labelLimit});
      else copy[key] = DATA_KEYS[key] ? value : withLegendColumns(value, columns, labelLimit);
    });
    if (node.config) copy.config = Object.assign({}, copy.config, {
      legend: Object.assign({}, copy.config.legend, {columns: columns, labelLimit: labelLimit})});
    return copy;
  }

  var el = document.getElementById(id);
  var spec = withDefaults(JSON.parse(document.getElementById(id + "-spec").textContent));
  var fits = !(spec.usermeta && spec.usermeta.lab && spec.usermeta.lab.fit === false);
  var view = null;  // the current embed result
  var holder = null;  // the element vega-embed draws into: an inline block as wide as what it holds

  function draw(embed, candidate) {
    if (view) view.finalize();
    el.innerHTML = "";
    holder = document.createElement("div");
    holder.className = "lab-chart-view";
    el.appendChild(holder);
    return embed(holder, candidate, options).then(function (result) {
      view = result;
      // vega-embed's actions menu opens from an icon alone: its name for a screen reader.
      holder.querySelectorAll("summary").forEach(function (s) { s.setAttribute("aria-label", "Chart actions"); });
      return holder.getBoundingClientRect().width;
    });
  }
  // The legend reaching furthest right: how far from the chart's left edge it ends, where it starts, its entries.
  function widestLegend() {
    var left = el.getBoundingClientRect().left;
    return Array.from(el.querySelectorAll("svg .role-legend")).reduce(function (widest, legend) {
      var r = legend.getBoundingClientRect();
      var entries = legend.querySelectorAll(".role-legend-symbol path, .role-legend-symbol rect").length;
      return r.right - left > widest.reach ?
        {reach: r.right - left, offset: r.left - left, width: r.width, entries: entries} : widest;
    }, {reach: 0, offset: 0, width: 0, entries: 0});
  }
  // Legends first: a legend lays its entries out in rows that no width factor shortens (and one below the plot
  // starts where the plot does). Fewer columns until it fits; in one column, labels longer than the room left are
  // cut ("…").
  function fitLegends(embed, candidate, column, force) {
    var legend = widestLegend();
    if (legend.entries === 0 || (legend.reach <= column && !force)) return Promise.resolve(candidate);
    var room = Math.max(60, column - legend.offset);
    var columns = legend.entries < 2 ? 1 : Math.max(1, Math.floor(legend.entries * room / legend.width) - 1);
    var narrower = withLegendColumns(candidate, columns, 0);
    return draw(embed, narrower).then(function (width) {
      if (width <= column || (widestLegend().reach <= column && !force)) return narrower;
      var cut = withLegendColumns(candidate, 1, Math.max(40, room - 40));
      return draw(embed, cut).then(function () { return cut; });
    });
  }
  // The chart's width is close to linear in the factor (views scale, axes and labels do not): two draws give the
  // line, a third the factor, and a few corrections cover tick labels that changed length. Resolves with the spec
  // last drawn and its width.
  function fitWidth(embed, candidate, column, width) {
    if (width <= column) return Promise.resolve({spec: candidate, width: width});
    var first = {factor: 1, width: width};
    var second = {factor: column / width, spec: scaled(candidate, column / width)};
    return draw(embed, second.spec).then(function (w) {
      second.width = w;
      var slope = (first.width - second.width) / (first.factor - second.factor);
      if (!(slope > 0)) return {spec: second.spec, width: w};
      var correct = function (factor, tries) {
        var next = scaled(candidate, factor);
        return draw(embed, next).then(function (drawn) {
          if (drawn <= column || tries === 0 || factor < 0.05) return {spec: next, width: drawn};
          // the line's step, or at least the overshoot's share: labels that grew can flatten the line
          return correct(Math.min(factor - (drawn - column + 1) / slope, factor * (column - 1) / drawn), tries - 1);
        });
      };
      return correct(second.factor - (second.width - column) / slope, 5);
    });
  }
  // Panels side by side that do not fit go one above the other (on a phone), each then as wide as the column allows:
  // concatenated views, a wrapped facet's columns, a facet's columns (which become rows, named above each panel).
  function sideBySide(candidate) {
    return !!(candidate.hconcat || (candidate.facet && candidate.facet.column && !candidate.facet.row) ||
              (candidate.facet && candidate.columns > 1));
  }
  function stacked(candidate) {
    var copy = Object.assign({}, candidate);
    if (copy.hconcat) {
      copy.vconcat = copy.hconcat;
      delete copy.hconcat;
    } else if (copy.facet && copy.facet.column) {
      var header = Object.assign({}, copy.facet.column.header, {labelOrient: "top", labelAnchor: "start", labelAngle: 0,
                                                                 labelAlign: "left"});
      copy.facet = Object.assign({}, copy.facet, {row: Object.assign({}, copy.facet.column, {header: header})});
      delete copy.facet.column;
    } else {
      copy.columns = 1;
    }
    return copy;
  }
  function fit(embed) {
    var column = el.clientWidth;
    el.setAttribute("data-lab-state", "drawing");
    return draw(embed, spec).then(function (width) {
      // Not fitted: a chart that scrolls in its own box, or one not shown yet (a folded block: fitted when opened).
      if (!fits || column < 50) return null;
      var start = sideBySide(spec) && width > column ? stacked(spec) : spec;
      return (start === spec ? Promise.resolve() : draw(embed, start)).then(function () {
        return fitLegends(embed, start, column);
      }).then(function (candidate) {
        return fitWidth(embed, candidate, column, holder.getBoundingClientRect().width);
      }).then(function (fitted) {
        // What the views cannot give up any more is the legend's (its row, and the chart's padding past it).
        return fitted.width > column ? fitLegends(embed, fitted.spec, column, true) : null;
      });
    }).then(function () {
      el.setAttribute("data-lab-state", "drawn");
      el.setAttribute("data-lab-column", String(column));
    });
  }

  var amd = typeof window.define === "function" && window.define.amd && typeof window.requirejs === "function";
  window.labVega = window.labVega || (amd ? viaRequireJs() : viaScriptTags());
  window.labVega
    .then(function (embed) {
      return fit(embed).then(function () {
        if (!fits || typeof ResizeObserver !== "function") return;
        // A phone turned sideways, a window resized: fit again to the new column, once it settles.
        var timer = null;
        new ResizeObserver(function () {
          if (Math.abs(el.clientWidth - Number(el.getAttribute("data-lab-column"))) < 2) return;
          clearTimeout(timer);
          timer = setTimeout(function () { fit(embed).catch(fail); }, 200);
        }).observe(el);
      });
    })
    .catch(fail);
  function fail(err) {
    el.removeAttribute("data-lab-state");
    el.innerHTML = '<p class="lab-chart-error" style="color:#b00"></p>';
    el.firstChild.textContent = "Chart not drawn: " + err.message;
    console.error(err);
  }
})
