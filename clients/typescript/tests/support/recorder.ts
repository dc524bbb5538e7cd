/** The real `fetch`, with a note of every request it sent and the status that answered. */
export interface Recorder {
  fetch: typeof fetch;
  /** `METHOD path?query → status`, in order. */
  calls: string[];
  statuses: number[];
}

export function recorder(): Recorder {
  const calls: string[] = [];
  const statuses: number[] = [];
  return {
    calls,
    statuses,
    fetch: async (input, init) => {
      const response = await fetch(input, init);
      const url = new URL(String(input));
      calls.push(`${init?.method ?? "GET"} ${url.pathname}${url.search} → ${response.status}`);
      statuses.push(response.status);
      return response;
    },
  };
}
