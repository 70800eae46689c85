"""The runner the SDK check scripts share: a script registers its checks
with `@check` and ends with `run(...)`. Each check prints one line, then
`N passed, N failed`; the exit status is 1 when any failed."""

import asyncio
import sys
import traceback

from langgraph_sdk import get_client

CHECKS = []


def check(fn):
    """Registers `fn` (an async function of what `run` gives it)."""
    CHECKS.append(fn)
    return fn


async def _main(arg):
    passed = failed = 0
    for fn in CHECKS:
        try:
            await fn(arg)
            passed += 1
            print(f"ok   {fn.__name__}")
        except Exception:
            failed += 1
            print(f"FAIL {fn.__name__}")
            traceback.print_exc()
    print(f"{passed} passed, {failed} failed")
    return failed == 0


def run(give=lambda url: get_client(url=url)):
    """Runs every check on `give(url)`, the URL the first argument: the
    official client by default."""
    sys.exit(0 if asyncio.run(_main(give(sys.argv[1]))) else 1)
