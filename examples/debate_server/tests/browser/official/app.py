"""The page at `/`, as the Rust server serves it: LangGraph's custom app
(`http.app` in langgraph.json)."""

import os
from pathlib import Path

from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route

PAGE = Path(os.environ["DEBATE_PAGE"]).read_text()


async def page(request):
    return HTMLResponse(PAGE)


app = Starlette(routes=[Route("/", page)])
