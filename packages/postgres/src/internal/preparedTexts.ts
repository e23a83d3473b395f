/**
 * Which texts of a statement whose text varies (the completion's, with the perspectives of its batch) run prepared.
 *
 * @internal
 */

/**
 * The completion's text depends on the set of perspectives a batch writes: the first `limit` texts are prepared, any
 * later one runs unprepared, so a service with many perspectives does not fill every connection with statements.
 *
 * @internal
 */
export class PreparedTexts {
  private readonly texts = new Set<string>()
  constructor(private readonly limit: number) {}
  preparable(text: string): boolean {
    if (this.texts.has(text)) return true
    if (this.texts.size >= this.limit) return false
    this.texts.add(text)
    return true
  }
}
