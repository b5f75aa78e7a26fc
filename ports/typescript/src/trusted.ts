/**
 * Checks sit at the boundary (D31): what the core builds only from values that passed
 * their checks already (an event from the state's own turn and step numbers, an entry of
 * checked messages, an awaited action of a claimed batch) it builds without running them
 * again, by passing `TRUSTED` as a constructor's last argument. The symbol is not
 * exported from the package, so callers always get the checks; the tests rebuild what
 * the core emits through the checking constructors (the codec's round trip).
 */
export const TRUSTED: unique symbol = Symbol("trusted");
export type Trusted = typeof TRUSTED;
