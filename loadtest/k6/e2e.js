// Publish-to-receive latency: producers at a fixed rate put their send time in the value;
// long-polling consumers receive, ack, and record now - sent time (millisecond resolution).
//   k6 run -e BASE_URL=http://127.0.0.1:8080 -e RATE=200 -e CONSUMERS=2 e2e.js
import { Trend } from 'k6/metrics';
import {
  createSubscription, createTopic, produce, receiveAndAck, uniqueName, VALUE_1KIB,
} from './common.js';

const WAIT_MS = parseInt(__ENV.WAIT_MS || '2000', 10);
const DURATION = __ENV.DURATION || '30s';
const e2eLatency = new Trend('e2e_latency', true);

export const options = {
  scenarios: {
    producers: {
      executor: 'constant-arrival-rate',
      exec: 'producer',
      rate: parseInt(__ENV.RATE || '200', 10),
      timeUnit: '1s',
      duration: DURATION,
      preAllocatedVUs: 8,
      maxVUs: 64,
    },
    consumers: {
      executor: 'constant-vus',
      exec: 'consumer',
      vus: parseInt(__ENV.CONSUMERS || '2', 10),
      duration: DURATION,
      gracefulStop: `${WAIT_MS / 1000 + 5}s`,
    },
  },
  thresholds: {
    checks: ['rate==1.0'],
    http_req_failed: ['rate==0'],
    e2e_latency: ['p(99)<100'],
  },
};

export function setup() {
  const topic = __ENV.TOPIC || uniqueName('k6-e2e');
  createTopic(topic, parseInt(__ENV.PARTITIONS || '1', 10));
  createSubscription(topic, 'k6', 'latest', 30000);
  return { topic, sub: 'k6' };
}

export function producer(data) {
  const stamp = `${Date.now()}:`;
  produce(data.topic, [stamp + VALUE_1KIB.slice(stamp.length)]);
}

export function consumer(data) {
  for (const message of receiveAndAck(data.topic, data.sub, 100, WAIT_MS)) {
    const sent = parseInt((message.value || '').split(':')[0], 10);
    if (!Number.isNaN(sent)) {
      e2eLatency.add(Date.now() - sent);
    }
  }
}
