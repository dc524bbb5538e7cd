declare module 'wasmind:agent/mind@0.1.0' {
  /**
   * Asks the Mind for the next step. Blocks until it answers, fails, or a stop is
   * requested.
   */
  export function complete(messages: Array<Message>, tools: Array<ToolSpec>): Completion;
  /**
   * Who said a message.
   * # Variants
   * 
   * ## `"system"`
   * 
   * ## `"user"`
   * 
   * ## `"assistant"`
   * 
   * ## `"tool"`
   * 
   * The result of a tool call, answering the call named by `tool-call-id`.
   */
  export type Role = 'system' | 'user' | 'assistant' | 'tool';
  /**
   * A tool the Mind may call.
   */
  export interface ToolSpec {
    /**
     * Unique name, e.g. `service_memory_put`.
     */
    name: string,
    /**
     * What the tool does, for the Mind.
     */
    description: string,
    /**
     * JSON Schema of the arguments object, as JSON text.
     */
    parametersJson: string,
  }
  /**
   * A tool call the Mind made.
   */
  export interface ToolCall {
    /**
     * Id to quote in the tool message that answers it.
     */
    id: string,
    name: string,
    /**
     * The arguments object, as JSON text.
     */
    argumentsJson: string,
  }
  /**
   * One message of the conversation.
   */
  export interface Message {
    role: Role,
    content: string,
    /**
     * Calls made by an `assistant` message.
     */
    toolCalls: Array<ToolCall>,
    /**
     * For `tool` messages: the call this answers.
     */
    toolCallId?: string,
  }
  /**
   * Tokens spent by one completion.
   */
  export interface Usage {
    inputTokens: number,
    outputTokens: number,
  }
  /**
   * The Mind's answer: text, tool calls, or both.
   */
  export interface Completion {
    text?: string,
    toolCalls: Array<ToolCall>,
    usage: Usage,
  }
  /**
   * Why a completion failed.
   */
  export type MindError = MindErrorUnavailable | MindErrorInvalidRequest | MindErrorStopped;
  /**
   * The provider failed even after the host's retries (1 s, 2 s, 4 s).
   */
  export interface MindErrorUnavailable {
    tag: 'unavailable',
    val: string,
  }
  /**
   * The request was refused as malformed (too large, bad tool schema, …).
   */
  export interface MindErrorInvalidRequest {
    tag: 'invalid-request',
    val: string,
  }
  /**
   * A stop was requested: finish up and return.
   */
  export interface MindErrorStopped {
    tag: 'stopped',
  }
}
