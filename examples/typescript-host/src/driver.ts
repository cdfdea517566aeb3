/**
 * The driver: the host behind the mcp-conformance driver protocol (PROTOCOL.md).
 *
 *   npm install && npm run build
 *   mcp-conformance certify --sut-cmd "node examples/typescript-host/dist/driver.js"
 *
 * src/protocol/ is the protocol shell, the same file for file as in the skeleton
 * (examples/typescript-driver/); src/host/ is the host, which knows nothing of the protocol.
 */
import { CONNECT_TIMEOUT_SECONDS, DEFAULT_LIST_TIMEOUT_SECONDS, Toolset } from "./host/toolset.js";
import { driverFor, type Host } from "./protocol/methods.js";
import { Schemas } from "./protocol/schemas.js";
import { log, serve } from "./protocol/server.js";

const host: Host = {
  identity: { name: "adaptive-toolset-host-example (TypeScript)", version: "0.1.0", profiles: ["core", "lexical", "eviction"] },
  open: (params) =>
    Toolset.open(
      {
        ...params,
        listTimeoutSeconds: params.listTimeoutSeconds ?? DEFAULT_LIST_TIMEOUT_SECONDS,
        connectTimeoutSeconds: params.connectTimeoutSeconds ?? CONNECT_TIMEOUT_SECONDS,
      },
      log,
    ),
};

serve(driverFor(host), Schemas.load());
