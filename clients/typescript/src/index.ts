export * from "./client.js";
export * from "./errors.js";
export { Producer, type ProducerOptions } from "./producer.js";
export { Consumer, type ConsumerOptions, type MessageHandler } from "./consumer.js";
export { parseSse, type SseEvent } from "./sse.js";
export type { paths, components, operations } from "./generated/openapi.js";
