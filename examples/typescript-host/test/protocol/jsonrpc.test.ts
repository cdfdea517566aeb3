/** The JSON-RPC framing: how each line is read (P5 to P13) and how replies are written. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { INVALID_REQUEST, MAX_DEPTH, OUTCOME, PARSE_ERROR, RpcError, errorLine, kindError, readLine, resultLine, type Incoming } from "../../src/protocol/jsonrpc.js";

const read = (text: string): Incoming => readLine(new TextEncoder().encode(text));

function refusal(incoming: Incoming): { id: unknown; code: number; message: string } {
  assert.equal(incoming.type, "invalid");
  if (incoming.type !== "invalid") throw new Error("unreachable");
  return { id: incoming.id, code: incoming.error.code, message: incoming.error.message };
}

test("a request is read with its id, method and params", () => {
  assert.deepEqual(read('{"jsonrpc":"2.0","id":7,"method":"run.open","params":{"servers":[]}}'), {
    type: "request",
    id: 7,
    method: "run.open",
    params: { servers: [] },
  });
  assert.deepEqual(read('{"jsonrpc":"2.0","id":"a","method":"shutdown"}\r'), { type: "request", id: "a", method: "shutdown", params: undefined });
});

test("a message without an id is a notification, and a blank line is nothing", () => {
  assert.deepEqual(read('{"jsonrpc":"2.0","method":"run.close"}'), { type: "notification", method: "run.close" });
  assert.deepEqual(read(" \t"), { type: "blank" });
  assert.deepEqual(read(""), { type: "blank" });
});

test("a line that is not JSON, not UTF-8, too deep or holds an infinite number is a parse error with a null id", () => {
  const deep = `${"[".repeat(MAX_DEPTH + 1)}${"]".repeat(MAX_DEPTH + 1)}`;
  for (const line of ["{", "nope", deep, '{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":1e999}}']) {
    const { id, code } = refusal(read(line));
    assert.deepEqual([id, code], [null, PARSE_ERROR], line.slice(0, 40));
  }
  assert.equal(refusal(readLine(new Uint8Array([0x7b, 0xff, 0x7d]))).code, PARSE_ERROR);
  assert.match(refusal(read(deep)).message, new RegExp(`nests ${MAX_DEPTH + 1} levels deep`));
  // Brackets inside strings do not count towards the depth.
  assert.equal(read(`{"jsonrpc":"2.0","id":1,"method":"${"[".repeat(MAX_DEPTH + 5)}"}`).type, "request");
});

test("a batch, a non-object or a bad envelope is an invalid request, keeping the id when it is valid", () => {
  assert.deepEqual(refusal(read("[]")), { id: null, code: INVALID_REQUEST, message: "batches are not supported; send one request per line" });
  assert.equal(refusal(read("3")).code, INVALID_REQUEST);
  assert.equal(refusal(read('{"jsonrpc":"2.0","id":{},"method":"x"}')).id, null);
  assert.deepEqual(refusal(read('{"jsonrpc":"1.0","id":5,"method":"x"}')), {
    id: 5,
    code: INVALID_REQUEST,
    message: "invalid request: 'jsonrpc' must be \"2.0\"",
  });
  assert.deepEqual(refusal(read('{"jsonrpc":"2.0","id":"q","method":4}')).id, "q");
});

test("replies are one line each, the error object with its data only when there is some", () => {
  assert.equal(resultLine(3, { runId: "run-1" }), '{"jsonrpc":"2.0","id":3,"result":{"runId":"run-1"}}\n');
  assert.equal(errorLine(null, new RpcError(PARSE_ERROR, "parse error: x")), '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: x"}}\n');
  const outcome = kindError(OUTCOME, "selection_error", "too many", "$.servers");
  assert.deepEqual(JSON.parse(errorLine("r", outcome)).error, {
    code: OUTCOME,
    message: "too many",
    data: { kind: "selection_error", message: "too many", path: "$.servers" },
  });
});
