"""Reports of an evaluation: statistics (stats), Markdown tables (tables), plotly figures (figures), the
Figure 2 PRM analysis (steps), assembling them (build) and writing them to a folder (export); from results ledgers,
the results page (page, page_sections, prose), its verdicts by one rule (verdicts), the comparisons and claims they
read (compare, claims, answer) and a rerun of the same cells beside the first recording (rerun).

No SQL here: the entry point uats.report (the `uats` command's package) reads the run log through storage.eval_results
and hands the rows in (`uats report --db runs/eval.db --out runs/reports`).
"""

from .build import Report, assemble_report, default_roles
from .export import write_report
from .stats import t_interval, t_quantile, wilson

__all__ = ["Report", "assemble_report", "default_roles", "write_report", "t_interval", "t_quantile", "wilson"]
