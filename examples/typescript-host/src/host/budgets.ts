/**
 * The three limits of the design (SPEC.md "Budgets") and the capacities they leave for MCP
 * tools once the base tools and the discovery tool are counted.
 */
import { HostError } from "./errors.js";
import type { Definition } from "./catalog.js";

/** Definitions the first request of a run may carry (BUD-1). */
export const FIRST_ROUND_LIMIT = 96;
/** Definitions a run may grow to through discovery (BUD-2). */
export const DYNAMIC_LIMIT = 112;
/** Definitions any single model request may carry (BUD-3). */
export const REQUEST_LIMIT = 128;
/** Active tools one `auto` server may take in the first round (SEL-1). */
export const FIRST_ROUND_SERVER_CAP = 12;

export interface Capacities {
  /** MCP tools the first round may activate: may be negative, which BUD-4 refuses. */
  readonly firstRound: number;
  /** MCP tools the run may ever have active. */
  readonly dynamic: number;
}

export function capacities(baseTools: number, discoveryRegistered: boolean): Capacities {
  const fixed = baseTools + (discoveryRegistered ? 1 : 0);
  return { firstRound: FIRST_ROUND_LIMIT - fixed, dynamic: DYNAMIC_LIMIT - fixed };
}

/** The last check before any model request (BUD-3): refuse locally, never let the provider do it. */
export function checkRequest(tools: readonly Definition[]): void {
  if (tools.length > REQUEST_LIMIT) {
    throw new HostError(
      "request_too_large",
      `the request would carry ${tools.length} tool definitions, over the limit of ${REQUEST_LIMIT}; ` +
        `drop ${tools.length - REQUEST_LIMIT} of the extra tools or activate fewer MCP tools`,
    );
  }
}
