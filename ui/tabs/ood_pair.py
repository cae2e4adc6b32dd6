"""The OOD pair: when uncertainty changed no decision of a compared H-UATS run (its PRM reads the policy's steps
in distribution), the Compare tab offers the same pair again with the arithmetic world's policy B, whose style
that PRM never saw: the same PRM, problem, seed, budget and knobs, started through the Run button's checks
(ui.tabs.search_events.submit_run) as a form built from the stored run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from uats_core.config import ConfigError, SearchConfig
from uats_core.methods import uncertainty_methods
from uats_core.paths import WORLD_POLICY, WORLD_PRM
from uats_core.status import RunStatus

from ..choices import ARITH, EMBEDDED, POLICY_B, ServerChoices
from ..jobs.pool import QUEUED_POLICY, QUEUED_PRM
from ..views.treedata import RunData
from ..views.uncertainty import uncertainty_changes
from .run_form import dataset_problems
from .search_layout import CONFIG_FIELDS

# what a run row says for the embedded models: the placeholder written when the app queues it, then the name
# the loaded model gives itself (its folder)
_EMBEDDED_AS = {"policy": (QUEUED_POLICY, str(WORLD_POLICY)), "prm": (QUEUED_PRM, str(WORLD_PRM))}


def _same_model(stored: str, spec: str) -> bool:
    if stored == spec:
        return True
    a, b = Path(stored), Path(spec)
    return a.is_absolute() and b.is_absolute() and a.resolve() == b.resolve()


def choice_of(choices: ServerChoices, field_name: str, stored: Any) -> str | None:
    """The name this server offers a stored run's policy or PRM under; None when it offers no such model."""
    offered = choices.policies if field_name == "policy" else choices.prms
    for name, spec in offered.items():
        if (spec is None and stored in _EMBEDDED_AS[field_name]) or (
            spec is not None and stored is not None and _same_model(str(stored), spec)
        ):
            return name
    return None


def _world_problem(choices: ServerChoices, run: dict[str, Any]) -> bool:
    """The run's problem is one of the arithmetic world's the server lists (policy B serves those only)."""
    return any(
        p.id == run.get("problem_id") and p.question == run.get("question") for p in dataset_problems(ARITH, choices)
    )


def offers_ood_pair(choices: ServerChoices, a: RunData, b: RunData) -> bool:
    """Whether the Compare tab offers the OOD pair for this pair: its UATS run finished with no decision changed
    by uncertainty, ran policy A on a world problem, and this server offers policy B and the run's PRM."""
    uats = next((d for d in (a, b) if d.run.get("method") in uncertainty_methods()), None)
    if uats is None or uats.run.get("status") != RunStatus.FINISHED or uncertainty_changes(uats):
        return False
    run = uats.run
    return (
        POLICY_B in choices.policies
        and choice_of(choices, "policy", run.get("policy")) == EMBEDDED
        and choice_of(choices, "prm", run.get("prm")) is not None
        and _world_problem(choices, run)
    )


def ood_pair_form(choices: ServerChoices, run: dict[str, Any]) -> dict[str, Any]:
    """The Search form's fields for `run` with policy B: its PRM, problem, seed, budget and knobs. ConfigError
    naming the field when this server cannot run it."""
    if POLICY_B not in choices.policies:
        raise ConfigError("policy", "this server does not offer the arithmetic world's policy B")
    prm = choice_of(choices, "prm", run.get("prm"))
    if prm is None:
        raise ConfigError(
            "prm", "this pair's PRM is not one of the models this server offers, so its OOD pair cannot be run here"
        )
    if not _world_problem(choices, run):
        raise ConfigError(
            "problem",
            "policy B writes the arithmetic world's steps only; this pair's problem is not one of that world's",
        )
    config = {**SearchConfig().to_dict(), **(run.get("config") or {})}  # a field older run logs lack: its default
    return {
        **{k: config[k] for k in CONFIG_FIELDS},
        "policy": POLICY_B,
        "prm": prm,
        "prm_kind": "detect",
        "policy_opts": "",
        "prm_opts": "",
        "dataset": ARITH,
        "problem": run.get("problem_id"),
        "free_question": "",
        "free_answer": "",
    }
