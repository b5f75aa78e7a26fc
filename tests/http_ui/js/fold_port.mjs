// Folds logs for test_fold_differential.py: one JSON line in ({"log": [...]}), one out
// ({"projection", "fates": [[id, fate]...], "transcript"}), until the input ends.
import { createInterface } from "node:readline";

import { LogFold } from "../../../inbox_core/http/ui/fold.js";

for await (const line of createInterface({ input: process.stdin })) {
  let answer;
  try {
    const fold = new LogFold();
    for (const event of JSON.parse(line).log) fold.apply(event);
    answer = { projection: fold.projection(), fates: [...fold.fates()], transcript: fold.transcript() };
  } catch (error) {
    answer = { error: String(error?.stack ?? error) };
  }
  process.stdout.write(`${JSON.stringify(answer)}\n`);
}
