// The document around every page: modest CSS inline, and on the live page a small script that opens the event
// stream and swaps the server-rendered body in. No external file, font or CDN; the CSP allows only this script
// (by nonce), inline styles, and connections back to this server.
import { randomBytes } from "node:crypto"
import { type Html, html, raw } from "./html.js"

const css = `
:root { color-scheme: light; --fg:#1d2330; --muted:#5b6475; --line:#dfe3ea; --bg:#f6f7f9; --ok:#1f7a3d; --warn:#9a6200; --bad:#b3261e; --info:#1f5fa8; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif; color:var(--fg); background:var(--bg); }
header { display:flex; gap:16px; align-items:baseline; padding:12px 24px; background:#fff; border-bottom:1px solid var(--line); }
header h1 { font-size:17px; margin:0; }
header .meta { color:var(--muted); font-size:13px; }
header .mode { margin-left:auto; font-size:12px; padding:2px 8px; border-radius:10px; border:1px solid var(--line); }
main { padding:16px 24px 40px; max-width:1400px; }
section { background:#fff; border:1px solid var(--line); border-radius:6px; margin:0 0 16px; padding:10px 14px 12px; }
h2 { font-size:14px; margin:0 0 8px; text-transform:uppercase; letter-spacing:.04em; color:var(--muted); }
h2 .n { color:var(--fg); }
table { border-collapse:collapse; width:100%; }
th, td { text-align:left; padding:5px 10px 5px 0; border-bottom:1px solid var(--line); vertical-align:middle; white-space:nowrap; }
th { font-weight:600; font-size:12px; color:var(--muted); }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; }
td.wrap { white-space:normal; max-width:520px; overflow-wrap:anywhere; }
tr:last-child td { border-bottom:0; }
code, pre, .id { font-family:ui-monospace,SFMono-Regular,Menlo,monospace; font-size:12px; }
pre { background:var(--bg); border:1px solid var(--line); border-radius:4px; padding:8px; white-space:pre-wrap; overflow-wrap:anywhere; }
.empty { color:var(--muted); font-style:italic; }
.badge { display:inline-block; padding:1px 8px; border-radius:10px; font-size:12px; border:1px solid currentColor; }
.s-live, .s-done { color:var(--ok); } .s-building, .s-ready { color:var(--info); } .s-retiring, .s-refused { color:var(--warn); }
.s-retired { color:var(--muted); } .s-failed, .bad { color:var(--bad); }
.bar { display:inline-block; width:90px; height:8px; background:var(--line); border-radius:4px; vertical-align:middle; margin-right:6px; overflow:hidden; }
.bar > span { display:block; height:100%; background:var(--info); }
.spark { color:var(--info); vertical-align:middle; }
.banner { background:#fdecea; color:var(--bad); border:1px solid #f3c4bf; border-radius:6px; padding:10px 14px; margin:0 0 16px; font-weight:600; }
.muted { color:var(--muted); }
a { color:var(--info); text-decoration:none; } a:hover { text-decoration:underline; }
a.act { font-size:12px; margin-right:8px; }
form.confirm { margin-top:12px; display:flex; gap:10px; align-items:center; }
input[type=password] { padding:5px 8px; border:1px solid var(--line); border-radius:4px; width:320px; }
button { padding:5px 14px; border-radius:4px; border:1px solid var(--info); background:var(--info); color:#fff; cursor:pointer; }
.grid { display:grid; grid-template-columns:1fr 1fr; gap:16px; margin:0 0 16px; } .grid > section { margin:0; }
`

const script = (basePath: string) => `
(function () {
  var live = document.getElementById("live");
  var link = document.getElementById("link");
  var source = new EventSource(${JSON.stringify(`${basePath}/events`).replace(/</g, "\\u003c")});
  source.addEventListener("update", function (event) {
    var data = JSON.parse(event.data);
    live.innerHTML = data.body;
    live.setAttribute("data-revision", String(data.revision));
    link.textContent = "live";
  });
  source.onerror = function () { link.textContent = "reconnecting to the dashboard…"; };
})();
`

export const nonce = (): string => randomBytes(16).toString("base64")

export const contentSecurityPolicy = (n: string): string =>
  `default-src 'none'; script-src 'nonce-${n}'; style-src 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'`

export interface Frame {
  readonly title: string
  readonly basePath: string
  readonly schema: string
  readonly actionsAllowed: boolean
  /** Link the tenants page from the header. */
  readonly tenantsPage: boolean
  readonly nonce: string
}

export const document = (frame: Frame, body: Html, options: { readonly live: boolean }): string =>
  html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${frame.title}</title><style>${raw(css)}</style></head>
<body><header><h1><a href="${frame.basePath}/">whizbang</a></h1><span class="meta">schema <b>${frame.schema}</b></span>${frame.tenantsPage ? html`<a class="meta" href="${frame.basePath}/tenants">tenants</a>` : ""}
<span class="meta" id="link">${options.live ? "connecting…" : ""}</span>
<span class="mode">${frame.actionsAllowed ? "actions allowed (token)" : "read-only"}</span></header>
<main>${options.live ? html`<div id="live" data-revision="0">${body}</div>` : body}</main>
${options.live ? html`<script nonce="${frame.nonce}">${raw(script(frame.basePath))}</script>` : ""}
</body></html>`.value
