// What does not move and why: pairs waiting (the watchdog's reasons), failed cursors, dead letters.
import type { DeadLetters, FailedCursors } from "@whizbang/cli"
import type { PgStatus } from "@whizbang/postgres"
import { age, count, time } from "./format.js"
import { type Html, html } from "./html.js"

const short = (id: string | null) => (id === null ? "-" : `${id.slice(0, 8)}…`)

export const waiting = (status: PgStatus.Snapshot): Html => {
  const stuck = new Set(status.stuck.map((s) => `${s.streamId} ${s.perspective}`))
  const rows = [
    ...status.waiting,
    ...status.stuck.filter((s) => !status.waiting.some((w) => w.streamId === s.streamId && w.perspective === s.perspective))
  ]
  return html`<section id="waiting"><h2>Streams waiting <span class="n">${rows.length}</span></h2>${
    rows.length === 0
      ? html`<p class="empty">Nothing waits: every pending stream can move now.</p>`
      : html`<table><thead><tr><th>stream</th><th>perspective</th><th class="num">pending</th><th class="num">waiting</th><th>reason</th><th>detail</th></tr></thead><tbody>${rows.map(
          (
            w
          ) => html`<tr><td class="id" title="${w.streamId}">${short(w.streamId)}</td><td>${w.perspective}</td><td class="num">${count(w.pending)}</td>
<td class="num">${age(w.waitingSeconds)}${stuck.has(`${w.streamId} ${w.perspective}`) ? html` <span class="bad">stuck</span>` : ""}</td>
<td><code>${w.reason._tag}</code></td><td class="wrap">${w.message}</td></tr>`
        )}</tbody></table>`
  }${status.versionFindings.length === 0 ? "" : html`<ul>${status.versionFindings.map((f) => html`<li><code>${f.reason._tag}</code> ${f.message}</li>`)}</ul>`}</section>`
}

export const failed = (rows: ReadonlyArray<FailedCursors.FailedCursor>): Html =>
  html`<section id="failed"><h2>Failed cursors <span class="n">${rows.length}</span></h2>${
    rows.length === 0
      ? html`<p class="empty">No cursor is failing.</p>`
      : html`<table><thead><tr><th>stream</th><th>perspective</th><th>stopped at</th><th class="num">attempts</th><th>retry after</th><th>error</th></tr></thead><tbody>${rows.map(
          (
            c
          ) => html`<tr><td class="id" title="${c.streamId}">${short(c.streamId)}</td><td>${c.perspective}</td><td class="id">${short(c.headEventId)}</td>
<td class="num">${c.attempts ?? "-"}</td><td>${c.retryAfter === null ? "-" : time(c.retryAfter)}</td><td class="wrap bad">${c.error ?? ""}</td></tr>`
        )}</tbody></table>`
  }</section>`

export const deadLetters = (rows: ReadonlyArray<DeadLetters.DeadLetter>, base: string): Html =>
  html`<section id="dead-letters"><h2>Dead letters <span class="n">${rows.length}</span></h2>${
    rows.length === 0
      ? html`<p class="empty">No dead letters.</p>`
      : html`<table><thead><tr><th>letter</th><th>perspective</th><th>event</th><th>type</th><th class="num">attempts</th><th>at</th><th>error</th><th></th></tr></thead><tbody>${rows.map(
          (
            d
          ) => html`<tr data-dead-letter="${d.id}"><td class="id"><a href="${base}/dead-letters/${d.id}">${short(d.id)}</a></td><td>${d.perspective}</td>
<td class="id" title="${d.eventId}">${short(d.eventId)}</td><td>${d.eventType}</td><td class="num">${d.attempts}</td><td>${d.createdAt === null ? "-" : time(d.createdAt)}</td>
<td class="wrap bad">${d.error}</td><td><a class="act" href="${base}/dead-letters/${d.id}/retry">retry…</a><a class="act" href="${base}/dead-letters/${d.id}/discard">discard…</a></td></tr>`
        )}</tbody></table>`
  }</section>`
