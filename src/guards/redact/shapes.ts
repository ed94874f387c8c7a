/**
 * Context shapes where the secret's name and its value are not one `key = value`: a setter's two
 * arguments (`System.setProperty("k", "v")`, `os.environ.setdefault("K", "v")`,
 * `req.Header.Set("X-Key", "v")`), a name/value pair across lines or fields (Kubernetes
 * `- name: X` / `value: "…"`, Postman/JSON header objects), an XML element over several lines, a
 * typed declaration (`var x string = "…"`, `const x: string = "…"`), and a credential passed
 * positionally to a callee that names one (`Client("…")`). Every expression is linear: bounded
 * repeats between literals, tried only when its literal occurs, and then only where a match can
 * start (./anchored.ts).
 */
import { XML_TAG_LEAD, anchoredMatches, type Anchor } from "./anchored.js";
import { keyStrength } from "./keyNames.js";
import { REDACTION_MARKER_PREFIX } from "./markers.js";
import { registerAnchorLiterals, type TextScan } from "./scan.js";
import type { RedactOptions, SecretSpan } from "./types.js";
import { isCodeValue, isPlaceholder, isPlaceholderToken, looksLikeCredential } from "./values.js";

/** Header names whose value is a credential (besides key names that name a secret). */
const SECRET_HEADER_RE = /^(?:x-)?(?:[a-z]+-)?(?:api-?key|auth-?token|api-?token|access-?token|token|key|secret|authorization|private-token|subscription-key|functions-key)$/i;

interface Shape {
  /** A literal one of which every match contains. */
  needles: string[];
  re: RegExp;
  /** Group holding the name (undefined: the callee decides, see `callee`). */
  name?: number;
  value: number;
  /** The value must look like a credential whatever the name. */
  strict?: boolean;
  /** Where every match starts (./anchored.ts): the shape then runs only there. */
  anchor?: Anchor;
}

/** `("`, `( '`: where the setter and positional shapes start. */
const QUOTED_ARGUMENT_LEAD = /\(\s{0,8}["']/g;

const SHAPES: Shape[] = [
  // Setters: `System.setProperty("k", "v")`, `os.environ.setdefault("K", "v")`, `Header.Set("X-Key", "v")`, `putenv("K=v")` is an assignment.
  { needles: ["(\"", "('", "( \"", "( '"], re: /\(\s{0,8}(["'])([A-Za-z_][\w.-]{0,80})\1\s{0,8},\s{0,8}(["'])((?:(?!\3)[^\\\n]|\\.){1,512})\3/g, name: 2, value: 4, anchor: { lead: QUOTED_ARGUMENT_LEAD, at: "start" } },
  // Kubernetes env / Postman and JSON header objects: name (or key, header) then value, within a
  // few lines; matched at `value` and checked backwards (a look-behind), since `key` and `name` are everywhere.
  {
    needles: ["value"],
    re: /value(?<=\b(?:name|key|header)["']?\s{0,8}[:=]\s{0,8}["']?([A-Za-z_][\w.-]{0,80})["']?\s{0,8},?\s{0,40}(?:\n[^\n]{0,80}?){0,2}?["']?value)["']?\s{0,8}[:=]\s{0,8}(["']?)([^"'\s,}][^"'\n,}]{0,511})\2/g,
    name: 1,
    value: 3,
    anchor: { needles: ["value"], back: 0 },
  },
  // XML element over several lines: `<password>\n  value\n</password>`.
  // (anchored on the `>` that ends a line, the opening tag checked behind it)
  { needles: ["</"], re: />(?<=<([A-Za-z_][\w.:-]{0,80})>)[ \t]{0,40}\r?\n[ \t]{0,80}([^<\s][^<\n]{0,511}?)[ \t]{0,40}\r?\n[ \t]{0,80}<\/\1>/g, name: 1, value: 2, anchor: { lead: XML_TAG_LEAD, at: "last" } },
  // Typed declarations: `var apiKey string = "…"`, `const apiKey: string = "…"` (from the type back).
  { needles: ["string", "String", "str", "[]byte"], re: /(?:string|String|str|\[\]byte)(?<=\b([A-Za-z_]\w{0,80})\s{0,8}:?\s{1,8}&?(?:string|String|str|\[\]byte))\s{0,8}:?=\s{0,8}(["'`])((?:(?!\2)[^\\\n]|\\.){1,512})\2/g, name: 1, value: 3, anchor: { needles: ["str", "[]byte"], back: 0 } },
  { needles: ["String ", "string "], re: /\b(?:String|string|str)\s{1,8}([A-Za-z_]\w{0,80})\s{0,8}=\s{0,8}(["'])((?:(?!\2)[^\\\n]|\\.){1,512})\2/g, name: 1, value: 3, anchor: { needles: ["str"], back: 0 } },
  // Positional credential: `OpenAI("…")`, `Client("…")`, `new StripeClient('…')` where the callee names one (from the `(` back).
  {
    needles: ["(\"", "('"],
    re: /\(\s{0,8}(["'])(?<=\b([A-Za-z_][\w.]{0,80}(?:Client|Api|API|Auth|Token|Key|Credential|Session|Secret))\(\s{0,8}["'])([^"'\s\\]{12,512})\1/g,
    value: 3,
    strict: true,
    anchor: { lead: QUOTED_ARGUMENT_LEAD, at: "start" },
  },
];

function namesSecret(name: string): boolean {
  return keyStrength(name) !== undefined || SECRET_HEADER_RE.test(name);
}

function keepValue(name: string | undefined, value: string, strict: boolean): boolean {
  const v = value.trim();
  if (v.length < 4 || v.includes(REDACTION_MARKER_PREFIX)) return false;
  if (isPlaceholder(v) || isPlaceholderToken(v) || isCodeValue(v)) return false;
  if (strict || name === undefined) return looksLikeCredential(v) && !/\s|:\/\//.test(v);
  const strength = keyStrength(name);
  if (strength === "strong") return true;
  return looksLikeCredential(v) && !/\s/.test(v);
}

/** With group indices (`d`), compiled once. */
const COMPILED = SHAPES.map((s) => ({ ...s, re: new RegExp(s.re.source, "dg") }));
registerAnchorLiterals(SHAPES.flatMap((s) => (s.anchor && "needles" in s.anchor ? s.anchor.needles : [])));

/** The context-shape detector. */
export function detectContextShapes(text: string, _opts: RedactOptions, scan: TextScan): SecretSpan[] {
  const spans: SecretSpan[] = [];
  for (const shape of COMPILED) {
    if (!shape.needles.some((n) => text.includes(n))) continue;
    shape.re.lastIndex = 0;
    for (const m of shape.anchor ? anchoredMatches(text, scan, shape.re, shape.anchor) : text.matchAll(shape.re)) {
      const name = shape.name !== undefined ? m[shape.name] : undefined;
      if (name !== undefined && !namesSecret(name)) continue;
      const value = m[shape.value];
      if (value === undefined || !keepValue(name, value, shape.strict ?? false)) continue;
      const [s, e] = m.indices![shape.value]!;
      const lead = value.length - value.trimStart().length;
      spans.push({ start: s + lead, end: e - (value.length - value.trimEnd().length) });
    }
  }
  return spans;
}
