// Auth on (HS256): a missing or bad token is a typed UnauthorizedError, a token without the
// grant a ForbiddenError; a token function is called per request.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { ForbiddenError, UnauthorizedError, WharfClient, WharfError } from "../dist/index.js";
import { name, startWharf } from "./wharf.mjs";

let wharf;
before(async () => {
  wharf = await startWharf({ secret: "ts-client-test-secret-0123456789abcdefghij" });
});
after(async () => {
  await wharf?.stop();
});

test("no token: 401 surfaced as UnauthorizedError with the problem's code", async () => {
  const anon = new WharfClient({ baseUrl: wharf.url });
  const err = await anon.createTopic({ name: name("anon") }).catch((e) => e);
  assert.ok(err instanceof UnauthorizedError, `got ${err}`);
  assert.ok(err instanceof WharfError);
  assert.equal(err.status, 401);
  assert.equal(err.code, "unauthorized");
  assert.equal(typeof err.detail, "string");
  assert.ok(err.requestId, "X-Request-Id is kept on the error");
});

test("a bad token is a 401 too; a token without the grant is a 403 ForbiddenError", async () => {
  const bad = new WharfClient({ baseUrl: wharf.url, token: "not.a.jwt" });
  const e1 = await bad.produce("orders", [{ value: "x" }]).catch((e) => e);
  assert.ok(e1 instanceof UnauthorizedError, `got ${e1}`);

  const admin = new WharfClient({ baseUrl: wharf.url, token: wharf.token("admin", "admin:*") });
  const t = name("orders");
  await admin.createTopic({ name: t });

  const consumerOnly = new WharfClient({ baseUrl: wharf.url, token: wharf.token("reader", `consume:${t}`) });
  const e2 = await consumerOnly.produce(t, [{ value: "x" }]).catch((e) => e);
  assert.ok(e2 instanceof ForbiddenError, `got ${e2}`);
  assert.equal(e2.status, 403);
  assert.equal(e2.code, "forbidden");
});

test("a valid token (from a function, per request) produces", async () => {
  let calls = 0;
  const admin = new WharfClient({
    baseUrl: wharf.url,
    token: () => {
      calls++;
      return wharf.token("svc", "admin:*");
    },
  });
  const t = name("ok");
  await admin.createTopic({ name: t });
  const r = await admin.produce(t, [{ value: "authorized" }]);
  assert.equal(r[0].offset, 0);
  assert.equal(calls, 2);
});
