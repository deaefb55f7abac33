import { existsSync, readFileSync } from 'node:fs';
import { createRequire, SourceMap } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CallFrame } from './heap-sites.js';

/**
 * Puts a frame of a transpiled child (bench/lib/compile.ts writes no source maps) back on its
 * TypeScript line: the source is transpiled again with esbuild's same transform, this time with a
 * map, which is then read with Node's own SourceMap. `builds` maps each build directory to the
 * checkout it was built from. Frames elsewhere (node_modules, Node's own) get undefined.
 */
export function sourceLines(builds: ReadonlyMap<string, string>): (f: CallFrame) => string | undefined {
  const maps = new Map<string, { map: SourceMap; file: string } | undefined>();
  let esbuild: typeof import('esbuild') | undefined;
  return (f) => {
    if (!f.url.startsWith('file://')) return undefined;
    const path = fileURLToPath(f.url);
    let entry = maps.get(path);
    if (!maps.has(path)) {
      entry = undefined;
      for (const [dir, root] of builds) {
        const rel = relative(dir, path);
        if (rel.startsWith('..')) continue;
        const source = join(root, rel.replace(/\.js$/, '.ts'));
        if (!existsSync(source)) break;
        esbuild ??= createRequire(import.meta.url)('esbuild') as typeof import('esbuild');
        const code = readFileSync(source, 'utf8');
        const out = esbuild.transformSync(code, { loader: 'ts', format: 'esm', platform: 'node', target: 'node20', sourcemap: 'external', sourcefile: source });
        // Only when the transform gives the very bytes that ran, so the lines match.
        if (out.code === readFileSync(path, 'utf8')) entry = { map: new SourceMap(JSON.parse(out.map)), file: relative(root, source) };
        break;
      }
      maps.set(path, entry);
    }
    if (!entry) return undefined;
    const hit = entry.map.findEntry(f.lineNumber, f.columnNumber ?? 0) as { originalLine?: number };
    return hit.originalLine === undefined ? undefined : `${entry.file}:${hit.originalLine + 1}`;
  };
}
