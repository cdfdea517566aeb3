/**
 * The outcomes a run can end in before it is usable. Each carries the kind the driver protocol
 * reports (PROTOCOL.md P23, P27) and a message a person can act on (SPEC.md ERR-9).
 */
export type OutcomeKind = "config_error" | "selection_error" | "connection_error" | "request_too_large";

export class HostError extends Error {
  constructor(
    readonly kind: OutcomeKind,
    message: string,
  ) {
    super(message);
    this.name = "HostError";
  }
}

export const configError = (message: string): HostError => new HostError("config_error", message);
export const selectionError = (message: string): HostError => new HostError("selection_error", message);
export const connectionError = (message: string): HostError => new HostError("connection_error", message);

/** A value quoted for a message: JSON for data, so `""`, `null` and `"a b"` stay distinguishable. */
export function show(value: unknown): string {
  if (value === undefined) return "nothing";
  try {
    const text = JSON.stringify(value);
    return text.length > 80 ? `${text.slice(0, 77)}...` : text;
  } catch {
    return String(value);
  }
}
