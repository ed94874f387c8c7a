/**
 * Secret redaction for text shown to a model (read_file, search_files, patch diffs, the
 * deepagents backend).
 *
 * Secrets are replaced by a marker such as `«redacted:sk-…»`: guillemets never occur in a key,
 * so the marker cannot be mistaken for (or written back as) a real value, and write_file refuses
 * content that contains one ({@link containsRedactionMarker}).
 *
 * How: every rule reports the span of a secret *value* in the raw text (vendor token formats from
 * ./secretPatterns.ts, JWTs, PEM private keys, URL credentials, auth headers, webhook URLs,
 * command-line passwords, and `key = value` assignments whose key names a secret); the spans are
 * merged and replaced line by line, so the output has exactly the lines of the input (callers add
 * `N|` gutters afterwards). The same spans give {@link secretValues}: output *derived* from a file
 * (a diff, a "did you mean" quote, search context) is masked with the values found in the file's
 * raw content by {@link redactDerived}, so editing neighbouring text or the case of a key never
 * prints a secret that a read would have masked.
 *
 * Ordinary code stays intact: `api_key = api_key`, `MAX_TOKENS=100`, `KEYBOARD=us`, env lookups
 * (`$TOKEN`, `process.env.TOKEN`), placeholders (`<your-key>`, `${{ secrets.X }}`, `changeme`) and
 * plain words under generic keys (`runtime.token=local`, `{"token": "CPU"}`) are kept.
 * Everything here is linear in the text and never throws.
 *
 * This file is the façade: the detectors (one {@link SecretDetector} each) live in ./redact/ —
 * pem, vendors (hand list), gitleaks (generated rule set), urls, context rules, context shapes,
 * assignments — with the engine (merge and replace), derived-output masking and edit refusal.
 */
export type { RedactOptions, SecretDetector, SecretSpan } from "./redact/types.js";
export { REDACTION_MARKER_PREFIX, containsRedactionMarker, redactionMarker } from "./redact/markers.js";
export { isSecretKeyName, keyStrength } from "./redact/keyNames.js";
export { findSecrets, redactSecrets } from "./redact/engine.js";
export { changeExcerpts, maskValues, redactDerived, secretValues } from "./redact/derived.js";
export { SECRET_EDIT_REFUSAL, secretEditReason } from "./redact/edits.js";
