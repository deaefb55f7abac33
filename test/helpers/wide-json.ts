/** JSON text of an object of many small fields, about `bytes` long: the costly shape to parse and walk. */
export function wideJson(bytes: number): string {
  const parts: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const field = `"f${i}":"v${i}-${'x'.repeat(40)}"`;
    parts.push(field);
    size += field.length + 1;
  }
  return `{${parts.join(',')}}`;
}
