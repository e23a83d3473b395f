/** Runs `body` over `items`, at most `concurrency` at a time, each item once, in order of start. */
export const inParallel = async <A>(items: ReadonlyArray<A>, concurrency: number, body: (a: A) => Promise<void>) => {
  let next = 0
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await body(items[next++]!)
    })
  )
}
