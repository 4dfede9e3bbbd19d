// One spike of virtual users against the sample server: every VU sends GET TARGET+PATH.
// All parameters come from the harness through -e (see harness/load.py); nothing is hard-coded
// here so one script serves every chapter.
//   EXECUTOR=per-vu-iterations  exactly ITERATIONS requests per VU (default 1): a true spike of VUS requests
//   EXECUTOR=constant-vus       the articles' executor: VUS loop for DURATION, in-flight ones get GRACEFUL_STOP
//   EXECUTOR=shared-iterations  ITERATIONS requests shared by VUS (the analogue of `ab -n ITERATIONS -c VUS`)
import http from 'k6/http';
import { Counter } from 'k6/metrics';

const env = __ENV;
// Counted just before each request: its CSV row carries the start time, vu and iter, so a
// request that k6 interrupted (gracefulStop) still shows up as issued.
const requestStarted = new Counter('lab_request_started');

function scenario() {
  const common = { executor: env.EXECUTOR, vus: Number(env.VUS), gracefulStop: env.GRACEFUL_STOP };
  switch (env.EXECUTOR) {
    case 'constant-vus':
      return { ...common, duration: env.DURATION };
    case 'per-vu-iterations':
    case 'shared-iterations':
      return { ...common, iterations: Number(env.ITERATIONS), maxDuration: env.MAX_DURATION };
    default:
      throw new Error(`unknown EXECUTOR ${env.EXECUTOR}`);
  }
}

export const options = {
  scenarios: { spike: scenario() },
  discardResponseBodies: true,
  noConnectionReuse: env.CONNECTION_REUSE === 'false',
  // vu and iter tag every sample so the harness can rebuild one row per request.
  systemTags: ['status', 'method', 'url', 'error', 'error_code', 'scenario', 'expected_response', 'vu', 'iter'],
  summaryTrendStats: ['min', 'med', 'avg', 'p(90)', 'p(95)', 'p(99)', 'max', 'count'],
};

export default function () {
  requestStarted.add(1);
  http.get(`${env.TARGET}${env.URL_PATH}`, { timeout: env.REQUEST_TIMEOUT });
}
