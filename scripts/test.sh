#!/usr/bin/env bash
# The whole test suite: starts PostgreSQL/Redis if needed, runs every test, ends with one plain
# "N passed, N failed" line, and exits non-zero when anything failed.
set -u
cd "$(dirname "$0")/.."
bash scripts/ensure-services.sh
{ [ -f dist/main.js ] && [ -f dist/web/manifest.json ]; } || npm run build
results=$(mktemp)
npx vitest run --reporter=default --reporter=json --outputFile="$results" "$@"
code=$?
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const skipped = (r.numPendingTests || 0) + (r.numTodoTests || 0);
  console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed` + (skipped ? `, ${skipped} skipped` : ""));
  if (r.numTotalTests === 0) process.exit(1);
' "$results" || code=1
rm -f "$results"
exit $code
