"""The SDK against its own doubles: the memory tools, the tool loop, the doubles' checks,
and the replay check — which passes an agent that gets all its outside data through host
calls and fails one that reads the clock around them."""

import json
import time

import pytest

from wasmind_sdk import (
    AgentFailed,
    Completion,
    Context,
    FetchError,
    FetchRequest,
    MemoryServiceError,
    MindError,
    PutRequest,
    SearchRequest,
    ToolCall,
    ToolError,
    ToolLoop,
    ToolSpec,
    call_memory_tool,
    memory_tools,
)
from wasmind_sdk.host import _snake
from wasmind_sdk.testing import (
    FakeTools,
    FakeWeb,
    InMemoryMemory,
    ReplayDiverged,
    ScriptedMind,
    TestContext,
    check_replay,
)


def call(name, **args):
    return ToolCall.new("c", name, args)


def test_memory_tools_round_trip_and_fail_as_text():
    t = TestContext()
    memory = t.ctx.memory
    put = json.loads(call_memory_tool(memory, call("service_memory_put", key="city", value="Lisbon")))
    assert put["namespace"] == "default"
    got = json.loads(call_memory_tool(memory, call("service_memory_get", key="city")))
    assert (got["found"], got["value"]) == (True, "Lisbon")
    found = json.loads(call_memory_tool(memory, call("service_memory_search", query="lisbon")))
    assert [r["key"] for r in found["results"]] == ["city"]
    listed = json.loads(call_memory_tool(memory, call("service_memory_list")))
    assert listed["count"] == 1
    assert json.loads(call_memory_tool(memory, call("service_memory_delete", key="city"))) == {
        "deleted": True
    }
    assert json.loads(call_memory_tool(memory, call("service_memory_get", key="city"))) == {
        "found": False
    }
    bad = call_memory_tool(memory, call("service_memory_put", key="Not Snake", value="x"))
    assert bad.startswith("Service Memory failed: "), bad
    missing = call_memory_tool(memory, call("service_memory_put", key="city"))
    assert missing == "Service Memory failed: invalid arguments: `value` is required"
    assert call_memory_tool(memory, call("web_search")).startswith("Unknown tool")


def test_memory_tools_specs_name_the_five_tools_with_the_spec_s_bounds():
    specs = {t.name: t for t in memory_tools()}
    assert set(specs) == {
        "service_memory_put",
        "service_memory_get",
        "service_memory_list",
        "service_memory_delete",
        "service_memory_search",
    }
    put = specs["service_memory_put"].parameters
    assert put["required"] == ["key", "value"]
    assert put["properties"]["importance"]["default"] == 5


def test_without_memory_a_tool_call_says_so_and_the_quota_is_kept():
    t = TestContext(without_memory=True)
    text = call_memory_tool(t.ctx.memory, call("service_memory_put", key="a", value="b"))
    assert text == "Service Memory failed: memory channel is not configured."
    full = TestContext(memory=InMemoryMemory(quota=1))
    full.ctx.memory.put(PutRequest("a", "b"))
    with pytest.raises(MemoryServiceError) as e:
        full.ctx.memory.put(PutRequest("c", "d"))
    assert e.value.kind == "quota_exceeded"
    text = call_memory_tool(full.ctx.memory, call("service_memory_put", key="c", value="d"))
    assert text.startswith("Service Memory failed: memory quota exceeded"), text


def test_the_tool_loop_runs_memory_own_and_account_tools_until_an_answer():
    tools = FakeTools().tool(
        ToolSpec("weather", "The weather", {"type": "object"}), lambda args: "sunny"
    )
    t = TestContext(
        ScriptedMind(
            [
                Completion.calls(
                    call("service_memory_put", key="city", value="Porto"),
                    ToolCall.new("c2", "shout", {"text": "hi"}),
                    ToolCall.new("c3", "weather", {}),
                    ToolCall.new("c4", "nope", {}),
                ),
                Completion.answer("Sunny in Porto."),
            ]
        ),
        tools=tools,
    )
    shout = ToolSpec("shout", "Upper-cases", {"type": "object"})
    loop = ToolLoop("You help.").tool(shout, lambda args: args["text"].upper()).account_tools()

    assert loop.run(t.ctx, "weather?") == "Sunny in Porto."

    results = [m.content for m in t.mind.requests[1].messages if m.role.value == "tool"]
    assert json.loads(results[0])["key"] == "city"
    assert results[1:3] == ["HI", "sunny"]
    assert results[3].startswith('Unknown tool "nope"'), results[3]
    assert t.memory.peek("default", "city").value == "Porto"
    assert tools.calls == [("weather", "{}")]
    assert t.progress.reports_of("info")[-1] == "finished after 2 step(s)"


def test_the_tool_loop_fails_on_the_mind_s_error_a_stop_and_the_step_cap():
    failing = TestContext(ScriptedMind([MindError("unavailable", "provider down")]))
    with pytest.raises(AgentFailed, match="provider down"):
        ToolLoop("x").run(failing.ctx, "task")
    stopped = TestContext(ScriptedMind([Completion.answer("never")]))
    stopped.request_stop()
    with pytest.raises(AgentFailed, match="^stopped$"):
        ToolLoop("x").run(stopped.ctx, "task")
    looping = TestContext(ScriptedMind([Completion.calls(call("service_memory_list"))] * 3))
    with pytest.raises(AgentFailed, match="after 2 steps"):
        ToolLoop("x").max_steps(2).run(looping.ctx, "task")


def test_registered_tools_fail_with_a_tool_error():
    t = TestContext()
    with pytest.raises(ToolError) as e:
        t.ctx.tools.call("missing", {})
    assert e.value.kind == "unknown"


def remembering(ctx: Context, task: str) -> str:
    """An agent whose every outside datum comes through a host call."""
    hits = ctx.memory.search(SearchRequest(task))
    ctx.memory.put(PutRequest("last_task", task))
    return ToolLoop(f"{len(hits)} hits").run(ctx, task)


def clocked(ctx: Context, task: str) -> str:
    """An agent that puts a clock reading it took itself into a host call."""
    ctx.memory.put(PutRequest("seen_at", str(time.perf_counter_ns())))
    return "done"


def test_the_replay_check_passes_an_agent_that_replays():
    t = TestContext(ScriptedMind([Completion.answer("ok")]))
    calls = check_replay(t, "hello", remembering)
    assert calls[0].startswith("memory_search(")
    assert any(c.startswith("complete(") for c in calls)
    assert t.mind.remaining() == 0, "the replay was answered from the tape"


def test_the_replay_check_fails_an_agent_that_reads_outside_data_around_host_calls():
    with pytest.raises(ReplayDiverged) as e:
        check_replay(TestContext(), "hello", clocked)
    assert e.value.step == 1
    assert e.value.made.startswith("memory_put(") and e.value.made != e.value.recorded


def test_the_replay_check_fails_an_agent_that_calls_less_on_replay():
    runs = []

    def once(ctx: Context, task: str) -> str:
        runs.append(task)
        if len(runs) == 1:
            ctx.progress.report("info", "first time only")
        return "done"

    with pytest.raises(ReplayDiverged, match="no further call"):
        check_replay(TestContext(), "hello", once)


def test_fetch_reaches_the_web_s_pages_and_is_refused_elsewhere():
    web = FakeWeb().page(
        "https://status.example.com/api", '{"down": ["db"]}', headers=[("Content-Type", "application/json")]
    )
    t = TestContext(web=web)
    r = t.ctx.fetch(
        "https://status.example.com/api", method="post", headers={"X-Probe": "1"}, body="ping"
    )
    assert (r.status, r.json(), r.header("content-type")) == (200, {"down": ["db"]}, "application/json")
    assert web.requests == [
        FetchRequest("https://status.example.com/api", "POST", (("X-Probe", "1"),), b"ping")
    ]
    with pytest.raises(FetchError) as e:
        t.ctx.fetch("https://elsewhere.example.com/")
    assert e.value.kind == "http_request_denied"


def watcher(ctx: Context, task: str) -> str:
    """An agent that fetches what its task names and remembers the answer."""
    page = ctx.fetch(task)
    ctx.memory.put(PutRequest("status", page.text()))
    return f"{page.status} {page.text()}"


def test_the_replay_check_answers_fetch_from_the_tape():
    t = TestContext(web=FakeWeb().page("https://status.example.com/", "all good"))
    calls = check_replay(t, "https://status.example.com/", watcher)
    assert calls[0].startswith("fetch(") and calls[1].startswith("memory_put(")
    assert len(t.web.requests) == 1, "the replay was answered from the tape"


def test_the_replay_check_fails_an_agent_whose_request_reads_the_clock():
    def polling(ctx: Context, task: str) -> str:
        try:
            return ctx.fetch(f"{task}?t={time.perf_counter_ns()}").text()
        except FetchError as e:
            return e.kind

    with pytest.raises(ReplayDiverged) as e:
        check_replay(TestContext(), "https://status.example.com/", polling)
    assert e.value.step == 1 and e.value.made.startswith("fetch(")


def test_generated_variant_cases_map_to_snake_case_kinds():
    assert _snake("MemoryError_QuotaExceeded") == "quota_exceeded"
    assert _snake("ToolError_InvalidArguments") == "invalid_arguments"
    assert _snake("MindError_Stopped") == "stopped"
    assert _snake("ErrorCode_DestinationIpProhibited") == "destination_ip_prohibited"
