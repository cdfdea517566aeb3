/**
 * The first round (SPEC.md SEL-1 to SEL-6, ERR-1, ERR-2): required tools first, then one
 * global ranking of the other eligible tools of `auto` servers, each server held to its
 * first-round cap, until the first-round capacity is used up.
 *
 * Reading this host takes where SPEC.md lets it choose (ID-10): the cap of 12 counts the
 * tools the ranking adds, not the required ones, within the server's maxActiveTools.
 */
import { FIRST_ROUND_SERVER_CAP } from "./budgets.js";
import type { CatalogTool } from "./catalog.js";
import type { ServerConfig } from "./config.js";
import { selectionError } from "./errors.js";
import { isEligible, isRequired } from "./policy.js";
import type { Ranker } from "./ranking.js";

export interface FirstRoundInput {
  readonly servers: readonly ServerConfig[];
  readonly catalog: readonly CatalogTool[];
  /** First-round MCP capacity: 96 minus base tools minus the discovery tool; never negative here. */
  readonly capacity: number;
  readonly ranker: Ranker;
  readonly userMessage: string;
}

/** The tools active after the first round, in the order they were taken. */
export function selectFirstRound(input: FirstRoundInput): CatalogTool[] {
  const { servers, catalog, capacity, ranker, userMessage } = input;
  const required = catalog.filter((tool) => isRequired(tool, tool.server.policy));
  const requiredBy = countBy(required);
  for (const server of servers) {
    const count = requiredBy.get(server) ?? 0;
    if (count > server.policy.maxActiveTools) {
      throw selectionError(
        `server '${server.id}' has ${count} required tools but maxActiveTools is ${server.policy.maxActiveTools}; ` +
          `shrink the allowlist or pinned tools, or use auto mode`,
      );
    }
  }
  if (required.length > capacity) {
    throw selectionError(
      `the servers require ${required.length} tools in the first round but only ${capacity} fit ` +
        `(96 definitions less the base tools and the discovery tool); pin or allowlist fewer tools, or use auto mode`,
    );
  }

  const taken = ranker.rank(required, userMessage).map(({ tool }) => tool);
  const active = new Map(requiredBy);
  const ranked = ranker.rank(
    catalog.filter((tool) => tool.server.policy.mode === "auto" && isEligible(tool, tool.server.policy) && !isRequired(tool, tool.server.policy)),
    userMessage,
  );
  for (const { tool } of ranked) {
    if (taken.length >= capacity) break;
    const server = tool.server;
    const count = active.get(server) ?? 0;
    // Scores of zero or less are taken too: how many tools fill the round never depends on the ranker (SEL-2).
    if (count < firstRoundCap(server, requiredBy.get(server) ?? 0)) {
      taken.push(tool);
      active.set(server, count + 1);
    }
  }
  return taken;
}

/** SEL-1, cap of 12 ranked tools after the required ones: min(maxActiveTools, required + 12). */
function firstRoundCap(server: ServerConfig, required: number): number {
  return Math.min(server.policy.maxActiveTools, required + FIRST_ROUND_SERVER_CAP);
}

export function countBy(tools: readonly CatalogTool[]): Map<ServerConfig, number> {
  const counts = new Map<ServerConfig, number>();
  for (const tool of tools) counts.set(tool.server, (counts.get(tool.server) ?? 0) + 1);
  return counts;
}
