/**
 * A driver skeleton for the mcp-conformance suite: the place a team starts from.
 *
 *   npm install && npm run build
 *   mcp-conformance certify --sut-cmd "node examples/typescript-driver/dist/driver.js"
 *
 * src/protocol/ speaks the driver protocol (PROTOCOL.md) and is usually kept as it is; it is
 * the same file for file as the complete host's (examples/typescript-host/). src/host.ts is
 * a placeholder host: replace the three places marked YOUR HOST with calls into yours.
 */
import { Run } from "./host.js";
import { driverFor, type Host } from "./protocol/methods.js";
import { Schemas } from "./protocol/schemas.js";
import { serve } from "./protocol/server.js";

const host: Host = {
  identity: { name: "example-ts-host (skeleton)", version: "0.1.0", profiles: ["core"] },
  open: (params) => Run.open(params),
};

serve(driverFor(host), Schemas.load());
