"""Final answers of math outputs: extraction from \\boxed{...} and equivalence to a reference.

`extract_answer` takes the content of the last \\boxed{} (or \\fbox{}) with balanced braces; for
gsm8k, when nothing is boxed, the last number in the text. `equivalent` compares after
`normalize` (spacing, \\left/\\right, \\dfrac/\\tfrac, units in \\text{}, $, degrees, percent,
thousands commas, trailing .0, a/b vs \\frac{a}{b}, \\frac12) and, where both sides are plain
numbers or fractions, by value. There is no symbolic algebra: "2x+2" and "2(x+1)" differ.
"""

from __future__ import annotations

import re
from fractions import Fraction

_BOX_COMMANDS = ("\\boxed", "\\fbox")
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")


def last_boxed(text: str) -> str | None:
    """The content of the last \\boxed{...} in `text`, braces balanced; None if there is none
    (or it is never closed)."""
    start = max(text.rfind(cmd) for cmd in _BOX_COMMANDS)
    if start < 0:
        return None
    i = start + (len("\\boxed") if text.startswith("\\boxed", start) else len("\\fbox"))
    while i < len(text) and text[i] == " ":
        i += 1
    if i >= len(text):
        return None
    if text[i] != "{":  # "\boxed 5": up to the next space or $
        return re.split(r"[\s$]", text[i:], maxsplit=1)[0] or None
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1 : j]
    return None


def extract_answer(text: str, dataset: str) -> str | None:
    """The final answer of an output: the last boxed one; for gsm8k, else the last number."""
    boxed = last_boxed(text)
    if boxed is not None or dataset != "gsm8k":
        return boxed
    numbers = _NUMBER.findall(text)
    return numbers[-1] if numbers else None


def _strip_text_commands(s: str) -> str:
    # \text{cm} after something else is a unit: drop it; a lone \text{(A)} is the answer: unwrap.
    pattern = r"\\(?:text|textbf|textrm|mbox|mathrm)\s*\{([^{}]*)\}"
    without = re.sub(pattern, "", s).strip()
    if without and re.search(r"[\w}]", without):
        return without
    return re.sub(pattern, r"\1", s)


def normalize(answer: str) -> str:
    """A canonical spelling of an answer, for string comparison."""
    s = answer.strip()
    s = s.replace("\\!", "").replace("\\,", "").replace("\\;", "").replace("\\ ", "")
    s = s.replace("\\left", "").replace("\\right", "").replace("\\$", "").replace("$", "")
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    s = re.sub(r"\^\s*\{?\\circ\}?", "", s)  # degrees
    s = s.replace("\\%", "").replace("%", "")
    s = _strip_text_commands(s)
    s = re.sub(r"\s+", "", s)
    s = s.rstrip(".")
    s = re.sub(r"^[a-zA-Z]\w*=", "", s)  # "x=5" -> "5"
    while re.search(r"\d,\d{3}(?!\d)", s):
        s = re.sub(r"(\d),(\d{3})(?!\d)", r"\1\2", s)
    s = re.sub(r"\\frac(\d)(\d)", r"\\frac{\1}{\2}", s)  # \frac12
    s = re.sub(r"\\frac\{([^{}]*)\}(\d)", r"\\frac{\1}{\2}", s)  # \frac{1}2
    s = re.sub(r"\\frac(\d)\{", r"\\frac{\1}{", s)  # \frac1{2}
    s = re.sub(r"^(-?\d+)/(\d+)$", r"\\frac{\1}{\2}", s)  # 1/2
    s = re.sub(r"(\d+)\.0+(?!\d)", r"\1", s)  # 5.0 -> 5
    s = re.sub(r"(?<![\d.])\.(\d)", r"0.\1", s)  # .5 -> 0.5
    return s


def _value(s: str) -> Fraction | None:
    """The exact value of a normalized plain number or fraction, else None."""
    m = re.fullmatch(r"(-?)\\frac\{(-?\d+)\}\{(-?\d+)\}", s)
    if m:
        sign = -1 if m.group(1) else 1
        den = int(m.group(3))
        return sign * Fraction(int(m.group(2)), den) if den else None
    if re.fullmatch(r"-?\d+(?:\.\d+)?", s):
        return Fraction(s)
    return None


def equivalent(predicted: str | None, reference: str) -> bool:
    """Whether a predicted answer means the reference answer (see the module docstring)."""
    if predicted is None:
        return False
    p, r = normalize(predicted), normalize(reference)
    if p == r:
        return True
    pv, rv = _value(p), _value(r)
    if pv is None or rv is None:
        return False
    return abs(pv - rv) <= Fraction(1, 10**6) * max(1, abs(rv))
