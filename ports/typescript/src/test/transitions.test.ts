/** R26, D16: the transition table of this package is the table of specs/spec.md §2, row
 * for row: the same (phase, command) pairs and the same phases each can lead to. */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { TRANSITIONS } from "../reducer.js";
import { SPECS } from "./helpers.js";

/** `BeginMaintenance` -> `begin-maintenance`: the JSON tag of a command class. */
function tag(className: string): string {
  return className.replace(/([a-z])([A-Z])/g, "$1-$2").toLowerCase();
}

function specTable(): Map<string, string[]> {
  const text = readFileSync(`${SPECS}spec.md`, "utf-8");
  const table = text.slice(text.indexOf("<!-- phase-table:start -->"), text.indexOf("<!-- phase-table:end -->"));
  const rows = new Map<string, string[]>();
  for (const line of table.split("\n")) {
    const cells = line.split("|").map((cell) => cell.trim());
    const command = /^`(\w+)`$/.exec(cells[1] ?? "")?.[1];
    if (command === undefined) continue;
    for (const accepted of (cells[2] ?? "").split(",")) {
      const phase = /`(\w+)`/.exec(accepted)?.[1];
      if (phase === undefined) continue;
      const leadsTo = cells[4] === "(same phase)" ? [phase] : (cells[4] ?? "").split(",").map((p) => p.trim());
      rows.set(`${phase} ${tag(command)}`, leadsTo.sort());
    }
  }
  return rows;
}

test("R26: every (phase, command) pair of specs/spec.md is in TRANSITIONS, leading to the same phases", () => {
  const spec = specTable();
  assert.ok(spec.size > 40, `the spec table was not read (${spec.size} rows)`);
  const ours = new Map<string, string[]>();
  for (const [phase, commands] of TRANSITIONS) {
    for (const [command, row] of commands) ours.set(`${phase} ${command}`, [...row.leadsTo].sort());
  }
  assert.deepEqual(new Map([...ours].sort()), new Map([...spec].sort()));
});
