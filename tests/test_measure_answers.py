"""Final-answer extraction from \\boxed{} and equivalence of math answers."""

from __future__ import annotations

import pytest

from specpilot.measure.answers import equivalent, extract_answer, last_boxed

EXTRACT = [
    ("so the answer is \\boxed{42}.", "math500", "42"),
    ("\\boxed{1} then \\boxed{\\frac{1}{2}}", "math500", "\\frac{1}{2}"),
    ("\\boxed{\\left\\{1, 2\\right\\}}", "math500", "\\left\\{1, 2\\right\\}"),
    ("nested \\boxed{x^{2} + \\sqrt{y_{1}}} end", "math500", "x^{2} + \\sqrt{y_{1}}"),
    ("\\fbox{7}", "math500", "7"),
    ("\\boxed 5 and more", "math500", "5"),
    ("\\boxed{unclosed", "math500", None),
    ("no box here, 12", "math500", None),
    ("She pays 3 + 4 = 7 dollars, so 1,234 in total.", "gsm8k", "1,234"),
    ("the total is -3.5", "gsm8k", "-3.5"),
    ("boxed wins: 9 then \\boxed{10} then 11", "gsm8k", "10"),
    ("nothing numeric", "gsm8k", None),
]


@pytest.mark.parametrize("text, dataset, expected", EXTRACT)
def test_extract(text: str, dataset: str, expected: str | None) -> None:
    assert extract_answer(text, dataset) == expected


EQUIVALENT = [
    ("42", "42"),
    (" 42 ", "42"),
    ("42.0", "42"),
    ("42.", "42"),
    ("1,234", "1234"),
    ("1,234,567", "1234567"),
    ("$5$", "5"),
    ("\\$5", "5"),
    ("\\dfrac{1}{2}", "\\frac{1}{2}"),
    ("\\tfrac{3}{4}", "\\frac34"),
    ("\\frac12", "\\frac{1}{2}"),
    ("1/2", "\\frac{1}{2}"),
    ("0.5", "\\frac{1}{2}"),
    (".5", "\\frac12"),
    ("-\\frac{1}{2}", "-0.5"),
    ("\\left( 1, 2 \\right)", "(1,2)"),
    ("10 \\text{ cm}", "10"),
    ("\\text{(C)}", "(C)"),
    ("90^\\circ", "90"),
    ("90^{\\circ}", "90"),
    ("25\\%", "25"),
    ("x = 5", "5"),
    ("\\sqrt{2}", "\\sqrt{2}"),
    ("2\\sqrt{3}", "2 \\sqrt{3}"),
]

DIFFERENT = [
    ("41", "42"),
    ("\\frac{1}{3}", "0.33"),
    ("2x+2", "2(x+1)"),  # no symbolic algebra
    ("\\sqrt{2}", "\\sqrt{3}"),
    ("(1,2)", "[1,2]"),
    ("12", "1,2"),  # a comma that is not a thousands separator stays
]


@pytest.mark.parametrize("predicted, reference", EQUIVALENT)
def test_equivalent(predicted: str, reference: str) -> None:
    assert equivalent(predicted, reference)
    assert equivalent(reference, predicted)


@pytest.mark.parametrize("predicted, reference", DIFFERENT)
def test_not_equivalent(predicted: str, reference: str) -> None:
    assert not equivalent(predicted, reference)


def test_no_answer_is_wrong() -> None:
    assert not equivalent(None, "1")
    assert last_boxed("") is None
