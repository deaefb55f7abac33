import { writeFileSync } from 'node:fs';
import type { CliCommand } from '../command.js';
import { apiClient, clientOptions, printJson, type ClientFlags } from '../client/options.js';
import { npyFloat32 } from '../client/npy.js';
import { positiveNumber } from '../client/params.js';
import { CliError, EXIT } from '../exit.js';
import { writeOut } from '../output.js';

interface EmbedFlags extends ClientFlags {
  model: string;
  dimensions?: number;
  format?: string;
  output?: string;
}

interface EmbeddingsResponse {
  data: { index: number; embedding: number[] | string }[];
  model: string;
  usage?: { prompt_tokens?: number; total_tokens?: number };
}

const PREVIEW = 4;

async function embed(texts: string[], o: EmbedFlags): Promise<void> {
  const format = o.format ?? (o.json ? 'json' : 'text');
  if (!['json', 'npy', 'text'].includes(format)) throw new CliError(`--format must be json or npy, not '${o.format}'`, EXIT.usage);
  if (format === 'npy' && !o.output && process.stdout.isTTY) throw new CliError('--format npy writes binary: pass --output FILE or redirect stdout', EXIT.usage);
  const body: Record<string, unknown> = { model: o.model, input: texts };
  if (o.dimensions !== undefined) body.dimensions = o.dimensions;
  // npy wants the exact float32 bytes, which base64 carries without a decimal round trip.
  if (format === 'npy') body.encoding_format = 'base64';
  const res = await apiClient(o).json<EmbeddingsResponse>('POST', '/v1/embeddings', body);
  const rows = [...res.data].sort((a, b) => a.index - b.index);

  if (format === 'npy') {
    const buffers = rows.map((r) => Buffer.from(String(r.embedding), 'base64'));
    const columns = (buffers[0]?.length ?? 0) / 4;
    if (buffers.some((b) => b.length !== columns * 4)) throw new CliError('the embeddings have different lengths; cannot write one matrix', EXIT.failure);
    const file = npyFloat32(buffers, columns);
    if (o.output) writeFileSync(o.output, file);
    else writeOut(file);
    return;
  }
  if (format === 'json') return printJson(res);
  for (const r of rows) {
    const v = r.embedding as number[];
    const head = v.slice(0, PREVIEW).map((x) => x.toFixed(6)).join(', ');
    writeOut(`${r.index}\t${v.length} dims\t[${head}${v.length > PREVIEW ? ', ...' : ''}]\n`);
  }
  if (res.usage?.total_tokens !== undefined) process.stderr.write(`${res.usage.total_tokens} tokens\n`);
}

export const embedCommand: CliCommand = {
  register(program, run) {
    clientOptions(
      program
        .command('embed <text...>')
        .description('embed one or more texts through the HTTP API')
        .requiredOption('--model <model>', 'embedding model, e.g. text-embedding-3-small')
        .option('--dimensions <n>', 'shorter vectors, where the model supports it', positiveNumber('--dimensions'))
        .option('--format <format>', 'json (the API response) or npy (float32 matrix, one row per text)')
        .option('--output <file>', 'write there instead of stdout (npy)'),
    ).action(run(embed));
  },
};
