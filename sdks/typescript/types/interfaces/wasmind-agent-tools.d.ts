/// <reference path="./wasmind-agent-mind.d.ts" />
declare module 'wasmind:agent/tools@0.1.0' {
  /**
   * The tools offered to this agent, by name, ready to pass to `mind.complete`.
   */
  export function list(): Array<ToolSpec>;
  /**
   * Calls the tool `name` with its arguments object (JSON text): the result's text.
   */
  export function call(name: string, argumentsJson: string): string;
  export type ToolSpec = import('wasmind:agent/mind@0.1.0').ToolSpec;
  /**
   * Why a tool call gave no result. The agent's run goes on.
   */
  export type ToolError = ToolErrorUnknown | ToolErrorInvalidArguments | ToolErrorDenied | ToolErrorFailed | ToolErrorStopped;
  /**
   * No tool of that name is offered to this agent.
   */
  export interface ToolErrorUnknown {
    tag: 'unknown',
    val: string,
  }
  /**
   * The arguments are not a JSON object, or do not fit the tool's schema.
   */
  export interface ToolErrorInvalidArguments {
    tag: 'invalid-arguments',
    val: string,
  }
  /**
   * The egress policy or a plan's budget refused the call; nothing was sent.
   */
  export interface ToolErrorDenied {
    tag: 'denied',
    val: string,
  }
  /**
   * The call was made and failed: a status, a timeout, the connection, the protocol.
   */
  export interface ToolErrorFailed {
    tag: 'failed',
    val: string,
  }
  /**
   * A stop was requested.
   */
  export interface ToolErrorStopped {
    tag: 'stopped',
  }
}
