/** A job status as a word (colour only repeats what the word says). */
export function StatusBadge({ status }: { status: string }) {
  const tone = status === 'completed' ? 'ok' : status === 'failed' ? 'bad' : 'wait';
  return <span class={`badge ${tone}`}>{status}</span>;
}
