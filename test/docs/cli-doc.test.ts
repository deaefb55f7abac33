import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { commands } from '../../src/cli/commands/index.js';
import type { Runner } from '../../src/cli/command.js';
import { documents } from './blocks.js';

/**
 * Every `gateway ...` command line the README and docs show (in inline code and code blocks) names a
 * command the CLI has, with flags that command takes; and every command of the CLI is shown somewhere.
 */
const ROOT = resolve(__dirname, '../..');

function program(): Command {
  const p = new Command('gateway');
  const run: Runner = (action) => async (...args) => void (await action(...args));
  for (const c of commands) c.register(p, run);
  return p;
}

/** The text of every code span and code block of the documents, with the file it is in. */
function codeOf(file: string): string[] {
  const text = readFileSync(resolve(ROOT, file), 'utf8');
  const blocks = [...text.matchAll(/^```[^\n]*\n([\s\S]*?)^```/gm)].map((m) => m[1]!);
  const prose = text.replace(/^```[^\n]*\n[\s\S]*?^```/gm, '');
  const spans = [...prose.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!);
  return [...blocks.flatMap((b) => b.split('\n')), ...spans];
}

interface Use {
  file: string;
  line: string;
  path: string[];
  flags: string[];
}

function uses(): Use[] {
  const out: Use[] = [];
  for (const file of documents(ROOT)) {
    for (const line of codeOf(file)) {
      const code = line.replace(/(^|\s)#.*$/, ''); // a shell comment is prose
      // A nested command ($(...)) is its own use: the outer one's flags end where it starts.
      for (const m of code.matchAll(/(?:^|[\s($])(?:npx )?gateway((?: [a-z][a-z|-]*)*)((?: [^|;&)$]*)?)/g)) {
        const words = m[1]!.trim().split(' ').filter(Boolean);
        const flags = [...(m[1]! + m[2]!).matchAll(/(?:^|\s|\[)(--[a-z][a-z-]*)/g)].map((f) => f[1]!);
        out.push({ file, line: code.trim(), path: words, flags });
      }
    }
  }
  return out;
}

/** The command a documented line names: as many of its words as are (sub)commands. */
function resolveCommand(root: Command, words: string[]): { cmd: Command; path: string[] } | undefined {
  let cmd = root;
  const path: string[] = [];
  for (const w of words) {
    const alternatives = w.split('|');
    const subs = alternatives.map((a) => cmd.commands.find((c) => c.name() === a));
    if (subs.every((s) => s === undefined)) break;
    if (subs.some((s) => s === undefined)) return undefined;
    cmd = subs[0]!;
    path.push(w);
  }
  return path.length > 0 || words.length === 0 ? { cmd, path } : undefined;
}

describe('the CLI as the README and docs show it', () => {
  const root = program();
  const all = uses();

  it('names only commands and flags the CLI has', () => {
    expect(all.length).toBeGreaterThan(20);
    const wrong: string[] = [];
    for (const u of all) {
      const found = resolveCommand(root, u.path);
      if (!found) {
        wrong.push(`${u.file}: \`${u.line}\`: no such command`);
        continue;
      }
      // A group (video, accounts, ...) named alone has no flags of its own to check.
      const options = new Set(found.cmd.options.flatMap((o) => [o.long, o.short]).filter(Boolean));
      for (const f of u.flags) if (f !== '--help' && !options.has(f)) wrong.push(`${u.file}: \`${u.line}\`: ${found.path.join(' ')} takes no ${f}`);
    }
    expect(wrong).toEqual([]);
  });

  it('shows every command of the CLI somewhere', () => {
    const shown = new Set(all.map((u) => u.path[0]).filter(Boolean).flatMap((w) => w!.split('|')));
    const missing = root.commands.map((c) => c.name()).filter((n) => !shown.has(n));
    expect(missing).toEqual([]);
  });
});
