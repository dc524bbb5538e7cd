declare module 'wasmind:agent/progress@0.1.0' {
  /**
   * Adds a progress entry to the agent record (`kind` such as `info` or `tool_use`).
   */
  export function report(kind: string, message: string): void;
  /**
   * Appends an event to the agent's log stream; `data-json` is optional structured
   * detail as JSON text.
   */
  export function log(kind: LogKind, message: string, dataJson: string | undefined): void;
  /**
   * Kinds of log events the agent writes (the host adds `terminal`).
   * # Variants
   * 
   * ## `"thinking"`
   * 
   * ## `"tool-use"`
   * 
   * ## `"tool-result"`
   */
  export type LogKind = 'thinking' | 'tool-use' | 'tool-result';
}
