/**
 * Text as the lexical ranker sees it (SPEC.md RNK-1, RNK-7): casefolded, split into words
 * made of Unicode letters and digits, and searched for triggers.
 */

const WORD = /[\p{L}\p{N}]+/gu;
const WORD_CHAR = /^[\p{L}\p{N}]$/u;
const ASCII = /^\p{ASCII}*$/u;
const ASCII_LETTERS = /^[A-Za-z]+$/;

/**
 * Unicode full case folding (what Python's `str.casefold` does). For one code point,
 * upper-casing then lower-casing gives the folding, except for the few characters below:
 * dotless i has no folding, Cherokee folds to its capitals, and capital sharp s to "ss".
 */
export function casefold(text: string): string {
  if (ASCII.test(text)) return text.toLowerCase();
  let folded = "";
  for (const char of text) folded += foldCodePoint(char);
  return folded;
}

function foldCodePoint(char: string): string {
  const code = char.codePointAt(0) ?? 0;
  if (code === 0x0131) return char;
  if (code === 0x1e9e) return "ss";
  if (code >= 0x13a0 && code <= 0x13f5) return char;
  if (code >= 0x13f8 && code <= 0x13fd) return String.fromCodePoint(code - 8);
  if (code >= 0xab70 && code <= 0xabbf) return String.fromCodePoint(code - 0xab70 + 0x13a0);
  return char.toUpperCase().toLowerCase();
}

/** The distinct words of a text: maximal runs of letters and digits, casefolded. */
export function words(text: string): Set<string> {
  return new Set(casefold(text).match(WORD) ?? []);
}

export function isWordChar(char: string | undefined): boolean {
  return char !== undefined && WORD_CHAR.test(char);
}

/**
 * Whether `needle` occurs in `haystack` (both casefolded) with no letter or digit right
 * before or after it: how a server id names its server (RNK-3) and how a trigger of ASCII
 * letters matches (RNK-7).
 */
export function occursAsWord(haystack: string, needle: string): boolean {
  if (needle === "") return false;
  for (let at = haystack.indexOf(needle); at >= 0; at = haystack.indexOf(needle, at + 1)) {
    const before = lastCodePoint(haystack.slice(0, at));
    const after = firstCodePoint(haystack.slice(at + needle.length));
    if (!isWordChar(before) && !isWordChar(after)) return true;
  }
  return false;
}

/** RNK-7: a trigger of ASCII letters matches a whole word, any other trigger a substring. */
export function triggerFires(message: string, trigger: string): boolean {
  return ASCII_LETTERS.test(trigger) ? occursAsWord(message, trigger) : message.includes(trigger);
}

/** Ascending code-point order (RNK-8); JavaScript's `<` compares UTF-16 code units instead. */
export function compareCodePoints(a: string, b: string): number {
  const left = a[Symbol.iterator]();
  const right = b[Symbol.iterator]();
  for (;;) {
    const x = left.next();
    const y = right.next();
    if (x.done === true || y.done === true) return (x.done === true ? 0 : 1) - (y.done === true ? 0 : 1);
    const difference = (x.value.codePointAt(0) ?? 0) - (y.value.codePointAt(0) ?? 0);
    if (difference !== 0) return difference;
  }
}

function firstCodePoint(text: string): string | undefined {
  const code = text.codePointAt(0);
  return code === undefined ? undefined : String.fromCodePoint(code);
}

function lastCodePoint(text: string): string | undefined {
  const chars = Array.from(text.slice(-2));
  return chars[chars.length - 1];
}
