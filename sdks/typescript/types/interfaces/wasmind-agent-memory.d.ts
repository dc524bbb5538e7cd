declare module 'wasmind:agent/memory@0.1.0' {
  export function put(request: PutRequest): PutResult;
  /**
   * A put whose fact was stated or observed at `observed-at` (epoch milliseconds, not in
   * the future), where `put` takes it to be the write's time. A function of its own,
   * not a field of `put-request`, so components built before it still link.
   */
  export function putObserved(request: PutRequest, observedAt: bigint): PutResult;
  /**
   * `none` when no live memory matches. Counts an access.
   */
  export function get(key: string, namespace: string | undefined): MemoryRecord | undefined;
  export function list(request: ListRequest): Array<MemoryRecord>;
  /**
   * Soft delete (hard delete exists only in the HTTP API).
   */
  export { _delete as delete };
  function _delete(key: string, namespace: string | undefined): void;
  export function search(request: SearchRequest): Array<SearchHit>;
  /**
   * A write. Defaults: namespace `default`, importance 5, no expiry.
   */
  export interface PutRequest {
    /**
     * snake_case, at most 128 characters.
     */
    key: string,
    /**
     * At most 5,000 characters.
     */
    value: string,
    namespace?: string,
    /**
     * At most 20, each at most 50 characters.
     */
    tags: Array<string>,
    /**
     * 1 to 10.
     */
    importance?: number,
    expiresInDays?: number,
  }
  /**
   * What a put created (or found identical).
   */
  export interface PutResult {
    memoryId: string,
    key: string,
    namespace: string,
  }
  /**
   * A live memory.
   */
  export interface MemoryRecord {
    key: string,
    value: string,
    namespace: string,
    tags: Array<string>,
    importance: number,
    /**
     * Epoch milliseconds.
     */
    createdAt: bigint,
    updatedAt: bigint,
    accessCount: bigint,
  }
  /**
   * A search. Defaults: mode `hybrid`, limit 10 (at most 50).
   */
  export interface SearchRequest {
    query: string,
    namespace?: string,
    /**
     * AND filter: results carry every tag.
     */
    tags: Array<string>,
    limit?: number,
    /**
     * `hybrid`, `semantic` or `keyword`.
     */
    mode?: string,
  }
  /**
   * The parts of a score, each from 0 to 1.
   */
  export interface Breakdown {
    semantic: number,
    keyword: number,
    importance: number,
    timeDecay: number,
  }
  /**
   * One ranked result.
   */
  export interface SearchHit {
    key: string,
    value: string,
    namespace: string,
    tags: Array<string>,
    importance: number,
    /**
     * Combined score, 0 to 1.
     */
    score: number,
    breakdown: Breakdown,
    createdAt: bigint,
  }
  /**
   * A listing, newest first. Defaults: limit 50 (at most 200).
   */
  export interface ListRequest {
    namespace?: string,
    tags: Array<string>,
    limit?: number,
  }
  /**
   * Why a memory operation failed. The agent's run goes on.
   */
  export type MemoryError = MemoryErrorInvalid | MemoryErrorQuotaExceeded | MemoryErrorNotFound | MemoryErrorNotConfigured | MemoryErrorStopped | MemoryErrorInternal;
  /**
   * Bad input; the text says what to fix.
   */
  export interface MemoryErrorInvalid {
    tag: 'invalid',
    val: string,
  }
  /**
   * The account's memory pool is full.
   */
  export interface MemoryErrorQuotaExceeded {
    tag: 'quota-exceeded',
    val: string,
  }
  /**
   * No live memory at that key.
   */
  export interface MemoryErrorNotFound {
    tag: 'not-found',
    val: string,
  }
  /**
   * This agent was given no memory.
   */
  export interface MemoryErrorNotConfigured {
    tag: 'not-configured',
  }
  /**
   * A stop was requested.
   */
  export interface MemoryErrorStopped {
    tag: 'stopped',
  }
  /**
   * The host failed; retrying may help.
   */
  export interface MemoryErrorInternal {
    tag: 'internal',
    val: string,
  }
}
