/** Purge statements: the cursor of a (stream, perspective). Params: $1 stream id, $2 perspective name. */
export const deleteCursor = `DELETE FROM wh_perspective_cursors WHERE stream_id = $1::uuid AND perspective_name = $2::text`

/** Whether the pair has a cursor (a lock needs one). Params: $1 stream id, $2 perspective name. */
export const cursorExists = `SELECT 1 AS one FROM wh_perspective_cursors WHERE stream_id = $1::uuid AND perspective_name = $2::text`
