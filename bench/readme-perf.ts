import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * Copies a benchmark result into README.md's Performance section, between the two marker comments,
 * so the README shows exactly what a run printed (machine line, results table with the peers,
 * notes and the targets table), never figures typed by hand.
 *
 *   node --import tsx bench/readme-perf.ts [bench/results/latest.md]
 */
const root = fileURLToPath(new URL('../', import.meta.url));
const START = '<!-- bench-results:start -->';
const END = '<!-- bench-results:end -->';

const source = process.argv[2] ?? `${root}bench/results/latest.md`;
const result = readFileSync(source, 'utf8')
  // The file's own title; the README section has its heading already.
  .replace(/^# Benchmark results\n+/, '')
  // The targets heading becomes a sub-heading of the Performance section.
  .replace(/^## Targets$/m, '#### Targets (issue #16), computed by the run')
  .trim();

const readmePath = `${root}README.md`;
const readme = readFileSync(readmePath, 'utf8');
const from = readme.indexOf(START);
const to = readme.indexOf(END);
if (from < 0 || to < from) {
  process.stderr.write(`readme-perf: README.md has no ${START} ... ${END} block\n`);
  process.exit(1);
}
writeFileSync(readmePath, `${readme.slice(0, from + START.length)}\n${result}\n${readme.slice(to)}`);
process.stdout.write(`README.md: Performance results replaced from ${source}\n`);
