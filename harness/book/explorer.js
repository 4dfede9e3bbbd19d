(function (root) {
  // The capacity explorer in the reader's browser: harness.models.capacity.predict_capacity (and the spike simulation
  // it runs, harness.models.spike.simulate) ported line for line, so any setting is answered at once and offline.
  // The constants come from Python (harness.models.capacity.constants), never typed here. tests/test_explorer.py
  // holds this port to the Python function's outputs, in node and in Chromium. harness/book/explorer.py wires it to
  // the page: the knobs' form in, the numbers and the chart's hidden inputs out.
  "use strict";

  // A binary heap of [time, order, kind, client], smallest (time, order) first: the order Python's heapq pops them in.
  function Heap() { this.items = []; }
  function earlier(a, b) { return a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]); }
  Heap.prototype.push = function (item) {
    var items = this.items, i = items.push(item) - 1;
    while (i > 0) {
      var parent = (i - 1) >> 1;
      if (!earlier(items[i], items[parent])) break;
      var swap = items[i]; items[i] = items[parent]; items[parent] = swap; i = parent;
    }
  };
  Heap.prototype.pop = function () {
    var items = this.items, top = items[0], last = items.pop();
    if (items.length) {
      items[0] = last;
      var i = 0;
      for (;;) {
        var left = 2 * i + 1, right = left + 1, least = i;
        if (left < items.length && earlier(items[left], items[least])) least = left;
        if (right < items.length && earlier(items[right], items[least])) least = right;
        if (least === i) break;
        var swap = items[i]; items[i] = items[least]; items[least] = swap; i = least;
      }
    }
    return top;
  };

  function Queue() { this.items = []; this.head = 0; }
  Queue.prototype.push = function (item) { this.items.push(item); };
  Queue.prototype.shift = function () { return this.items[this.head++]; };
  Queue.prototype.size = function () { return this.items.length - this.head; };

  // spike.simulate: N clients arriving at once; returns [endMs, ok] per client.
  function simulate(c, requests, server, clientTimeoutMs) {
    var giveUpMs = Math.min(c.dial_timeout_ms, clientTimeoutMs);
    var queueRoom = server.accept_count + c.kernel_extra;
    var kernel = new Queue(), work = new Queue(), events = new Heap();
    var held = 0, freeThreads = server.threads, order = 0;
    var outcomes = new Array(requests), retries = new Array(requests).fill(0);
    function at(time, kind, client) { order += 1; events.push([time, order, kind, client]); }
    function runTomcat(now) {
      for (;;) {
        while (kernel.size() && held < server.max_connections) { work.push(["request", kernel.shift()]); held += 1; }
        if (!(work.size() && freeThreads)) return;
        var task = work.shift();
        if (task[0] === "close") held -= 1;
        else { freeThreads -= 1; at(now + server.service_ms, "done", task[1]); }
      }
    }
    for (var client = 0; client < requests; client++) at(0, "syn", client);
    while (events.items.length) {
      var event = events.pop(), now = event[0], kind = event[2], who = event[3];
      if (kind === "syn") {
        if (kernel.size() < queueRoom) kernel.push(who);
        else if (retries[who] < c.syn_retry_ms.length && c.syn_retry_ms[retries[who]] < giveUpMs) {
          at(c.syn_retry_ms[retries[who]], "syn", who);
          retries[who] += 1;
        } else outcomes[who] = [giveUpMs, false];
      } else if (kind === "done") {
        freeThreads += 1;
        var ok = now < clientTimeoutMs;
        outcomes[who] = [ok ? now : clientTimeoutMs, ok];
        var kept = ok && server.keep_alive;
        at(kept ? now + server.keep_alive_timeout_ms : now, kept ? "expire" : "release", who);
      } else if (kind === "expire") work.push(["close", who]);
      else if (kind === "release") held -= 1;
      runTomcat(now);
    }
    return outcomes;
  }

  // capacity.check: a list of problems, empty when every knob is in range.
  function problems(c, k) {
    var found = [];
    Object.keys(c.ranges).forEach(function (name) {
      var low = c.ranges[name][0], high = c.ranges[name][1], value = k[name];
      if (!(typeof value === "number" && value >= low && value <= high))
        found.push(name + " must be between " + low.toLocaleString("en-US") + " and " + high.toLocaleString("en-US"));
      else if (c.fractional.indexOf(name) < 0 && !Number.isInteger(value)) found.push(name + " must be a whole number");
    });
    if (k.cpu_ms > k.service_ms) found.push("cpu_ms is part of service_ms: it cannot be more");
    return found;
  }

  // capacity.served_at_once: K and what sets it (the first of the smallest).
  function servedAtOnce(c, k, connections) {
    var candidates = [[k.users, c.names.users], [k.threads, c.names.threads], [k.pool || Infinity, c.names.pool],
      [connections, connections < k.max_connections ? c.names.open_files : c.names.connections]];
    var smallest = Math.min.apply(null, candidates.map(function (x) { return x[0]; }));
    return [smallest, candidates.filter(function (x) { return x[0] === smallest; })[0][1]];
  }

  // capacity.predict_capacity
  function predict(c, k) {
    var connections = Math.min(k.max_connections, Math.max(k.open_files - c.fd_reserve, 0));
    var served = servedAtOnce(c, k, connections), inService = served[0], binding = served[1];
    var stretched = Math.ceil(inService * k.cpu_ms / k.cores);
    if (stretched > k.service_ms) binding = c.names.cpu;
    var holdMs = Math.max(k.service_ms, stretched);
    var ceiling = connections + k.accept_count + c.kernel_extra;
    var server = {threads: Math.min(k.threads, k.pool || k.threads), service_ms: holdMs, max_connections: connections,
      accept_count: k.accept_count, keep_alive: k.keep_alive_s > 0, keep_alive_timeout_ms: k.keep_alive_s * 1000};
    var outcomes = simulate(c, k.users, server, k.timeout_s * 1000);
    var width = Math.max(c.bin_min_ms, holdMs), counted = {}, answered = 0, sum = 0, slowest = 0;
    outcomes.forEach(function (o) {
      var b = Math.floor(o[0] / width);
      counted[b] = counted[b] || [0, 0];
      counted[b][o[1] ? 0 : 1] += 1;
      if (o[1]) { answered += 1; sum += o[0]; slowest = Math.max(slowest, o[0]); }
    });
    var bins = Object.keys(counted).map(Number).sort(function (a, b) { return a - b; }).map(function (b) {
      return [b * width, (b + 1) * width, counted[b][0], counted[b][1]];
    });
    var held = Math.min(k.users, ceiling);
    return {connections: connections, ceiling: ceiling, in_service: inService, binding: binding, hold_ms: holdMs,
      throughput: inService * 1000 / holdMs, held: held, waiting: held - inService, outside: k.users - held,
      answered: answered, failed: k.users - answered, mean_ms: answered ? sum / answered : NaN, slowest_ms: slowest,
      bin_ms: width, bins: bins};
  }

  // The same words and numbers harness/book/explorer.py writes for the first settings (tested equal).
  function whole(x) { return Math.floor(x + 0.5).toLocaleString("en-US"); }
  function seconds(ms) { return (Math.floor(ms / 100 + 0.5) / 10).toFixed(1) + " s"; }
  function encodeBins(bins) { return bins.map(function (b) { return b.join(","); }).join(" "); }

  // The key a measured step is matched on: the simulation it would run (explorer.py: measured_key).
  function key(k, p) {
    return [k.users, Math.min(k.threads, k.pool || k.threads), p.hold_ms, p.connections, k.accept_count,
      k.keep_alive_s * 1000, k.timeout_s * 1000].join(" ");
  }

  function attach(id, c) {
    var form = document.getElementById(id + "-knobs");
    function out(name) { return document.getElementById(id + "-" + name); }
    function set(name, text, value) {
      var el = out(name);
      el.textContent = text;
      el.setAttribute("data-value", String(value));
    }
    function feed(name, value) {  // a hidden input the chart's parameter is bound to
      var el = out(name);
      if (el.value === value) return;
      el.value = value;
      el.dispatchEvent(new Event("input"));
    }
    function knobs() {
      var k = {};
      Object.keys(c.ranges).forEach(function (name) {
        var text = form.elements[name].value.trim();
        k[name] = text === "" ? NaN : Number(text);
      });
      return k;
    }
    function update() {
      var k = knobs(), wrong = problems(c, k);
      form.setAttribute("data-state", wrong.length ? "invalid" : "answered");
      out("problems").textContent = wrong.join("; ");
      if (wrong.length) return;
      var p = predict(c, k), matched = c.measured.filter(function (m) { return m.key === key(k, p); });
      set("answered", whole(p.answered) + " of " + whole(k.users), p.answered);
      set("failed", whole(p.failed), p.failed);
      set("held", whole(p.held), p.held);
      set("ceiling", whole(p.connections) + " + " + whole(k.accept_count) + " + " + c.kernel_extra + " = " + whole(p.ceiling), p.ceiling);
      set("waiting", whole(p.waiting), p.waiting);
      set("outside", whole(p.outside), p.outside);
      set("throughput", whole(p.throughput), p.throughput);
      set("in_service", whole(p.in_service), p.in_service);
      set("binding", p.binding, p.binding);
      set("mean", p.answered ? seconds(p.mean_ms) : "–", p.mean_ms);
      set("slowest", p.answered ? seconds(p.slowest_ms) : "–", p.slowest_ms);
      set("measured", matched.length ? matched.map(function (m) { return m.text; }).join("; ") : c.unmatched,
        matched.map(function (m) { return m.ref; }).join(" "));
      feed("model", encodeBins(p.bins));
      feed("steps", matched.map(function (m) { return m.ref; }).join(" "));
    }
    form.addEventListener("input", update);
    form.addEventListener("submit", function (event) { event.preventDefault(); update(); });
    update();  // a browser may have restored other values into the form
  }

  var api = {simulate: simulate, predict: predict, problems: problems, encodeBins: encodeBins, key: key, attach: attach};
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.labExplorer = api;
})(typeof globalThis !== "undefined" ? globalThis : this);
