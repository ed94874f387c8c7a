/**
 * robots.txt fetching for the website policy. The policy (src/guards/policy.ts) only decides;
 * the request itself lives here, on the same SSRF-safe client (`safeFetch`) the keyless fetch
 * backend uses: same URL-safety options, same user agent, no proxy. Checking robots.txt means
 * contacting each target origin from this process (see README "Web egress").
 */
import { WebsitePolicy, type RobotsFetcher, type WebsitePolicyOptions } from "../guards/policy.js";
import type { UrlSafetyOptions } from "../guards/url.js";
import { safeFetch, WORKBENCH_USER_AGENT } from "./safeFetch.js";

const ROBOTS_MAX_BYTES = 512 * 1024;
const DEFAULT_ROBOTS_TIMEOUT_MS = 5_000;

/** Options of {@link createRobotsFetcher}. */
export interface RobotsFetcherOptions {
  /** URL-safety options for robots.txt requests (the ones every other URL gets). */
  urlSafety?: UrlSafetyOptions;
  /** Deadline of one robots.txt fetch, in ms. Default 5 s. */
  timeoutMs?: number;
  /** `User-Agent` sent. Default the workbench UA. */
  userAgent?: string;
}

/** A {@link RobotsFetcher} over `safeFetch` (every hop vetted, body capped at 512 KiB). */
export function createRobotsFetcher(options: RobotsFetcherOptions = {}): RobotsFetcher {
  return async (robotsUrl) => {
    const response = await safeFetch(robotsUrl, {
      maxBytes: ROBOTS_MAX_BYTES,
      timeoutMs: options.timeoutMs ?? DEFAULT_ROBOTS_TIMEOUT_MS,
      userAgent: options.userAgent ?? WORKBENCH_USER_AGENT,
      urlSafety: options.urlSafety,
      headers: { accept: "text/plain" },
    });
    return { status: response.status, text: response.body.toString("utf8") };
  };
}

/**
 * Options of {@link createWebsitePolicy}: the policy's own, plus how robots.txt is fetched
 * (`fetchRobots` wins over `urlSafety` / `robotsTimeoutMs`).
 */
export interface WebPolicyOptions extends WebsitePolicyOptions {
  /** URL-safety options for robots.txt fetches (the web tools pass their own). */
  urlSafety?: UrlSafetyOptions;
  /** Deadline of one robots.txt fetch, in ms. Default 5 s. */
  robotsTimeoutMs?: number;
}

/** A {@link WebsitePolicy} whose robots.txt checks go through {@link createRobotsFetcher}. */
export function createWebsitePolicy(options: WebPolicyOptions = {}): WebsitePolicy {
  const { urlSafety, robotsTimeoutMs, ...policy } = options;
  const fetchRobots =
    policy.fetchRobots ??
    (policy.respectRobots === "off" ? undefined : createRobotsFetcher({ urlSafety, timeoutMs: robotsTimeoutMs, userAgent: policy.userAgent }));
  return new WebsitePolicy({ ...policy, ...(fetchRobots ? { fetchRobots } : {}) });
}
