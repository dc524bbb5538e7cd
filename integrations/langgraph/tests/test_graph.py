"""A compiled LangGraph graph that remembers across threads through the store: what the
user says in one thread is in the model's prompt in another. The model is LangChain's
fake chat model (no LLM); a callback records the prompts it was given."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.runtime import Runtime

from wasmind_langgraph import WasmindStore


@dataclass
class Context:
    user_id: str


class Prompts(BaseCallbackHandler):
    def __init__(self) -> None:
        self.seen: list[list[BaseMessage]] = []

    def on_chat_model_start(self, serialized: Any, messages: list[list[BaseMessage]], **kwargs: Any) -> None:
        self.seen.extend(messages)


def build(store: WasmindStore, prompts: Prompts, replies: list[str], *, run_async: bool = False):  # noqa: ANN201
    model = GenericFakeChatModel(messages=iter(AIMessage(r) for r in replies), callbacks=[prompts])

    def namespace(runtime: Runtime[Context]) -> tuple[str, ...]:
        return ("users", runtime.context.user_id, "memories")

    def call_model(state: MessagesState, runtime: Runtime[Context]) -> dict:
        said = state["messages"][-1].content
        if said.startswith("remember "):
            runtime.store.put(namespace(runtime), f"fact_{len(said)}", {"text": said.removeprefix("remember ")})
        known = runtime.store.search(namespace(runtime), query=said, limit=3)
        system = SystemMessage("Known about the user: " + "; ".join(i.value["text"] for i in known))
        return {"messages": [model.invoke([system, *state["messages"]])]}

    async def acall_model(state: MessagesState, runtime: Runtime[Context]) -> dict:
        said = state["messages"][-1].content
        if said.startswith("remember "):
            await runtime.store.aput(namespace(runtime), f"fact_{len(said)}", {"text": said.removeprefix("remember ")})
        known = await runtime.store.asearch(namespace(runtime), query=said, limit=3)
        system = SystemMessage("Known about the user: " + "; ".join(i.value["text"] for i in known))
        return {"messages": [await model.ainvoke([system, *state["messages"]])]}

    builder = StateGraph(MessagesState, context_schema=Context)
    builder.add_node("call_model", acall_model if run_async else call_model)
    builder.add_edge(START, "call_model")
    return builder.compile(store=store, checkpointer=InMemorySaver())


def test_the_graph_remembers_across_threads(store: WasmindStore) -> None:
    prompts = Prompts()
    graph = build(store, prompts, ["Noted.", "You like pizza.", "I don't know yet."])
    ada = Context(user_id="ada")
    graph.invoke(
        {"messages": [("user", "remember I like pizza with mushrooms")]},
        {"configurable": {"thread_id": "1"}},
        context=ada,
    )
    answer = graph.invoke(
        {"messages": [("user", "what food do I like?")]}, {"configurable": {"thread_id": "2"}}, context=ada
    )
    assert [m.type for m in answer["messages"]] == ["human", "ai"], "thread 2 starts empty"
    assert answer["messages"][-1].content == "You like pizza."
    assert "I like pizza with mushrooms" in prompts.seen[1][0].content, "the memory came through the store"
    graph.invoke({"messages": [("user", "what food do I like?")]}, {"configurable": {"thread_id": "3"}},
                 context=Context(user_id="bob"))
    assert "pizza" not in prompts.seen[2][0].content, "another user's namespace is empty"
    assert store.list_namespaces() == [("users", "ada", "memories")]


def test_the_graph_remembers_when_run_async(store: WasmindStore) -> None:
    prompts = Prompts()
    graph = build(store, prompts, ["Noted.", "On Friday."], run_async=True)
    grace = Context(user_id="grace")

    async def scenario() -> dict:
        await graph.ainvoke({"messages": [("user", "remember the launch is on Friday")]},
                            {"configurable": {"thread_id": "a"}}, context=grace)
        answer = await graph.ainvoke({"messages": [("user", "when is the launch?")]},
                                     {"configurable": {"thread_id": "b"}}, context=grace)
        await store.aclose()
        return answer

    answer = asyncio.run(scenario())
    assert answer["messages"][-1].content == "On Friday."
    assert "the launch is on Friday" in prompts.seen[1][0].content
