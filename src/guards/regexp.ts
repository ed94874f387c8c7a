/**
 * Regular-expression source that matches `text` literally, outside a character class (valid with
 * or without the `u` flag). One definition for every pattern built from data: secret needles,
 * host wildcards, workspace path spellings.
 */
export function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}
