// How a value read from a message becomes text, the one rule shared by
// concatenation, hashing, encryption and the `string` cast, so that a column
// hashed on its own and the same column concatenated see the same bytes.

/** Absent from the message, or JSON null: both count as "no value" (rule 9). */
export const isMissing = (value: unknown): value is null | undefined => value === null || value === undefined;

/** Strings as they are, numbers and booleans as JSON writes them, objects and arrays as compact JSON. */
export const toText = (value: unknown): string => {
  if (typeof value === 'string') return value;
  if (typeof value === 'object' && value !== null) return JSON.stringify(value);
  return String(value);
};

/** A short, unambiguous rendering of a value for an error message. */
export const preview = (value: unknown): string => {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
};
