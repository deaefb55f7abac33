import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The layering, checked on every relative import of src/: vendor folders speak to the core, http,
 * protocols (vendor families) and their own feature's types only, never to each other; protocols and
 * the core stay free of features.
 */
const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Every relative import of a file, as a path under src/ (".js" specifiers mapped to their ".ts"). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g))
    out.push(relative(SRC, resolve(dirname(file), m[1]!)).replace(/\.js$/, '.ts'));
  return out;
}

const all = files(SRC).map((f) => ({ file: relative(SRC, f), imports: importsOf(f) }));

/** What a file of vendor folder `feature/vendors/<id>/` may import besides its own folder. */
const FEATURE_TYPES: Record<string, readonly string[]> = {
  video: ['video/types.ts', 'video/duration.ts', 'video/vendors/module.ts'],
  embeddings: ['embeddings/types.ts', 'embeddings/verdicts.ts', 'embeddings/vectors.ts', 'embeddings/upstream-options.ts', 'embeddings/vendors/module.ts'],
};
const SHARED = /^(core|http|protocols|sim)\//;

function violations(check: (file: string, target: string) => boolean, scope: RegExp): string[] {
  const out: string[] = [];
  for (const { file, imports } of all) {
    if (!scope.test(file)) continue;
    for (const target of imports) if (!check(file, target)) out.push(`${file} -> ${target}`);
  }
  return out;
}

/** `video/vendors/<id>` and `embeddings/vendors/<id>`, relative to src/. */
function vendorFolders(): string[] {
  return ['video', 'embeddings'].flatMap((feature) => {
    const dir = join(SRC, feature, 'vendors');
    return readdirSync(dir).filter((n) => statSync(join(dir, n)).isDirectory()).map((n) => `${feature}/vendors/${n}`);
  });
}

describe('import rules', () => {
  it('finds the vendor folders it guards', () => {
    const vendorFiles = all.filter((f) => /^(video|embeddings)\/vendors\/[^/]+\//.test(f.file));
    expect(vendorFiles.length).toBeGreaterThan(40);
    expect(vendorFiles.some((f) => f.imports.length > 0)).toBe(true);
  });

  it('vendor folders import only the core, http, protocols, sim and their feature types', () => {
    const bad = violations((file, target) => {
      const [feature, , id] = file.split('/');
      if (target.startsWith(`${feature}/vendors/${id}/`)) return true;
      if (SHARED.test(target)) return true;
      return FEATURE_TYPES[feature!]!.includes(target);
    }, /^(video|embeddings)\/vendors\/[^/]+\//);
    expect(bad).toEqual([]);
  });

  it('a vendor never imports another vendor folder (azure-sora shares with sora through protocols/openai)', () => {
    const bad = violations((file, target) => {
      const m = /^(video|embeddings)\/vendors\/([^/]+)\//.exec(target);
      return !m || file.startsWith(`${m[1]}/vendors/${m[2]}/`);
    }, /^((video|embeddings)\/vendors\/[^/]+\/|protocols\/|sim\/|core\/|http\/)/);
    expect(bad).toEqual([]);
  });

  it('nothing in src/ imports from test/ (the test kit and harnesses never ship)', () => {
    expect(violations((_f, t) => !t.startsWith('../'), /^/)).toEqual([]);
  });

  it('every vendor folder names its simulator simulator.ts and holds no tests or test helpers', () => {
    const folders = vendorFolders();
    expect(folders.length).toBeGreaterThanOrEqual(9);
    const noSimulator = folders.filter((dir) => !existsSync(join(SRC, dir, 'simulator.ts')));
    expect(noSimulator).toEqual([]);
    // One name per role: sim.ts / sim-*.ts / testing.ts / test-support.ts / *.helpers.ts were the old variants.
    const strays = all
      .map((f) => f.file)
      .filter((f) => /^(video|embeddings)\/vendors\/[^/]+\//.test(f))
      .filter((f) => /(\.test\.ts|\/sim(-[^/]*)?\.ts|\/testing\.ts|\/test-support\.ts|\.helpers\.ts)$/.test(f));
    expect(strays).toEqual([]);
  });

  it('vendor tests live in test/vendors/<id>/, one folder per vendor folder and none without one', () => {
    const ids = vendorFolders().map((dir) => dir.split('/')[2]!).sort();
    const testDirs = readdirSync(join(SRC, '../test/vendors')).filter((n) => statSync(join(SRC, '../test/vendors', n)).isDirectory()).sort();
    expect(testDirs).toEqual(ids);
  });

  it('protocols depend on the core, http and each other only; the core on itself only', () => {
    expect(violations((_f, t) => /^(core|http|protocols)\//.test(t), /^protocols\//)).toEqual([]);
    expect(violations((_f, t) => t.startsWith('core/'), /^core\//)).toEqual([]);
  });

  it('video, embeddings and chat send only through the one upstream client (content.ts included)', () => {
    const direct = all
      .filter((f) => /^(video|embeddings|chat)\//.test(f.file) && !f.file.endsWith('.test.ts'))
      .filter((f) => /\bexecutor\.(send|sendRaw|stream)\(|\.executor\./.test(readFileSync(join(SRC, f.file), 'utf8')))
      .map((f) => f.file);
    expect(direct).toEqual([]);
  });

  it('no vendor name appears in the core', () => {
    const names = /\b(dashscope|seedance|volcengine|vertex|veo|sora|azure|fal\.ai|bedrock|openai)\b/i;
    const bad = all.filter((f) => f.file.startsWith('core/') && names.test(readFileSync(join(SRC, f.file), 'utf8'))).map((f) => f.file);
    expect(bad).toEqual([]);
  });
});
