import { randomBytes } from 'node:crypto';
import { Parser, type CST } from 'yaml';

/** A ${NAME} or ${NAME:-default} reference as written in the file (on one line). */
const REFERENCE = /\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}\n]*)?\}/g;

/**
 * Makes `${VAR}` references work unquoted inside YAML flow collections (`{rpm: ${RPM}}`,
 * `[${A}, ${B}]`), where YAML reads `{` and `}` as the collection's own brackets and the file
 * would not parse. Each plain scalar of a flow collection that holds a reference is put in double
 * quotes, the reference itself still in it: variables are substituted after parsing, as anywhere
 * else in the file, so a variable's value never enters the YAML text and cannot add keys, items or
 * lines whatever it holds (`}`, `,`, `: `, a newline). Such a scalar was text anyway (plain YAML
 * reads `${...}` as no number or boolean); a whole reference becomes the number or boolean its
 * setting takes later, as in block style (env-refs.ts). Everything else of the file is left as
 * written: block style, quoted values, block scalars and comments.
 */
export function quoteFlowReferences(text: string): string {
  if (!text.includes('${')) return text;
  // Each reference is swapped for a word YAML reads as part of a plain scalar in any context, so
  // the parser sees the collection the file means to write; the word names the reference it stands for.
  let tag: string;
  do tag = `R${randomBytes(6).toString('hex')}`;
  while (text.includes(tag));
  const references: string[] = [];
  const masked = text.replace(REFERENCE, (ref) => `${tag}N${references.push(ref) - 1}E`);
  const placeholder = new RegExp(`${tag}N(\\d+)E`, 'g');
  const restore = (s: string) => s.replace(placeholder, (_m, i: string) => references[Number(i)]!);

  const scalars: CST.FlowScalar[] = [];
  for (const token of new Parser().parse(masked)) flowPlainScalars(token, false, scalars);
  let out = '';
  let at = 0;
  for (const s of scalars.filter((s) => s.source.includes(tag)).sort((a, b) => a.offset - b.offset)) {
    out += restore(masked.slice(at, s.offset)) + doubleQuoted(restore(s.source));
    at = s.offset + s.source.length;
  }
  return out + restore(masked.slice(at));
}

/** The plain scalars (keys and values) inside flow collections under `token`. */
function flowPlainScalars(token: CST.Token | null | undefined, inFlow: boolean, out: CST.FlowScalar[]): void {
  if (!token) return;
  switch (token.type) {
    case 'document':
      flowPlainScalars(token.value, inFlow, out);
      break;
    case 'block-map':
    case 'block-seq':
    case 'flow-collection': {
      const flow = inFlow || token.type === 'flow-collection';
      for (const item of token.items) {
        flowPlainScalars('key' in item ? item.key : undefined, flow, out);
        flowPlainScalars(item.value, flow, out);
      }
      break;
    }
    case 'scalar':
      if (inFlow) out.push(token);
      break;
  }
}

/** `text` as a YAML double-quoted scalar; line breaks fold to spaces there as they do in a plain scalar. */
function doubleQuoted(text: string): string {
  return `"${text.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}
