/**
 * A NumPy .npy file (format 1.0) holding a little-endian float32 matrix, rows by columns:
 * magic, version, a header dict padded with spaces to a multiple of 64 bytes, then the data.
 */
export function npyFloat32(rows: Buffer[], columns: number): Buffer {
  const dict = `{'descr': '<f4', 'fortran_order': False, 'shape': (${rows.length}, ${columns}), }`;
  const prefix = 10; // magic (6) + version (2) + header length (2)
  const padded = dict.padEnd(Math.ceil((prefix + dict.length + 1) / 64) * 64 - prefix - 1, ' ') + '\n';
  const head = Buffer.alloc(prefix);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(padded.length, 8);
  return Buffer.concat([head, Buffer.from(padded, 'latin1'), ...rows]);
}
