// Bundles the driver protocol's JSON Schemas into dist/protocol/schemas.json: one object by
// schema name, as `mcp-conformance protocol --schema` prints it. Read from the repository's
// conformance/protocol/ (or the directory given as the first argument).
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const source = process.argv[2] ?? fileURLToPath(new URL("../../../conformance/protocol/", import.meta.url));
const target = new URL("../dist/protocol/schemas.json", import.meta.url);
const SUFFIX = ".schema.json";
let files;
try {
  files = readdirSync(source).filter((name) => name.endsWith(SUFFIX)).sort();
} catch (error) {
  console.error(`cannot read the protocol schemas in ${source}: ${error.message}`);
  console.error("outside the repository: mcp-conformance protocol --schema > dist/protocol/schemas.json");
  process.exit(1);
}
const schemas = Object.fromEntries(files.map((name) => [name.slice(0, -SUFFIX.length), JSON.parse(readFileSync(`${source}/${name}`, "utf8"))]));
writeFileSync(target, `${JSON.stringify(schemas, null, 2)}\n`);
console.log(`bundled ${files.length} protocol schemas into dist/protocol/schemas.json`);
