import { existsSync, mkdirSync, readdirSync, rmdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { onExit } from './children.js';

/**
 * Child processes run as plain JavaScript: src/ and bench/children/ are transpiled file by file
 * with esbuild (the same transform tsx applies on the fly) into bench/.build/run-<pid>/, removed at
 * exit. The relative layout is kept, so imports and node_modules resolve as from the sources.
 * Running children under `--import tsx` instead would add tsx's module-loader thread to every
 * process: about 25 MB of RSS and a slower start that the gateway in production does not pay.
 */
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) return sources(p);
    return p.endsWith('.ts') && !p.endsWith('.test.ts') && !p.endsWith('.d.ts') ? [p] : [];
  });
}

/**
 * Returns the build directory, or undefined when esbuild is unavailable (children then use tsx).
 * `root` builds another checkout's src/ and bench/children/ (bench/ab.ts), into a directory of its own.
 */
export async function compileChildren(root = repoRoot, tag = ''): Promise<string | undefined> {
  let esbuild: typeof import('esbuild');
  try {
    esbuild = await import('esbuild');
  } catch {
    return undefined;
  }
  const buildDir = join(repoRoot, 'bench', '.build', `run-${process.pid}${tag}`);
  rmSync(buildDir, { recursive: true, force: true });
  onExit(() => {
    rmSync(buildDir, { recursive: true, force: true });
    // Leave no empty bench/.build behind unless another run is using it.
    try {
      rmdirSync(dirname(buildDir));
    } catch {
      // Not empty: another run's build is there.
    }
  });
  const entryPoints = [...sources(join(root, 'src')), ...sources(join(root, 'bench', 'children'))];
  await esbuild.build({ entryPoints, outdir: buildDir, outbase: root, format: 'esm', platform: 'node', target: 'node20', logLevel: 'error' });
  // src/sim/media.ts finds the committed fixtures relative to its own file.
  mkdirSync(buildDir, { recursive: true });
  if (!existsSync(join(buildDir, 'fixtures'))) symlinkSync(relative(buildDir, join(repoRoot, 'fixtures')), join(buildDir, 'fixtures'), 'dir');
  // src/routes/index.ts reads the package's name and version from two levels up.
  if (!existsSync(join(buildDir, 'package.json'))) symlinkSync(relative(buildDir, join(repoRoot, 'package.json')), join(buildDir, 'package.json'), 'file');
  return buildDir;
}
