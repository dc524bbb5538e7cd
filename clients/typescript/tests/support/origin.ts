/**
 * A real HTTP server on 127.0.0.2 for the tools the tests register: the server under test
 * reaches it through its egress door, which `egressConfig()` opens for exactly this address,
 * port and scheme. It records every request it gets, so a test sees what a tool call sent.
 */
import { type IncomingHttpHeaders, type Server, createServer } from "node:http";

const HOST = "127.0.0.2";

export interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** Answers `POST /weather` with `{ city }` as the text `sunny in <city>`; anything else is 404. */
export class Origin {
  private constructor(
    private readonly server: Server,
    /** `http://127.0.0.2:PORT`. */
    readonly url: string,
    /** Every request so far, oldest first. */
    readonly received: Received[],
  ) {}

  static async start(): Promise<Origin> {
    const received: Received[] = [];
    const server = createServer((request, response) => {
      let body = "";
      request.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
      request.on("end", () => {
        received.push({ method: request.method ?? "", path: request.url ?? "", headers: request.headers, body });
        if (request.method !== "POST" || request.url !== "/weather") {
          response.writeHead(404).end();
          return;
        }
        const { city } = JSON.parse(body) as { city: string };
        response.writeHead(200, { "content-type": "text/plain" }).end(`sunny in ${city}`);
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, HOST, resolve);
    });
    const address = server.address();
    if (typeof address !== "object" || address === null) {
      throw new Error("the origin has no port");
    }
    return new Origin(server, `http://${HOST}:${address.port}`, received);
  }

  /** The server's `[egress]` section that lets calls reach this origin (127.0.0.2 is loopback, refused unless its range is listed). */
  egressConfig(): string {
    const port = new URL(this.url).port;
    return `[egress]\nallow_ranges = ["${HOST}/32"]\nallow = [{ host = "${HOST}", ports = [${port}], schemes = ["http"] }]\n`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
