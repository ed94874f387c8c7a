import { readFile, stat } from "node:fs/promises";
import robotsParserModule from "robots-parser";
import { escapeRegExp } from "./regexp.js";
import { normaliseHost } from "./url.js";

/** How robots.txt is applied: ignored, a warning on the result (default), or a hard block. */
export type RobotsMode = "off" | "advise" | "enforce";

/** A robots.txt answer: the HTTP status and the body text (2xx only is parsed). */
export interface RobotsResponse {
  status: number;
  text: string;
}

/**
 * Fetches one robots.txt URL; rejects on network failure (the policy notes it and allows the
 * URL). The guard layer does no I/O itself: the web layer supplies this (`createRobotsFetcher`
 * in src/web/robots.ts, which goes through the SSRF-safe client).
 */
export type RobotsFetcher = (robotsUrl: string) => Promise<RobotsResponse>;

/** Options of {@link WebsitePolicy}. */
export interface WebsitePolicyOptions {
  /**
   * Hosts never fetched. `domains`: rules such as `example.com` (that host and `www.`) or
   * `*.example.com` (the domain and every subdomain); `files`: paths of files with one rule per
   * line and `#` comments, re-read when their mtime changes.
   */
  blocklist?: { domains?: string[]; files?: string[] };
  /** robots.txt handling. Default `"advise"`. */
  respectRobots?: RobotsMode;
  /** How long a fetched robots.txt is trusted, per origin. Default 1 hour. */
  robotsTtlMs?: number;
  /** Product token matched against robots.txt groups. Default `langgraph-workbench`. */
  userAgent?: string;
  /** How robots.txt files are fetched; required unless `respectRobots` is `"off"`. */
  fetchRobots?: RobotsFetcher;
  /**
   * Check robots.txt also when a vendor backend (Tavily, Exa, Firecrawl, Parallel) does the
   * fetching. Default `false`: robots.txt is then the vendor's business, and no request goes
   * from this process to the target site; only the keyless `fetch` backend checks it.
   */
  robotsForVendors?: boolean;
}

/** Which rule blocked a URL, and where the rule came from (`options`, `<file>:<line>` or a robots.txt URL). */
export interface PolicyBlock {
  host: string;
  rule: string;
  source: string;
}

export interface PolicyDecision {
  allowed: boolean;
  blocked_by_policy?: PolicyBlock;
  /** Advice that does not block: robots.txt disallows (advise mode), unreadable blocklist files, robots fetch failures. */
  warning?: string;
}

/** The parts of a parsed robots.txt this module uses. */
interface RobotsRules {
  isDisallowed(url: string, userAgent?: string): boolean | undefined;
  getMatchingLineNumber(url: string, userAgent?: string): number;
}

// robots-parser is CommonJS (`module.exports = fn`) while its typings declare a default export.
const robotsParser = robotsParserModule as unknown as (url: string, contents: string) => RobotsRules;

interface Rule {
  pattern: string;
  source: string;
  matches(host: string): boolean;
}

interface CachedFile {
  mtimeMs: number;
  rules: Rule[];
}

interface RobotsEntry {
  expires: number;
  robots?: RobotsRules;
  /** robots.txt lines, to quote the matching rule. */
  lines?: string[];
  robotsUrl: string;
  note?: string;
}

/** Matched against robots.txt groups when no `userAgent` is given (the workbench UA's product token). */
const DEFAULT_ROBOTS_PRODUCT = "langgraph-workbench";
const ROBOTS_CACHE_MAX_ORIGINS = 1_000;
/** Failed robots.txt fetches are retried sooner than good ones are refreshed. */
const ROBOTS_FAILURE_TTL_MS = 60_000;
const DEFAULT_ROBOTS_TTL_MS = 60 * 60 * 1000;

/**
 * The user's website policy: a domain blocklist (hard block) and robots.txt (advisory by default,
 * enforceable). `check` never throws; apply it to every URL and every redirect hop.
 */
export class WebsitePolicy {
  private readonly optionRules: Rule[];
  private readonly files: string[];
  private readonly fileCache = new Map<string, CachedFile>();
  private readonly robotsCache = new Map<string, Promise<RobotsEntry>>();
  private readonly mode: RobotsMode;
  private readonly robotsTtlMs: number;
  private readonly userAgent: string;
  private readonly fetchRobotsTxt?: RobotsFetcher;
  /** See {@link WebsitePolicyOptions.robotsForVendors}. */
  readonly robotsForVendors: boolean;

  constructor(opts: WebsitePolicyOptions = {}) {
    const mode = opts.respectRobots ?? "advise";
    if (!["off", "advise", "enforce"].includes(mode)) {
      throw new TypeError(`respectRobots must be "off", "advise" or "enforce", got ${String(mode)}`);
    }
    if (opts.robotsTtlMs !== undefined && !(opts.robotsTtlMs >= 0)) throw new RangeError("robotsTtlMs must be >= 0");
    if (mode !== "off" && typeof opts.fetchRobots !== "function") {
      throw new TypeError('fetchRobots is required unless respectRobots is "off" (createWebsitePolicy from langgraph-workbench/web supplies one)');
    }
    this.mode = mode;
    this.robotsTtlMs = opts.robotsTtlMs ?? DEFAULT_ROBOTS_TTL_MS;
    this.userAgent = opts.userAgent ?? DEFAULT_ROBOTS_PRODUCT;
    this.fetchRobotsTxt = opts.fetchRobots;
    this.robotsForVendors = opts.robotsForVendors === true;
    this.optionRules = (opts.blocklist?.domains ?? []).flatMap((text) => compileRule(text, "options") ?? []);
    this.files = opts.blocklist?.files ?? [];
  }

  /**
   * Blocklist first (hard), then robots.txt per the mode. `robots: false` skips robots.txt (a
   * vendor backend fetches the page, see {@link WebsitePolicyOptions.robotsForVendors}).
   */
  async check(url: string, options: { robots?: boolean } = {}): Promise<PolicyDecision> {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return { allowed: true, warning: "not a valid URL; the website policy was not applied" };
    }
    const host = stripWww(normaliseHost(parsed.hostname));
    const warnings: string[] = [];
    const rules = [...this.optionRules, ...(await this.fileRules(warnings))];
    const hit = rules.find((rule) => rule.matches(host));
    if (hit) return { allowed: false, blocked_by_policy: { host, rule: hit.pattern, source: hit.source } };

    if (this.mode !== "off" && options.robots !== false && (parsed.protocol === "http:" || parsed.protocol === "https:")) {
      const decision = await this.checkRobots(parsed, host, warnings);
      if (decision) return decision;
    }
    return warnings.length ? { allowed: true, warning: warnings.join("; ") } : { allowed: true };
  }

  private async checkRobots(url: URL, host: string, warnings: string[]): Promise<PolicyDecision | undefined> {
    const entry = await this.robotsFor(url.origin);
    if (entry.note) warnings.push(entry.note);
    if (!entry.robots || !entry.robots.isDisallowed(url.toString(), this.productToken())) return undefined;
    const line = entry.robots.getMatchingLineNumber(url.toString(), this.productToken());
    const quoted = entry.lines?.[line - 1]?.trim();
    const rule = quoted ? `${quoted} (robots.txt line ${line})` : `robots.txt line ${line}`;
    const block: PolicyBlock = { host, rule, source: entry.robotsUrl };
    if (this.mode === "enforce") return { allowed: false, blocked_by_policy: block };
    warnings.push(`robots.txt at ${entry.robotsUrl} disallows this URL for ${this.productToken()} (${rule}); fetched anyway (advisory mode)`);
    return undefined;
  }

  /** The product token robots.txt groups are matched against (`langgraph-workbench` for the default UA). */
  private productToken(): string {
    return this.userAgent.split(/[\s/]/)[0] || this.userAgent;
  }

  private robotsFor(origin: string): Promise<RobotsEntry> {
    const cached = this.robotsCache.get(origin);
    // Sharing the in-flight promise means concurrent checks of one site fetch robots.txt once.
    if (cached) {
      return cached.then((entry) => (entry.expires > Date.now() ? entry : this.refreshRobots(origin)));
    }
    return this.refreshRobots(origin);
  }

  private refreshRobots(origin: string): Promise<RobotsEntry> {
    const promise = this.fetchRobots(origin);
    this.robotsCache.delete(origin);
    // Maps iterate in insertion order, so the first key is the least recently fetched origin.
    if (this.robotsCache.size >= ROBOTS_CACHE_MAX_ORIGINS) this.robotsCache.delete(this.robotsCache.keys().next().value!);
    this.robotsCache.set(origin, promise);
    return promise;
  }

  private async fetchRobots(origin: string): Promise<RobotsEntry> {
    const robotsUrl = `${origin}/robots.txt`;
    const expires = Date.now() + this.robotsTtlMs;
    const failureExpires = Date.now() + Math.min(this.robotsTtlMs, ROBOTS_FAILURE_TTL_MS);
    try {
      const response = await this.fetchRobotsTxt!(robotsUrl);
      // Rules from a redirected robots.txt apply to the origin that was asked (as crawlers do).
      if (response.status >= 200 && response.status < 300) {
        const text = response.text;
        return { expires, robotsUrl, robots: robotsParser(robotsUrl, text), lines: text.split(/\r?\n/) };
      }
      // 4xx means "no robots.txt" (everything allowed); 5xx is a server problem we note.
      if (response.status >= 400 && response.status < 500) return { expires, robotsUrl };
      return {
        expires: failureExpires,
        robotsUrl,
        note: `robots.txt at ${robotsUrl} answered HTTP ${response.status}; treated as allowed`,
      };
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      return {
        expires: failureExpires,
        robotsUrl,
        note: `robots.txt at ${robotsUrl} could not be fetched (${reason}); treated as allowed`,
      };
    }
  }

  private async fileRules(warnings: string[]): Promise<Rule[]> {
    const all = await Promise.all(this.files.map((file) => this.loadFile(file, warnings)));
    return all.flat();
  }

  private async loadFile(file: string, warnings: string[]): Promise<Rule[]> {
    try {
      const { mtimeMs } = await stat(file);
      const cached = this.fileCache.get(file);
      if (cached && cached.mtimeMs === mtimeMs) return cached.rules;
      const text = await readFile(file, "utf8");
      const rules = text.split(/\r?\n/).flatMap((line, index) => compileRule(line, `${file}:${index + 1}`) ?? []);
      this.fileCache.set(file, { mtimeMs, rules });
      return rules;
    } catch (error) {
      const code = (error as { code?: unknown })?.code;
      warnings.push(`blocklist file ${file} could not be read (${typeof code === "string" ? code : String(error)}); its rules were not applied`);
      return this.fileCache.get(file)?.rules ?? [];
    }
  }
}

/** Compiles one blocklist line; comments, blanks and unparsable lines yield nothing. */
function compileRule(line: string, source: string): Rule | undefined {
  const text = line.replace(/#.*$/, "").trim().toLowerCase();
  if (!text) return undefined;
  const host = stripWww(normaliseHost(ruleHost(text)));
  if (!host) return undefined;
  if (host.startsWith("*.")) {
    const base = host.slice(2);
    return { pattern: text, source, matches: (h) => h === base || h.endsWith(`.${base}`) };
  }
  if (host.includes("*")) {
    const regex = new RegExp(`^${host.split("*").map(escapeRegExp).join("[^.]*")}$`);
    return { pattern: text, source, matches: (h) => regex.test(h) };
  }
  return { pattern: text, source, matches: (h) => h === host };
}

/** The host part of a rule written as a host, `host:port` or a whole URL. */
function ruleHost(text: string): string {
  if (text.includes("://")) {
    try {
      return new URL(text.replace("*.", "wildcard-label.")).hostname.replace("wildcard-label.", "*.");
    } catch {
      return "";
    }
  }
  const withoutPath = text.split("/")[0]!;
  if (withoutPath.startsWith("[")) return withoutPath.slice(0, withoutPath.indexOf("]") + 1);
  return withoutPath.split(":").length === 2 ? withoutPath.split(":")[0]! : withoutPath;
}

function stripWww(host: string): string {
  return host.startsWith("www.") ? host.slice(4) : host;
}

