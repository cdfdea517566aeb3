/**
 * One run's toolset: opened from the configuration (catalog, policy, first round), read
 * before every model request, called through the gate and discovery, and closed. Runs
 * share nothing (SPEC.md ISO-1, ISO-2).
 */
import { capacities, checkRequest, type Capacities } from "./budgets.js";
import { catalogServer, checkCollisions, definitionOf, type CatalogTool, type Definition } from "./catalog.js";
import { parseServers, type RawServer, type ServerConfig } from "./config.js";
import { Deadline, ServerConnection, describe, errorResult, type ToolResult } from "./connections.js";
import { DISCOVERY_NAME, DISCOVERY_TOOL, discover, parseDiscoveryArguments } from "./discovery.js";
import { configError, connectionError, selectionError } from "./errors.js";
import { Eviction, evictedLines } from "./eviction.js";
import { execute } from "./gate.js";
import { checkNamesOffered, checkPinsEligible, isEligible } from "./policy.js";
import { LexicalRanker, type Ranker } from "./ranking.js";
import { countBy, selectFirstRound } from "./selection.js";

export interface RunConfig {
  readonly servers: readonly RawServer[];
  readonly baseTools: readonly Definition[];
  readonly userMessage: string;
  readonly systemPrompt: string;
  /** How long one server may take to be reached and list its tools (SPEC.md ID-5). */
  readonly listTimeoutSeconds: number;
  /** How long one tool call may take before it becomes an error result. */
  readonly callTimeoutSeconds: number;
  /** How long starting a server (or reaching it) and the MCP handshake may take (PROTOCOL.md P22). */
  readonly connectTimeoutSeconds: number;
  /** `"lru"`: the active set rolls within the dynamic capacity (SPEC.md EVC, PROTOCOL.md P37). */
  readonly eviction?: "lru" | undefined;
}

/** SPEC.md ID-5: how long listing may take when the run does not say. */
export const DEFAULT_LIST_TIMEOUT_SECONDS = 15;
/** How long starting a server and the MCP handshake may take when the run does not say: a stdio server may need many seconds on a busy machine. */
export const CONNECT_TIMEOUT_SECONDS = 20;

export class Toolset {
  /** Active MCP tools by exposed name, in order of activation (the definition order, SPEC.md ID-1). */
  private readonly active = new Map<string, CatalogTool>();
  private readonly candidates: readonly CatalogTool[];
  /** Present in a run with eviction. */
  private readonly eviction: Eviction | undefined;
  private closed: Promise<void> | undefined;

  private constructor(
    private readonly config: RunConfig,
    private readonly servers: readonly ServerConfig[],
    private readonly connections: ReadonlyMap<string, ServerConnection>,
    private readonly discoveryRegistered: boolean,
    private readonly capacity: Capacities,
    private readonly ranker: Ranker,
    catalog: readonly CatalogTool[],
    firstRound: readonly CatalogTool[],
  ) {
    for (const tool of firstRound) this.active.set(tool.exposedName, tool);
    this.candidates = catalog.filter((tool) => tool.server.policy.mode === "auto" && isEligible(tool, tool.server.policy));
    this.eviction = config.eviction === "lru" ? new Eviction() : undefined;
    this.eviction?.use(firstRound);
  }

  /**
   * Opens a run, or throws a HostError after closing every connection it opened (ERR-6).
   * Order: configuration, budgets, connections and listing, catalog, policy, first round.
   */
  static async open(config: RunConfig, log: (message: string) => void): Promise<Toolset> {
    const servers = parseServers(config.servers);
    const discoveryRegistered = servers.some((server) => server.policy.mode === "auto");
    const baseNames = checkBaseToolNames(config.baseTools);
    const capacity = capacities(config.baseTools.length, discoveryRegistered);
    if (capacity.firstRound < 0) {
      throw selectionError(
        `${config.baseTools.length} base tools${discoveryRegistered ? " and the discovery tool" : ""} leave ` +
          `${capacity.firstRound} places for MCP tools in a first request of at most 96 definitions; remove base tools`,
      );
    }
    const connections = await connectAll(servers, config.connectTimeoutSeconds, config.listTimeoutSeconds, log);
    try {
      const catalog = servers.flatMap((server) => catalogServer(server, connections.get(server.id)?.tools ?? [], log));
      checkCollisions(catalog);
      checkBaseToolCollisions(baseNames, catalog);
      for (const server of servers) {
        const tools = catalog.filter((tool) => tool.server === server);
        checkNamesOffered(server, tools);
        checkPinsEligible(server, tools);
      }
      const ranker = new LexicalRanker(config.systemPrompt);
      const firstRound = selectFirstRound({ servers, catalog, capacity: capacity.firstRound, ranker, userMessage: config.userMessage });
      const open = new Map([...connections].map(([id, { connection }]) => [id, connection]));
      return new Toolset(config, servers, open, discoveryRegistered, capacity, ranker, catalog, firstRound);
    } catch (error) {
      await Promise.all([...connections.values()].map(({ connection }) => connection.close()));
      throw error;
    }
  }

  /** Exactly what the next model request carries from this toolset (DEF-1 to DEF-4). */
  definitions(): Definition[] {
    return [
      ...this.config.baseTools,
      ...(this.discoveryRegistered ? [DISCOVERY_TOOL] : []),
      ...[...this.active.values()].map(definitionOf),
    ];
  }

  /** The whole request with what other parts of the host add, checked against 128 (BUD-3). */
  request(extraTools: readonly Definition[]): Definition[] {
    const tools = [...this.definitions(), ...extraTools];
    checkRequest(tools);
    return tools;
  }

  /** One call as the model makes it: discovery, or the gate. Never throws. */
  async call(name: string, args: Record<string, unknown>): Promise<ToolResult> {
    if (this.closed !== undefined) return errorResult("this run is closed");
    if (name === DISCOVERY_NAME && this.discoveryRegistered) return this.search(args);
    const result = await execute(
      {
        active: this.active,
        connections: this.connections,
        baseToolNames: new Set(this.config.baseTools.map((tool) => tool.name)),
        discoveryRegistered: this.discoveryRegistered,
        callTimeoutSeconds: this.config.callTimeoutSeconds,
      },
      name,
      args,
    );
    const tool = this.active.get(name);
    if (tool !== undefined && !result.isError) this.eviction?.use([tool]); // a call that succeeded is a use (EVC-3)
    return result;
  }

  close(): Promise<void> {
    this.closed ??= Promise.all([...this.connections.values()].map((connection) => connection.close())).then(() => undefined);
    return this.closed;
  }

  private search(args: Record<string, unknown>): ToolResult {
    const request = parseDiscoveryArguments(args, new Set(this.servers.map((server) => server.id)));
    if (typeof request === "string") return errorResult(`Invalid search_mcp_tools arguments: ${request}. Nothing was activated.`);
    const activeBy = countBy([...this.active.values()]);
    // With eviction, the tools that may make room count as room (EVC-5.3).
    const evictable = this.eviction?.evictable(this.active.values()) ?? [];
    const activated = discover(request, {
      candidates: this.candidates,
      isActive: (tool) => this.active.has(tool.exposedName),
      activeOf: (tool) => activeBy.get(tool.server) ?? 0,
      remainingCapacity: this.remainingCapacity() + evictable.length,
      ranker: this.ranker,
    });
    const evicted = this.eviction?.makeRoom(this.active, evictable, activated.length, this.capacity.dynamic) ?? [];
    for (const tool of activated) this.active.set(tool.exposedName, tool);
    this.eviction?.use(activated);
    const summary = {
      activated: activated.map((tool) => ({ name: tool.exposedName, description: tool.description })),
      activeCount: this.active.size,
      remainingCapacity: this.remainingCapacity(),
      ...(evicted.length > 0 ? { evicted: evicted.map((tool) => ({ name: tool.exposedName })) } : {}),
    };
    const lines =
      activated.length === 0
        ? ["No matching tools could be activated; try other words, or other servers."]
        : ["Activated these tools; they are available on your next turn:", ...activated.map((tool) => `- ${tool.exposedName}: ${tool.description}`)];
    lines.push(...evictedLines(evicted));
    lines.push(`Active MCP tools: ${summary.activeCount}; remaining capacity: ${summary.remainingCapacity}.`);
    return { content: [{ type: "text", text: lines.join("\n") }], isError: false, structuredContent: summary };
  }

  private remainingCapacity(): number {
    return Math.max(0, this.capacity.dynamic - this.active.size);
  }
}

/**
 * DEF-5, the part known before any server is contacted: no base tool may be the discovery
 * tool, and no two base tools may share a name.
 */
function checkBaseToolNames(baseTools: readonly Definition[]): Set<string> {
  const names = new Set<string>();
  for (const tool of baseTools) {
    if (tool.name === DISCOVERY_NAME) {
      throw configError(`base tool '${tool.name}' has the name of the discovery tool; rename the base tool`);
    }
    if (names.has(tool.name)) {
      throw configError(`base tool '${tool.name}' is given twice; base tool names must be unique`);
    }
    names.add(tool.name);
  }
  return names;
}

/** DEF-5: a base tool named like a tool of the catalog would let a call reach the wrong tool. */
function checkBaseToolCollisions(baseNames: ReadonlySet<string>, catalog: readonly CatalogTool[]): void {
  for (const tool of catalog) {
    for (const name of new Set([tool.qualifiedName, tool.exposedName])) {
      if (baseNames.has(name)) {
        throw configError(
          `base tool '${name}' has the name of tool '${tool.originalName}' of server '${tool.server.id}'; rename the base tool`,
        );
      }
    }
  }
}

interface Listed {
  readonly connection: ServerConnection;
  readonly tools: readonly unknown[];
}

/**
 * Connects to every server at once and lists its tools. Starting a server and the MCP
 * handshake get the run's connect limit; listing every page gets the run's list limit
 * (PROTOCOL.md P22). On the first failure the others are cancelled; when all have settled,
 * whatever opened is closed and that failure is reported (ERR-5, ERR-6).
 */
async function connectAll(
  servers: readonly ServerConfig[],
  connectTimeoutSeconds: number,
  listTimeoutSeconds: number,
  log: (message: string) => void,
): Promise<Map<string, Listed>> {
  const current = new Map<ServerConfig, Deadline>();
  let failed = false;
  const step = <T>(server: ServerConfig, seconds: number, work: (deadline: Deadline) => Promise<T>): Promise<T> => {
    const deadline = new Deadline(seconds);
    current.set(server, deadline);
    return work(deadline).finally(() => deadline.dispose());
  };
  const outcomes = await Promise.allSettled(
    servers.map(async (server) => {
      let connection: ServerConnection | undefined;
      try {
        connection = await step(server, connectTimeoutSeconds, (deadline) => ServerConnection.open(server, deadline, log));
        const opened = connection;
        const tools = await step(server, listTimeoutSeconds, (deadline) => opened.listTools(deadline));
        return { connection, tools };
      } catch (error) {
        await connection?.close();
        const deadline = current.get(server);
        if (failed && deadline?.cancelled === true) return undefined; // stopped because another server failed
        failed = true;
        for (const other of current.values()) other.cancel();
        throw connectionError(
          deadline?.expired !== true
            ? `server '${server.id}' could not be reached or listed: ${describe(error)}`
            : connection === undefined
              ? `server '${server.id}' did not start or answer the MCP handshake within ${connectTimeoutSeconds} s`
              : `server '${server.id}' did not list its tools within ${listTimeoutSeconds} s`,
        );
      }
    }),
  );
  const listed = new Map<string, Listed>();
  outcomes.forEach((outcome, index) => {
    if (outcome.status === "fulfilled" && outcome.value !== undefined) listed.set((servers[index] as ServerConfig).id, outcome.value);
  });
  const failure = outcomes.find((outcome) => outcome.status === "rejected");
  if (failure !== undefined || listed.size < servers.length) {
    await Promise.all([...listed.values()].map(({ connection }) => connection.close()));
    throw failure?.reason ?? connectionError("connecting to the servers was cancelled");
  }
  return listed;
}
