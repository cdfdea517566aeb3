/**
 * The catalog: every tool the run's servers listed, with its server, original name,
 * annotations and complete definition (SPEC.md CAT-1), under its qualified name (CAT-3) and
 * the name the model sees (CAT-5).
 *
 * Implementation-defined choices (SPEC.md ID-2, ID-4):
 * - a qualified name that breaks `^[A-Za-z0-9_-]{1,64}$` is exposed under a mapped name:
 *   every other character becomes `_`, and the result is cut to 52 characters followed by
 *   `_` and the first 11 hex digits of the SHA-256 of the qualified name;
 * - a malformed tool definition (no name, an empty or non-string name, an input schema
 *   that is not an object or declares a type other than "object") is left out of the catalog, with a warning naming the server
 *   and the tool's position.
 */
import { createHash } from "node:crypto";
import { configError } from "./errors.js";
import { isObject } from "./connections.js";
import type { ServerConfig } from "./config.js";

/** A tool definition as a model request carries it. */
export interface Definition {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: Record<string, unknown>;
}

export interface CatalogTool {
  readonly server: ServerConfig;
  readonly originalName: string;
  /** `serverId__originalName` (CAT-3): what ranking ties and the specification speak of. */
  readonly qualifiedName: string;
  /** The qualified name, or its mapping when that breaks the provider rule (CAT-5). */
  readonly exposedName: string;
  readonly description: string;
  readonly inputSchema: Record<string, unknown>;
  readonly annotations: Record<string, unknown> | undefined;
}

export const SEPARATOR = "__";
const PROVIDER_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export function qualify(serverId: string, toolName: string): string {
  return `${serverId}${SEPARATOR}${toolName}`;
}

export function exposedName(qualified: string): string {
  if (PROVIDER_NAME.test(qualified)) return qualified;
  const safe = Array.from(qualified, (char) => (/^[A-Za-z0-9_-]$/.test(char) ? char : "_")).join("");
  const digest = createHash("sha256").update(qualified, "utf8").digest("hex");
  return `${safe.slice(0, 52)}_${digest.slice(0, 11)}`;
}

export function definitionOf(tool: CatalogTool): Definition {
  return { name: tool.exposedName, description: tool.description, inputSchema: tool.inputSchema };
}

/** The tools of one server, as listed; malformed ones are reported through `warn` and left out. */
export function catalogServer(server: ServerConfig, listed: readonly unknown[], warn: (message: string) => void): CatalogTool[] {
  const tools: CatalogTool[] = [];
  listed.forEach((raw, position) => {
    const problem = malformation(raw);
    if (problem !== undefined) {
      warn(`server '${server.id}': leaving out tool #${position} (${describeTool(raw)}): ${problem}`);
      return;
    }
    const tool = raw as Record<string, unknown>;
    const originalName = tool["name"] as string;
    const qualifiedName = qualify(server.id, originalName);
    const annotations = tool["annotations"];
    tools.push({
      server,
      originalName,
      qualifiedName,
      exposedName: exposedName(qualifiedName),
      description: typeof tool["description"] === "string" ? tool["description"] : "",
      inputSchema: tool["inputSchema"] as Record<string, unknown>,
      annotations: isObject(annotations) ? annotations : undefined,
    });
  });
  return tools;
}

function malformation(raw: unknown): string | undefined {
  if (!isObject(raw)) return "a tool definition must be an object";
  const name = raw["name"];
  if (name === undefined) return "it has no name";
  if (typeof name !== "string") return `its name is not a string but ${JSON.stringify(name)}`;
  if (name === "") return "its name is empty";
  const schema = raw["inputSchema"];
  if (!isObject(schema)) return "its inputSchema is not an object";
  if (schema["type"] !== undefined && schema["type"] !== "object") return `its inputSchema has type ${JSON.stringify(schema["type"])}, not "object"`;
  return undefined;
}

function describeTool(raw: unknown): string {
  const name = isObject(raw) ? raw["name"] : undefined;
  return typeof name === "string" && name !== "" ? `'${name}'` : "unnamed";
}

/**
 * Two tools the model could not tell apart make the run fail (ERR-4): the same qualified
 * name (ids `a_` and `a` with tools `x` and `_x`, or a name listed twice), or the same
 * exposed name after mapping.
 */
export function checkCollisions(tools: readonly CatalogTool[]): void {
  const byQualified = new Map<string, CatalogTool>();
  const byExposed = new Map<string, CatalogTool>();
  for (const tool of tools) {
    const same = byQualified.get(tool.qualifiedName) ?? byExposed.get(tool.exposedName);
    if (same !== undefined && same.server === tool.server && same.originalName === tool.originalName) {
      throw configError(`server '${tool.server.id}' lists the tool '${tool.originalName}' twice; tool names must be unique`);
    }
    if (same !== undefined) {
      throw configError(
        `tool '${tool.originalName}' of server '${tool.server.id}' and tool '${same.originalName}' of server ` +
          `'${same.server.id}' would both be called '${tool.exposedName}'; rename a server or a tool`,
      );
    }
    byQualified.set(tool.qualifiedName, tool);
    byExposed.set(tool.exposedName, tool);
  }
}
