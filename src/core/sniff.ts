/** What a file is, from its first bytes (a client's declared content type and file name do not count). */
export interface SniffedVideo {
  mime: 'video/mp4' | 'video/quicktime' | 'video/webm';
  ext: 'mp4' | 'mov' | 'webm';
}

/**
 * MP4 and QuickTime carry an `ftyp` box at offset 4 (its major brand tells them apart: `qt  ` is
 * QuickTime); WebM (Matroska) starts with the EBML magic 1A 45 DF A3 and names its DocType `webm`.
 */
export function sniffVideo(bytes: Buffer): SniffedVideo | undefined {
  if (bytes.length >= 12 && bytes.subarray(4, 8).toString('latin1') === 'ftyp') {
    const brand = bytes.subarray(8, 12).toString('latin1');
    return brand === 'qt  ' ? { mime: 'video/quicktime', ext: 'mov' } : { mime: 'video/mp4', ext: 'mp4' };
  }
  if (bytes.length >= 4 && bytes.readUInt32BE(0) === 0x1a45dfa3) {
    const head = bytes.subarray(0, 64).toString('latin1');
    if (head.includes('webm')) return { mime: 'video/webm', ext: 'webm' };
  }
  return undefined;
}
