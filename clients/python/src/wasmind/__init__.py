"""wasmind: a client of the wasmind REST API — long-term memory searched by meaning and
keyword, and agents in WebAssembly sandboxes that use it.

    from wasmind import Client

    with Client("http://127.0.0.1:8080", api_key="...") as wm:
        wm.memory.put("favourite_food", "pizza with mushrooms")
        print(wm.memory.search("what does the user like to eat?")[0]["value"])
"""

from importlib.metadata import version

from . import models
from ._api import AgentOps, ComponentOps, End, MemoryOps, Operations, Progress, ToolOps
from ._async import AsyncClient
from ._core import Program, Retry, Stream, collect
from ._sync import Client
from .errors import WasmindError

__all__ = [
    "AgentOps",
    "AsyncClient",
    "Client",
    "ComponentOps",
    "End",
    "MemoryOps",
    "Operations",
    "Program",
    "Progress",
    "Retry",
    "Stream",
    "ToolOps",
    "WasmindError",
    "collect",
    "models",
]
__version__ = version("wasmind")
