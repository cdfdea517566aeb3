/**
 * One MCP client connection per server of a run, through the official TypeScript SDK:
 * connecting over stdio or Streamable HTTP, listing every page of tools, calling a tool
 * under a time limit, and closing (which ends a stdio server's process).
 *
 * Listing and calling go through `Client.request` with the SDK's loosest result schema, so
 * that this host, not the SDK, decides what a malformed tool or result means: the SDK's own
 * `listTools` would reject a whole page for one tool whose `readOnlyHint` is the string
 * "true", where SPEC.md POL-5 wants only that tool to be ineligible.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError, ResultSchema } from "@modelcontextprotocol/sdk/types.js";
import type { ServerConfig } from "./config.js";

const CLIENT_INFO = { name: "adaptive-toolset-host-example", version: "0.1.0" };
/** How long closing an HTTP session may take before the connection is dropped anyway. */
const TERMINATE_MS = 2_000;

/** What a tool call gives back, in the shape the model sees (PROTOCOL.md P25). */
export interface ToolResult {
  readonly content: readonly Record<string, unknown>[];
  readonly isError: boolean;
  readonly structuredContent?: Record<string, unknown>;
}

export function errorResult(text: string): ToolResult {
  return { content: [{ type: "text", text }], isError: true };
}

/** Raised when a server misbehaves: the caller turns it into a connection error or an error result. */
export class ServerFault extends Error {
  override name = "ServerFault";
}

/** A time limit shared by several steps (connect, then every page of the listing). */
export class Deadline {
  private readonly end: number;
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  /** The time ran out. */
  expired = false;
  /** Someone gave up before the time ran out. */
  cancelled = false;

  constructor(readonly seconds: number) {
    this.end = Date.now() + seconds * 1000;
    this.timer = setTimeout(() => {
      this.expired = true;
      this.controller.abort();
    }, seconds * 1000);
    this.timer.unref();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Options for one SDK request: the time left, and a signal that fires at the deadline. */
  options(): { timeout: number; signal: AbortSignal } {
    return { timeout: Math.max(1, this.end - Date.now()), signal: this.controller.signal };
  }

  /** Also ends the deadline early, so that other steps bound by it stop waiting. */
  cancel(): void {
    if (this.expired || this.controller.signal.aborted) return;
    this.cancelled = true;
    clearTimeout(this.timer);
    this.controller.abort();
  }

  dispose(): void {
    clearTimeout(this.timer);
  }
}

export class ServerConnection {
  private closing: Promise<void> | undefined;
  /** Calls and listings waiting for a reply, cancelled when the transport reports an error. */
  private readonly inFlight = new Set<AbortController>();

  private constructor(
    readonly server: ServerConfig,
    private readonly client: Client,
    private readonly transport: StdioClientTransport | StreamableHTTPClientTransport,
  ) {}

  /** Starts or reaches the server and completes the MCP handshake within the deadline. */
  static async open(server: ServerConfig, deadline: Deadline, log: (message: string) => void): Promise<ServerConnection> {
    const transport = makeTransport(server);
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    const connection = new ServerConnection(server, client, transport);
    client.onerror = (error) => {
      log(`server '${server.id}': ${error.message}`);
      // Over HTTP a connection cut mid-call is only reported here; without this the call
      // would wait for its time limit. (Over stdio the SDK fails pending calls itself.)
      for (const call of connection.inFlight) call.abort(new ServerFault(`the connection broke during the call (${error.message})`));
    };
    try {
      await client.connect(transport, deadline.options());
    } catch (error) {
      await connection.close();
      throw error;
    }
    return connection;
  }

  /** Every tool of every page of `tools/list`, as the server sent them (CAT-2). */
  async listTools(deadline: Deadline): Promise<unknown[]> {
    const tools: unknown[] = [];
    const cursors = new Set<string>();
    let cursor: string | undefined;
    do {
      // A connection cut while a page is on its way is reported only to onerror, as for a
      // call: without this the listing would wait for the whole list time-out.
      const listing = new AbortController();
      this.inFlight.add(listing);
      const { timeout, signal } = deadline.options();
      let page: Record<string, unknown>;
      try {
        page = await this.client.request(
          { method: "tools/list", params: cursor === undefined ? {} : { cursor } },
          ResultSchema,
          { timeout, signal: AbortSignal.any([signal, listing.signal]) },
        );
      } catch (error) {
        throw listing.signal.aborted ? listing.signal.reason : error;
      } finally {
        this.inFlight.delete(listing);
      }
      const listed: unknown = page["tools"];
      if (!Array.isArray(listed)) throw new ServerFault("its tools/list result has no list of tools");
      tools.push(...(listed as unknown[]));
      const next: unknown = page["nextCursor"];
      if (next === undefined || next === null || next === "") {
        cursor = undefined;
      } else if (typeof next !== "string") {
        throw new ServerFault(`its tools/list result has a nextCursor that is not a string: ${JSON.stringify(next)}`);
      } else if (cursors.has(next)) {
        throw new ServerFault(`its tools/list pages loop: the cursor ${JSON.stringify(next)} came back`);
      } else {
        cursors.add(next);
        cursor = next;
      }
    } while (cursor !== undefined);
    return tools;
  }

  /**
   * Calls one tool. Never throws: a timeout, a protocol error, a dropped connection or a
   * malformed result all come back as error results naming the server and the tool (GATE-4).
   */
  async callTool(name: string, args: Record<string, unknown>, timeoutSeconds: number): Promise<ToolResult> {
    const what = `tool '${name}' of server '${this.server.id}'`;
    let raw: Record<string, unknown>;
    const call = new AbortController();
    this.inFlight.add(call);
    try {
      raw = await this.client.request(
        { method: "tools/call", params: { name, arguments: args } },
        ResultSchema,
        { timeout: timeoutSeconds * 1000, signal: call.signal },
      );
    } catch (error) {
      // The SDK reports every cancelled request as a time-out, whatever the reason.
      if (call.signal.aborted) return errorResult(`${what} failed: ${describe(call.signal.reason)}`);
      if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
        return errorResult(`${what} did not answer within ${timeoutSeconds} s; the call was cancelled`);
      }
      return errorResult(`${what} failed: ${describe(error)}`);
    } finally {
      this.inFlight.delete(call);
    }
    return toolResult(raw) ?? errorResult(`${what} returned a malformed result (content must be a list of content blocks)`);
  }

  /** Closes the connection once; later calls wait for the same close. Never throws. */
  close(): Promise<void> {
    this.closing ??= this.shut();
    return this.closing;
  }

  private async shut(): Promise<void> {
    if (this.transport instanceof StreamableHTTPClientTransport) {
      // End the HTTP session on the server's side too; a server that does not answer in
      // time is left to expire it.
      const terminate = this.transport.terminateSession().catch(() => undefined);
      await Promise.race([terminate, sleep(TERMINATE_MS)]);
    }
    // For stdio the SDK closes the server's stdin, then signals it if it does not exit.
    await this.client.close().catch(() => undefined);
  }
}

function makeTransport(server: ServerConfig): StdioClientTransport | StreamableHTTPClientTransport {
  const target = server.transport;
  if (target.type === "stdio") {
    // The SDK passes on a few safe variables of this process (PATH, HOME, ...) besides `env`.
    return new StdioClientTransport({ command: target.command, args: [...target.args], env: { ...target.env }, stderr: "inherit" });
  }
  return new StreamableHTTPClientTransport(new URL(target.url));
}

function toolResult(raw: Record<string, unknown>): ToolResult | undefined {
  const content = raw["content"];
  if (!Array.isArray(content)) return undefined;
  const blocks = content as unknown[];
  if (!blocks.every((block) => isObject(block) && typeof block["type"] === "string")) return undefined;
  const structured = raw["structuredContent"];
  const result = { content: blocks as Record<string, unknown>[], isError: raw["isError"] === true };
  return isObject(structured) ? { ...result, structuredContent: structured } : result;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
