import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** A fenced code block of a Markdown file: language, the words after it, its text and its line. */
export interface Block {
  file: string;
  line: number;
  lang: string;
  tags: string[];
  code: string;
}

const SHELL = new Set(['sh', 'bash', 'shell', 'console', 'zsh']);

export function isShell(b: Block): boolean {
  return SHELL.has(b.lang);
}

export function blocksOf(root: string, file: string): Block[] {
  const lines = readFileSync(join(root, file), 'utf8').split('\n');
  const out: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*(.*)$/.exec(lines[i]!);
    if (!open || open[1] === '') continue;
    const start = i;
    const body: string[] = [];
    while (++i < lines.length && !/^```\s*$/.test(lines[i]!)) body.push(lines[i]!);
    out.push({ file, line: start + 1, lang: open[1]!, tags: open[2]!.split(/\s+/).filter(Boolean), code: body.join('\n') });
  }
  return out;
}

/** README.md and every Markdown file under docs/: the documents a person follows. */
export function documents(root: string): string[] {
  return ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
}
