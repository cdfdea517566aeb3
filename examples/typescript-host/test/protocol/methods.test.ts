/** The protocol's methods over a host (P17 to P30): defaults, the table of runs, outcomes as -32000. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { INVALID_PARAMS, OUTCOME, RpcError } from "../../src/protocol/jsonrpc.js";
import { DEFAULT_CALL_TIMEOUT_SECONDS, PROTOCOL_VERSION, driverFor, type Host, type HostRun, type OpenParams } from "../../src/protocol/methods.js";
import type { Driver, Params } from "../../src/protocol/server.js";

/** A host that records what it is asked and opens runs that record their closing. */
function recordingHost(fail?: Error): { host: Host; opened: OpenParams[]; closed: string[] } {
  const opened: OpenParams[] = [];
  const closed: string[] = [];
  const host: Host = {
    identity: { name: "recording", version: "1.0.0", profiles: ["core"] },
    open: async (params) => {
      if (fail !== undefined) throw fail;
      opened.push(params);
      const name = `run ${opened.length}`;
      const run: HostRun = {
        definitions: () => [{ name, description: "", inputSchema: { type: "object" } }],
        call: async (tool, args) => ({ content: [{ type: "text", text: `${tool} ${JSON.stringify(args)}` }], isError: false }),
        request: (extra) => [...extra],
        close: async () => {
          closed.push(name);
        },
      };
      return run;
    },
  };
  return { host, opened, closed };
}

function call(driver: Driver, method: string, params: Params = {}): Promise<unknown> {
  const run = driver.methods.get(method);
  assert.ok(run, `no method ${method}`);
  return run(params);
}

async function refused(work: Promise<unknown>): Promise<RpcError> {
  try {
    await work;
  } catch (error) {
    assert.ok(error instanceof RpcError);
    return error;
  }
  assert.fail("expected an RpcError");
}

test("initialize answers the host's identity and refuses another protocol version", async () => {
  const driver = driverFor(recordingHost().host);
  assert.deepEqual(await call(driver, "initialize"), { name: "recording", version: "1.0.0", profiles: ["core"], protocolVersion: PROTOCOL_VERSION });
  const error = await refused(call(driver, "initialize", { protocolVersion: "2" }));
  assert.deepEqual([error.code, error.data?.kind], [INVALID_PARAMS, "invalid_params"]);
});

test("run.open fills in the defaults of the params it leaves out", async () => {
  const { host, opened } = recordingHost();
  const driver = driverFor(host);
  const stdio = { type: "stdio", command: "srv" };
  assert.deepEqual(await call(driver, "run.open", { servers: [{ id: "a", transport: stdio }, { id: "b", transport: { type: "http", url: "http://x/mcp" } }] }), {
    runId: "run-1",
  });
  assert.deepEqual(opened[0], {
    servers: [
      { id: "a", transport: { type: "stdio", command: "srv", args: [], env: {} }, policy: undefined },
      { id: "b", transport: { type: "http", url: "http://x/mcp" }, policy: undefined },
    ],
    baseTools: [],
    userMessage: "",
    systemPrompt: "",
    listTimeoutSeconds: undefined,
    callTimeoutSeconds: DEFAULT_CALL_TIMEOUT_SECONDS,
    connectTimeoutSeconds: undefined,
    eviction: undefined,
    refresh: false,
  });
});

test("each run answers under its own id until it is closed, then is an unknown run", async () => {
  const { host, closed } = recordingHost();
  const driver = driverFor(host);
  await call(driver, "run.open", {});
  await call(driver, "run.open", {});
  assert.deepEqual(await call(driver, "run.definitions", { runId: "run-2" }), { tools: [{ name: "run 2", description: "", inputSchema: { type: "object" } }] });
  assert.deepEqual(await call(driver, "run.call", { runId: "run-1", name: "t" }), { content: [{ type: "text", text: "t {}" }], isError: false });
  assert.deepEqual(await call(driver, "run.close", { runId: "run-1" }), {});
  assert.deepEqual(closed, ["run 1"]);
  const error = await refused(call(driver, "run.definitions", { runId: "run-1" }));
  assert.deepEqual([error.code, error.data?.kind], [INVALID_PARAMS, "unknown_run"]);
  assert.deepEqual(await call(driver, "shutdown"), {});
  assert.deepEqual(closed, ["run 1", "run 2"]);
});

test("a host error with an outcome kind becomes -32000 with that kind, and any other error passes through", async () => {
  const outcome = Object.assign(new Error("12 tools required, 8 allowed"), { kind: "selection_error" });
  const error = await refused(call(driverFor(recordingHost(outcome).host), "run.open", {}));
  assert.deepEqual([error.code, error.message, error.data?.kind], [OUTCOME, "12 tools required, 8 allowed", "selection_error"]);
  const bug = Object.assign(new Error("boom"), { kind: "not_an_outcome" });
  await assert.rejects(call(driverFor(recordingHost(bug).host), "run.open", {}), (thrown) => thrown === bug);
});
