import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One request the site server received. */
export interface SiteRequest {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
}

export interface SiteServer {
  /** `http://127.0.0.1:<port>` */
  origin: string;
  port: number;
  url(path: string): string;
  requests: SiteRequest[];
  /** Paths requested so far, in order. */
  paths(): string[];
  /** Replaces robots.txt (`undefined` → 404, a number → that status). */
  setRobots(body: string | number | undefined): void;
  /** Adds or overrides a route; `undefined` restores the built-in one. */
  route(path: string, handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined): void;
  close(): Promise<void>;
}

const PARAGRAPH =
  "<p>The workbench fetches pages through a guarded client and turns them into Markdown that an agent can read. " +
  "Every redirect hop is checked again before a socket is opened, and the socket is pinned to the vetted address.</p>";

/** A realistic article page: navigation and scripts around the article, a code block, a table and a base64 image. */
export const ARTICLE_HTML = `<!doctype html>
<html><head><title>Guarded Fetching</title><style>body { color: red }</style><script>window.tracking = 1</script></head>
<body>
<nav><a href="/">Home</a> | <a href="/about">About</a> | Site menu entries</nav>
<article>
<h1>Guarded Fetching</h1>
${PARAGRAPH}${PARAGRAPH}${PARAGRAPH}
<pre><code>const verdict = await checkUrlSafety(url);</code></pre>
<table><tr><th>Range</th><th>Blocked</th></tr><tr><td>10.0.0.0/8</td><td>yes</td></tr></table>
<p>Inline image: <img alt="pixel" src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"></p>
<p>See the <a href="/docs/safety">safety model</a>.</p>
${PARAGRAPH}
</article>
<footer>Copyright footer text</footer>
</body></html>`;

/**
 * A local web site on 127.0.0.1 (port 0) for the fetch backend and robots.txt tests. It only
 * ever answers; redirects to other hosts are just `Location` headers the client must vet.
 */
export async function startSiteServer(): Promise<SiteServer> {
  const requests: SiteRequest[] = [];
  let robots: string | number | undefined = "User-agent: *\nDisallow: /private\n";
  const extra = new Map<string, (req: IncomingMessage, res: ServerResponse) => void>();
  let origin = "";

  const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
    "/article": (_req, res) => send(res, 200, "text/html; charset=utf-8", ARTICLE_HTML),
    "/private/page": (_req, res) => send(res, 200, "text/html", "<html><body><p>private</p></body></html>"),
    "/plain": (_req, res) => send(res, 200, "text/plain; charset=utf-8", "plain text body\nsecond line"),
    "/data.json": (_req, res) => send(res, 200, "application/json", JSON.stringify({ ok: true, items: [1, 2] })),
    "/latin1": (_req, res) => {
      res.writeHead(200, { "content-type": "text/plain; charset=iso-8859-1" });
      res.end(Buffer.from("caf\xe9", "latin1"));
    },
    "/doc.pdf": (_req, res) => send(res, 200, "application/pdf", "%PDF-1.4\n1 0 obj\n<<>>\nendobj\n"),
    "/sneaky-pdf": (_req, res) => send(res, 200, "", "%PDF-1.7\nbinary"),
    "/binary": (_req, res) => {
      res.writeHead(200, { "content-type": "application/octet-stream" });
      res.end(Buffer.from([0x00, 0x01, 0x02, 0xff]));
    },
    "/untyped-html": (_req, res) => {
      res.writeHead(200);
      res.end("<!doctype html><html><head><title>Untyped</title></head><body><p>untyped page</p></body></html>");
    },
    "/huge": (_req, res) => {
      // Chunked, no content-length: the cap must be enforced while streaming.
      res.writeHead(200, { "content-type": "text/html" });
      const block = `<p>${"x".repeat(16 * 1024)}</p>`;
      let sent = 0;
      const pump = () => {
        while (sent < 400) {
          sent++;
          if (!res.write(block)) return void res.once("drain", pump);
        }
        res.end();
      };
      res.on("close", () => (sent = Number.POSITIVE_INFINITY));
      pump();
    },
    "/huge-declared": (_req, res) => {
      res.writeHead(200, { "content-type": "text/plain", "content-length": String(10 * 1024 * 1024) });
      res.write("start");
      // Never finishes on its own; the client must give up on the declared length.
    },
    "/slow": (_req, res) => {
      const timer = setTimeout(() => send(res, 200, "text/plain", "too late"), 5_000);
      res.on("close", () => clearTimeout(timer));
    },
    "/missing": (_req, res) => send(res, 404, "text/html", "<html><body>not here</body></html>"),
    "/redirect/article": (_req, res) => redirect(res, "/article"),
    "/redirect/metadata": (_req, res) => redirect(res, "http://169.254.169.254/latest/meta-data/"),
    "/robots.txt": (_req, res) => {
      if (robots === undefined) return send(res, 404, "text/plain", "no robots");
      if (typeof robots === "number") return send(res, robots, "text/plain", "error");
      send(res, 200, "text/plain", robots);
    },
  };

  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", origin);
    requests.push({ method: req.method ?? "GET", path: url.pathname + url.search, headers: req.headers });
    const chain = /^\/redirect\/chain\/(\d+)$/.exec(url.pathname);
    if (chain) {
      const left = Number(chain[1]);
      return left === 0 ? send(res, 200, "text/plain", "end of chain") : redirect(res, `/redirect/chain/${left - 1}`);
    }
    if (url.pathname === "/redirect/to") return redirect(res, url.searchParams.get("target") ?? "/");
    const handler = extra.get(url.pathname) ?? routes[url.pathname];
    if (handler) return handler(req, res);
    send(res, 404, "text/plain", "no such page");
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  origin = `http://127.0.0.1:${port}`;

  return {
    origin,
    port,
    url: (path) => `${origin}${path}`,
    requests,
    paths: () => requests.map((r) => r.path),
    setRobots: (body) => {
      robots = body;
    },
    route: (path, handler) => void (handler ? extra.set(path, handler) : extra.delete(path)),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function send(res: ServerResponse, status: number, type: string, body: string): void {
  if (res.destroyed) return;
  res.writeHead(status, type ? { "content-type": type } : {});
  res.end(body);
}

function redirect(res: ServerResponse, location: string): void {
  res.writeHead(302, { location });
  res.end();
}
