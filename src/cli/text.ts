/**
 * Text that came over the network (a gateway's error message, a job's status, a model's name)
 * before it reaches a terminal or a log: a hostile upstream's message passes through the gateway,
 * and an escape sequence in it could recolour, retitle or rewrite the user's terminal.
 */

// ESC or C1 sequences as a terminal would read them: CSI (ESC [ or 0x9b) with its parameters; the
// string commands (OSC, DCS, SOS, PM, APC) up to their terminator or the next control character;
// any other ESC with its intermediate and final bytes. They go whole, not just their first byte.
const SEQUENCE =
  /(?:\u001b\[|\u009b)[\u0030-\u003f]*[\u0020-\u002f]*[\u0040-\u007e]?|(?:\u001b[\]PX^_]|[\u0090\u0098\u009d-\u009f])[^\u0000-\u001f\u007f-\u009f]*(?:\u0007|\u001b\\|\u009c)?|\u001b[\u0020-\u002f]*[\u0030-\u007e]?/g;
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

/** One line of plain text: escape sequences removed, any other control character (C0, DEL, C1) a space. */
export const printable = (s: string): string => s.replace(SEQUENCE, '').replace(CONTROL, ' ');

/**
 * JSON for stdout: JSON.stringify escapes C0 but leaves DEL and C1 raw, which some terminals obey;
 * written as \u escapes, the document parses to the same values.
 */
export const jsonText = (v: unknown): string =>
  JSON.stringify(v, null, 2).replace(/[\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
