/** The RFC 9457 problem body Wharf sends with every error (`application/problem+json`). */
export interface Problem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  code?: string;
}

/**
 * An error answer from Wharf. `status` is the HTTP status; `code` the stable snake_case problem
 * code (`topic_not_found`, `rate_limited`, …; `"http_<status>"` when the body was not a problem);
 * `detail` the server's words. `retryAfterMs` is the `Retry-After` header, when there was one.
 */
export class WharfError extends Error {
  readonly status: number;
  readonly code: string;
  readonly title: string | undefined;
  readonly detail: string | undefined;
  readonly type: string | undefined;
  readonly requestId: string | undefined;
  readonly retryAfterMs: number | undefined;

  constructor(status: number, problem: Problem, init: { requestId?: string | undefined; retryAfterMs?: number | undefined } = {}) {
    const code = problem.code ?? `http_${status}`;
    super(`${status} ${code}${problem.detail ? `: ${problem.detail}` : ""}`);
    this.name = new.target.name;
    this.status = status;
    this.code = code;
    this.title = problem.title;
    this.detail = problem.detail;
    this.type = problem.type;
    this.requestId = init.requestId;
    this.retryAfterMs = init.retryAfterMs;
  }
}

/** 401: no token, or a bad or expired one. */
export class UnauthorizedError extends WharfError {}
/** 403: a valid token without the grant. */
export class ForbiddenError extends WharfError {}
/** 404: no such topic, subscription or message. */
export class NotFoundError extends WharfError {}
/** 429: a rate limit is spent; retried by the client until its attempts run out. */
export class RateLimitedError extends WharfError {}
/** 503: a budget is spent or no leader; retried by the client until its attempts run out. */
export class OverloadedError extends WharfError {}

/** A network failure (fetch threw) after the client's retries ran out. */
export class WharfNetworkError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "WharfNetworkError";
  }
}

/** `Retry-After` in milliseconds: delta-seconds or an HTTP date; undefined when absent or bad. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === "") return undefined;
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return Math.round(Number(v) * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Builds the typed error of an error response; `body` is its parsed JSON, if any. */
export function errorFromResponse(response: Response, body: unknown): WharfError {
  const problem: Problem =
    body !== null && typeof body === "object" ? (body as Problem) : { detail: typeof body === "string" && body !== "" ? body : response.statusText };
  const init = {
    requestId: response.headers.get("x-request-id") ?? undefined,
    retryAfterMs: parseRetryAfter(response.headers.get("retry-after")),
  };
  switch (response.status) {
    case 401:
      return new UnauthorizedError(response.status, problem, init);
    case 403:
      return new ForbiddenError(response.status, problem, init);
    case 404:
      return new NotFoundError(response.status, problem, init);
    case 429:
      return new RateLimitedError(response.status, problem, init);
    case 503:
      return new OverloadedError(response.status, problem, init);
    default:
      return new WharfError(response.status, problem, init);
  }
}
