// A driver skeleton for the mcp-conformance suite, in TypeScript-flavoured JavaScript on Node.
//
//   npm install && mcp-conformance certify --sut-cmd "node driver.mjs"
//
// It speaks the driver protocol (JSON-RPC 2.0, one object per line on stdin/stdout) and
// connects to the suite's mock MCP servers with the official MCP SDK client, as a host
// does in production. The parts marked "YOUR HOST" are where a real host plugs in its
// own catalog, policy, selection and execution gate. The placeholder logic here is
// deliberately simple and is not conformant: the certificate shows what it breaks.
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const DISCOVERY = {
  name: "search_mcp_tools",
  description: "Search the MCP tools of this run and activate the best matches for the next turn.",
  inputSchema: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
};

/** An outcome the protocol defines (code -32000, data.kind). */
class Outcome extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = kind;
  }
}

// ---- YOUR HOST: replace these three functions with calls into your host. ----

/** Which catalog entries are active in the first round (entries: {qualified, server, tool, policy}). */
function selectFirstRound(catalog, baseTools) {
  const capacity = 96 - baseTools.length - 1; // placeholder: no policy, no ranking, no fairness cap
  return catalog.slice(0, Math.max(0, capacity)).map((entry) => entry.qualified);
}

/** Tools to activate for a search_mcp_tools call (placeholder: a substring match). */
function discover(run, query) {
  const words = String(query ?? "").toLowerCase().split(/\W+/).filter(Boolean);
  return run.catalog
    .filter((e) => !run.active.has(e.qualified))
    .filter((e) => words.some((w) => `${e.tool.name} ${e.tool.description ?? ""}`.toLowerCase().includes(w)))
    .slice(0, Math.max(0, 112 - run.baseTools.length - 1 - run.active.size))
    .map((e) => e.qualified);
}

/** The execution gate: only active tools run (your host's gate goes here). */
function gateAllows(run, name) {
  return run.active.has(name);
}

// ---- The protocol shell: usually kept as it is. ----

const runs = new Map();
let nextRun = 1;

async function connect(server) {
  const t = server.transport ?? {};
  const transport =
    t.type === "stdio"
      ? new StdioClientTransport({ command: t.command, args: t.args ?? [], env: { ...process.env, ...(t.env ?? {}) }, stderr: "inherit" })
      : t.type === "http"
        ? new StreamableHTTPClientTransport(new URL(t.url))
        : null;
  if (transport === null) throw new Outcome("invalid_params", `server ${server.id}: unknown transport ${JSON.stringify(t)}`);
  const client = new Client({ name: "example-host", version: "0.1.0" });
  await client.connect(transport);
  return client;
}

async function listAll(client) {
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  return tools;
}

function definition(tool, name = tool.name) {
  return { name, description: tool.description ?? "", inputSchema: tool.inputSchema ?? { type: "object" } };
}

function definitions(run) {
  const mcp = run.catalog.filter((e) => run.active.has(e.qualified)).map((e) => definition(e.tool, e.qualified));
  return [...run.baseTools.map((t) => definition(t)), DISCOVERY, ...mcp];
}

function getRun(params) {
  const run = runs.get(params?.runId);
  if (!run) throw new Outcome("unknown_run", `no open run ${JSON.stringify(params?.runId)}`);
  return run;
}

async function closeRun(run) {
  await Promise.allSettled([...run.clients.values()].map((c) => c.close()));
}

const methods = {
  initialize: async () => ({ name: "example-ts-host", version: "0.1.0", profiles: ["core"] }),

  "run.open": async (params) => {
    const run = { clients: new Map(), catalog: [], active: new Set(), baseTools: params.baseTools ?? [] };
    try {
      for (const server of params.servers ?? []) {
        let client;
        try {
          client = await connect(server);
          run.clients.set(server.id, client);
          for (const tool of await listAll(client)) {
            run.catalog.push({ qualified: `${server.id}__${tool.name}`, server: server.id, tool, policy: server.policy ?? {} });
          }
        } catch (err) {
          if (err instanceof Outcome) throw err;
          throw new Outcome("connection_error", `server ${server.id}: ${err?.message ?? err}`);
        }
      }
      for (const name of selectFirstRound(run.catalog, run.baseTools)) run.active.add(name);
    } catch (err) {
      await closeRun(run); // a failed run.open leaves no connection open
      throw err;
    }
    const runId = `run-${nextRun++}`;
    runs.set(runId, run);
    return { runId };
  },

  "run.definitions": async (params) => ({ tools: definitions(getRun(params)) }),

  "run.call": async (params) => {
    const run = getRun(params);
    const refuse = (text) => ({ content: [{ type: "text", text }], isError: true });
    if (params.name === DISCOVERY.name) {
      const activated = discover(run, params.arguments?.query);
      for (const name of activated) run.active.add(name);
      const byName = new Map(run.catalog.map((e) => [e.qualified, e]));
      return {
        content: [{ type: "text", text: `activated ${activated.length} tool(s)` }],
        isError: false,
        structuredContent: {
          activated: activated.map((n) => ({ name: n, description: byName.get(n).tool.description ?? "" })),
          activeCount: run.active.size,
          remainingCapacity: Math.max(0, 112 - run.baseTools.length - 1 - run.active.size),
        },
      };
    }
    if (!gateAllows(run, params.name)) return refuse(`${params.name} is not active; call ${DISCOVERY.name} first`);
    const entry = run.catalog.find((e) => e.qualified === params.name);
    try {
      return await run.clients.get(entry.server).callTool({ name: entry.tool.name, arguments: params.arguments ?? {} });
    } catch (err) {
      return refuse(`${params.name} failed: ${err?.message ?? err}`);
    }
  },

  "run.request": async (params) => {
    const tools = [...definitions(getRun(params)), ...(params.extraTools ?? [])];
    if (tools.length > 128) throw new Outcome("request_too_large", `${tools.length} definitions; a request carries at most 128`);
    return { tools };
  },

  "run.close": async (params) => {
    const run = getRun(params);
    runs.delete(params.runId);
    await closeRun(run);
    return {};
  },

  shutdown: async () => {
    await Promise.allSettled([...runs.values()].map(closeRun));
    runs.clear();
    return {};
  },
};

function send(message) {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

async function handle(line) {
  let request;
  try {
    request = JSON.parse(line);
  } catch {
    send({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "parse error" } });
    return;
  }
  const { id, method, params } = request ?? {};
  const handler = methods[method];
  if (!handler) {
    send({ jsonrpc: "2.0", id, error: { code: -32601, message: `unknown method ${method}` } });
    return;
  }
  try {
    send({ jsonrpc: "2.0", id, result: await handler(params ?? {}) });
  } catch (err) {
    const kind = err instanceof Outcome ? err.kind : "invalid_params";
    const code = kind === "invalid_params" || kind === "unknown_run" ? -32602 : -32000;
    send({ jsonrpc: "2.0", id, error: { code, message: err.message, data: { kind, message: err.message } } });
  }
  if (method === "shutdown") process.exit(0);
}

// Requests are answered in order, one at a time.
let queue = Promise.resolve();
createInterface({ input: process.stdin }).on("line", (line) => {
  if (line.trim()) queue = queue.then(() => handle(line));
});
process.stdin.on("end", () => queue.then(() => process.exit(0)));
