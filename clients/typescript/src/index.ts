export { Wasmind, type WasmindOptions } from "./client.js";
export { WasmindError } from "./errors.js";
export type { RetryOptions } from "./transport.js";
export type { FollowEvent, FollowOptions } from "./follow.js";
export type {
  DeleteOptions,
  GetOptions,
  HistoryOptions,
  HistoryPageOptions,
  KeyOptions,
  ListOptions,
  ListPageOptions,
} from "./memory.js";
export type { CursorOptions, PageOptions } from "./agents.js";
export type { UploadOptions } from "./components.js";
export type { Page } from "./paginate.js";
export type * from "./types.js";
