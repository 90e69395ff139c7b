// Shared by the k6 scripts: the base URL, JSON helpers, topic and subscription setup.
import http from 'k6/http';
import { check } from 'k6';

export const BASE_URL = (__ENV.BASE_URL || 'http://127.0.0.1:8080').replace(/\/$/, '');
export const JSON_PARAMS = { headers: { 'Content-Type': 'application/json' } };
// Create calls may meet a topic or subscription left by an earlier run: 409 is fine there.
const CREATE_PARAMS = Object.assign({}, JSON_PARAMS, {
  responseCallback: http.expectedStatuses(201, 409),
});

export const VALUE_1KIB = 'x'.repeat(1024);

export function uniqueName(prefix) {
  return `${prefix}-${Date.now().toString(36)}-${Math.floor(Math.random() * 1e6).toString(36)}`;
}

export function createTopic(name, partitions) {
  const res = http.post(`${BASE_URL}/v1/topics`, JSON.stringify({ name, partitions }), CREATE_PARAMS);
  check(res, { 'create topic: 201 or 409': (r) => r.status === 201 || r.status === 409 });
}

export function createSubscription(topic, name, start, ackTimeoutMs) {
  const body = JSON.stringify({ name, start, ack_timeout_ms: ackTimeoutMs });
  const res = http.post(`${BASE_URL}/v1/topics/${topic}/subscriptions`, body, CREATE_PARAMS);
  check(res, { 'create subscription: 201 or 409': (r) => r.status === 201 || r.status === 409 });
}

export function produce(topic, values) {
  const body = JSON.stringify({ messages: values.map((value) => ({ value })) });
  const res = http.post(`${BASE_URL}/v1/topics/${topic}/messages`, body, JSON_PARAMS);
  check(res, {
    'produce: 200': (r) => r.status === 200,
    'produce: one offset per message': (r) => r.status === 200 && r.json('messages').length === values.length,
  });
  return res;
}

// Receives (long-poll) and acks what came; returns the messages received.
export function receiveAndAck(topic, sub, maxMessages, waitMs) {
  const base = `${BASE_URL}/v1/topics/${topic}/subscriptions/${sub}`;
  const body = JSON.stringify({ max_messages: maxMessages, wait_ms: waitMs });
  const res = http.post(`${base}/receive`, body, Object.assign({}, JSON_PARAMS, {
    timeout: `${waitMs + 10000}ms`,
  }));
  check(res, { 'receive: 200': (r) => r.status === 200 });
  if (res.status !== 200) {
    return [];
  }
  const messages = res.json('messages');
  if (messages.length > 0) {
    const receipts = messages.map((m) => m.receipt);
    const ack = http.post(`${base}/ack`, JSON.stringify({ receipts }), JSON_PARAMS);
    check(ack, {
      'ack: 200': (r) => r.status === 200,
      'ack: every receipt acked': (r) => r.status === 200 && r.json('acked') === receipts.length,
    });
  }
  return messages;
}
