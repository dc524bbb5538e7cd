declare module 'wasmind:agent/control@0.1.0' {
  /**
   * True once a stop was requested; finish promptly (the host interrupts the agent
   * after about 10 seconds of grace).
   */
  export function stopRequested(): boolean;
}
