/**
 * The `eviction` profile (SPEC.md EVC-1 to EVC-5), in a run opened with `"eviction": "lru"`
 * (PROTOCOL.md P37): a discovery call that would not fit under the dynamic capacity makes
 * room by deactivating the least recently used tools that are not required, instead of
 * refusing to grow. A tool's last use is the later of its activation and its last call that
 * came back without the error flag; tools last used together go in code-point order of their
 * qualified names. The one active map of the run is edited, so the gate and the definitions
 * change together (EVC-2).
 */
import type { CatalogTool } from "./catalog.js";
import { isRequired } from "./policy.js";
import { compareCodePoints } from "./text.js";

export class Eviction {
  private moment = 0;
  private readonly lastUse = new Map<string, number>();

  /** Marks these tools as used now, together (an activation, or a call that succeeded). */
  use(tools: Iterable<CatalogTool>): void {
    this.moment += 1;
    for (const tool of tools) this.lastUse.set(tool.qualifiedName, this.moment);
  }

  /** The active tools a discovery call may evict, least recently used first; never a required one. */
  evictable(active: Iterable<CatalogTool>): CatalogTool[] {
    return [...active]
      .filter((tool) => !isRequired(tool, tool.server.policy))
      .sort(
        (a, b) =>
          (this.lastUse.get(a.qualifiedName) ?? 0) - (this.lastUse.get(b.qualifiedName) ?? 0) ||
          compareCodePoints(a.qualifiedName, b.qualifiedName),
      );
  }

  /**
   * Takes out of `active` as many of `evictable` (least recently used first) as the tools
   * about to be activated need beyond `capacity`; returns them. A call that fits evicts nothing.
   */
  makeRoom(active: Map<string, CatalogTool>, evictable: readonly CatalogTool[], activating: number, capacity: number): CatalogTool[] {
    const over = active.size + activating - capacity;
    const evicted = over > 0 ? evictable.slice(0, over) : [];
    for (const tool of evicted) {
      active.delete(tool.exposedName);
      this.lastUse.delete(tool.qualifiedName);
    }
    return evicted;
  }
}

/** The lines a discovery result adds for what it evicted (EVC-4.2), so that a model reading only text knows. */
export function evictedLines(evicted: readonly CatalogTool[]): string[] {
  return evicted.length === 0
    ? []
    : ["Deactivated to make room; these can no longer be called:", ...evicted.map((tool) => `- ${tool.exposedName}`)];
}
