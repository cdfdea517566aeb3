/**
 * The driver's serving loop (PROTOCOL.md P3 to P16, P30, P31): lines from stdin, one reply
 * per request on stdout in request order, silence for notifications and blank lines, and an
 * orderly end on `shutdown`, end of input, SIGTERM or SIGINT.
 */
import {
  INTERNAL_ERROR,
  INVALID_PARAMS,
  METHOD_NOT_FOUND,
  RpcError,
  errorLine,
  kindError,
  readLine,
  resultLine,
  type Id,
} from "./jsonrpc.js";
import type { Schemas } from "./schemas.js";

export type Params = Record<string, unknown>;
export type Method = (params: Params) => Promise<unknown>;

export interface Driver {
  readonly methods: ReadonlyMap<string, Method>;
  /** Closes every open run: on `shutdown`, end of input and signals. */
  closeAll(): Promise<void>;
}

export function log(message: string): void {
  process.stderr.write(`${message}\n`);
}

export function serve(driver: Driver, schemas: Schemas): void {
  let queue: Promise<void> = Promise.resolve();
  let done = false;
  let pending: Buffer = Buffer.alloc(0);

  const finish = async (): Promise<void> => {
    done = true;
    process.stdin.pause();
    await driver.closeAll().catch((error: unknown) => log(`closing runs failed: ${String(error)}`));
    process.exit(0);
  };

  const handle = async (line: Uint8Array): Promise<void> => {
    if (done) return;
    const incoming = readLine(line);
    switch (incoming.type) {
      case "blank":
      case "notification": // P11: never answered, never executed
        return;
      case "invalid":
        await write(errorLine(incoming.id, incoming.error));
        return;
      case "request":
        await write(await answer(driver, schemas, incoming.id, incoming.method, incoming.params));
        if (incoming.method === "shutdown") await finish();
    }
  };

  process.stdin.on("data", (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    for (let end = pending.indexOf(0x0a); end >= 0; end = pending.indexOf(0x0a)) {
      const line = pending.subarray(0, end);
      pending = pending.subarray(end + 1);
      queue = queue.then(() => handle(line));
    }
  });
  process.stdin.on("end", () => {
    const last = pending;
    if (last.length > 0) queue = queue.then(() => handle(last));
    // P31: answer what was read, then close every run and exit, writing nothing more.
    void queue.then(finish);
  });
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.on(signal, () => {
      log(`${signal}: closing every run`);
      void finish();
    });
  }
  process.stdout.on("error", () => void finish()); // the reader went away
  process.on("unhandledRejection", (reason) => log(`unhandled rejection: ${reason instanceof Error ? (reason.stack ?? reason.message) : String(reason)}`));
}

/** The reply line to one request: the method's result, or the error it ends in (P14 to P16, P33). */
export async function answer(driver: Driver, schemas: Schemas, id: Id, method: string, rawParams: unknown): Promise<string> {
  const run = driver.methods.get(method);
  if (run === undefined) return errorLine(id, new RpcError(METHOD_NOT_FOUND, `unknown method '${method}'`));
  const params = rawParams === undefined || rawParams === null ? {} : rawParams;
  if (typeof params !== "object" || Array.isArray(params)) {
    return errorLine(id, kindError(INVALID_PARAMS, "invalid_params", `${method}: params must be an object, got ${JSON.stringify(params)}`, "$"));
  }
  const refusal = schemas.checkParams(method, params);
  if (refusal !== undefined) return errorLine(id, refusal);
  try {
    const result = await run(params as Params);
    // P33: a reply that breaks its schema is a bug of this driver; say so rather than send it.
    const broken = schemas.check(`${method}.result`, result);
    if (broken !== undefined) return errorLine(id, new RpcError(INTERNAL_ERROR, `internal error: the reply breaks its schema: ${broken}`));
    return resultLine(id, result);
  } catch (error) {
    if (error instanceof RpcError) return errorLine(id, error);
    log(`internal error in ${method}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    return errorLine(id, new RpcError(INTERNAL_ERROR, `internal error in ${method}: ${error instanceof Error ? error.message : String(error)}`));
  }
}

function write(line: string): Promise<void> {
  return new Promise((resolve) => {
    process.stdout.write(line, () => resolve());
  });
}
