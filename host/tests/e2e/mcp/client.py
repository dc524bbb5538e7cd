"""One MCP client session against wasmind, driven by the end-to-end tests (host/tests/e2e/mcp.rs)
with the official MCP Python SDK: nothing of the protocol is written here.

    python client.py http URL KEY            # streamable HTTP, `Authorization: Bearer KEY`
    python client.py stdio WASMIND URL KEY   # `WASMIND mcp --url URL`, WASMIND_API_KEY=KEY

Reads the steps as a JSON array on stdin, runs them in one session after `initialize`, and
prints one JSON object on stdout:

    {"server": <initialize result>, "results": [<one per step>]}
    {"error": "<what failed>", "http_statuses": [<statuses the HTTP client saw>]}

Steps: {"op": "tools"} answers the tools/list result; {"op": "call", "name", "arguments"}
answers the tools/call result. Results are in their wire form (camelCase, as JSON-RPC sent them).
"""

import asyncio
import json
import sys

import httpx2
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


def wire(result):
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


async def run(read, write, steps):
    async with ClientSession(read, write) as session:
        server = await session.initialize()
        results = []
        for step in steps:
            if step["op"] == "tools":
                results.append(wire(await session.list_tools()))
            elif step["op"] == "call":
                results.append(wire(await session.call_tool(step["name"], step.get("arguments", {}))))
            else:
                raise ValueError(f"unknown step {step!r}")
        return {"server": wire(server), "results": results}


async def over_http(url, key, steps, statuses):
    async def note(response):
        statuses.append(response.status_code)

    headers = {"Authorization": f"Bearer {key}"}
    async with httpx2.AsyncClient(headers=headers, event_hooks={"response": [note]}) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            return await run(read, write, steps)


async def over_stdio(wasmind, url, key, steps):
    server = StdioServerParameters(command=wasmind, args=["mcp", "--url", url], env={"WASMIND_API_KEY": key})
    async with stdio_client(server) as (read, write):
        return await run(read, write, steps)


async def main(argv):
    steps = json.load(sys.stdin)
    statuses = []
    try:
        if argv[1] == "http":
            out = await asyncio.wait_for(over_http(argv[2], argv[3], steps, statuses), 120)
        else:
            out = await asyncio.wait_for(over_stdio(argv[2], argv[3], argv[4], steps), 120)
    except BaseException as e:  # an exception group from the SDK's task groups included
        out = {"error": f"{type(e).__name__}: {e!r}", "http_statuses": statuses}
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv))
