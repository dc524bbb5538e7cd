"""Put latency through `WasmindStore` against a plain REST put, on a real server.

    WASMIND_BIN=target/debug/wasmind python integrations/langgraph/bench/put_latency.py [N]

Starts a server with the client tests' harness, then makes N puts each way, alternating
(so both see the same load): `store.put(ns, key, {"text": …})` and `POST /api/v1/memory`
with httpx. Every put writes a new key with its own text, so every one is embedded and
written (none is the idempotent no-op). Prints the p50 and p90 of each and their ratio;
then times LangGraph's large async batch (6,000 concurrent operations, as in
`test_large_batches_async`).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "clients" / "python" / "tests"))
from harness import Servers  # noqa: E402

from wasmind_langgraph import WasmindStore  # noqa: E402


def quantile(samples: list[float], q: float) -> float:
    return statistics.quantiles(samples, n=100)[int(q * 100) - 1]


async def large_batch(store: WasmindStore, n: int = 100, m: int = 10) -> float:
    coros = []
    for j in range(m):
        ns = ("test", "foo", "bar", "baz", str(j % 2))
        for i in range(n):
            coros += [
                store.aput(ns, f"key{i}", {"foo": f"bar{i}"}),
                store.aget(ns, f"key{i}"),
                store.alist_namespaces(prefix=None, max_depth=j + 1),
                store.asearch(("test",)),
                store.aput(ns, f"key{i}", {"foo": f"bar{i}"}),
                store.adelete(ns, f"key{i}"),
            ]
    began = time.perf_counter()
    results = await asyncio.gather(*coros)
    assert len(results) == n * m * 6
    return time.perf_counter() - began


def main(n: int) -> None:
    servers = Servers()
    try:
        server = servers.start("bench")
        server.wait_ready()
        key = server.create_key()
        store = WasmindStore(server.base, key)
        rest = httpx.Client(base_url=server.base, headers={"authorization": f"Bearer {key}"})
        through_store: list[float] = []
        through_rest: list[float] = []
        for i in range(-10, n):  # 10 warm-up rounds first
            text = f"note {i}: the user mentioned item {i * 7919 % 10007} today"
            began = time.perf_counter()
            store.put(("bench",), f"store_{i + 10}", {"text": text})
            store_ms = (time.perf_counter() - began) * 1000
            began = time.perf_counter()
            response = rest.post(
                "/api/v1/memory", json={"key": f"rest_{i + 10}", "value": text, "namespace": "langgraph.rest"}
            )
            rest_ms = (time.perf_counter() - began) * 1000
            response.raise_for_status()
            if i >= 0:
                through_store.append(store_ms)
                through_rest.append(rest_ms)
        for name, samples in (("store put", through_store), ("REST put", through_rest)):
            print(f"{name:10} p50 {statistics.median(samples):6.2f} ms  p90 {quantile(samples, 0.9):6.2f} ms  (n={n})")
        print(f"ratio p50 {statistics.median(through_store) / statistics.median(through_rest):.2f}x")
        rest.close()
        store.close()
        seconds = asyncio.run(large_batch(WasmindStore(server.base, server.create_key())))
        print(f"6,000 concurrent async operations: {seconds:.2f} s")
    finally:
        servers.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
