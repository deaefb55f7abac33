/**
 * Hex dumps as the tools print them, byte for byte (checked against xxd 8.2, util-linux hexdump and
 * GNU od): what a debugging proxy or a vendor's support output quotes of a request.
 */
const printable = (b: number) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.');
const hex = (b: number) => b.toString(16).padStart(2, '0');

/** `xxd` (groups of `group` bytes, `cols` bytes a line). */
export function xxd(buf: Buffer, group = 2, cols = 16): string {
  const lines: string[] = [];
  for (let o = 0; o < buf.length; o += cols) {
    const bytes = [...buf.subarray(o, o + cols)];
    const groups: string[] = [];
    for (let g = 0; g < bytes.length; g += group) groups.push(bytes.slice(g, g + group).map(hex).join(''));
    const width = Math.ceil(cols / group) * (group * 2 + 1);
    lines.push(`${o.toString(16).padStart(8, '0')}: ${groups.join(' ').padEnd(width)} ${bytes.map(printable).join('')}`);
  }
  return `${lines.join('\n')}\n`;
}

/** `hexdump -C`. */
export function hexdumpC(buf: Buffer): string {
  const lines: string[] = [];
  for (let o = 0; o < buf.length; o += 16) {
    const bytes = [...buf.subarray(o, o + 16)];
    const hexes = `${bytes.slice(0, 8).map(hex).join(' ')}  ${bytes.slice(8).map(hex).join(' ')}`;
    lines.push(`${o.toString(16).padStart(8, '0')}  ${hexes.padEnd(48)}  |${bytes.map(printable).join('')}|`);
  }
  lines.push(buf.length.toString(16).padStart(8, '0'));
  return `${lines.join('\n')}\n`;
}

/** `od -A x -t x1z`. */
export function od(buf: Buffer): string {
  const lines: string[] = [];
  for (let o = 0; o < buf.length; o += 16) {
    const bytes = [...buf.subarray(o, o + 16)];
    lines.push(`${o.toString(16).padStart(6, '0')} ${bytes.map(hex).join(' ').padEnd(47)}  >${bytes.map(printable).join('')}<`);
  }
  lines.push(buf.length.toString(16).padStart(6, '0'));
  return `${lines.join('\n')}\n`;
}

/** `xxd -p`: plain hex, 60 digits a line. */
export function xxdPlain(buf: Buffer): string {
  return `${(buf.toString('hex').match(/.{1,60}/g) ?? []).join('\n')}\n`;
}
