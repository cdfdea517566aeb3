/**
 * The discovery tool `search_mcp_tools` (SPEC.md DSC-1 to DSC-10): checks the agent's
 * arguments, ranks the candidates with the first-round scorer on the agent's query, and
 * activates the relevant ones within the limits.
 *
 * Readings this host takes where SPEC.md lets it choose: a `limit` above 12 is refused, as
 * its schema says (ID-11); a `server_ids` entry that names no server of the run adds no
 * server to the scope, so a list of nothing but such entries finds nothing (ID-13).
 */
import type { CatalogTool, Definition } from "./catalog.js";
import { show } from "./errors.js";
import type { Ranker } from "./ranking.js";

export const DISCOVERY_NAME = "search_mcp_tools";
const DEFAULT_LIMIT = 6;
const MAX_LIMIT = 12;

export const DISCOVERY_TOOL: Definition = {
  name: DISCOVERY_NAME,
  description:
    "Search the MCP tools of this run that are not active yet and activate the best matches. " +
    "Call it when the tools you have now are not enough for the task, describing what you need. " +
    "Tools it activates become available on your next turn, not in this one.",
  inputSchema: {
    type: "object",
    properties: {
      query: { type: "string", description: "What the tool you need should do, in a few words." },
      server_ids: {
        type: "array",
        items: { type: "string" },
        description: "Only search the tools of these servers (all servers when absent or empty).",
      },
      limit: {
        type: "integer",
        minimum: 1,
        maximum: MAX_LIMIT,
        description: `How many tools to activate at most (default ${DEFAULT_LIMIT}, at most ${MAX_LIMIT}).`,
      },
    },
    required: ["query"],
  },
};

export interface DiscoveryRequest {
  readonly query: string;
  /** The servers to search; null: every server. */
  readonly serverIds: ReadonlySet<string> | null;
  readonly limit: number;
}

/** DSC-7: the arguments, or the sentence that tells the agent what was wrong with them. */
export function parseDiscoveryArguments(args: Record<string, unknown>, runServerIds: ReadonlySet<string>): DiscoveryRequest | string {
  const query = args["query"];
  if (query === undefined) return "search_mcp_tools needs a 'query': describe the tool you need";
  if (typeof query !== "string") return `'query' must be a string, got ${show(query)}`;
  if (query.trim() === "") return "'query' is empty; describe the tool you need in a few words";

  const limit = args["limit"];
  if (limit !== undefined && limit !== null && !(typeof limit === "number" && Number.isInteger(limit) && limit > 0)) {
    return `'limit' must be a positive integer, got ${show(limit)}`;
  }
  if (typeof limit === "number" && limit > MAX_LIMIT) {
    return `'limit' is at most ${MAX_LIMIT}, got ${show(limit)}; ask for ${MAX_LIMIT} or fewer tools`;
  }

  const serverIds = args["server_ids"] ?? undefined; // null, like absent, means every server (DSC-8)
  if (serverIds !== undefined && (!Array.isArray(serverIds) || !serverIds.every((id) => typeof id === "string"))) {
    return `'server_ids' must be a list of server ids (strings), got ${show(serverIds)}`;
  }
  const listed = serverIds as string[] | undefined;
  return {
    query,
    // An empty list means every server too; an id of no server of the run adds none.
    serverIds: listed === undefined || listed.length === 0 ? null : new Set(listed.filter((id) => runServerIds.has(id))),
    limit: typeof limit === "number" ? limit : DEFAULT_LIMIT,
  };
}

export interface DiscoveryState {
  /** Tools of the catalog that policy admits and whose server is in `auto` mode. */
  readonly candidates: readonly CatalogTool[];
  readonly isActive: (tool: CatalogTool) => boolean;
  /** Active MCP tools of a server now. */
  readonly activeOf: (tool: CatalogTool) => number;
  /** Dynamic MCP capacity minus the active MCP tools. */
  readonly remainingCapacity: number;
  readonly ranker: Ranker;
}

/** The tools one discovery call activates, best first (DSC-4, DSC-5, DSC-10); possibly none. */
export function discover(request: DiscoveryRequest, state: DiscoveryState): CatalogTool[] {
  const pool = state.candidates.filter(
    (tool) =>
      !state.isActive(tool) &&
      (request.serverIds === null || request.serverIds.has(tool.server.id)) &&
      state.activeOf(tool) < tool.server.policy.maxActiveTools,
  );
  const room = new Map<string, number>();
  const chosen: CatalogTool[] = [];
  for (const { tool, score } of state.ranker.rank(pool, request.query)) {
    if (chosen.length >= Math.min(request.limit, state.remainingCapacity)) break;
    if (!score.relevant) continue;
    const left = room.get(tool.server.id) ?? tool.server.policy.maxActiveTools - state.activeOf(tool);
    if (left <= 0) continue;
    room.set(tool.server.id, left - 1);
    chosen.push(tool);
  }
  return chosen;
}
