// One script for every step. The harness writes the step's whole load plan as JSON into a file (built by
// harness/lab/load/options.py: k6's options with the scenario, the requests of one iteration, the request
// timeout, batch spike mode) and gives k6 its absolute path as LAB_PLAN_FILE and the server as TARGET, in k6's
// environment (harness/lab/load/plan.py); nothing else shapes the load.
//
// The recording's contract (harness/lab/load/recording.py reads k6's CSV): just before each request a
// `lab_request_started` sample, then k6's http_req_* samples, all carrying the system tags vu, iter and name
// (the request's name) and the request's index within its iteration as `req` (sample metadata; in batch mode
// a `req` tag on each batched request, since a batch's samples cannot carry different metadata).
import http from 'k6/http';
import exec from 'k6/execution';
import { sleep } from 'k6';
import { Counter } from 'k6/metrics';

const plan = JSON.parse(open(__ENV.LAB_PLAN_FILE));
const target = __ENV.TARGET;
const requestStarted = new Counter('lab_request_started');
const extractFailed = new Counter('lab_extract_failed'); // an iteration ended early: a value to extract was missing

export const options = plan.options;

// The target, or the same host on another port (a scenario request's `port`, e.g. the management port).
function base(port) {
  return port ? target.replace(/^(\w+:\/\/[^/:]+)(:\d+)?/, `$1:${port}`) : target;
}

function fill(text, vars, encode) {
  return text.replace(/\$\{([^}]*)\}/g, (_, name) => (encode ? encodeURIComponent(vars[name]) : vars[name]));
}

function pick(value, path) {
  return path.split('.').reduce((v, key) => (v === null || v === undefined ? undefined : v[key]), value);
}

function prepared(r, vars, extraTags) {
  const headers = {};
  for (const [name, value] of Object.entries(r.headers)) headers[name] = fill(value, vars, false);
  const params = { timeout: plan.timeout, headers, tags: { name: r.name, ...extraTags } };
  if (Object.keys(r.extract).length) params.responseType = 'text'; // the only bodies kept
  return {
    method: r.method,
    url: base(r.port) + fill(r.path, vars, true),
    body: r.body === null ? null : fill(r.body, vars, false),
    params,
  };
}

// Batch spike mode: plan.batch.users one-request users carried by plan.batch.vus VUs, each VU opening its
// share (sizes differ by at most one) as one http.batch, every request on its own connection.
function batchSpike() {
  const { users, vus } = plan.batch;
  const id = exec.vu.idInTest;
  const share = Math.floor(users / vus) + (id <= users % vus ? 1 : 0);
  const vars = { vu: String(id), iter: String(exec.vu.iterationInScenario) };
  const batch = [];
  for (let n = 0; n < share; n++) {
    exec.vu.metrics.metadata.req = String(n);
    requestStarted.add(1);
    batch.push(prepared(plan.requests[0], vars, { req: String(n) }));
  }
  delete exec.vu.metrics.metadata.req; // the batch's samples take `req` from their own tag
  http.batch(batch);
}

export default function () {
  if (plan.batch) {
    batchSpike();
    return;
  }
  const vars = { vu: String(exec.vu.idInTest), iter: String(exec.vu.iterationInScenario) };
  for (let n = 0; n < plan.requests.length; n++) {
    const r = plan.requests[n];
    const { method, url, body, params } = prepared(r, vars, {});
    exec.vu.metrics.metadata.req = String(n);
    requestStarted.add(1);
    if (r.background) {
      // Not awaited: the iteration goes on, k6 waits for it before the next one. Its samples are recorded when
      // it completes, so they carry their own `req` tag (the metadata will have moved on by then).
      params.tags.req = String(n);
      http.asyncRequest(method, url, body, params);
      if (r.think_time_ms > 0) sleep(r.think_time_ms / 1000);
      continue;
    }
    const res = http.request(method, url, body, params);
    const wanted = Object.entries(r.extract);
    if (wanted.length) {
      let json;
      try {
        json = res.json();
      } catch (e) {
        json = undefined;
      }
      for (const [name, path] of wanted) {
        const value = pick(json, path);
        if (value === undefined || value === null || typeof value === 'object') {
          extractFailed.add(1);
          return;
        }
        vars[name] = String(value);
      }
    }
    if (r.think_time_ms > 0) sleep(r.think_time_ms / 1000);
  }
}

// With --dashboard the harness sets LAB_LINGER_MS (a dashboard period and a half): k6's web dashboard drops the
// last, unfinished period of a test, so k6 stays one period past the last response for its report to show it.
export function teardown() {
  const linger = Number(__ENV.LAB_LINGER_MS || 0);
  if (linger > 0) sleep(linger / 1000);
}
