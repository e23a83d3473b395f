// Perspectives (lag, applied events/s and lag sparklines) and their versions (state, build progress, rate, ETA).
import type { PgPerspectiveVersions, PgStatus } from "@whizbang/postgres"
import { age, count, percent, rate } from "./format.js"
import type * as History from "./history.js"
import { type Html, html } from "./html.js"
import { sparkline } from "./sparkline.js"

const last = (values: ReadonlyArray<number> | undefined) => (values === undefined || values.length === 0 ? 0 : values[values.length - 1]!)

export const perspectives = (rows: ReadonlyArray<PgStatus.PerspectiveSummary>, history: History.History): Html =>
  html`<section id="perspectives"><h2>Perspectives <span class="n">${rows.length}</span></h2>${
    rows.length === 0
      ? html`<p class="empty">No perspective has work or cursors yet.</p>`
      : html`<table><thead><tr><th>perspective</th><th class="num">streams</th><th class="num">lag (events)</th><th class="num">lag (oldest)</th>
<th>applied/s</th><th>lag</th><th class="num">failed</th><th class="num">dead letters</th><th class="num">rewinding</th><th class="num">running on</th></tr></thead><tbody>${rows.map(
          (p) => {
            const s = history.series.get(p.perspective)
            return html`<tr data-perspective="${p.perspective}"><td><b>${p.perspective}</b></td><td class="num">${count(p.streams)}</td>
<td class="num" data-field="lag-events">${count(p.pending)}</td><td class="num" data-field="lag-seconds">${p.pending === 0 ? "-" : age(p.lagSeconds)}</td>
<td>${sparkline(s?.appliedPerSecond ?? [], `${p.perspective} applied events per second`)} <span class="muted">${rate(last(s?.appliedPerSecond))}</span></td>
<td>${sparkline(s?.lag ?? [], `${p.perspective} lag in events`)}</td>
<td class="num${p.failed > 0 ? " bad" : ""}">${count(p.failed)}</td><td class="num${p.deadLetters > 0 ? " bad" : ""}">${count(p.deadLetters)}</td>
<td class="num">${count(p.rewindRequired)}</td><td class="num">${count(p.runningInstances)} instance(s)</td></tr>`
          }
        )}</tbody></table>`
  }</section>`

const progressBar = (share: number) =>
  html`<span class="bar"><span style="width:${Math.round(share * 100)}%"></span></span>${percent(share)}`

const versionActions = (v: PgPerspectiveVersions.VersionInfo, all: ReadonlyArray<PgPerspectiveVersions.VersionInfo>, base: string) => {
  const live = all.find((o) => o.baseName === v.baseName && o.state === "live")
  const canCutover = (v.state === "building" || v.state === "ready") && (live === undefined || v.version > live.version)
  const canRollback = v.state === "retiring"
  return html`${canCutover ? html`<a class="act" href="${base}/versions/${v.perspectiveName}/cutover">cut over…</a>` : ""}${
    canRollback ? html`<a class="act" href="${base}/perspectives/${v.baseName}/rollback">roll back to v${v.version}…</a>` : ""
  }`
}

export const versions = (rows: ReadonlyArray<PgPerspectiveVersions.VersionInfo>, history: History.History, base: string): Html =>
  html`<section id="versions"><h2>Perspective versions <span class="n">${rows.length}</span></h2>${
    rows.length === 0
      ? html`<p class="empty">No perspective version is registered.</p>`
      : html`<table><thead><tr><th>version</th><th>state</th><th>build</th><th class="num">streams replayed</th><th class="num">rate</th><th class="num">ETA</th>
<th class="num">lag (events)</th><th class="num">lag (oldest)</th><th class="num">dead letters</th><th>runner</th><th></th></tr></thead><tbody>${rows.map(
          (v) => {
            const build = history.builds.get(v.perspectiveName)
            return html`<tr data-version="${v.perspectiveName}" data-state="${v.state}"><td><b>${v.baseName}</b> v${v.version} <span class="muted id">${v.perspectiveName}</span></td>
<td><span class="badge s-${v.state}">${v.state}</span></td><td>${progressBar(v.progress)}</td>
<td class="num">${count(v.historyStreams - v.streamsToReplay)} / ${count(v.historyStreams)}</td>
<td class="num">${build?.perSecond === undefined ? "-" : rate(build.perSecond)}</td><td class="num">${v.state === "building" && v.progress < 1 ? age(build?.etaSeconds) : "-"}</td>
<td class="num">${count(v.pendingEvents)}</td><td class="num">${v.pendingEvents === 0 ? "-" : age(v.lagSeconds)}</td>
<td class="num${v.deadLetters > 0 ? " bad" : ""}">${count(v.deadLetters)}</td><td>${v.hasRunner ? "yes" : html`<span class="bad">no live instance runs it</span>`}</td>
<td>${versionActions(v, rows, base)}</td></tr>`
          }
        )}</tbody></table>`
  }</section>`
