/**
 * The protocol's methods (PROTOCOL.md P17 to P30) over any host that can open runs: the
 * table of open runs, defaults of the params, and the mapping of the host's outcomes to
 * -32000 errors. A host implements `Host`; this file stays the same.
 */
import { INVALID_PARAMS, OUTCOME, kindError } from "./jsonrpc.js";
import type { Driver, Method, Params } from "./server.js";

export const PROTOCOL_VERSION = "1";
/** P22: the call limit when `run.open` does not give one. */
export const DEFAULT_CALL_TIMEOUT_SECONDS = 20;
const OUTCOME_KINDS = new Set(["config_error", "selection_error", "connection_error", "request_too_large"]);

export interface Definition {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: Record<string, unknown>;
}

export type Transport =
  | { readonly type: "stdio"; readonly command: string; readonly args: readonly string[]; readonly env: Readonly<Record<string, string>> }
  | { readonly type: "http"; readonly url: string };

/** `run.open` params with their defaults (P19); ids and policies are the host's to check (P16, P21). */
export interface OpenParams {
  readonly servers: readonly { readonly id: unknown; readonly transport: Transport; readonly policy: unknown }[];
  readonly baseTools: readonly Definition[];
  readonly userMessage: string;
  readonly systemPrompt: string;
  /** Absent: the host's own limit. */
  readonly listTimeoutSeconds: number | undefined;
  readonly callTimeoutSeconds: number;
  /** Starting a server and the MCP handshake (P22). Absent: the host's own limit, which it must have. */
  readonly connectTimeoutSeconds: number | undefined;
  /** The optional profiles a run asks for (P37, P38); a host that does not claim one ignores it. */
  readonly eviction: "lru" | undefined;
  readonly refresh: boolean;
}

export interface ToolResult {
  readonly content: readonly Record<string, unknown>[];
  readonly isError: boolean;
  readonly structuredContent?: Record<string, unknown>;
}

/** One open run. Outcomes are thrown as errors carrying `kind` (one of P23's, or request_too_large). */
export interface HostRun {
  definitions(): Definition[];
  call(name: string, args: Record<string, unknown>): Promise<ToolResult>;
  request(extraTools: readonly Definition[]): Definition[];
  close(): Promise<void>;
}

export interface Host {
  /** Shown on the certificate; `profiles` always holds "core" (P18). */
  readonly identity: { readonly name: string; readonly version: string; readonly profiles: readonly string[] };
  open(params: OpenParams): Promise<HostRun>;
}

export function driverFor(host: Host): Driver {
  const runs = new Map<string, HostRun>();
  let opened = 0;

  const runOf = (params: Params): HostRun => {
    const run = runs.get(params["runId"] as string);
    if (run === undefined) throw kindError(INVALID_PARAMS, "unknown_run", `no open run with runId ${JSON.stringify(params["runId"])}`);
    return run;
  };
  const closeAll = async (): Promise<void> => {
    const open = [...runs.values()];
    runs.clear();
    await Promise.all(open.map((run) => run.close()));
  };

  // Params reach these after their schema check (P16), so the casts only name shapes that hold.
  const methods = new Map<string, Method>([
    [
      "initialize",
      async (params) => {
        const version = params["protocolVersion"] ?? PROTOCOL_VERSION;
        if (version !== PROTOCOL_VERSION) {
          throw kindError(INVALID_PARAMS, "invalid_params", `protocol version ${JSON.stringify(version)} is not supported; this driver speaks "${PROTOCOL_VERSION}"`);
        }
        return { ...host.identity, protocolVersion: PROTOCOL_VERSION };
      },
    ],
    [
      "run.open",
      async (params) => {
        const run = await outcome(() => host.open(openParams(params)));
        const runId = `run-${++opened}`;
        runs.set(runId, run);
        return { runId };
      },
    ],
    ["run.definitions", async (params) => ({ tools: runOf(params).definitions() })],
    ["run.call", (params) => runOf(params).call(params["name"] as string, (params["arguments"] ?? {}) as Params)],
    ["run.request", async (params) => ({ tools: await outcome(() => runOf(params).request((params["extraTools"] ?? []) as Definition[])) })],
    [
      "run.close",
      async (params) => {
        const run = runOf(params);
        runs.delete(params["runId"] as string);
        await run.close();
        return {};
      },
    ],
    [
      "shutdown",
      async () => {
        await closeAll();
        return {};
      },
    ],
  ]);
  return { methods, closeAll };
}

function openParams(params: Params): OpenParams {
  const servers = (params["servers"] ?? []) as { id?: unknown; transport: Record<string, unknown>; policy?: unknown }[];
  return {
    servers: servers.map((server) => ({ id: server.id, transport: transport(server.transport), policy: server.policy })),
    baseTools: (params["baseTools"] ?? []) as Definition[],
    userMessage: (params["userMessage"] ?? "") as string,
    systemPrompt: (params["systemPrompt"] ?? "") as string,
    listTimeoutSeconds: params["listTimeoutSeconds"] as number | undefined,
    callTimeoutSeconds: (params["callTimeoutSeconds"] ?? DEFAULT_CALL_TIMEOUT_SECONDS) as number,
    connectTimeoutSeconds: params["connectTimeoutSeconds"] as number | undefined,
    eviction: params["eviction"] as "lru" | undefined,
    refresh: params["refresh"] === true,
  };
}

function transport(raw: Record<string, unknown>): Transport {
  if (raw["type"] === "stdio") {
    return { type: "stdio", command: raw["command"] as string, args: (raw["args"] ?? []) as string[], env: (raw["env"] ?? {}) as Record<string, string> };
  }
  return { type: "http", url: raw["url"] as string };
}

/** A host's outcome (an error with a known `kind`) becomes -32000 with that kind (P23, P27). */
async function outcome<T>(work: () => Promise<T> | T): Promise<T> {
  try {
    return await work();
  } catch (error) {
    const kind = (error as { kind?: unknown } | null)?.kind;
    if (error instanceof Error && typeof kind === "string" && OUTCOME_KINDS.has(kind)) throw kindError(OUTCOME, kind, error.message);
    throw error;
  }
}
