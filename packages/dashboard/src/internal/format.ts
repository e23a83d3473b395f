// Numbers as people read them on the page.

export const count = (n: number): string => n.toLocaleString("en-US")

export const age = (seconds: number | null | undefined): string => {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return "-"
  if (seconds < 60) return `${seconds.toFixed(seconds < 10 ? 1 : 0)}s`
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ${Math.floor(seconds % 60)}s`
  return `${Math.floor(seconds / 3600)}h ${Math.floor((seconds % 3600) / 60)}m`
}

export const rate = (perSecond: number): string => (perSecond >= 100 ? `${count(Math.round(perSecond))}/s` : `${perSecond.toFixed(1)}/s`)

export const percent = (share: number): string => `${Math.floor(share * 100)}%`

export const time = (date: Date | string | undefined): string =>
  date === undefined ? "-" : new Date(date).toISOString().replace("T", " ").slice(0, 19)
