/**
 * The protocol's JSON Schemas (PROTOCOL.md P16, P33), checked with Ajv (draft 2020-12).
 *
 * The build bundles them from the repository's `conformance/protocol/` into
 * `dist/protocol/schemas.json`, the same object `mcp-conformance protocol --schema` prints
 * (schemas by name), so a driver built outside the repository writes that file with it.
 */
import { readFileSync } from "node:fs";
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import { INVALID_PARAMS, kindError, type RpcError } from "./jsonrpc.js";

const BUNDLE = new URL("./schemas.json", import.meta.url);

export class Schemas {
  private readonly validators = new Map<string, ValidateFunction>();

  constructor(schemas: Record<string, unknown>) {
    const ajv = new Ajv2020({ allErrors: false, strict: false });
    for (const [name, schema] of Object.entries(schemas)) this.validators.set(name, ajv.compile(schema as object));
  }

  static load(): Schemas {
    let text: string;
    try {
      text = readFileSync(BUNDLE, "utf8");
    } catch (error) {
      throw new Error(
        `cannot read the protocol schemas at ${BUNDLE.pathname} (${String(error)}); run 'npm run build' ` +
          `in the repository, or write them with 'mcp-conformance protocol --schema > ${BUNDLE.pathname}'`,
      );
    }
    return new Schemas(JSON.parse(text) as Record<string, unknown>);
  }

  /** The params of `method` against `METHOD.params` (P16); an RpcError naming the JSON path when they break it. */
  checkParams(method: string, params: unknown): RpcError | undefined {
    const validate = this.validators.get(`${method}.params`);
    if (validate === undefined || validate(params)) return undefined;
    const error = validate.errors?.[0];
    const path = error === undefined ? "$" : jsonPath(error.instancePath);
    const message = `${method}: ${path}: ${error === undefined ? "invalid" : explain(error, params)}`;
    return kindError(INVALID_PARAMS, "invalid_params", message, path);
  }

  /** A result or error this driver is about to write, against its schema (P33): a failure here is a bug of the driver. */
  check(name: string, value: unknown): string | undefined {
    const validate = this.validators.get(name);
    if (validate === undefined || validate(value)) return undefined;
    const error = validate.errors?.[0];
    return error === undefined ? `${name}: invalid` : `${name}: ${jsonPath(error.instancePath)}: ${error.message ?? "invalid"}`;
  }
}

/** `/servers/0/transport/type` -> `$.servers[0].transport.type` */
function jsonPath(pointer: string): string {
  if (pointer === "") return "$";
  return (
    "$" +
    pointer
      .slice(1)
      .split("/")
      .map((token) => token.replaceAll("~1", "/").replaceAll("~0", "~"))
      .map((token) => (/^\d+$/.test(token) ? `[${token}]` : /^[A-Za-z_][A-Za-z0-9_]*$/.test(token) ? `.${token}` : `[${JSON.stringify(token)}]`))
      .join("")
  );
}

function explain(error: ErrorObject, params: unknown): string {
  const value = valueAt(params, error.instancePath);
  const shown = JSON.stringify(value) ?? "nothing";
  switch (error.keyword) {
    case "required":
      return `the required field '${String(error.params["missingProperty"])}' is missing`;
    case "type":
      return `${shown} is not of type '${String(error.params["type"])}'`;
    case "enum":
      return `${shown} is not one of ${JSON.stringify(error.params["allowedValues"])}`;
    default:
      return `${shown}: ${error.message ?? "invalid"}`;
  }
}

function valueAt(root: unknown, pointer: string): unknown {
  if (pointer === "") return root;
  let value: unknown = root;
  for (const token of pointer.slice(1).split("/")) {
    const key = token.replaceAll("~1", "/").replaceAll("~0", "~");
    value = typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined;
  }
  return value;
}
