/**
 * The frame every page shares: navigation, where the data comes from, and a `<main id="live">`
 * that the client script (static/dashboard.js) refreshes every 2 s when the page is live. No
 * inline script or style: the Content-Security-Policy (server.ts) allows only /static files.
 */
import { html, type Html } from "./html.ts";

export interface PageParts {
  readonly title: string;
  readonly where: string;
  readonly main: Html;
  /** Refresh `main` every 2 s (the list, job, session, agents and deployments pages). */
  readonly live: boolean;
  /** Below `main`, not refreshed (the log tails, which follow on their own). */
  readonly below?: Html;
}

export const REFRESH_MS = 2000;

export function page(parts: PageParts): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${parts.title} · Cairn</title>
<link rel="stylesheet" href="/static/dashboard.css">
<script src="/static/dashboard.js" defer></script>
</head>
<body${parts.live ? html` data-refresh-ms="${REFRESH_MS}"` : ""}>
<header>
<a class="brand" href="/">Cairn</a>
<a href="/">Sessions</a>
<a href="/deployments">Deployments</a>
<a href="/agents">Agents</a>
<a href="/queues">Queues &amp; retry policies</a>
<span class="where">${parts.where}</span>
</header>
<main id="live">
${parts.main}
</main>
${parts.below ?? ""}
</body>
</html>
`;
}

/** A page's main part alone: what the live refresh fetches (header `X-Cairn-Fragment: main`). */
export function fragment(parts: PageParts): Html {
  return parts.main;
}
