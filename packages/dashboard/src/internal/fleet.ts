// Instances (heartbeat, what each runs), stream locks, and the actions taken from this page.
import type { PgStatus } from "@whizbang/postgres"
import type * as ActionLog from "./actionLog.js"
import { age, time } from "./format.js"
import { type Html, html } from "./html.js"

export const instances = (rows: ReadonlyArray<PgStatus.Instance>, deadAfterSeconds: number): Html =>
  html`<section id="instances"><h2>Instances <span class="n">${rows.length}</span></h2>${
    rows.length === 0
      ? html`<p class="empty">No instance is registered.</p>`
      : html`<table><thead><tr><th>instance</th><th>service</th><th>host / pid</th><th class="num">heartbeat</th><th>runs</th></tr></thead><tbody>${rows.map(
          (
            i
          ) => html`<tr><td class="id" title="${i.instanceId}">${i.instanceId.slice(0, 8)}…</td><td>${i.serviceName}</td><td>${i.hostName} / ${i.processId}</td>
<td class="num${i.heartbeatAgeSeconds >= deadAfterSeconds ? " bad" : ""}">${age(i.heartbeatAgeSeconds)} ago</td>
<td class="wrap">${i.perspectives === null ? html`<span class="muted">every perspective</span>` : i.perspectives.join(", ")}</td></tr>`
        )}</tbody></table>`
  }</section>`

export const locks = (rows: ReadonlyArray<PgStatus.Lock>): Html =>
  html`<section id="locks"><h2>Stream locks <span class="n">${rows.length}</span></h2>${
    rows.length === 0
      ? html`<p class="empty">No stream is locked.</p>`
      : html`<table><thead><tr><th>stream</th><th>perspective</th><th>holder</th><th>reason</th><th>expires</th></tr></thead><tbody>${rows.map(
          (
            l
          ) => html`<tr><td class="id" title="${l.streamId}">${l.streamId.slice(0, 8)}…</td><td>${l.perspective}</td><td class="id">${l.instanceId.slice(0, 8)}…</td>
<td>${l.reason ?? "-"}</td><td>${l.expiresAt === null ? "never" : time(l.expiresAt)}${l.expired ? html` <span class="bad">(expired)</span>` : ""}</td></tr>`
        )}</tbody></table>`
  }</section>`

export const actions = (rows: ReadonlyArray<ActionLog.Entry>, allowed: boolean): Html =>
  html`<section id="actions"><h2>Actions <span class="n">${rows.length}</span></h2>${
    rows.length === 0
      ? html`<p class="empty">${allowed ? "No action taken from this page yet." : "Read-only: start with --allow-actions to retry, discard, cut over or roll back from here."}</p>`
      : html`<table><thead><tr><th>when</th><th>who</th><th>what</th><th>outcome</th><th>detail</th></tr></thead><tbody>${rows.map(
          (a) => html`<tr data-outcome="${a.outcome}"><td>${time(a.at)}</td><td class="wrap">${a.who}</td><td class="wrap">${a.what}</td>
<td><span class="badge s-${a.outcome}">${a.outcome}</span></td><td class="wrap">${a.detail}</td></tr>`
        )}</tbody></table>`
  }</section>`
