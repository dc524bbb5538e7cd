/** The memory API (`/api/v1/memory…`): every operation of the specification's §4.2, and history. */
import { paginate } from "./paginate.js";
import type { Transport } from "./transport.js";
import type {
  ConsolidateRequest,
  ConsolidateResult,
  DedupeRequest,
  DedupeResult,
  DeleteResult,
  ExportDocument,
  History,
  ImportRequest,
  ImportResult,
  Memory,
  MemoryDraft,
  MemoryList,
  Namespaces,
  SearchRequest,
  SearchResponse,
} from "./types.js";

/** Where a key lives: its namespace (default `default`). */
export interface KeyOptions {
  namespace?: string;
}

export interface GetOptions extends KeyOptions {
  /** Read the version live at this instant (epoch ms) with its value then (not counted as an access). */
  asOf?: number;
}

export interface DeleteOptions extends KeyOptions {
  /** `true` removes every version for good; `false` (default) soft-deletes, keeping history. */
  hard?: boolean;
}

export interface HistoryOptions extends KeyOptions {
  /** Page size (default 50, capped at 200). */
  limit?: number;
}

export interface HistoryPageOptions extends HistoryOptions {
  /** The `next_cursor` of the page before. */
  cursor?: string;
}

export interface ListOptions {
  namespace?: string;
  /** Memories carrying all of these tags. */
  tags?: string[];
  /** Page size (default 50, capped at 200). */
  limit?: number;
  /** List the versions live at this instant (epoch ms), with their values then. */
  asOf?: number;
  /** Only versions whose fact was observed at or after this instant (epoch ms). */
  observedAfter?: number;
  /** Only versions whose fact was observed before this instant (epoch ms). */
  observedBefore?: number;
}

export interface ListPageOptions extends ListOptions {
  /** The `next_cursor` of the page before. */
  cursor?: string;
}

export class MemoryApi {
  constructor(private readonly transport: Transport) {}

  /**
   * Writes a memory, or a new version of its key. Putting the live value again writes
   * nothing and returns the live memory.
   */
  put(memory: MemoryDraft): Promise<Memory> {
    return this.transport.call("post", "/api/v1/memory", { body: memory });
  }

  /**
   * The live memory at `key` (counts as an access), or with `asOf` the version live then.
   * Throws `not_found` when there is none.
   */
  get(key: string, options: GetOptions = {}): Promise<Memory> {
    const { namespace, asOf } = options;
    return this.transport.call("get", "/api/v1/memory", { query: { key, namespace, as_of: asOf } });
  }

  /** Deletes the memory at `key`: soft by default, every version with `hard: true`. */
  delete(key: string, options: DeleteOptions = {}): Promise<DeleteResult> {
    const hard = options.hard === undefined ? undefined : options.hard ? "true" : "false";
    return this.transport.call("delete", "/api/v1/memory", {
      query: { key, namespace: options.namespace, hard },
    });
  }

  /**
   * Every stored version of `key`, newest first, superseded and soft-deleted ones included,
   * fetched page by page as iterated. Throws `not_found` (on the first page) when the key
   * has no version.
   */
  history(key: string, options: HistoryOptions = {}): AsyncGenerator<Memory, void, undefined> {
    return paginate((cursor) => this.historyPage(key, { ...options, cursor }));
  }

  /** One page of `key`'s versions, newest first; pass its `next_cursor` as `cursor` for the next. */
  historyPage(key: string, options: HistoryPageOptions = {}): Promise<History> {
    // Every parameter spelled out: a name the server's document no longer has fails the typecheck.
    const { namespace, limit, cursor } = options;
    return this.transport.call("get", "/api/v1/memory/history", { query: { key, namespace, limit, cursor } });
  }

  /**
   * Searches live memories by meaning and keyword; results best first. `as_of` searches the
   * versions live then; `observed_after`/`observed_before` keep an observation window.
   */
  search(request: SearchRequest): Promise<SearchResponse> {
    return this.transport.call("post", "/api/v1/memory/search", { body: request });
  }

  /**
   * Every live memory (with `asOf`, every version live then), most recently written first,
   * fetched page by page as iterated.
   */
  list(options: ListOptions = {}): AsyncGenerator<Memory, void, undefined> {
    return paginate((cursor) => this.listPage({ ...options, cursor }));
  }

  /** One page of live memories; pass its `next_cursor` as `cursor` for the next. */
  listPage(options: ListPageOptions = {}): Promise<MemoryList> {
    // Every parameter spelled out: a name the server's document no longer has fails the typecheck.
    const { namespace, tags, limit, cursor, asOf, observedAfter, observedBefore } = options;
    return this.transport.call("get", "/api/v1/memory/list", {
      query: {
        namespace,
        tags: tags === undefined ? undefined : tags.join(","),
        limit,
        cursor,
        as_of: asOf,
        observed_after: observedAfter,
        observed_before: observedBefore,
      },
    });
  }

  /** The account's namespaces with their live-memory counts. */
  namespaces(): Promise<Namespaces> {
    return this.transport.call("get", "/api/v1/memory/namespaces", {});
  }

  /** Soft-deletes the less useful copy of each pair of near-identical memories. */
  dedupe(request: DedupeRequest = {}): Promise<DedupeResult> {
    return this.transport.call("post", "/api/v1/memory/dedupe", { body: request });
  }

  /** Folds clusters of related memories into summaries the Mind writes. Not for a loop. */
  consolidate(request: ConsolidateRequest = {}): Promise<ConsolidateResult> {
    return this.transport.call("post", "/api/v1/memory/consolidate", { body: request });
  }

  /** Every live memory as one document, which {@link MemoryApi.import} takes as it is. */
  export(): Promise<ExportDocument> {
    return this.transport.call("get", "/api/v1/memory/export", {});
  }

  /** Writes each item as a put, in order; refused items are listed in `errors`. */
  import(document: ImportRequest | ExportDocument): Promise<ImportResult> {
    return this.transport.call("post", "/api/v1/memory/import", { body: { memories: document.memories } });
  }
}
