/**
 * JSON-RPC 2.0 framing of the driver protocol (PROTOCOL.md P5 to P16, P32): one message
 * per line, parse errors, invalid requests, and the error object.
 */

export type Id = string | number | null;

export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;
export const OUTCOME = -32000;

/** Deeper lines are refused as parse errors (P13): no request of the protocol comes close. */
export const MAX_DEPTH = 128;

export interface ErrorData {
  readonly kind: string;
  readonly message: string;
  readonly path?: string;
}

/** An error reply: thrown by a method, written by the server. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: ErrorData,
  ) {
    super(message);
    this.name = "RpcError";
  }

  toJSON(): { code: number; message: string; data?: ErrorData } {
    return this.data === undefined ? { code: this.code, message: this.message } : { code: this.code, message: this.message, data: this.data };
  }
}

/** A protocol refusal with its `data.kind` (P16, P29) or a design outcome (P23, P27). */
export function kindError(code: number, kind: string, message: string, path?: string): RpcError {
  return new RpcError(code, message, path === undefined ? { kind, message } : { kind, message, path });
}

export type Incoming =
  | { readonly type: "blank" }
  | { readonly type: "request"; readonly id: Id; readonly method: string; readonly params: unknown }
  | { readonly type: "notification"; readonly method: string }
  | { readonly type: "invalid"; readonly id: Id; readonly error: RpcError };

const decoder = new TextDecoder("utf-8", { fatal: true });

/** Reads one line (without its `\n`) as the protocol defines it. */
export function readLine(bytes: Uint8Array): Incoming {
  let text: string;
  try {
    text = decoder.decode(bytes);
  } catch {
    return invalid(null, PARSE_ERROR, "parse error: the line is not valid UTF-8");
  }
  if (text.endsWith("\r")) text = text.slice(0, -1);
  if (/^[ \t]*$/.test(text)) return { type: "blank" };
  const depth = nesting(text);
  if (depth > MAX_DEPTH) return invalid(null, PARSE_ERROR, `parse error: the line nests ${depth} levels deep, more than ${MAX_DEPTH}`);
  let value: unknown;
  try {
    value = JSON.parse(text, finiteNumbers);
  } catch (error) {
    return invalid(null, PARSE_ERROR, `parse error: ${error instanceof Error ? error.message : String(error)}`);
  }
  return classify(value);
}

function classify(value: unknown): Incoming {
  if (Array.isArray(value)) return invalid(null, INVALID_REQUEST, "batches are not supported; send one request per line");
  if (typeof value !== "object" || value === null) return invalid(null, INVALID_REQUEST, "invalid request: a request is a JSON object");
  const message = value as Record<string, unknown>;
  const hasId = Object.hasOwn(message, "id");
  const rawId = message["id"];
  const idIsValid = rawId === null || typeof rawId === "string" || typeof rawId === "number";
  const id: Id = hasId && idIsValid ? (rawId as Id) : null;
  if (hasId && !idIsValid) return invalid(null, INVALID_REQUEST, "invalid request: 'id' must be a string, a number or null");
  if (message["jsonrpc"] !== "2.0") return invalid(id, INVALID_REQUEST, "invalid request: 'jsonrpc' must be \"2.0\"");
  const method = message["method"];
  if (typeof method !== "string") return invalid(id, INVALID_REQUEST, "invalid request: 'method' must be a string");
  if (!hasId) return { type: "notification", method };
  return { type: "request", id, method, params: message["params"] };
}

function invalid(id: Id, code: number, message: string): Incoming {
  return { type: "invalid", id, error: new RpcError(code, message) };
}

/** `1e999` parses to Infinity in JavaScript; the protocol makes it a parse error (P13). */
function finiteNumbers(_key: string, value: unknown): unknown {
  if (typeof value === "number" && !Number.isFinite(value)) throw new SyntaxError("a number is too large");
  return value;
}

/** The deepest nesting of brackets outside strings. */
function nesting(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (inString) {
      if (char === "\\") i++;
      else if (char === '"') inString = false;
    } else if (char === '"') {
      inString = true;
    } else if (char === "[" || char === "{") {
      deepest = Math.max(deepest, ++depth);
    } else if (char === "]" || char === "}") {
      depth--;
    }
  }
  return deepest;
}

export function resultLine(id: Id, result: unknown): string {
  return `${JSON.stringify({ jsonrpc: "2.0", id, result })}\n`;
}

export function errorLine(id: Id, error: RpcError): string {
  return `${JSON.stringify({ jsonrpc: "2.0", id, error })}\n`;
}
