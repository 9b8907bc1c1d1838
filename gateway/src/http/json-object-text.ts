import { isUtf8 } from 'node:buffer';

/**
 * Whether `text` is exactly one JSON object in UTF-8 (RFC 8259; whitespace around it allowed):
 * what a result must be before it is spliced into an answer as bytes. Written here rather than
 * JSON.parse: parsing a thousand updates' results only to throw the objects away was a third
 * of the gateway's garbage at scale (bench/results.md), and decoding them to strings first
 * was another sixth; this reads the bytes once and allocates nothing. No library checks JSON
 * without building it. Iterative, so nesting depth cannot exhaust the stack. Bytes past the
 * end read as `undefined`, which matches no character.
 */
export function isOneJsonObject(text: Uint8Array): boolean {
  if (!isUtf8(text)) return false;
  let i = skipSpace(text, 0);
  if (text[i] !== OPEN_BRACE) return false;
  // The closing character of each container open around the current position.
  const open: number[] = [];
  for (;;) {
    // A value is expected at i.
    let c = text[i];
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      const close = c === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET;
      i = skipSpace(text, i + 1);
      if (text[i] === close) {
        i++;
      } else {
        open.push(close);
        if (close === CLOSE_BRACE && (i = member(text, i)) < 0) return false;
        continue;
      }
    } else if (c === QUOTE) {
      if ((i = string(text, i)) < 0) return false;
    } else if (c === MINUS || isDigit(c)) {
      if ((i = number(text, i)) < 0) return false;
    } else if (startsWith(text, TRUE, i) || startsWith(text, NULL, i)) {
      i += 4;
    } else if (startsWith(text, FALSE, i)) {
      i += 5;
    } else {
      return false;
    }
    // After a value: a comma and the next value, or the end of containers.
    for (;;) {
      if (open.length === 0) return skipSpace(text, i) === text.byteLength;
      i = skipSpace(text, i);
      c = text[i];
      const close = open[open.length - 1]!;
      if (c === close) {
        open.pop();
        i++;
        continue;
      }
      if (c !== COMMA) return false;
      i = skipSpace(text, i + 1);
      if (close === CLOSE_BRACE && (i = member(text, i)) < 0) return false;
      break;
    }
  }
}

/** The code of each character, one number per character given. */
function codes<const C extends readonly string[]>(...chars: C): { [K in keyof C]: number } {
  return chars.map((c) => c.charCodeAt(0)) as { [K in keyof C]: number };
}

const [
  OPEN_BRACE,
  CLOSE_BRACE,
  OPEN_BRACKET,
  CLOSE_BRACKET,
  QUOTE,
  BACKSLASH,
  COMMA,
  COLON,
  MINUS,
  PLUS,
  DOT,
  DIGIT_0,
  DIGIT_9,
] = codes('{', '}', '[', ']', '"', '\\', ',', ':', '-', '+', '.', '0', '9');
const TRUE = Buffer.from('true');
const FALSE = Buffer.from('false');
const NULL = Buffer.from('null');

function startsWith(text: Uint8Array, word: Uint8Array, i: number): boolean {
  for (let k = 0; k < word.byteLength; k++) if (text[i + k] !== word[k]) return false;
  return true;
}

const isSpace = (c: number | undefined) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

function skipSpace(text: Uint8Array, i: number): number {
  while (isSpace(text[i])) i++;
  return i;
}

/**
 * A JSON object's bytes without their closing brace (and the space around it), and whether it
 * has members: the object can then be continued with more members. The bytes must be one
 * object (isOneJsonObject, or a store's parse).
 */
export function openObject(json: Uint8Array): { body: Uint8Array; empty: boolean } {
  let end = json.byteLength;
  while (end > 0 && isSpace(json[end - 1])) end--;
  if (json[end - 1] !== CLOSE_BRACE) throw new Error('not a JSON object');
  end--;
  while (end > 0 && isSpace(json[end - 1])) end--;
  return { body: json.subarray(0, end), empty: json[end - 1] === OPEN_BRACE };
}

/** A member's name and colon at i; the index of its value, or -1. */
function member(text: Uint8Array, i: number): number {
  if (text[i] !== QUOTE || (i = string(text, i)) < 0) return -1;
  i = skipSpace(text, i);
  return text[i] === COLON ? skipSpace(text, i + 1) : -1;
}

/** Bytes that end a run of plain string content: a quote, a backslash, a control character. */
const STRING_STOPS = new Uint8Array(256);
for (let c = 0; c < 0x20; c++) STRING_STOPS[c] = 1;
STRING_STOPS[QUOTE] = 1;
STRING_STOPS[BACKSLASH] = 1;

/** A string starting at i (its quote); the index after it, or -1. */
function string(text: Uint8Array, i: number): number {
  const end = text.byteLength;
  for (i++; i < end; i++) {
    // Most of a result is string content: one table look-up per byte of it.
    while (i < end && STRING_STOPS[text[i]!] === 0) i++;
    if (i === end) return -1;
    const c = text[i]!;
    if (c === QUOTE) return i + 1;
    if (c < 0x20) return -1;
    if (c === BACKSLASH) {
      const e = text[++i];
      if (e === 0x75) {
        for (let k = 1; k <= 4; k++) if (!isHex(text[i + k])) return -1;
        i += 4;
      } else if (!(
        e === QUOTE ||
        e === BACKSLASH ||
        e === 0x2f ||
        e === 0x62 ||
        e === 0x66 ||
        e === 0x6e ||
        e === 0x72 ||
        e === 0x74
      )) {
        return -1;
      }
    }
  }
  return -1;
}

/** A number starting at i; the index after it, or -1. */
function number(text: Uint8Array, i: number): number {
  if (text[i] === MINUS) i++;
  if (text[i] === DIGIT_0) i++;
  else if (isDigit(text[i])) i = digits(text, i);
  else return -1;
  if (text[i] === DOT) {
    if (!isDigit(text[i + 1])) return -1;
    i = digits(text, i + 1);
  }
  const e = text[i];
  if (e === 0x65 || e === 0x45) {
    i++;
    const sign = text[i];
    if (sign === PLUS || sign === MINUS) i++;
    if (!isDigit(text[i])) return -1;
    i = digits(text, i);
  }
  return i;
}

function digits(text: Uint8Array, i: number): number {
  while (isDigit(text[i])) i++;
  return i;
}

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= DIGIT_0 && c <= DIGIT_9;
}

function isHex(c: number | undefined): boolean {
  return c !== undefined && (isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66));
}
