/**
 * A run's configuration: its servers with their ids, transports and tool policies, checked
 * before anything is contacted (SPEC.md ERR-3) and completed with the defaults of POL-9.
 */
import { configError, show } from "./errors.js";

export type Mode = "auto" | "allowlist" | "all";
export type SideEffects = "allow" | "readOnly";

export interface ToolPolicy {
  readonly mode: Mode;
  readonly allowedTools: readonly string[];
  readonly deniedTools: readonly string[];
  readonly pinnedTools: readonly string[];
  readonly maxActiveTools: number;
  readonly sideEffects: SideEffects;
}

export type Transport =
  | { readonly type: "stdio"; readonly command: string; readonly args: readonly string[]; readonly env: Readonly<Record<string, string>> }
  | { readonly type: "http"; readonly url: string };

export interface ServerConfig {
  readonly id: string;
  readonly transport: Transport;
  readonly policy: ToolPolicy;
}

/** A server as the configuration gives it: id and policy still unchecked. */
export interface RawServer {
  readonly id: unknown;
  readonly transport: Transport;
  readonly policy?: unknown;
}

const MODES: readonly Mode[] = ["auto", "allowlist", "all"];
const SIDE_EFFECTS: readonly SideEffects[] = ["allow", "readOnly"];
const POLICY_FIELDS = new Set(["mode", "allowedTools", "deniedTools", "pinnedTools", "maxActiveTools", "sideEffects"]);
const SERVER_ID = /^[A-Za-z0-9_-]+$/;
/** No server can have more tools active than a first request carries (ERR-3). */
const MAX_ACTIVE_TOOLS = 96;

export const DEFAULT_POLICY: ToolPolicy = {
  mode: "auto",
  allowedTools: [],
  deniedTools: [],
  pinnedTools: [],
  maxActiveTools: 24,
  sideEffects: "allow",
};

/**
 * Checks every server of a run and returns them with complete policies, or throws a
 * `config_error` naming the first server and field that is wrong.
 */
export function parseServers(raw: readonly RawServer[]): ServerConfig[] {
  const seen = new Set<string>();
  return raw.map((server, index) => {
    const id = checkServerId(server.id, index);
    if (seen.has(id)) {
      throw configError(`server id '${id}' is used by two servers of the run; give each server its own id`);
    }
    seen.add(id);
    return { id, transport: server.transport, policy: parsePolicy(id, server.policy) };
  });
}

function checkServerId(id: unknown, index: number): string {
  const where = `servers[${index}].id`;
  if (id === undefined) throw configError(`${where} is missing; every server needs an id`);
  if (typeof id !== "string") throw configError(`${where} must be a string, got ${show(id)}`);
  if (id === "") throw configError(`${where} is empty; a server id names the server in qualified tool names`);
  if (!SERVER_ID.test(id)) {
    throw configError(`server id ${show(id)} may only contain ASCII letters, digits, '-' and '_'`);
  }
  if (id.includes("__")) {
    throw configError(`server id ${show(id)} contains '__', which separates the server id from the tool name`);
  }
  return id;
}

function parsePolicy(id: string, raw: unknown): ToolPolicy {
  if (raw === undefined || raw === null) return DEFAULT_POLICY;
  if (typeof raw !== "object" || Array.isArray(raw)) {
    throw configError(`server '${id}': policy must be an object, got ${show(raw)}`);
  }
  const fields = raw as Record<string, unknown>;
  // A misspelt field would otherwise fall back to its default without a word.
  const unknown = Object.keys(fields).filter((key) => !POLICY_FIELDS.has(key));
  if (unknown.length > 0) {
    throw configError(`server '${id}': the policy has unknown fields ${unknown.map((key) => `'${key}'`).join(", ")}; expected some of ${[...POLICY_FIELDS].join(", ")}`);
  }
  return {
    mode: oneOf(id, "mode", fields["mode"], MODES, DEFAULT_POLICY.mode),
    allowedTools: names(id, "allowedTools", fields["allowedTools"]),
    deniedTools: names(id, "deniedTools", fields["deniedTools"]),
    pinnedTools: names(id, "pinnedTools", fields["pinnedTools"]),
    maxActiveTools: maxActiveTools(id, fields["maxActiveTools"]),
    sideEffects: oneOf(id, "sideEffects", fields["sideEffects"], SIDE_EFFECTS, DEFAULT_POLICY.sideEffects),
  };
}

function oneOf<T extends string>(id: string, field: string, value: unknown, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  const found = allowed.find((candidate) => candidate === value);
  if (found === undefined) {
    throw configError(`server '${id}': policy.${field} is ${show(value)}; expected one of ${allowed.map((a) => `'${a}'`).join(", ")}`);
  }
  return found;
}

function names(id: string, field: string, value: unknown): readonly string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    throw configError(`server '${id}': policy.${field} must be a list of tool names, got ${show(value)}`);
  }
  const bad = value.findIndex((item) => typeof item !== "string");
  if (bad >= 0) {
    throw configError(`server '${id}': policy.${field}[${bad}] must be a tool name (a string), got ${show(value[bad])}`);
  }
  return value as string[];
}

function maxActiveTools(id: string, value: unknown): number {
  if (value === undefined) return DEFAULT_POLICY.maxActiveTools;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > MAX_ACTIVE_TOOLS) {
    throw configError(`server '${id}': policy.maxActiveTools is ${show(value)}; expected an integer from 0 to ${MAX_ACTIVE_TOOLS}`);
  }
  return value;
}
