"""A real HTTP server on 127.0.0.2 for the tools the tests register: the server under test
reaches it through its egress door, which the session's config opens for exactly this
address, port and scheme (see `conftest.CONFIG`). It records every request it gets, so a
test sees what the tool call sent (its arguments, its secret header)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOST = "127.0.0.2"


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class Origin:
    """Answers `POST /weather` with `{"city": …}` as the text `sunny in <city>`; every other
    request is 404."""

    def __init__(self) -> None:
        self.received: list[Received] = []
        origin = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                origin.received.append(
                    Received("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                )
                if self.path != "/weather":
                    self.send_error(404)
                    return
                answer = f"sunny in {json.loads(body)['city']}".encode()
                self.send_response(200)
                self.send_header("content-type", "text/plain")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: object) -> None:
                pass  # the test reads `received`, not stderr

        self._server = ThreadingHTTPServer((HOST, 0), Handler)
        self.port = self._server.server_address[1]
        self.url = f"http://{HOST}:{self.port}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def egress_config(self) -> str:
        """The server's `[egress]` section that lets calls reach this origin (127.0.0.2 is
        loopback, refused unless its range is listed)."""
        return (
            f'[egress]\nallow_ranges = ["{HOST}/32"]\n'
            f'allow = [{{ host = "{HOST}", ports = [{self.port}], schemes = ["http"] }}]\n'
        )

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
