import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where `npm run build` writes the console bundle: dist/web, two levels up from src/console and dist/console alike. */
export const WEB_DIR = fileURLToPath(new URL('../../dist/web/', import.meta.url));

export interface WebAsset {
  body: Buffer;
  type: string;
  etag: string;
}

export interface WebBundle {
  /** The hashed file names the HTML shell links to. */
  entry: { js: string; css: string };
  assets: Map<string, WebAsset>;
}

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

/**
 * Loads the built bundle into memory once: a handful of small, content-hashed files fixed at build
 * time, so serving them needs no file system access per request and no path handling beyond a map
 * lookup (no traversal to guard against). Undefined when the bundle was not built.
 */
export function loadWebBundle(dir = WEB_DIR): WebBundle | undefined {
  let manifest: { js: string; css: string; files: string[] };
  try {
    manifest = JSON.parse(readFileSync(`${dir}manifest.json`, 'utf8'));
  } catch {
    return undefined;
  }
  const assets = new Map<string, WebAsset>();
  for (const name of manifest.files) {
    if (!/^[A-Za-z0-9._-]+$/.test(name)) continue;
    // The content hash is in the name, so the name is the entity tag.
    assets.set(name, { body: readFileSync(`${dir}${name}`), type: TYPES[extname(name)] ?? 'application/octet-stream', etag: `"${name}"` });
  }
  return { entry: { js: manifest.js, css: manifest.css }, assets };
}

/** The HTML shell: no inline script or style, so the policy below can forbid both. */
export function shellHtml(bundle: WebBundle | undefined): string {
  const head = '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">';
  if (!bundle)
    return `${head}<title>Gateway console</title></head><body><main><h1>Gateway console</h1><p>The console is not built. Run <code>npm run build</code> and restart the gateway.</p></main></body></html>`;
  return (
    `${head}<title>Gateway console</title><link rel="stylesheet" href="/console/assets/${bundle.entry.css}">` +
    `<script type="module" src="/console/assets/${bundle.entry.js}"></script></head>` +
    '<body><div id="app"><noscript>The console needs JavaScript.</noscript></div></body></html>'
  );
}

/** Console pages: nothing from elsewhere, no inline code, never framed. */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "media-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': CONSOLE_CSP,
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
};
