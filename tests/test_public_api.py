"""The engine's public surface (`uats_core.__all__`): every listed name is there, the README's run path works through
it alone, and importing it loads neither torch nor gradio nor storage (a notebook or a script that only plans a
search stays light)."""

from __future__ import annotations

import subprocess
import sys


def test_every_public_name_resolves_and_the_package_stays_light() -> None:
    code = (
        "import sys, uats_core\n"
        "missing = [n for n in uats_core.__all__ if not hasattr(uats_core, n)]\n"
        "print(missing, sorted(m for m in ('torch', 'gradio', 'storage', 'sqlalchemy', 'ui') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True).stdout
    assert out.strip() == "[] []"


def test_a_search_runs_through_the_public_names_alone() -> None:
    import uats_core as u
    from uats_core.worlds.arith.world import get_problem

    request = u.SearchRequest(get_problem("arith-test-0"), u.SearchConfig(method="h-uats", budget=4, seed=0))
    seen: list[str] = []
    result = u.prepare_search(u.validate_request(request)).run(subscribers=[lambda e: seen.append(type(e).__name__)])
    assert isinstance(result, u.RunResult) and result.status == u.RunStatus.FINISHED
    assert seen[0] == "RunStarted" and seen[-1] == "RunEnded" and "IterationEnded" in seen
    assert set(u.method_names()) >= {"best-of-n", "beam", "dvts", "rebase", "dora", "h-uats", "a-uats"}
