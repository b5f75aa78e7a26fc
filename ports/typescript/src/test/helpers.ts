/** Shared by the tests: where the repository's specs are, a seeded random source, and a
 * few builders. */

import { existsSync, readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseJson } from "../json.js";
import { UserMessage } from "../values.js";

/** The repository root (the package lives in ports/typescript; tests run from dist/test). */
export const ROOT = fileURLToPath(new URL("../../../../", import.meta.url));
export const SPECS = `${ROOT}specs/`;

/** The conformance vectors of specs/vectors, parsed as this package parses documents. */
export function vectors(): { file: string; doc: unknown }[] {
  const directory = `${SPECS}vectors/`;
  if (!existsSync(directory)) return [];
  return readdirSync(directory)
    .filter((name) => name.endsWith(".json"))
    .sort()
    .map((file) => ({ file, doc: parseJson(readFileSync(directory + file, "utf-8")) }));
}

/** A small seeded PRNG (mulberry32): the same seed, the same run. */
export function random(seed: number): { next(): number; int(low: number, high: number): number; pick<T>(items: readonly T[]): T } {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (low: number, high: number): number => low + Math.floor(next() * (high - low + 1));
  return { next, int, pick: <T>(items: readonly T[]): T => items[int(0, items.length - 1)]! };
}

export function message(id: string, text = id): UserMessage {
  return new UserMessage(id, text);
}
