/**
 * A placeholder host: it connects to the run's MCP servers with the official SDK client,
 * keeps their tools in a catalog, and marks with YOUR HOST the three places where a real
 * host plugs in its own logic. The placeholders are deliberately simple and NOT conformant
 * (no policy, no ranking, no budgets beyond a count): the certificate shows what they
 * break. examples/typescript-host/ is a complete, conformant host organised the same way.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import type { Definition, OpenParams, ToolResult, Transport } from "./protocol/methods.js";

/** One tool of the catalog under the name the model sees. */
export interface Entry {
  readonly qualified: string;
  readonly serverId: string;
  readonly tool: Tool;
}

/** A design outcome: the protocol shell reports it as -32000 with `data.kind` (PROTOCOL.md P23, P27). */
export class Outcome extends Error {
  constructor(
    readonly kind: "config_error" | "selection_error" | "connection_error" | "request_too_large",
    message: string,
  ) {
    super(message);
  }
}

export const DISCOVERY: Definition = {
  name: "search_mcp_tools",
  description: "Search the MCP tools of this run and activate the best matches for your next turn.",
  inputSchema: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
};

// ---- YOUR HOST (1 of 3): selection. ----
// Which catalog entries are active in the first round. A real host applies each server's
// policy, ranks, and holds every server to its cap within the budgets: see
// examples/typescript-host/src/host/selection.ts (with policy.ts, ranking.ts, budgets.ts).
function selectFirstRound(catalog: readonly Entry[], baseTools: readonly Definition[]): Entry[] {
  return catalog.slice(0, Math.max(0, 96 - baseTools.length - 1)); // placeholder: the first that fit
}

// ---- YOUR HOST (2 of 3): discovery. ----
// Which tools one search_mcp_tools call activates. A real host checks the arguments, ranks
// the eligible candidates and respects the limits: see
// examples/typescript-host/src/host/discovery.ts.
function discover(run: Run, query: unknown): Entry[] {
  const words = String(query ?? "").toLowerCase().split(/\W+/).filter(Boolean);
  const room = Math.max(0, 112 - run.baseTools.length - 1 - run.active.size);
  return run.catalog
    .filter((entry) => !run.active.has(entry.qualified))
    .filter((entry) => words.some((word) => `${entry.tool.name} ${entry.tool.description ?? ""}`.toLowerCase().includes(word)))
    .slice(0, room); // placeholder: any substring match, no limit, no policy
}

// ---- YOUR HOST (3 of 3): the execution gate. ----
// Whether a call may run. A real host lets exactly the active tools through and routes
// each to its server under the original name: see examples/typescript-host/src/host/gate.ts.
function gateAllows(run: Run, name: string): boolean {
  return run.active.has(name); // placeholder: probably right, but check it against SPEC.md GATE-1
}

// ---- The rest: connections and the run, usually replaced by your host's own. ----

export class Run {
  readonly clients = new Map<string, Client>();
  readonly catalog: Entry[] = [];
  readonly active = new Set<string>();

  private constructor(readonly baseTools: readonly Definition[], private readonly callTimeoutSeconds: number) {}

  static async open(params: OpenParams): Promise<Run> {
    const run = new Run(params.baseTools, params.callTimeoutSeconds);
    try {
      for (const server of params.servers) {
        const serverId = String(server.id);
        try {
          const client = new Client({ name: "example-host", version: "0.1.0" });
          run.clients.set(serverId, client);
          await client.connect(transportOf(server.transport), { timeout: (params.connectTimeoutSeconds ?? 20) * 1000 });
          let cursor: string | undefined;
          do {
            const page = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout: (params.listTimeoutSeconds ?? 15) * 1000 });
            for (const tool of page.tools) run.catalog.push({ qualified: `${serverId}__${tool.name}`, serverId, tool });
            cursor = page.nextCursor || undefined;
          } while (cursor !== undefined);
        } catch (error) {
          throw new Outcome("connection_error", `server ${serverId}: ${error instanceof Error ? error.message : String(error)}`);
        }
      }
      for (const entry of selectFirstRound(run.catalog, run.baseTools)) run.active.add(entry.qualified);
    } catch (error) {
      await run.close(); // a run that fails to open leaves no connection behind
      throw error;
    }
    return run;
  }

  definitions(): Definition[] {
    const active = this.catalog.filter((entry) => this.active.has(entry.qualified));
    const mcp = active.map((entry) => ({ name: entry.qualified, description: entry.tool.description ?? "", inputSchema: entry.tool.inputSchema }));
    return [...this.baseTools, DISCOVERY, ...mcp];
  }

  async call(name: string, args: Record<string, unknown>): Promise<ToolResult> {
    if (name === DISCOVERY.name) {
      const activated = discover(this, args["query"]);
      for (const entry of activated) this.active.add(entry.qualified);
      return {
        content: [{ type: "text", text: `activated ${activated.length} tool(s)` }],
        isError: false,
        structuredContent: {
          activated: activated.map((entry) => ({ name: entry.qualified, description: entry.tool.description ?? "" })),
          activeCount: this.active.size,
          remainingCapacity: Math.max(0, 112 - this.baseTools.length - 1 - this.active.size),
        },
      };
    }
    const entry = this.catalog.find((candidate) => candidate.qualified === name);
    const client = entry === undefined ? undefined : this.clients.get(entry.serverId);
    if (!gateAllows(this, name) || entry === undefined || client === undefined) {
      return errorResult(`${name} is not active; call ${DISCOVERY.name} first`);
    }
    try {
      const result = await client.callTool({ name: entry.tool.name, arguments: args }, undefined, { timeout: this.callTimeoutSeconds * 1000 });
      const content = Array.isArray(result["content"]) ? (result["content"] as Record<string, unknown>[]) : [];
      return { content, isError: result["isError"] === true };
    } catch (error) {
      return errorResult(`${name} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  request(extraTools: readonly Definition[]): Definition[] {
    const tools = [...this.definitions(), ...extraTools];
    if (tools.length > 128) throw new Outcome("request_too_large", `${tools.length} definitions; a request carries at most 128`);
    return tools;
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.clients.values()].map((client) => client.close()));
  }
}

function transportOf(transport: Transport): StdioClientTransport | StreamableHTTPClientTransport {
  return transport.type === "stdio"
    ? new StdioClientTransport({ command: transport.command, args: [...transport.args], env: { ...transport.env }, stderr: "inherit" })
    : new StreamableHTTPClientTransport(new URL(transport.url));
}

function errorResult(text: string): ToolResult {
  return { content: [{ type: "text", text }], isError: true };
}
