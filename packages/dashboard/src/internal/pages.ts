// The pages other than the live one: a dead letter with its payload, an action's confirmation, its outcome, and
// not found. Every one is a full document with a link back.
import type { DeadLetters, Tenants } from "@whizbang/cli"
import type { Described } from "./actions.js"
import { age, count, time } from "./format.js"
import { type Html, html } from "./html.js"

export const deadLetter = (d: DeadLetters.Detail, base: string): Html =>
  html`<section id="dead-letter"><h2>Dead letter</h2><table>
<tr><th>letter</th><td class="id">${d.id}</td></tr><tr><th>perspective</th><td>${d.perspective}</td></tr>
<tr><th>stream</th><td class="id">${d.streamId}</td></tr><tr><th>event</th><td class="id">${d.eventId} (${d.eventType})</td></tr>
<tr><th>attempts</th><td>${d.attempts}</td></tr><tr><th>dead-lettered at</th><td>${d.createdAt === null ? "-" : time(d.createdAt)}</td></tr></table>
<h2>Error</h2><pre id="error">${d.error}</pre><h2>Payload</h2><pre id="payload">${JSON.stringify(d.payload, null, 2)}</pre>
<p><a class="act" href="${base}/dead-letters/${d.id}/retry">retry…</a><a class="act" href="${base}/dead-letters/${d.id}/discard">discard…</a>
<a href="${base}/">back to the overview</a></p></section>`

export const confirm = (described: Described, actionsAllowed: boolean, path: string, base: string): Html =>
  html`<section id="confirm"><h2>Confirm: ${described.what}</h2><p id="explanation">${described.explanation}</p>${
    actionsAllowed
      ? html`<form class="confirm" method="post" action="${path}"><input type="hidden" name="confirm" value="yes">
<label>token <input type="password" name="token" autocomplete="off"></label><button type="submit">${described.button}</button>
<a href="${base}/">cancel</a></form>`
      : html`<p class="bad">This page is read-only: it was started without --allow-actions, so nothing can be changed from it.</p><p><a href="${base}/">back</a></p>`
  }</section>`

export const outcome = (title: string, message: string, ok: boolean, base: string): Html =>
  html`<section id="outcome" data-ok="${ok ? "yes" : "no"}"><h2>${title}</h2><p class="${ok ? "" : "bad"}" id="message">${message}</p><p><a href="${base}/">back to the overview</a></p></section>`

export const notFound = (message: string, base: string): Html =>
  html`<section id="not-found"><h2>Not found</h2><p id="message">${message}</p><p><a href="${base}/">back to the overview</a></p></section>`

/** Every tenant's health: the worst first (bounded), and totals over all of them. */
export const tenants = (o: Tenants.Overview, base: string): Html =>
  html`<section id="tenants"><h2>Tenants <span class="n">${count(o.tenants)}</span></h2>
<p id="totals">${count(o.active)} active${o.inTransition === 0 ? "" : `, ${count(o.inTransition)} being added or removed`}${
    o.unreadable === 0 ? "" : html`, <span class="bad">${count(o.unreadable)} unreadable</span>`
  } — ${count(o.totals.pending)} pending in ${count(o.totals.lagging)} tenant(s), max lag ${age(o.totals.maxLagSeconds)}, ${count(o.totals.deadLetters)} dead letter(s)${
    o.shown.length < o.tenants ? ` — the worst ${count(o.shown.length)} by lag below` : ""
  }</p>
<table><thead><tr><th>tenant</th><th>schema</th><th>state</th><th class="num">pending</th><th class="num">lag</th><th class="num">dead letters</th><th>migrated</th></tr></thead><tbody>${o.shown.map(
    (t) =>
      html`<tr data-tenant="${t.id}"><td>${t.id}</td><td class="id">${t.schema}</td><td>${t.state}</td>${
        t.error !== null
          ? html`<td class="wrap bad" colspan="3">unreadable: ${t.error}</td>`
          : html`<td class="num">${t.pending === null ? "-" : count(t.pending)}</td><td class="num">${t.pending ? age(t.lagSeconds) : "-"}</td><td class="num${
              (t.deadLetters ?? 0) > 0 ? " bad" : ""
            }">${t.deadLetters === null ? "-" : count(t.deadLetters)}</td>`
      }<td>${t.migratedAt === null ? "-" : time(t.migratedAt)}</td></tr>`
  )}</tbody></table>
<p class="muted">Open one tenant's page with <code>whizbang dashboard --tenant &lt;id&gt;</code>. <a href="${base}/">back to the overview</a></p></section>`
