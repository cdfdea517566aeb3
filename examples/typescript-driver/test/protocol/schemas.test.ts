/** Params checked against the protocol's JSON Schemas (P16): the first problem, named by its JSON path. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { INVALID_PARAMS } from "../../src/protocol/jsonrpc.js";
import { Schemas } from "../../src/protocol/schemas.js";

const SCHEMAS = new Schemas({
  "run.open.params": {
    type: "object",
    properties: {
      servers: {
        type: "array",
        items: {
          type: "object",
          properties: { transport: { type: "object", properties: { type: { enum: ["stdio", "http"] } } } },
        },
      },
      "odd/key~name": { type: "integer" },
      "with space": { type: "integer" },
    },
  },
  "run.open.result": { type: "object", required: ["runId"] },
});

test("params that hold to their schema pass, as do those of a method without one", () => {
  assert.equal(SCHEMAS.checkParams("run.open", { servers: [{ transport: { type: "http" } }] }), undefined);
  assert.equal(SCHEMAS.checkParams("shutdown", 42), undefined);
});

test("a refusal names the JSON path of the value, the value and what was expected", () => {
  const error = SCHEMAS.checkParams("run.open", { servers: [{ transport: { type: "sse" } }] });
  assert.equal(error?.code, INVALID_PARAMS);
  assert.deepEqual(error?.data, {
    kind: "invalid_params",
    message: 'run.open: $.servers[0].transport.type: "sse" is not one of ["stdio","http"]',
    path: "$.servers[0].transport.type",
  });
});

test("keys that are not identifiers are quoted in the path, escapes undone", () => {
  assert.equal(SCHEMAS.checkParams("run.open", { "odd/key~name": 1.5 })?.data?.path, '$["odd/key~name"]');
  assert.equal(SCHEMAS.checkParams("run.open", { "with space": "x" })?.data?.message, `run.open: $["with space"]: "x" is not of type 'integer'`);
});

test("a result is checked against METHOD.result and the problem said in words", () => {
  assert.equal(SCHEMAS.check("run.open.result", { runId: "run-1" }), undefined);
  assert.equal(SCHEMAS.check("run.open.result", {}), "run.open.result: $: must have required property 'runId'");
});
