import type { Command } from 'commander';

/**
 * One CLI command (or command group): a module that adds itself to the program. Every module is
 * listed once in `commands/index.ts`; the action returns the process exit code.
 */
export interface CliCommand {
  register(program: Command, run: Runner): void;
}

/** Wraps an action so its returned exit code reaches `main` (commander ignores return values). */
export type Runner = <A extends unknown[]>(action: (...args: A) => Promise<number | void>) => (...args: A) => Promise<void>;
