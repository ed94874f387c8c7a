/**
 * Every ```ts block of README.md, docs/api.md and docs/deployment.md type-checks against the
 * package's sources under `strict` + `exactOptionalPropertyTypes` (what TS 5.9's `tsc --init`
 * turns on): one `ts.createProgram` over all snippets, held in memory (nothing is written).
 * `langgraph-workbench` and its subpath entry points map to the sources, as a user's import of
 * the built package would resolve them.
 *
 * Snippets are often fragments: a name a fragment uses without declaring it gets a declaration
 * from {@link FREE_NAMES} (the reader's own values: a model, a config, a tool…) or an import
 * from {@link PACKAGE_NAMES} (the package's API, from the entry point that exports it). An import
 * a block writes is checked as written.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const DOCS = ["README.md", "docs/api.md", "docs/deployment.md"];

/** Values a fragment may use without declaring them: the reader's own, typed as the docs mean them. */
const FREE_NAMES: Record<string, string> = {
  model: `declare const model: import("@langchain/core/language_models/chat_models").BaseChatModel;`,
  checkpointer: `declare const checkpointer: import("@langchain/langgraph").BaseCheckpointSaver;`,
  config: `declare const config: { configurable: { thread_id: string } };`,
  thread_id: `declare const thread_id: string;`,
  threadId: `declare const threadId: string;`,
  input: `declare const input: { messages: Array<{ role: "user"; content: string }> };`,
  task: `declare const task: { role: "user"; content: string };`,
  myTool: `declare const myTool: import("@langchain/core/tools").StructuredTool;`,
  myMiddleware: `declare const myMiddleware: import("langchain").AgentMiddleware;`,
  file: `declare const file: { bytes(): Promise<Uint8Array> };`,
  privateKey: `declare const privateKey: string;`,
  hostKey: `declare const hostKey: string;`,
  sshOptions: `declare const sshOptions: import("langgraph-workbench").SshEnvironmentOptions;`,
  hostFor: `declare function hostFor(threadId: string): string;`,
  askReviewer: `declare function askReviewer(diff: string, files: unknown, interrupt: unknown): Promise<boolean>;`,
  wb: `declare const wb: import("langgraph-workbench").Workbench;`,
  agent: `declare const agent: ReturnType<typeof import("langchain").createAgent>;`,
};

/** Package names a fragment may use without importing them, and the entry point exporting each. */
const PACKAGE_NAMES: Record<string, string> = {
  createWorkbench: "langgraph-workbench",
  DockerSandbox: "langgraph-workbench",
  LocalEnvironment: "langgraph-workbench",
  SshEnvironment: "langgraph-workbench",
  isDangerousCommand: "langgraph-workbench",
  snapshotIdOf: "langgraph-workbench",
  SandboxEnvironment: "langgraph-workbench/environment",
  removeSandboxContainers: "langgraph-workbench/environment",
  WorkbenchBackend: "langgraph-workbench/deepagents",
  createFileManagerMiddleware: "langgraph-workbench/middleware",
  createBasicTools: "langgraph-workbench/tools",
  MemorySaver: "@langchain/langgraph",
  createAgent: "langchain",
  humanInTheLoopMiddleware: "langchain",
  Command: "@langchain/langgraph",
};

/** Modules the docs show that are not installed here, declared with the shape the docs rely on. */
const AMBIENT = `
declare module "@langchain/modal" {
  export class ModalSandbox implements import("deepagents").SandboxBackendProtocol {
    static create(options: { imageName: string }): Promise<ModalSandbox>;
    readonly id: string;
    execute(command: string): Promise<import("deepagents").ExecuteResponse>;
    uploadFiles(files: Array<[string, Uint8Array]>): Promise<import("deepagents").FileUploadResponse[]>;
    downloadFiles(paths: string[]): Promise<import("deepagents").FileDownloadResponse[]>;
    ls(path: string): ReturnType<import("deepagents").SandboxBackendProtocol["ls"]>;
    read: import("deepagents").SandboxBackendProtocol["read"];
    write: import("deepagents").SandboxBackendProtocol["write"];
    edit: import("deepagents").SandboxBackendProtocol["edit"];
    grep: import("deepagents").SandboxBackendProtocol["grep"];
    glob: import("deepagents").SandboxBackendProtocol["glob"];
    close(): Promise<void>;
  }
}
`;

interface Snippet {
  doc: string;
  line: number;
  code: string;
}

function snippets(): Snippet[] {
  const out: Snippet[] = [];
  for (const doc of DOCS) {
    const lines = readFileSync(path.join(repo, doc), "utf8").split("\n");
    for (let i = 0; i < lines.length; i++) {
      if (lines[i]!.trim() !== "```ts") continue;
      const start = i + 1;
      // The generated reference of docs/api.md shows each export's signature in a ts block under
      // its `*kind* · from …` line: a declaration, not code to run.
      const previous = lines.slice(0, i).reverse().find((l) => l.trim() !== "");
      const signature = previous !== undefined && /^\*(class|function|interface|type|const|enum|variable)\* · /.test(previous);
      const body: string[] = [];
      for (i++; i < lines.length && !lines[i]!.trim().startsWith("```"); i++) body.push(lines[i]!);
      if (!signature) out.push({ doc, line: start, code: body.join("\n") });
    }
  }
  return out;
}

/** Names the snippet declares or imports at top level. */
function declaredNames(source: ts.SourceFile): Set<string> {
  const names = new Set<string>();
  const bind = (name: ts.BindingName) => {
    if (ts.isIdentifier(name)) names.add(name.text);
    else for (const el of name.elements) if (!ts.isOmittedExpression(el)) bind(el.name);
  };
  for (const st of source.statements) {
    if (ts.isImportDeclaration(st)) {
      const clause = st.importClause;
      if (clause?.name) names.add(clause.name.text);
      const bindings = clause?.namedBindings;
      if (bindings && ts.isNamespaceImport(bindings)) names.add(bindings.name.text);
      if (bindings && ts.isNamedImports(bindings)) for (const el of bindings.elements) names.add(el.name.text);
    } else if (ts.isVariableStatement(st)) {
      for (const d of st.declarationList.declarations) bind(d.name);
    } else if ((ts.isFunctionDeclaration(st) || ts.isClassDeclaration(st)) && st.name) {
      names.add(st.name.text);
    }
  }
  return names;
}

function usedIdentifiers(source: ts.SourceFile): Set<string> {
  const used = new Set<string>();
  const visit = (node: ts.Node) => {
    if (ts.isIdentifier(node)) used.add(node.text);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return used;
}

/** The snippet as a module, with the declarations and imports its free names need. */
function withPrelude(code: string): string {
  const source = ts.createSourceFile("s.ts", code, ts.ScriptTarget.ES2022, true);
  const declared = declaredNames(source);
  const used = usedIdentifiers(source);
  const prelude: string[] = [];
  const imports = new Map<string, string[]>();
  for (const name of used) {
    if (declared.has(name)) continue;
    if (FREE_NAMES[name]) prelude.push(FREE_NAMES[name]);
    else if (PACKAGE_NAMES[name]) {
      const from = PACKAGE_NAMES[name];
      imports.set(from, [...(imports.get(from) ?? []), name]);
    }
  }
  for (const [from, names] of imports) prelude.push(`import { ${names.join(", ")} } from "${from}";`);
  // A snippet with a top-level `return` is the body of a handler.
  const body = source.statements.some(ts.isReturnStatement) ? `export async function handler() {\n${code}\n}` : code;
  return `${prelude.join("\n")}\n${body}\nexport {};\n`;
}

test("every ts snippet in README.md and docs/*.md type-checks (strict, exactOptionalPropertyTypes)", () => {
  const all = snippets();
  assert.ok(all.length > 10, "snippets were found");
  const dir = path.join(repo, "tests", ".snippets");
  const files = new Map<string, { snippet: Snippet; text: string; preludeLines: number }>();
  all.forEach((snippet, i) => {
    const text = withPrelude(snippet.code);
    const preludeLines = text.split("\n").length - snippet.code.split("\n").length - 2;
    files.set(path.join(dir, `snippet-${i}.ts`), { snippet, text, preludeLines });
  });
  const ambient = path.join(dir, "ambient.d.ts");

  const configFile = ts.readConfigFile(path.join(repo, "tsconfig.json"), ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(configFile.config, ts.sys, repo);
  const options: ts.CompilerOptions = {
    ...parsed.options,
    strict: true,
    exactOptionalPropertyTypes: true,
    noEmit: true,
    baseUrl: repo,
    paths: {
      "langgraph-workbench": ["src/index.ts"],
      "langgraph-workbench/middleware": ["middleware/index.ts"],
      "langgraph-workbench/tools": ["tools/index.ts"],
      "langgraph-workbench/environment": ["src/environment/index.ts"],
      "langgraph-workbench/web": ["src/web/index.ts"],
      "langgraph-workbench/deepagents": ["src/deepagents/index.ts"],
    },
  };
  // Snippets calling one of langchain's built-in middleware factories are checked without
  // exactOptionalPropertyTypes: langchain 1.5 types their parameter `never` under it (see below).
  const loose = new Set([...files].filter(([, e]) => LANGCHAIN_NEVER.test(e.snippet.code)).map(([f]) => f));
  const problems = [
    ...check([...files.keys()].filter((f) => !loose.has(f)), options),
    ...check([...loose], { ...options, exactOptionalPropertyTypes: false }),
  ];

  function check(rootNames: string[], opts: ts.CompilerOptions): string[] {
    if (rootNames.length === 0) return [];
    const host = ts.createCompilerHost(opts);
    const virtual = (f: string) => (f === ambient ? AMBIENT : files.get(f)?.text);
    const { getSourceFile, fileExists, readFile } = host;
    host.getSourceFile = (f, lang, onError, create) => {
      const text = virtual(f);
      return text !== undefined ? ts.createSourceFile(f, text, lang) : getSourceFile.call(host, f, lang, onError, create);
    };
    host.fileExists = (f) => virtual(f) !== undefined || fileExists.call(host, f);
    host.readFile = (f) => virtual(f) ?? readFile.call(host, f);
    const program = ts.createProgram({ rootNames: [ambient, ...rootNames], options: opts, host });
    const out: string[] = [];
    for (const d of ts.getPreEmitDiagnostics(program)) {
      const entry = d.file ? files.get(d.file.fileName) : undefined;
      if (!entry) continue; // errors in the package's own sources are tsc's business, not the docs'
      const { line } = d.file!.getLineAndCharacterOfPosition(d.start ?? 0);
      const docLine = entry.snippet.line + line - entry.preludeLines + 1;
      out.push(`${entry.snippet.doc}:${docLine}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n  ")}`);
    }
    return out;
  }
  assert.deepEqual(problems, [], `${problems.length} problems in doc snippets:\n${problems.join("\n")}`);
});

/**
 * langchain 1.5's built-in middleware factories (`humanInTheLoopMiddleware`, …) take a parameter
 * typed `never` under `exactOptionalPropertyTypes` (their zod-derived option types): any call
 * fails there, in the user's code as here. Not a docs mistake, so the snippets that call them are
 * checked under `strict` alone; every other snippet under both.
 */
const LANGCHAIN_NEVER = /\b(humanInTheLoopMiddleware|summarizationMiddleware|toolCallLimitMiddleware|modelCallLimitMiddleware|contextEditingMiddleware)\(/;
