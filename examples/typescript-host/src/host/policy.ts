/**
 * Tool policies (SPEC.md POL-1 to POL-9): which tools of a server may ever be active, and
 * which must be active from the first round. Applied before any ranking.
 *
 * Implementation-defined choices: a pinned or allowlisted name that the server does not
 * offer is a configuration error naming the server and the names (SPEC.md ID-3), and so is
 * a pinned tool that the server's own policy excludes (ID-9).
 */
import type { CatalogTool } from "./catalog.js";
import type { ServerConfig, ToolPolicy } from "./config.js";
import { configError } from "./errors.js";

/** Whether the server's policy admits the tool (POL-2 to POL-5, POL-7). */
export function isEligible(tool: CatalogTool, policy: ToolPolicy): boolean {
  const name = tool.originalName;
  if (policy.deniedTools.includes(name)) return false;
  if (restrictsByAllowlist(policy) && !policy.allowedTools.includes(name)) return false;
  // Fails closed: only the JSON boolean true counts, never "true" or 1, never a guess from the name.
  if (policy.sideEffects === "readOnly" && tool.annotations?.["readOnlyHint"] !== true) return false;
  return true;
}

/** Required tools are active before any ranked tool (POL-6): eligible pinned tools, and every eligible tool outside `auto`. */
export function isRequired(tool: CatalogTool, policy: ToolPolicy): boolean {
  return isEligible(tool, policy) && (policy.mode !== "auto" || policy.pinnedTools.includes(tool.originalName));
}

function restrictsByAllowlist(policy: ToolPolicy): boolean {
  return policy.mode === "allowlist" || (policy.mode === "auto" && policy.allowedTools.length > 0);
}

/** POL-7: a pin of a tool the policy excludes is never active; here it is an error naming it. */
export function checkPinsEligible(server: ServerConfig, tools: readonly CatalogTool[]): void {
  const excluded = tools.filter((tool) => server.policy.pinnedTools.includes(tool.originalName) && !isEligible(tool, server.policy));
  if (excluded.length > 0) {
    const list = excluded.map((tool) => `'${tool.originalName}'`).join(", ");
    throw configError(
      `server '${server.id}' pins ${list}, which its policy excludes (denied, not read-only under readOnly, or outside allowedTools); unpin them or change the policy`,
    );
  }
}

/** POL-8: a name the server does not offer never brings another tool in; here it is an error. */
export function checkNamesOffered(server: ServerConfig, tools: readonly CatalogTool[]): void {
  const offered = new Set(tools.map((tool) => tool.originalName));
  const policy = server.policy;
  const named = [
    ...policy.pinnedTools.map((name) => ["pinnedTools", name] as const),
    ...(restrictsByAllowlist(policy) ? policy.allowedTools.map((name) => ["allowedTools", name] as const) : []),
  ];
  const missing = named.filter(([, name]) => !offered.has(name));
  if (missing.length > 0) {
    const list = missing.map(([field, name]) => `'${name}' (${field})`).join(", ");
    throw configError(`server '${server.id}' does not offer ${list}; remove the names from its policy or check their spelling`);
  }
}
