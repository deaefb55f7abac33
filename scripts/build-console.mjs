// Bundles the web console (web/src) into dist/web: content-hashed script and style files and a
// manifest naming them, which the gateway reads at start. Run by `npm run build` and `prepare`.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist/web');
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

const result = await build({
  entryPoints: { app: join(root, 'web/src/main.tsx') },
  bundle: true,
  format: 'esm',
  target: ['es2020'],
  minify: true,
  sourcemap: false,
  jsx: 'automatic',
  jsxImportSource: 'preact',
  entryNames: '[name]-[hash]',
  outdir: out,
  metafile: true,
  legalComments: 'none',
  logLevel: 'warning',
});

const files = Object.keys(result.metafile.outputs).map((f) => basename(f));
const js = files.find((f) => f.endsWith('.js'));
const css = files.find((f) => f.endsWith('.css'));
if (!js || !css) throw new Error(`console build produced ${files.join(', ')}: expected a .js and a .css`);
writeFileSync(join(out, 'manifest.json'), JSON.stringify({ js, css, files }, null, 2));
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
console.log(`console bundle: ${files.join(', ')} (${Math.round(bytes / 1024)} KiB)`);
