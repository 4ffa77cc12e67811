/**
 * The first line of a message, or of an error's message, with its whitespace
 * folded and at most `max` characters. What a client or a log receives from a
 * library's error: never a stack, a multi-line dump of a statement, or an
 * unbounded echo of the input.
 */
export function oneLine(value: unknown, max = 300): string {
  const text = value instanceof Error ? value.message : String(value);
  const line = (text.split('\n')[0] ?? '').replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
