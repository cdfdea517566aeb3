/**
 * The execution gate (SPEC.md GATE-1 to GATE-4, CAT-4): a call runs only when its name is
 * exactly the name of an active tool, and then goes to that tool's server under its
 * original name with the arguments unchanged. Everything else is an error result, and no
 * server hears of it.
 */
import type { CatalogTool } from "./catalog.js";
import { errorResult, type ServerConnection, type ToolResult } from "./connections.js";
import { DISCOVERY_NAME } from "./discovery.js";

export interface GateState {
  /** Active MCP tools by the name the model sees. */
  readonly active: ReadonlyMap<string, CatalogTool>;
  readonly connections: ReadonlyMap<string, ServerConnection>;
  readonly baseToolNames: ReadonlySet<string>;
  readonly discoveryRegistered: boolean;
  readonly callTimeoutSeconds: number;
}

export async function execute(state: GateState, name: string, args: Record<string, unknown>): Promise<ToolResult> {
  const tool = state.active.get(name);
  if (tool === undefined) return refusal(state, name);
  const connection = state.connections.get(tool.server.id);
  if (connection === undefined) return errorResult(`server '${tool.server.id}' is not connected`);
  return connection.callTool(tool.originalName, args, state.callTimeoutSeconds);
}

function refusal(state: GateState, name: string): ToolResult {
  if (state.baseToolNames.has(name)) {
    // SPEC.md ID-6: base tools belong to the host, which runs them outside the toolset.
    return errorResult(`'${name}' is a base tool; the host runs base tools itself, not through the MCP toolset`);
  }
  const hint = state.discoveryRegistered
    ? ` Call ${DISCOVERY_NAME} with a description of what you need; tools it activates are available on your next turn.`
    : "";
  return errorResult(`Tool '${name}' is not active in this run and cannot be executed.${hint}`);
}
