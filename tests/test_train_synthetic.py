"""The offline code and writing prompt sources (train/synthetic.py) and their held-out filter."""

from __future__ import annotations

import textwrap

import pytest

from specpilot.train import prompts as P
from specpilot.train import synthetic as S

MODULE = textwrap.dedent(
    '''
    def public(a, b=2, *args, key=None):
        """Return the sum of a and b, scaled by key when key is given; a long enough docstring."""

    def _private(x):
        """Private helpers are skipped even with a docstring long enough to count as one."""

    def short(x):
        """Too short."""

    class Box:
        def fill(self, items, limit=3):
            """Put at most limit items into the box and return the ones that did not fit."""
    '''
)


def test_code_prompts_are_stubs_of_documented_public_functions(tmp_path) -> None:
    (tmp_path / "mod.py").write_text(MODULE)
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "test_mod.py").write_text(MODULE.replace("public", "from_tests"))
    (tmp_path / "broken.py").write_text("def (:\n")
    prompts = S.code_prompts(tmp_path)
    texts = [p[0]["content"] for p in prompts]
    assert len(texts) == 2, texts
    assert all(t.startswith(S.CODE_INSTRUCTION) and "```python\n" in t for t in texts)
    assert "def public(a, b=2, *args, key=None):" in texts[0]
    assert "def fill(items, limit=3):" in texts[1]  # self dropped, default kept on its argument
    assert "from_tests" not in "".join(texts) and "_private" not in "".join(texts)


def test_writing_prompts_cover_every_template_and_are_seeded() -> None:
    a, b, c = S.writing_prompts(0), S.writing_prompts(0), S.writing_prompts(1)
    assert a == b and a != c
    assert len(a) == len(S.TEMPLATES) * len(S.SUBJECTS) + 4 * len(S.SUBJECTS)
    texts = {p[0]["content"] for p in a}
    assert S.TEMPLATES[0].format(s=S.SUBJECTS[0]) in texts


def test_synthetic_prompts_go_through_the_held_out_filter(tmp_path, monkeypatch) -> None:
    banned = S.TEMPLATES[1].format(s=S.SUBJECTS[2])
    monkeypatch.setattr(S, "code_prompts", lambda: [[{"role": "user", "content": "code task"}]])
    base = P.PromptSet([[{"role": "user", "content": "an evals prompt"}]], "evals", {})
    mixed = P.with_synthetic(base, P.HeldOut([banned]), seed=0)
    texts = [p[-1]["content"] for p in mixed.prompts]
    assert banned not in texts and "code task" in texts and "an evals prompt" in texts
    assert mixed.counts["writing_held_out"] == 1 and mixed.counts["code"] == 1
    assert (
        mixed.counts["prompts"]
        == len(texts)
        == 2 + mixed.counts["writing"] + len(S.knowledge_prompts(0))
    )


def test_knowledge_prompts_cover_every_concept_and_are_seeded() -> None:
    a, b, c = S.knowledge_prompts(0), S.knowledge_prompts(0), S.knowledge_prompts(1)
    assert a == b and a != c
    assert len(a) == 2 * len(S.QUESTION_TEMPLATES) * len(S.CONCEPTS)
    texts = [p[0]["content"] for p in a]
    assert S.QUESTION_TEMPLATES[0].format(c=S.CONCEPTS[0]) in texts
    assert sum(t.startswith("Extract every name") for t in texts) > 0


def test_package_code_prompts_cap_skip_and_record_versions(tmp_path) -> None:
    """Stubs from installed packages: tests and vendored folders skipped, docstrings over
    MAX_DOC_CHARS left out, each docstring once across packages, at most `per_package` a
    package spread over its files, and the version of each package found."""
    site = tmp_path / "site"
    pkg = site / "alpha"
    (pkg / "tests").mkdir(parents=True)
    (pkg / "_vendor").mkdir()
    funcs = "".join(
        f'def f{i}(x):\n    """Return x plus {i}, a documented function long enough to count."""\n'
        for i in range(10)
    )
    (pkg / "core.py").write_text(funcs)
    (pkg / "tests" / "test_core.py").write_text(funcs.replace("def f", "def t"))
    (pkg / "_vendor" / "v.py").write_text(funcs.replace("def f", "def v"))
    long_doc = "x " * S.MAX_DOC_CHARS
    (pkg / "big.py").write_text(f'def big(y):\n    """{long_doc}"""\n')
    (site / "beta").mkdir()
    (site / "beta" / "dup.py").write_text(funcs.replace("def f", "def g"))  # same docstrings
    prompts, versions = S.package_code_prompts(
        ("alpha", "beta", "absent"), per_package=4, site=site
    )
    texts = [p[0]["content"] for p in prompts]
    assert len(texts) == 4  # 10 stubs, every 3rd; beta's docstrings were all seen in alpha
    assert "def f0(x):" in texts[0] and "def f9(x):" in texts[-1]
    assert not any(name in "".join(texts) for name in ("def t", "def v", "def big", "def g"))
    assert set(versions) == {"alpha", "beta"}  # not installed as distributions here: "unknown"
    assert versions["alpha"] == "unknown"


def test_code_packages_needs_synthetic(tmp_path) -> None:
    with pytest.raises(SystemExit):
        P.main([str(tmp_path / "out.jsonl"), "--code-packages", "default"])
