// The official TypeScript SDK client (npm @modelcontextprotocol/sdk), as a host uses it:
// connect, list the tools (following nextCursor, which the SDK leaves to the caller), call one.
// usage: node typescript_client.mjs PLAN.json   (same plan and output lines as the Python clients)
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
const sdk = JSON.parse(readFileSync(new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url), "utf8"));
console.log(JSON.stringify({ library: "@modelcontextprotocol/sdk", version: sdk.version }));

const describe = (error) => `${error?.name ?? "Error"}: ${String(error?.message ?? error).replace(/\s+/g, " ")}`.slice(0, 200);

async function visit(client, transport, call, entry) {
  await client.connect(transport);
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  entry.listed = tools.length;
  entry.read_only = tools.filter((t) => t.annotations?.readOnlyHint).map((t) => t.name);
  if (!call.tool) return;
  if (!tools.some((t) => t.name === call.tool)) {
    entry.call = { tool: call.tool, outcome: "not listed, not called" };
    return;
  }
  try {
    const result = await client.callTool({ name: call.tool, arguments: call.arguments });
    entry.call = { tool: call.tool, outcome: result.isError ? "tool error" : "ok" };
  } catch (error) {
    entry.call = { tool: call.tool, outcome: `raised ${describe(error)}` };
  }
}

// The list-changed scenario: list, call `keep` (the server removes `gone` and says so), give the
// SDK `settle` seconds to act on the notification, then call `gone`.
async function visitLive(client, transport, entry) {
  await client.connect(transport);
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  entry.listed = tools.length;
  await client.callTool({ name: plan.keep, arguments: {} });
  await new Promise((resolve) => setTimeout(resolve, plan.settle * 1000));
  try {
    const result = await client.callTool({ name: plan.gone, arguments: {} });
    entry.call = { tool: plan.gone, outcome: result.isError ? "tool error" : "ok" };
  } catch (error) {
    entry.call = { tool: plan.gone, outcome: `raised ${describe(error)}` };
  }
}

for (const [server, connection] of Object.entries(plan.servers)) {
  const entry = { server, listed: null, read_only: null, error: null, call: null };
  const started = Date.now();
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${plan.timeout} s`)), plan.timeout * 1000);
  });
  const transport =
    connection.type === "stdio"
      ? new StdioClientTransport({ command: connection.command, args: connection.args, env: connection.env, stderr: "ignore" })
      : new StreamableHTTPClientTransport(new URL(connection.url));
  const client = new Client({ name: "real-hosts", version: "0.0.1" });
  try {
    const visiting = plan.scenario === "list-changed" ? visitLive(client, transport, entry) : visit(client, transport, plan.calls[server] ?? {}, entry);
    await Promise.race([visiting, deadline]);
  } catch (error) {
    entry.error = error?.message?.startsWith("no answer within") ? error.message : describe(error);
  } finally {
    clearTimeout(timer);
    // Closed however the visit ended, as a host closes a server it gives up on.
    await Promise.race([client.close().catch(() => {}), new Promise((resolve) => setTimeout(resolve, 5000))]);
  }
  entry.seconds = Math.round((Date.now() - started) / 10) / 100;
  console.log(JSON.stringify(entry));
  console.error(`  ${server}: ${entry.listed} tools, error ${entry.error}`);
}
process.exit(0);
