"""LaTeX that goes into a paper as it is: a booktabs table whose every cell compiles under pdfLaTeX with the
two packages the snippet names (booktabs, amsmath).

Step texts are model output: math the policy wrote ($…$, \\(…\\), \\boxed{…}) is kept as math when it is
simple enough to compile for sure (a whitelist of macros, balanced braces, no double scripts); anything else
is printed literally. The app's symbols (R̄, σ², τ, …) become their math forms; a character pdfLaTeX cannot
typeset is written as "?" and counted in a comment, never left to stop the compiler."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import Any

PREAMBLE = ("booktabs", "amsmath", "array")  # array: ragged-right wrapping columns

_ESCAPES = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
}
# what pdfLaTeX's default fonts (OT1) lack, as math or text commands
_SYMBOLS = {
    "σ": r"$\sigma$",
    "τ": r"$\tau$",
    "δ": r"$\delta$",
    "ν": r"$\nu$",
    "μ": r"$\mu$",
    "α": r"$\alpha$",
    "β": r"$\beta$",
    "γ": r"$\gamma$",
    "λ": r"$\lambda$",
    "π": r"$\pi$",
    "ε": r"$\varepsilon$",
    "²": r"$^2$",
    "³": r"$^3$",
    "≤": r"$\le$",
    "≥": r"$\ge$",
    "≠": r"$\ne$",
    "≈": r"$\approx$",
    "×": r"$\times$",
    "÷": r"$\div$",
    "±": r"$\pm$",
    "·": r"$\cdot$",
    "∈": r"$\in$",
    "→": r"$\to$",
    "←": r"$\leftarrow$",
    "−": r"$-$",
    "√": r"$\surd$",
    "∞": r"$\infty$",
    "°": r"$^\circ$",
    "–": "--",
    "—": "---",
    "…": r"\ldots{}",
    "“": "``",
    "”": "''",
    "‘": "`",
    "’": "'",
    "\u00a0": "~",
    "★": r"$\star$",
    "✓": "yes",
    "✗": "no",
    "⚠": "!",
}
_COMBINING = {"\u0304": r"\bar", "\u0302": r"\hat", "\u0303": r"\tilde", "\u0307": r"\dot"}
_MATH_MACROS = frozenset(
    [
        "frac",
        "dfrac",
        "tfrac",
        "sqrt",
        "cdot",
        "times",
        "div",
        "pm",
        "mp",
        "le",
        "ge",
        "leq",
        "geq",
        "ne",
        "neq",
        "approx",
        "equiv",
        "sim",
        "pi",
        "infty",
        "circ",
        "ldots",
        "cdots",
        "dots",
        "boxed",
        "text",
        "mathrm",
        "mathbf",
        "operatorname",
        "quad",
        "qquad",
        "left",
        "right",
        "lfloor",
        "rfloor",
        "lceil",
        "rceil",
        "in",
        "notin",
        "cup",
        "cap",
        "alpha",
        "beta",
        "gamma",
        "delta",
        "epsilon",
        "varepsilon",
        "theta",
        "lambda",
        "mu",
        "nu",
        "sigma",
        "tau",
        "phi",
        "varphi",
        "omega",
        "Delta",
        "Sigma",
        "Omega",
        "sin",
        "cos",
        "tan",
        "log",
        "ln",
        "exp",
        "min",
        "max",
        "binom",
        "mod",
        "pmod",
        "bmod",
    ]
)
_MATH = re.compile(r"\$([^$]+)\$|\\\((.+?)\\\)")
_BOXED = re.compile(r"\\boxed\{")


def latex_escape(text: Any) -> str:
    """`text` printed literally: every character LaTeX treats specially escaped, newlines as spaces."""
    return "".join(_ESCAPES.get(ch, ch) for ch in str(text)).replace("\n", " ")


# accents pdfLaTeX's default OT1 encoding builds (ogonek, eth, thorn, eng need T1 and stop the compiler)
_OT1_ACCENTS = frozenset("\u0300\u0301\u0302\u0303\u0304\u0306\u0307\u0308\u030a\u030b\u030c\u0327")
_OT1_LETTERS = frozenset("ßæÆøØœŒłŁı")


def _latin(ch: str) -> bool:
    """A Latin letter LaTeX's utf8 input typesets in OT1: é, ñ, ő, ß… (checked by compiling U+00A0–U+017F)."""
    if ch in _OT1_LETTERS:
        return True
    d = unicodedata.normalize("NFD", ch)
    return (
        ord(ch) < 0x180 and len(d) > 1 and d[0].isascii() and d[0].isalpha() and all(c in _OT1_ACCENTS for c in d[1:])
    )


def _unicode(text: str, missing: list[str]) -> str:
    """Non-ASCII characters in their LaTeX forms (text already escaped); unknown ones as '?'."""
    out: list[str] = []
    for ch in unicodedata.normalize("NFC", text):
        if ch in _COMBINING and out:  # a letter with a bar (R̄): the letter as math with that accent
            prev = out.pop()
            out.append(f"${_COMBINING[ch]}{{{prev}}}$" if len(prev) == 1 and prev.isalnum() else prev)
        elif ord(ch) < 128:
            out.append(ch)
        elif ch in _SYMBOLS:
            out.append(_SYMBOLS[ch])
        elif _latin(ch):
            out.append(ch)
        else:
            missing.append(ch)
            out.append("?")
    return "".join(out)


def _group_end(s: str, i: int) -> int:
    """Index just past the brace group opening at s[i] == '{', or -1 when it never closes."""
    depth = 0
    for j in range(i, len(s)):
        if s[j] == "\\":
            continue
        if s[j] == "{" and (j == 0 or s[j - 1] != "\\"):
            depth += 1
        elif s[j] == "}" and (j == 0 or s[j - 1] != "\\"):
            depth -= 1
            if depth == 0:
                return j + 1
    return -1


_ARGS = {
    "frac": 2,
    "dfrac": 2,
    "tfrac": 2,
    "binom": 2,
    "sqrt": 1,
    "boxed": 1,
    "text": 1,
    "mathrm": 1,
    "mathbf": 1,
    "operatorname": 1,
}
_TEXT_ARG = re.compile(r"\\(?:text|mathrm|operatorname)\{([^{}]*)\}")


def _flat(m: str) -> str:
    """`m` with every brace group (innermost first) replaced by '@': what a script or macro sees as one operand."""
    while True:
        flat = re.sub(r"(?<!\\)\{[^{}]*(?<!\\)\}", "@", m)
        if flat == m:
            return flat
        m = flat


def _safe_math(m: str) -> bool:
    """True when `m` (math-mode content) surely compiles with amsmath: ASCII, balanced braces, whitelisted
    macros with their arguments, no alignment or comment characters, \\left and \\right paired, plain words in
    \\text{}, no double super- or subscript."""
    if not m or m != m.strip() or not m.isascii() or re.search(r"[&#%$~]|\\\\|\^\^|\\$", m):
        return False
    names = re.findall(r"\\([A-Za-z]+)", m)
    if any(n not in _MATH_MACROS for n in names) or names.count("left") != names.count("right"):
        return False
    if re.search(r"\\(?![A-Za-z{}|,;! ])", m):
        return False
    if any(not re.fullmatch(r"[A-Za-z0-9 .,:;!?'()+=/-]*", t) for t in _TEXT_ARG.findall(m)):
        return False
    flat = _flat(m)
    if re.search(r"(?<!\\)[{}]", flat):
        return False  # unbalanced
    for name, n in _ARGS.items():  # every argument there: a group or one character
        if re.search(r"\\%s(?![A-Za-z]|%s)" % (name, r"\s*(?:\[[^\]]*\])?" + r"\s*(?:@|[A-Za-z0-9])" * n), flat):
            return False
    # x^2^3 is "Double superscript": a script, its operand, then the same script again
    return not re.search(r"([\^_])\s*(\\[A-Za-z]+|.)\s*\1", flat) and not re.search(r"[\^_]\s*$", flat)


def latex_text(text: Any, missing: list[str] | None = None) -> str:
    """A cell's text for a LaTeX table: simple math kept as math, everything else printed literally."""
    missing = [] if missing is None else missing
    s = " ".join(str(text).split())
    out: list[str] = []
    pos = 0
    while pos < len(s):
        m = _MATH.search(s, pos)
        b = _BOXED.search(s, pos)
        if b is not None and (m is None or b.start() < m.start()):  # a bare \boxed{…} outside $…$
            end = _group_end(s, b.end() - 1)
            body = s[b.start() : end] if end > 0 else ""
            if end > 0 and _safe_math(body):
                out += [_unicode(latex_escape(s[pos : b.start()]), missing), f"${body}$"]
                pos = end
                continue
            out.append(_unicode(latex_escape(s[pos : b.end()]), missing))
            pos = b.end()
            continue
        if m is None:
            break
        body = m.group(1) if m.group(1) is not None else m.group(2)
        out.append(_unicode(latex_escape(s[pos : m.start()]), missing))
        out.append(f"${body}$" if _safe_math(body) else _unicode(latex_escape(m.group(0)), missing))
        pos = m.end()
    out.append(_unicode(latex_escape(s[pos:]), missing))
    return re.sub(r"(?<!\\)\$\$", "", "".join(out))  # adjacent math joined: $\sigma$$^2$ is $\sigma^2$


def _numeric(values: Sequence[Any]) -> bool:
    vals = [v for v in values if v is not None]
    return bool(vals) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals)


def latex_table(
    header: Sequence[str],
    rows: Sequence[Sequence[Any]],
    caption: str,
    label: str,
    cell: Callable[[Any, str], str] = lambda v, h: str(v),
    wrap: Mapping[str, float] | None = None,
    font: str = r"\small",
    colsep_pt: int | None = None,
) -> str:
    """A booktabs table snippet; `cell(value, header)` formats a value. Numbers are right-aligned and a long
    text column wraps (a paper's column is narrow). A table with many columns and few rows (a comparison of
    two runs) is written one field per row, so it fits a column too. `wrap` names the columns that wrap, each
    with its share of the line's width (then no table is written one field per row); `font` and `colsep_pt`
    (the space between columns) fit a wide table into a column."""
    header, rows = list(header), [list(r) for r in rows]
    texts = [[cell(v, h) for v, h in zip(r, header)] for r in rows]
    numeric = [_numeric([r[j] for r in rows if j < len(r)]) for j in range(len(header))]
    widths_of = [None if wrap is None else wrap.get(h) for h in header]
    if wrap is None and len(header) > 8 and len(rows) <= 4:  # transposed: field | first run | second run
        fields = [[h, *[t[j] if j < len(t) else "" for t in texts]] for j, h in enumerate(header)]
        header, texts = fields[0], fields[1:]
        numeric = [False] * len(header)
    missing: list[str] = []
    head = [latex_text(h, missing) for h in header]
    body = [[latex_text(c, missing) for c in t] for t in texts]
    widths = [max((len(r[j]) for r in body if j < len(r)), default=0) for j in range(len(head))]
    if wrap is None:
        widths_of = [0.42 if not num and w > 28 else None for num, w in zip(numeric, widths)]
    # a wrapping column is ragged right: justified, its narrow lines were stretched (20 underfull boxes in one table)
    spec = "".join(
        r">{\raggedright\arraybackslash}p{%g\linewidth}" % share if share else ("r" if num else "l")
        for num, share in zip(numeric, widths_of)
    )
    packages = " ".join(r"\usepackage{%s}" % p for p in PREAMBLE)
    lines = [f"% needs {packages} in the preamble", r"\begin{table}[t]", r"\centering", font]
    if colsep_pt is not None:
        lines.append(r"\setlength{\tabcolsep}{%dpt}" % colsep_pt)  # inside the float: this table only
    lines += [r"\begin{tabular}{" + spec + "}", r"\toprule", " & ".join(head) + r" \\", r"\midrule"]
    lines += [" & ".join(r) + r" \\" for r in body]
    lines += [
        r"\bottomrule",
        r"\end{tabular}",
        r"\caption{" + latex_text(caption, missing) + "}",
        r"\label{tab:" + re.sub(r"[^A-Za-z0-9:-]", "-", label) + "}",
        r"\end{table}",
    ]
    if missing:
        lines.insert(
            1,
            f"% {len(missing)} character(s) pdfLaTeX cannot typeset are written as ?: "
            + " ".join(f"U+{ord(c):04X}" for c in dict.fromkeys(missing)),
        )
    return "\n".join(lines) + "\n"
