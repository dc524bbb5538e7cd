"""An agent that fetches the URL its task names (`ctx.fetch`: `wasi:http` through the
host's egress door) and answers with the status and body; what it got is remembered under
`fetched`. Used by `python_agents::an_agent_fetches_through_the_egress_door`."""

from wasmind_sdk import Context, PutRequest, export_agent


def run(ctx: Context, task: str) -> str:
    response = ctx.fetch(task)
    ctx.memory.put(PutRequest("fetched", response.text(), namespace="web"))
    return f"{response.status} {response.text()}"


WitWorld = export_agent(run)
