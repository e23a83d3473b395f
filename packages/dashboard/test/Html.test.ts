// The page's escaping and the token comparison, without a browser.
import { describe, expect, it } from "@effect/vitest"
import { escape, html, raw } from "../src/internal/html.js"
import * as Token from "../src/internal/token.js"

describe("html", () => {
  it("escapes every interpolated string, in content and attributes; only Html passes through", () => {
    const payload = `<script>alert("x")</script><img src=x onerror='y'>&\``
    const out = html`<td title="${payload}">${payload}${raw("<b>ok</b>")}${[payload, 1]}</td>`.value
    expect(out).not.toContain("<script>")
    expect(out).not.toContain("<img")
    expect(out).toContain("<b>ok</b>")
    expect(out).toBe(
      `<td title="${escape(payload)}">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x onerror=&#39;y&#39;&gt;&amp;&#96;<b>ok</b>${escape(payload)}1</td>`
    )
  })
})

describe("token", () => {
  it("matches only the exact token; a missing or empty one never matches", () => {
    const token = Token.generate()
    expect(token).toHaveLength(43)
    expect(Token.matches(token, token)).toBe(true)
    expect(Token.matches(token, `${token}x`)).toBe(false)
    expect(Token.matches(token, token.slice(1))).toBe(false)
    expect(Token.matches(token, "")).toBe(false)
    expect(Token.matches(token, undefined)).toBe(false)
  })
})
