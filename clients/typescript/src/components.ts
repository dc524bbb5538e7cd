/** Agent components (`/api/v1/agents/components…`): the account's own agents, as WebAssembly. */
import { paginate } from "./paginate.js";
import type { CursorOptions, PageOptions } from "./agents.js";
import type { Transport } from "./transport.js";
import type { Component, ComponentList } from "./types.js";

export interface UploadOptions {
  /** snake_case: a lowercase letter, then lowercase letters, digits or underscores. */
  name: string;
  /** A semantic version, `MAJOR.MINOR.PATCH[-pre][+build]`. */
  version: string;
}

export class ComponentsApi {
  constructor(private readonly transport: Transport) {}

  /**
   * Uploads a component (built for `wasm32-wasip2`, e.g. with wasmind-sdk). The server
   * validates it before storing; spawns then name it by id, name or `name@version`.
   */
  upload(component: Uint8Array | ArrayBuffer | Blob, options: UploadOptions): Promise<Component> {
    return this.transport.call("post", "/api/v1/agents/components", {
      query: { name: options.name, version: options.version },
      // Any byte view will do for fetch; the DOM types want one over a plain ArrayBuffer only,
      // which a Node Buffer does not promise.
      raw: { body: component as BodyInit, contentType: "application/wasm" },
    });
  }

  /** The component. Throws `component_not_found` for an unknown id. */
  get(id: string): Promise<Component> {
    return this.transport.call("get", "/api/v1/agents/components/{id}", { path: { id } });
  }

  /** Every component of the account, newest first, fetched page by page as iterated. */
  list(options: PageOptions = {}): AsyncGenerator<Component, void, undefined> {
    return paginate((cursor) => this.listPage({ ...options, cursor }));
  }

  /** One page of components; pass its `next_cursor` as `cursor` for the next. */
  listPage(options: CursorOptions = {}): Promise<ComponentList> {
    return this.transport.call("get", "/api/v1/agents/components", {
      query: { limit: options.limit, cursor: options.cursor },
    });
  }

  /** Deletes the component; running agents run on. Returns it as it was. */
  delete(id: string): Promise<Component> {
    return this.transport.call("delete", "/api/v1/agents/components/{id}", { path: { id } });
  }
}
