// Lists every page and calls one tool with the official TypeScript MCP SDK client.
// usage: node ts_client.mjs stdio <command> [args...] | node ts_client.mjs http <url>
// Environment: TOOL (tool to call), ARGS (JSON arguments), CHILD_ENV (JSON env for a stdio child).
// Prints one JSON line: {"protocol", "pages", "tools": [[name, annotations]], "definitions": [tool], "call": result}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, target, ...args] = process.argv.slice(2);
const transport =
  mode === "stdio"
    ? new StdioClientTransport({ command: target, args, env: JSON.parse(process.env.CHILD_ENV ?? "{}"), stderr: "inherit" })
    : new StreamableHTTPClientTransport(new URL(target));
const client = new Client({ name: "ts-check", version: "0.0.1" });
await client.connect(transport);
const tools = [];
let cursor;
let pages = 0;
do {
  const page = await client.listTools(cursor ? { cursor } : {});
  pages++;
  tools.push(...page.tools);
  cursor = page.nextCursor;
} while (cursor);
const call = await client.callTool({ name: process.env.TOOL, arguments: JSON.parse(process.env.ARGS ?? "{}") });
console.log(JSON.stringify({
  protocol: transport.protocolVersion ?? null,
  pages,
  tools: tools.map((t) => [t.name, t.annotations ?? null]),
  definitions: tools,
  call,
}));
await client.close();
