"""A LangGraph store (`langgraph.store.base.BaseStore`) backed by wasmind's long-term
memory: items are memories, searched by meaning and keyword on the server."""

from .store import WasmindStore

__all__ = ["WasmindStore"]
