// The live body: the banner when the database is away, then every section. Rendered once per change and sent to
// every open page.
import { Duration } from "effect"
import * as Fleet from "./fleet.js"
import { time } from "./format.js"
import type { State } from "./hub.js"
import { html } from "./html.js"
import type { Decoded } from "./options.js"
import * as Overview from "./overview.js"
import * as Problems from "./problems.js"

export const render =
  (options: Decoded) =>
  (state: State): string => {
    const base = options.basePath
    const banner =
      state.unavailableSince === undefined
        ? ""
        : html`<div class="banner" id="banner" role="alert">Database unavailable since ${time(state.unavailableSince)} UTC: ${state.error ?? ""}.
${state.takenAt === undefined ? "" : html`Showing the last snapshot, taken ${time(state.takenAt)} UTC.`} Retrying by itself.</div>`
    const s = state.snapshot
    if (s === undefined) {
      return html`${banner}<p class="empty" id="loading">${state.unavailableSince === undefined ? "Taking the first snapshot…" : "No snapshot yet."}</p>`
        .value
    }
    return html`${banner}<p class="muted" id="taken">Snapshot taken ${state.takenAt === undefined ? "-" : time(state.takenAt)} UTC.</p>
${Overview.perspectives(s.status.perspectives, state.history)}
${Overview.versions(s.status.versions, state.history, base)}
${Problems.deadLetters(s.deadLetters, base)}
<div class="grid">${Problems.waiting(s.status)}${Problems.failed(s.failed)}</div>
<div class="grid">${Fleet.instances(s.status.instances, Duration.toSeconds(options.deadInstanceAfter))}${Fleet.locks(s.status.locks)}</div>
${Fleet.actions(state.actions, options.token !== undefined)}`.value
  }
