/** The paginated envelope of every list: `{ data, next_cursor }` (§2.4). */
export interface Page<T> {
  data: T[];
  next_cursor?: string | null;
}

/**
 * Every item of a paginated list, fetching the next page only when the items before it are
 * used up. The cursor is the server's own (opaque) `next_cursor`; a null one ends the list.
 */
export async function* paginate<T>(fetchPage: (cursor: string | undefined) => Promise<Page<T>>): AsyncGenerator<T, void, undefined> {
  let cursor: string | undefined;
  do {
    const page = await fetchPage(cursor);
    yield* page.data;
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined);
}
