// Makes tests/samples/k6-lab.csv.gz (helper B's recording tests): the CSV contract of issue 13's lab script in
// miniature — lab_request_started before each request, `req` metadata, a `name` tag, two requests per iteration,
// an open-model executor that drops iterations, and failures (a refused port, a 404).
//   SERVER_PORT=28080 SLEEP_MS=0 java -jar sample-server.jar &
//   K6_CSV_TIME_FORMAT=unix_micro k6 run --out csv=k6-lab.csv.gz --summary-export k6-lab-summary.json k6-lab.js
import http from 'k6/http';
import exec from 'k6/execution';
import { sleep } from 'k6';
import { Counter } from 'k6/metrics';

const started = new Counter('lab_request_started');
export const options = {
  scenarios: { lab: { executor: 'constant-arrival-rate', rate: 40, timeUnit: '1s', duration: '3s',
                      preAllocatedVUs: 2, maxVUs: 3, gracefulStop: '0s' } },
  discardResponseBodies: true,
  systemTags: ['status', 'method', 'name', 'error', 'error_code', 'scenario', 'expected_response', 'vu', 'iter'],
};

function send(req, url, name) {
  exec.vu.metrics.metadata.req = String(req);
  started.add(1);
  http.get(url, { tags: { name }, timeout: '2s' });
}

export default function () {
  send(0, 'http://127.0.0.1:28080/hello', 'hello');
  send(1, exec.vu.iterationInScenario % 5 === 0 ? 'http://127.0.0.1:28099/hello' : 'http://127.0.0.1:28080/nope', 'second');
  sleep(0.1);
}
