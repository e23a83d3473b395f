// HTML built by a tagged template that escapes every interpolated value: a string from the database (a payload, an
// error message, a perspective name) can only ever be text. Markup passes through only as `Html`, which only this
// module and `raw` (for constant markup written here, never data) make.

const entities: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;", "`": "&#96;" }

/** Escapes text for an element's content and for a quoted attribute value. */
export const escape = (text: string): string => text.replace(/[&<>"'`]/g, (c) => entities[c]!)

const HtmlTypeId: unique symbol = Symbol.for("@whizbang/dashboard/Html")

export interface Html {
  readonly [HtmlTypeId]: true
  readonly value: string
}

const make = (value: string): Html => ({ [HtmlTypeId]: true, value })

const isHtml = (u: unknown): u is Html => typeof u === "object" && u !== null && HtmlTypeId in u

/** Markup written in this package (never data). */
export const raw = (markup: string): Html => make(markup)

export type Interpolated = Html | string | number | boolean | null | undefined | ReadonlyArray<Interpolated>

const render = (value: Interpolated): string => {
  if (value === null || value === undefined || value === false) return ""
  if (isHtml(value)) return value.value
  if (Array.isArray(value)) return value.map(render).join("")
  return escape(String(value))
}

/** `html\`<td>${name}</td>\``: interpolations are escaped unless they are `Html`. */
export const html = (strings: TemplateStringsArray, ...values: ReadonlyArray<Interpolated>): Html =>
  make(strings.reduce((out, s, i) => out + s + (i < values.length ? render(values[i]!) : ""), ""))

export const empty: Html = make("")
