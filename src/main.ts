import { runProgram } from './cli/program.js';

/** CLI entry, the only reader of argv: returns the exit code (commands live in src/cli/commands/). */
export async function main(argv: string[]): Promise<number> {
  return runProgram(argv);
}
