/** The reply to one request (P14 to P16, P33): unknown methods, params checked against their schema, results too. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, RpcError, kindError } from "../../src/protocol/jsonrpc.js";
import { Schemas } from "../../src/protocol/schemas.js";
import { answer, type Driver, type Method } from "../../src/protocol/server.js";

const SCHEMAS = new Schemas({
  "echo.params": { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  "echo.result": { type: "object", properties: { text: { type: "string" } }, required: ["text"], additionalProperties: false },
});

function driverWith(echo: Method): Driver {
  return { methods: new Map([["echo", echo]]), closeAll: async () => undefined };
}

const ECHO = driverWith(async (params) => ({ text: params["text"] }));

async function reply(driver: Driver, method: string, params: unknown): Promise<{ result?: unknown; error?: { code: number; message: string; data?: unknown } }> {
  const line = await answer(driver, SCHEMAS, 1, method, params);
  assert.ok(line.endsWith("\n") && !line.slice(0, -1).includes("\n"), "one line");
  return JSON.parse(line) as { result?: unknown; error?: { code: number; message: string; data?: unknown } };
}

test("a request's result is the method's answer", async () => {
  assert.deepEqual((await reply(ECHO, "echo", { text: "hi" })).result, { text: "hi" });
});

test("an unknown method is -32601 naming it", async () => {
  assert.deepEqual((await reply(ECHO, "nope", {})).error, { code: METHOD_NOT_FOUND, message: "unknown method 'nope'" });
});

test("params that are not an object, or break their schema, are invalid params with the JSON path", async () => {
  const notObject = (await reply(ECHO, "echo", [1])).error;
  assert.deepEqual([notObject?.code, notObject?.data], [INVALID_PARAMS, { kind: "invalid_params", message: "echo: params must be an object, got [1]", path: "$" }]);
  const missing = (await reply(ECHO, "echo", null)).error;
  assert.deepEqual(missing?.data, { kind: "invalid_params", message: "echo: $: the required field 'text' is missing", path: "$" });
  const wrongType = (await reply(ECHO, "echo", { text: 3 })).error;
  assert.deepEqual(wrongType?.data, { kind: "invalid_params", message: "echo: $.text: 3 is not of type 'string'", path: "$.text" });
});

test("a result that breaks its own schema is an internal error, not sent", async () => {
  const leaky = driverWith(async () => ({ text: "hi", extra: true }));
  const error = (await reply(leaky, "echo", { text: "hi" })).error;
  assert.equal(error?.code, INTERNAL_ERROR);
  assert.match(error?.message ?? "", /the reply breaks its schema: echo\.result: \$/);
});

test("an RpcError thrown by a method is its reply, and any other error an internal error naming the method", async () => {
  const outcome = kindError(-32000, "config_error", "bad policy");
  assert.deepEqual((await reply(driverWith(async () => Promise.reject(outcome)), "echo", { text: "x" })).error, outcome.toJSON());
  const bug = driverWith(async () => {
    throw new TypeError("x is undefined");
  });
  const originalWrite = process.stderr.write;
  process.stderr.write = () => true; // the driver logs the stack of a bug; keep the test output quiet
  try {
    const error = (await reply(bug, "echo", { text: "x" })).error;
    assert.deepEqual(error, { code: INTERNAL_ERROR, message: "internal error in echo: x is undefined" });
  } finally {
    process.stderr.write = originalWrite;
  }
  assert.ok(new RpcError(1, "m") instanceof Error);
});
