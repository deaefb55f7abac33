import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { ConfigError, loadConfigFile, parseConfigText } from '../../src/config/load.js';
import { quoteFlowReferences } from '../../src/config/flow-references.js';

/**
 * `${VAR}` inside a flow mapping or sequence (`limits: {rpm: ${RPM}}`) made the file fail to parse
 * unless quoted: YAML reads its braces as the collection's. It now works unquoted, typed as in
 * block style, and no value of a variable can add structure to the file.
 */
const dir = mkdtempSync(join(tmpdir(), 'cfg-flow-refs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
function write(text: string): string {
  const p = join(dir, `gateway-${++n}.yaml`);
  writeFileSync(p, text);
  return p;
}

const file = `
server: {host: 127.0.0.1, port: \${GW_PORT}, trust_proxy: \${TRUST:-false}}   # a {\${COMMENTED}} comment
secret: [\${OLD_SECRET}, \${NEW_SECRET}]
limits: {backend: memory, defaults: {embeddings: {rpm: \${RPM}, tpm: \${TPM:-5000}}}}
metrics: {enabled: \${METRICS}}
upstreams:
  - {name: oa, vendor: openai, base_url: http://\${UP_HOST}:18499/v1, api_key: \${OA_KEY}, models: [\${MODEL}]}
models:
  emb: { capabilities: [embedding], price: { per_million_input_tokens: 0.02 }, description: "{\${DESC:-quoted stays}}" }
`;
const env = {
  GW_PORT: '18433',
  METRICS: 'true',
  RPM: '120',
  OLD_SECRET: 'old-flow-secret-0123456789abcdef',
  NEW_SECRET: 'new-flow-secret-0123456789abcdef',
  UP_HOST: '127.0.0.1',
  OA_KEY: 'sk-flow-key',
  MODEL: 'emb',
};

describe('${VAR} unquoted in flow mappings and sequences', () => {
  it('parses, and a whole reference becomes the number or boolean its setting takes, as in block style', () => {
    const cfg = loadConfigFile(write(file), env);
    expect(cfg.server.port).toBe(18433);
    expect(cfg.server.trust_proxy).toBe(false);
    expect(cfg.secret).toEqual([env.OLD_SECRET, env.NEW_SECRET]);
    expect(cfg.limits.defaults.embeddings).toEqual({ rpm: 120, tpm: 5000 });
    expect(cfg.metrics.enabled).toBe(true);
    expect(cfg.upstreams[0]).toMatchObject({ name: 'oa', base_url: 'http://127.0.0.1:18499/v1', api_key: 'sk-flow-key', models: ['emb'] });
    expect(cfg.models.emb!.description).toBe('{quoted stays}');
  });

  it('a value holding `}`, `,`, `: ` or a newline stays one string: it adds no key, item or line', () => {
    const hostile = 'sk-1}, vendor: wan, extra: [x]\nmodels: {}\n  - {name: evil';
    const secret = 'only-one-secret-0123456789abcdef, second-injected-0123456789';
    const cfg = loadConfigFile(write(file), { ...env, OA_KEY: hostile, OLD_SECRET: secret });
    expect(cfg.upstreams).toHaveLength(1);
    expect(cfg.upstreams[0]!.api_key).toBe(hostile);
    expect(cfg.upstreams[0]!.vendor).toBe('openai');
    expect(cfg.secret).toEqual([secret, env.NEW_SECRET]);
    expect(Object.keys(cfg.models)).toEqual(['emb']);
  });

  it('a value that would close the mapping and add a key is refused as text, the setting named and the value not shown', () => {
    const path = write(file);
    const load = () => loadConfigFile(path, { ...env, RPM: '5}, tpm: 1' });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(/limits\.defaults\.embeddings\.rpm: Expected number, received string/);
    expect(load).not.toThrow(/tpm: 1/);
    // A list item that would become two names one model, not declared.
    expect(() => loadConfigFile(path, { ...env, MODEL: 'emb, emb' })).toThrow(/upstreams\[0\]\.models\[0\]: model a 8-character value from the environment \(not shown\) is not declared/);
  });
});

describe('quoteFlowReferences', () => {
  it('quotes only plain scalars of flow collections that hold a reference; the rest of the file is as written', () => {
    const text = [
      'a: ${X} # {${Y}}',
      'b: |',
      '  {${X}}',
      'c: [${A}, "${B}", pre${C:-d, e}post, plain]',
      '{${K}: v}: 1',
      'd: {u: x"${A}\\y}',
      '',
    ].join('\n');
    expect(quoteFlowReferences(text)).toBe(
      ['a: ${X} # {${Y}}', 'b: |', '  {${X}}', 'c: ["${A}", "${B}", "pre${C:-d, e}post", plain]', '{"${K}": v}: 1', 'd: {u: "x\\"${A}\\\\y"}', ''].join('\n'),
    );
    expect(quoteFlowReferences('no references: {a: 1}')).toBe('no references: {a: 1}');
  });
});

describe('a file that parses as written keeps its meaning', () => {
  it('is not rewritten, whatever its quoted strings hold (a reference opened in one and closed past it)', () => {
    for (const text of ["a: ['${X:-', {}, '[${Y}]']", "a: ['${X:-', {}, '${Y}']", 'a: ["${X:-", {b: 1}, "${Y}"]']) {
      expect(parseConfigText(text, 'f.yaml')).toEqual(parseYaml(text));
    }
    expect(parseConfigText("a: ['${X:-', {}, '[${Y}]']", 'f.yaml')).toEqual({ a: ['${X:-', {}, '[${Y}]'] });
  });

  it('only a file that does not parse as written is read with its flow references quoted; one that parses neither way is reported as written', () => {
    expect(parseConfigText('a: {rpm: ${RPM}}', 'f.yaml')).toEqual({ a: { rpm: '${RPM}' } });
    expect(() => parseConfigText('a: {rpm: ${RPM}', 'f.yaml')).toThrow(/^f\.yaml: not valid YAML: /);
  });
});
