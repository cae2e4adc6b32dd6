"""The page's words: one definition per symbol or term (GLOSSARY), written once here and read by the glossary
on the page, the knobs' help (Gradio's `info`, by elem_id) and the tables' column tooltips (by header).

A knob or column whose label is a glossary term takes that term's definition; the others have a line of their
own in FIELD_HELP or COLUMN_HELP. apply_help() fills the built page's components; tests/test_glossary.py
checks that every knob and column has help and every term a definition."""

from __future__ import annotations

import json

import gradio as gr

from uats_core.config import SETTINGS, setting_of
from uats_core.errors import ConfigError
from uats_core.status import NodeStatus, RunStatus

from .views.safe_text import md_text
from .views.scripts import page_script


def _defined(name: str) -> dict[str, str]:
    """A setting's glossary entry, {symbol: definition}, as its declaration gives it."""
    d = setting_of(name)
    return {d.spec.term: d.spec.define}


# Symbols first, in the order a UATS step uses them, then the words the tables and panels use; a setting's symbol
# is defined by its declaration (uats_core/config.py).
GLOSSARY: dict[str, str] = {
    **_defined("budget"),
    **_defined("cost_ratio"),
    "MC-dropout pass": "one PRM forward pass with dropout left on: each pass scores the step a little differently.",
    **_defined("k0"),
    "K": "the passes a step has so far: its K0 first passes plus any extra passes.",
    "R̄": "a step's mean PRM score over its K passes: how good the PRM thinks the step is.",
    "σ²": "the sample variance of a step's K scores: how unsure the PRM is about it.",
    **_defined("alpha"),
    "R̂": "R̄ + α·√(2 ln t / K): R̄ plus a bonus for steps with few passes (an upper confidence bound).",
    **_defined("tau"),
    "ID / OOD": "in / out of distribution: σ² ≤ τ (ID, the score is trusted) or σ² > τ (OOD, the PRM is unsure).",
    "OOD gate": "the test σ² > τ that marks a step OOD; only OOD steps can be re-evaluated.",
    **_defined("delta"),
    "δ test": "an OOD step is re-evaluated when its R̂ ≥ the best ID R̄ − δ (the best R̄ of all when none is ID).",
    "B": "the re-evaluation passes a step may spend, shared over the steps that pass the δ test by softmax(R̂/ν1).",
    **_defined("nu1"),
    "C": "a step's width: the children shared over all its candidates by softmax(R̄/ν2).",
    **_defined("nu2"),
    **_defined("reeval_share"),
    "t": "the iteration: decide over the last step's candidates, then generate and score their children.",
    "extra passes": "the passes a re-evaluated step got after its first K0 (its share of B).",
    "R̄ alone": "the children a step would have got from R̄ of its first K0 passes alone, with the same C.",
    str(NodeStatus.PRUNED): "a candidate given no children: its branch ends there.",
    "answer": "the run's answer: the weighted vote (each answer's finished solutions' scores, summed).",
    "naive answer": "the answer of the single best-scored finished solution, with no vote.",
    "cost": "the compute spent, in PRM passes: c per generated step plus one per pass.",
    "diverging decision": "the first iteration at which a step both runs had got children in one and none in "
    "the other.",
    "shadow scoring": "MC passes run afterwards on a run's steps (a baseline's, an imported run's), stored apart and "
    "not counted in its cost.",
    "shape": "Figure 1's panel of where each candidate's passes fall around its own R̄: their spread, apart from "
    "where on the score scale they sit.",
    "rank moved": "a candidate whose R̄ rank among its step's candidates changed after its extra passes.",
    "children moved": "over the H-UATS run's decisions, the sum of |children given − children R̄ alone would give|.",
    "pair": "the (policy, PRM) pair as the evaluation names it: A:prm (ID, policy A in distribution for the "
    "arithmetic PRM) or B:prm (OOD); blank for other models.",
}

# Knobs other than the settings whose label is a glossary term: their help is that term's definition.
FIELD_TERMS = {"t-slider": "t", "cmp-slider": "t"}
# The settings by their form element id: their help lines are their declarations' (uats_core.config.SETTINGS).
SETTING_HELP = {d.elem_id: d for d in SETTINGS}


def form_name(field: str) -> str:
    """A setting as the form names it, for messages about it: its symbol (tau → τ), after its name when the symbol
    is one Latin letter (budget → budget N); other fields by their own name."""
    try:
        d = setting_of(field)
    except ConfigError:
        return field
    term = d.spec.term
    if not term:
        return field
    return f"{d.name.replace('_', ' ')} {term}" if term.isascii() and len(term) == 1 else term


# Every other knob, by elem_id: one line each.
FIELD_HELP = {
    "dataset": "the problem set the list below offers.",
    "problem": "the problem to search on (pick one, or type to filter).",
    "free-question": "your own question; while not empty it is used instead of the list.",
    "free-answer": "the gold answer of your question, if you want the run graded.",
    "policy": "the model that writes the steps.",
    "prm": "the process reward model that scores each step.",
    "prm-kind": "how the PRM scores a step; detect reads it from the model.",
    "policy-opts": "sampling and loading options of the policy, KEY=VALUE per line.",
    "prm-opts": "loading options of the PRM, KEY=VALUE per line.",
    "start-paused": "start the run paused, then Step lets one iteration through at a time.",
    "f-min": "hide steps whose R̄ is below this.",
    "f-max": "hide steps whose R̄ is above this.",
    "f-depth": "hide steps deeper than this (0 shows every depth).",
    "f-search": "highlight the steps whose text contains this (or the node with this id).",
    "f-hv": "show only the OOD steps (σ² > τ) and their paths.",
    "f-pruned": "hide the candidates that got no children.",
    "f-glyph": "draw each step's MC scores as a small boxplot beside its node.",
    "f-dec": "mark the candidates decided at the iteration shown.",
    "f-dead": "fold the branches that ended without a finished solution.",
    "f-focus": "draw the whole tree, the chosen answer's path, or the selected node's subtree.",
    "follow": "redraw as the running search writes; off keeps the iteration you picked.",
    "fig1-sort": "group the step's candidates under their parents, or sort them by R̄, σ² or R̂.",
    "fig1-per-page": "how many candidates one page of the figure shows.",
    "fig1-siblings": "show only the inspected node and its siblings.",
    "cmp-shadow-k": "MC-dropout passes per step when shadow-scoring the baseline.",
    "cmp-est-b": "the estimator of the pair's second H-UATS run; the first reads the form's (same problem, seed "
    "and knobs).",
    "shadow-k": "MC-dropout passes per step when shadow-scoring the open run (the form's PRM scores them).",
    "import-file": "a file of another tool's runs in the server's import folders.",
    "import-tool": "the tool that wrote the file: its format.",
    "import-row": "which row of a search-and-learn file (one problem per row), from 0.",
    "import-question": "the problem the imported search solved: llm-reasoners' and TreeQuest's files do not hold it "
    "(a search-and-learn row does, so leave it empty there).",
    "import-gold": "the right answer, if you know it: the imported answers are graded against it (empty: ungraded).",
    "cf-n": "the arithmetic world's test problems a batch runs, each with policies A and B, an H-UATS search and "
    "the same search without uncertainty.",
    "c-scope": "mine cases from the open run or from every stored run.",
    "c-split": "the R̄ that separates high from low scores.",
    "c-per": "how many cases each quadrant lists.",
    "c-starred": "list only the nodes you starred.",
    "r-method": "list only the runs of this method.",
    "r-problem": "list only the runs on this problem.",
    "r-outcome": "list only the runs with this outcome.",
    "rep-db": "the results or run log the report reads (never written to).",
    "rep-common": "compare methods on the problems all of them finished only.",
    "curve-pick": "an A-UATS controller's training curve to plot.",
}

# Table columns that are not glossary terms, by header.
COLUMN_HELP = {
    "run": "the run id's first characters (A or B: which run of the pair).",
    "status": "queued, running, paused, finished, failed or cancelled.",
    "outcome": "right or wrong against the gold answer (ungraded without one).",
    "cost spent": "the compute spent, in PRM passes: c per generated step plus one per pass.",
    "iterations": "the iterations t the run took.",
    "nodes": "the steps the run generated.",
    "OOD nodes": "steps whose σ² was above τ when they were decided.",
    "re-evaluated": "steps that got extra passes.",
    "step": "the step's text.",
    "node": "the node id (the same in the tree and in links).",
    "gate": "ID or OOD, and for OOD steps whether the δ test sent them to re-evaluation.",
    "R̄: K0 → after": "R̄ of the first K0 passes, then after the step's extra passes.",
    "R̄ rank": "the step's R̄ rank among its step's candidates (1 = best), before → after the extra passes.",
    "children": "the children the search gave the step.",
    "changed": "what uncertainty changed: re-evaluated, rank moved, children changed (against R̄ alone).",
    "problem": "the problem id.",
    "policy": "the model that wrote the steps (for an imported run: the tool).",
    "PRM": "the process reward model that scored the steps (for an imported run: the tool's own scores).",
    "started": "when the run started.",
    "quadrant": "the case: high or low R̄ (against the split) × high or low σ² (against τ).",
    "step is": "whether the step is right: by the exact checker, else by whether an answer below it is right.",
    "step text": "the step's text.",
    "rank": "the case's place in the list: wrong → right first, then right → wrong, then another answer; within "
    "each, the earlier the run and its counterfactual part, the higher.",
    "policy · PRM": "the model that wrote the steps (policy B: out of distribution for the arithmetic PRM) and the "
    "process reward model that scored them.",
    "N · seed": "the pair's budget N and random seed.",
    "H-UATS answer": "the H-UATS run's answer, and whether it is right against the gold answer.",
    "without uncertainty": "the answer of the same search with uncertainty switched off (one pass a node, the gate "
    "never open, the same random streams), and whether it is right.",
    "direction": "what uncertainty did to the answer: wrong → right (without it wrong, with it right), right → wrong, "
    "or another answer (neither right, or ungraded).",
    "batch": "the case batch's id, its first characters.",
    "state": "queued, running, finished, failed or cancelled; '(cancel asked)' while a going batch stops.",
    "searches done": "the batch's searches that ended so far, of all it holds.",
    RunStatus.FAILED.value: "of them, the searches that ended failed.",
    "started (UTC)": "when the batch was queued, in UTC.",
    "took": "from queued to the batch's end (a going batch: so far).",
    "they part at": "the first decision where the run and its counterfactual decided differently: its iteration t and "
    "node; a click opens the two there.",
}
COLUMN_TERMS = {
    "N": "N",
    "R̄": "R̄",
    "σ²": "σ²",
    "K": "K",
    "t": "t",
    "answer": "answer",
    "naive answer": "naive answer",
    "cost": "cost",
    "extra passes": "extra passes",
    "R̄ alone": "R̄ alone",
    "children moved": "children moved",
    "pair": "pair",
}


def field_help(elem_id: str) -> str | None:
    """A knob's help line: a setting's declared help, else its term's definition, else its own line; None when it
    has none."""
    if elem_id in SETTING_HELP:
        return SETTING_HELP[elem_id].spec.help
    term = FIELD_TERMS.get(elem_id)
    return f"{term}: {GLOSSARY[term]}" if term else FIELD_HELP.get(elem_id)


def column_help(header: str) -> str | None:
    """A column's tooltip: its term's definition, a setting's declared help (a column named as a setting), or its
    own line."""
    term = COLUMN_TERMS.get(header)
    if term:
        return f"{term}: {GLOSSARY[term]}"
    if header in SETTING_HELP:
        return SETTING_HELP[header].spec.help
    return COLUMN_HELP.get(header)


def apply_help(demo: gr.Blocks) -> None:
    """Give every knob of the built page its help line (shown under its label). Set here, after the tabs are
    built, so the words live in one table and the tab modules stay as they are."""
    for block in demo.blocks.values():
        text = field_help(getattr(block, "elem_id", None) or "")
        if text is not None and hasattr(block, "info"):
            block.info = text


def glossary_md() -> str:
    """The glossary as Markdown: one line per term, in GLOSSARY's order."""
    return "\n".join(f"- **{md_text(term)}**: {md_text(text)}" for term, text in GLOSSARY.items())


def column_tips_head(tables: dict[str, list[str]]) -> str:
    """A <script> for the page head that gives each listed table's column headers their help as a tooltip
    (title), whenever Gradio (re)draws the table: {elem_id: headers}."""
    tips = {eid: {h: column_help(h) for h in headers if column_help(h)} for eid, headers in tables.items()}
    return (
        "<script>(() => { const tips = "
        + json.dumps(tips, ensure_ascii=False).replace("</", "<\\/")
        + ";\n"
        + COLUMN_TIPS_JS
        + "})();</script>"
    )


COLUMN_TIPS_JS = page_script("column_tips.js")
