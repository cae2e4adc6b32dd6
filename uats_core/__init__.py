"""The search engine: PRM-guided tree search with the PRM's MC-dropout uncertainty, emitting events and knowing
nothing of databases or web pages (docs/architecture.md). Its public surface, the names a caller needs:

- a run: `SearchConfig` (every setting), `Problem`, `SearchRequest` -> `validate_request` (the one validator) ->
  `CheckedSearch` -> `prepare_search` (loads the models) -> `PreparedSearch.run(subscribers=[...])` -> `RunResult`;
- the two protocols a model meets, `Policy` and `PRM` (and `Embedder` for DORA), with `StepOutput` and `Trace`;
- the events a run emits (`RunStarted`, `NodesUpdated`, `IterationEnded`, `RunEnded`) and their records (`Decision`,
  `StepInfo`); `RunStatus` and `NodeStatus`;
- the methods, one module each behind `SearchMethod` (`method_names`, `make_method`);
- the errors, each naming its field: `FieldError`, `ConfigError`, `ProblemError`, `BackendError`.

Everything else is the engine's own and may change without notice. Importing this package loads neither torch nor
a model (tests/test_public_api.py)."""

from .config import SearchConfig
from .errors import BackendError, ConfigError, FieldError, ProblemError
from .events import IterationEnded, NodesUpdated, RunEnded, RunStarted
from .methods import SearchMethod, make_method, method_names
from .problems import Problem
from .protocols import PRM, Embedder, Policy, StepOutput, Trace
from .records import Decision, StepInfo
from .request import CheckedSearch, SearchRequest, validate_request
from .runner import PreparedSearch, RunResult, prepare_search
from .status import NodeStatus, RunStatus

__all__ = [
    "SearchConfig",
    "Problem",
    "SearchRequest",
    "validate_request",
    "CheckedSearch",
    "prepare_search",
    "PreparedSearch",
    "RunResult",
    "Policy",
    "PRM",
    "Embedder",
    "StepOutput",
    "Trace",
    "RunStarted",
    "NodesUpdated",
    "IterationEnded",
    "RunEnded",
    "Decision",
    "StepInfo",
    "RunStatus",
    "NodeStatus",
    "SearchMethod",
    "method_names",
    "make_method",
    "FieldError",
    "ConfigError",
    "ProblemError",
    "BackendError",
]
