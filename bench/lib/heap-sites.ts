import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Allocation sites of a V8 sampling heap profile (the inspector's `SamplingHeapProfile`): bytes per
 * innermost frame, and per innermost frame in this repository's src/ with the site under it.
 */
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

export interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber?: number;
}
export interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  selfSize: number;
  children: ProfileNode[];
}
export interface HeapProfile {
  head: ProfileNode;
  samples: Array<{ size: number; nodeId: number }>;
}

/**
 * `function file:line` (the line where the function starts: the profile knows functions, not
 * lines), the file relative to the checkout (build directories and node_modules stripped), or
 * where `source` puts the frame (bench/lib/source-lines.ts: the TypeScript line).
 */
export function frameName(f: CallFrame, source?: (f: CallFrame) => string | undefined): string {
  const mapped = source?.(f);
  if (mapped) return `${f.functionName || '(anonymous)'} ${mapped}`;
  const file = f.url.startsWith('file://') ? fileURLToPath(f.url) : f.url;
  const shown = file.startsWith(repoRoot) ? relative(repoRoot, file).replace(/^bench\/\.build\/run-[^/]+\//, '') : file.replace(/^.*node_modules\//, '');
  return `${f.functionName || '(anonymous)'} ${shown || '(native)'}:${f.lineNumber + 1}`;
}

/** A frame of the gateway's own code (src/, compiled or not), not a dependency's. */
export const isOurs = (f: CallFrame): boolean => f.url.includes('/src/') && !f.url.includes('node_modules');

/** Bytes per allocation site: the innermost frame, and the innermost src/ frame `<-` the innermost frame. */
export function heapSites(profile: HeapProfile, source?: (f: CallFrame) => string | undefined): { self: Map<string, number>; ours: Map<string, number>; total: number } {
  const self = new Map<string, number>();
  const ours = new Map<string, number>();
  let total = 0;
  const walk = (node: ProfileNode, stack: CallFrame[]): void => {
    stack.push(node.callFrame);
    if (node.selfSize > 0) {
      total += node.selfSize;
      const name = frameName(node.callFrame, source);
      self.set(name, (self.get(name) ?? 0) + node.selfSize);
      let mine: CallFrame | undefined;
      for (let i = stack.length - 1; i >= 0 && !mine; i--) if (isOurs(stack[i]!)) mine = stack[i];
      const key = mine ? `${frameName(mine, source)}  <- ${name}` : `(no src frame) ${name}`;
      ours.set(key, (ours.get(key) ?? 0) + node.selfSize);
    }
    for (const c of node.children) walk(c, stack);
    stack.pop();
  };
  walk(profile.head, []);
  return { self, ours, total };
}
