// Long-poll consumers that receive and ack, fed by a steady producer, from a pre-filled backlog.
//   k6 run -e BASE_URL=http://127.0.0.1:8080 -e PREFILL=5000 -e RATE=100 -e CONSUMERS=4 consume.js
import { Counter } from 'k6/metrics';
import {
  createSubscription, createTopic, produce, receiveAndAck, uniqueName, VALUE_1KIB,
} from './common.js';

const PREFILL = parseInt(__ENV.PREFILL || '5000', 10);
const WAIT_MS = parseInt(__ENV.WAIT_MS || '5000', 10);
const MAX_MESSAGES = parseInt(__ENV.MAX_MESSAGES || '100', 10);
const DURATION = __ENV.DURATION || '30s';
const consumed = new Counter('messages_consumed');

export const options = {
  scenarios: {
    producer: {
      executor: 'constant-arrival-rate',
      exec: 'producer',
      rate: parseInt(__ENV.RATE || '100', 10),
      timeUnit: '1s',
      duration: DURATION,
      preAllocatedVUs: 4,
      maxVUs: 32,
    },
    consumers: {
      executor: 'constant-vus',
      exec: 'consumer',
      vus: parseInt(__ENV.CONSUMERS || '4', 10),
      duration: DURATION,
      gracefulStop: `${WAIT_MS / 1000 + 5}s`,
    },
  },
  thresholds: {
    checks: ['rate==1.0'],
    http_req_failed: ['rate==0'],
    messages_consumed: [`count>=${PREFILL}`],
  },
};

export function setup() {
  const topic = __ENV.TOPIC || uniqueName('k6-consume');
  const sub = __ENV.SUBSCRIPTION || 'k6';
  createTopic(topic, parseInt(__ENV.PARTITIONS || '1', 10));
  createSubscription(topic, sub, 'earliest', 30000);
  const batch = Array.from({ length: 100 }, () => VALUE_1KIB);
  for (let filled = 0; filled < PREFILL; filled += 100) {
    produce(topic, batch.slice(0, Math.min(100, PREFILL - filled)));
  }
  return { topic, sub };
}

export function producer(data) {
  produce(data.topic, [VALUE_1KIB]);
}

export function consumer(data) {
  const messages = receiveAndAck(data.topic, data.sub, MAX_MESSAGES, WAIT_MS);
  consumed.add(messages.length);
}
