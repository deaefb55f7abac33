export interface BannerInput {
  base: string;
  /** Where the generated admin token lives; undefined when the configuration supplies one. */
  adminTokenFile?: string;
  /** The embedded default only: the demo key's file, the key, and models for the examples. */
  demo?: { keyFile: string; key: string; models: string[] };
  /** Whether the key may be shown: only to a person at a terminal, never into collected logs. */
  showKey: boolean;
  /** Whether the interactive API docs are served (GET /docs). */
  hasDocs: boolean;
  /** Whether the web console is served (GET /console). */
  hasConsole?: boolean;
}

/**
 * The start banner, written to stderr (stdout is the JSON log stream): where the gateway listens,
 * where its documentation and secrets are, and for the embedded default commands to try.
 */
export function startBanner(b: BannerInput): string {
  const lines = [
    '',
    `Gateway ready at ${b.base}${b.demo ? ' (embedded default: SQLite in ./data, built-in vendor simulators that return a fixed sample clip)' : ''}.`,
    `  index        ${b.base}/ (name, version, links)`,
    `  health       ${b.base}/health`,
  ];
  if (b.hasConsole) lines.push(`  console      ${b.base}/console (sign in with the admin token or an API key)`);
  if (b.hasDocs) lines.push(`  API docs     ${b.base}/docs`);
  lines.push('  guides       README.md, docs/admin.md (admin API), docs/configuration.md');
  if (b.adminTokenFile) lines.push(`  admin token  in ${b.adminTokenFile} (Authorization: Bearer <token> on /admin/...)`);
  if (b.demo) {
    lines.push(`  demo key     in ${b.demo.keyFile}${b.showKey ? `: ${b.demo.key}` : ' (not printed: stdout is not a terminal)'}`);
    const video = b.demo.models.find((m) => m.startsWith('sora')) ?? b.demo.models[0];
    const emb = b.demo.models.find((m) => m.includes('embedding')) ?? 'text-embedding-3-small';
    lines.push(
      '',
      'Try:',
      `  export GATEWAY_URL=${b.base} GATEWAY_API_KEY=$(cat ${b.demo.keyFile})`,
      '  npx gateway models',
      `  npx gateway video create --model ${video} --prompt "a red fox in the snow" --output fox.mp4`,
      `  npx gateway embed --model ${emb} "hello world"`,
    );
  }
  lines.push('');
  return lines.join('\n') + '\n';
}
