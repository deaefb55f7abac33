// Runs the gateway CLI from source in its own process, for tests that must see whether the process
// survives (a crash inside the test runner's process would take the test down with it).
import { main } from '../../src/main.js';

main(process.argv.slice(2)).then(
  (code) => {
    if (typeof code === 'number') process.exitCode = code;
  },
  (err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  },
);
