// Produce 1 KiB messages at a fixed arrival rate (k6's open model).
//   k6 run -e BASE_URL=http://127.0.0.1:8080 -e RATE=200 -e BATCH=1 -e DURATION=30s produce.js
import { createTopic, produce, uniqueName, VALUE_1KIB } from './common.js';

const RATE = parseInt(__ENV.RATE || '200', 10);
const BATCH = parseInt(__ENV.BATCH || '1', 10);

export const options = {
  scenarios: {
    produce: {
      executor: 'constant-arrival-rate',
      rate: RATE,
      timeUnit: '1s',
      duration: __ENV.DURATION || '30s',
      preAllocatedVUs: 16,
      maxVUs: 128,
    },
  },
  thresholds: {
    checks: ['rate==1.0'],
    http_req_failed: ['rate==0'],
    http_req_duration: ['p(99)<100'],
  },
};

export function setup() {
  const topic = __ENV.TOPIC || uniqueName('k6-produce');
  createTopic(topic, parseInt(__ENV.PARTITIONS || '1', 10));
  return { topic };
}

export default function (data) {
  produce(data.topic, Array.from({ length: BATCH }, () => VALUE_1KIB));
}
