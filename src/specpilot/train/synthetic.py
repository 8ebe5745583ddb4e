"""Offline training prompts for code and open-ended chat, to go with the evals prompts.

The evals registry (train/prompts.py) is mostly short-answer tasks, while HumanEval asks for code
and MT-Bench for long free-form answers; a drafter trained only on the former guesses poorly on
the latter (docs/LOG.md run 15: block-position-1 accuracy 62% on training-like prompts, 17% on the
held-out ones). Two more sources, built on this machine with nothing downloaded:
- code: the public functions of the running Python's standard library that carry a docstring,
  parsed with `ast` (never imported), each shown as a signature + docstring stub with the same
  instruction our HumanEval prompts use (measure/datasets.py's CODE_INSTRUCTION);
- writing: task templates (essays, emails, stories, explanations, role play, plans, comparisons,
  word problems with random numbers) crossed with everyday subjects, all written for this file.
Both go through the same held-out filter (HumanEval and MT-Bench, exact and near-duplicate) as
the evals prompts, in `prompts.training_prompts`' caller.
"""

from __future__ import annotations

import ast
import random
import sys
import sysconfig
from collections.abc import Iterable, Iterator
from pathlib import Path

from specpilot.measure.datasets import CODE_INSTRUCTION
from specpilot.train.prompts import Message

# stdlib folders that are tests, demos, vendored code or generated tables
SKIP_DIRS = {
    "test", "tests", "idlelib", "tkinter", "turtledemo", "lib2to3", "ensurepip", "site-packages",
    "dist-packages", "__pycache__", "pydoc_data", "encodings", "venv", "__phello__",
}  # fmt: skip
MIN_DOC_CHARS = 60
MAX_DOC_CHARS = 1500  # long API references would crowd the answer out of --seq-len
# third-party packages for `package_code_prompts` (import name; distribution where it differs)
CODE_PACKAGES = (
    "numpy", "scipy", "sympy", "networkx", "mpmath", "matplotlib", "torch", "transformers",
    "pydantic", "setuptools", "pip", "huggingface_hub", "hypothesis", "PIL", "rich", "jinja2",
    "click", "requests", "packaging", "attr",
)  # fmt: skip
DISTRIBUTIONS = {"PIL": "pillow", "attr": "attrs"}
PACKAGE_SKIP_DIRS = {"test", "tests", "testing", "_vendor", "vendor", "__pycache__"}
PER_PACKAGE = 2500


def _functions(tree: ast.Module) -> Iterator[ast.FunctionDef]:
    """Top-level functions and the methods of top-level classes."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            yield node
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            yield from (n for n in node.body if isinstance(n, ast.FunctionDef))


def _stub(fn: ast.FunctionDef, doc: str) -> str:
    args = fn.args
    if args.args and args.args[0].arg in ("self", "cls"):
        args = ast.arguments(
            posonlyargs=args.posonlyargs,
            args=args.args[1:],
            vararg=args.vararg,
            kwonlyargs=args.kwonlyargs,
            kw_defaults=args.kw_defaults,
            kwarg=args.kwarg,
            defaults=args.defaults[-len(args.args[1:]) :] if args.args[1:] else [],
        )
    body = "\n".join(f"    {line}".rstrip() for line in doc.strip().splitlines())
    return f'def {fn.name}({ast.unparse(args)}):\n    """\n{body}\n    """\n'


def _documented(root: Path, skip: set[str], seen: set[str]) -> Iterator[str]:
    """Stubs of the documented public functions under root, in file order; `seen` docstrings
    are skipped (and new ones added), so a docstring is used once across roots."""
    for path in sorted(root.rglob("*.py")):
        if skip & set(path.relative_to(root).parts):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for fn in _functions(tree):
            doc = ast.get_docstring(fn)
            if fn.name.startswith("_") or not doc or doc in seen:
                continue
            if not MIN_DOC_CHARS <= len(doc) <= MAX_DOC_CHARS:
                continue
            seen.add(doc)
            yield _stub(fn, doc)


def _user(text: str) -> list[Message]:
    return [{"role": "user", "content": text}]


def _chat(stub: str) -> list[Message]:
    return _user(f"{CODE_INSTRUCTION}\n\n```python\n{stub}```")


def code_prompts(stdlib: Path | None = None) -> list[list[Message]]:
    """One prompt per documented public stdlib function, in file order (deterministic for one
    Python version)."""
    root = Path(stdlib or sysconfig.get_paths()["stdlib"])
    return [_chat(stub) for stub in _documented(root, SKIP_DIRS, set())]


def package_code_prompts(
    packages: Iterable[str], per_package: int = PER_PACKAGE, site: Path | None = None
) -> tuple[list[list[Message]], dict[str, str]]:
    """The same stubs from installed third-party packages (read from site-packages with `ast`,
    never imported; tests skipped), at most `per_package` each (a spread over the package's
    files: every n-th stub), and the version of each package used. A package that is not
    installed is left out of the versions."""
    from importlib import metadata

    root = Path(site or sysconfig.get_paths()["purelib"])
    prompts: list[list[Message]] = []
    versions: dict[str, str] = {}
    seen: set[str] = set()
    for name in packages:
        folder = root / name
        if not folder.is_dir():
            continue
        stubs = list(_documented(folder, PACKAGE_SKIP_DIRS, seen))
        stride = max(1, -(-len(stubs) // per_package))
        prompts += [_chat(stub) for stub in stubs[::stride]]
        try:
            versions[name] = metadata.version(DISTRIBUTIONS.get(name, name))
        except metadata.PackageNotFoundError:
            versions[name] = "unknown"
    return prompts, versions


SUBJECTS = (
    "a weekend trip to the mountains", "learning a second language as an adult",
    "the history of the bicycle", "remote work", "urban gardening", "saving money on groceries",
    "the first day at a new job", "training for a half marathon", "adopting a rescue dog",
    "the invention of the printing press", "climate change and coastal cities",
    "a small bakery opening in town", "public libraries", "electric cars", "volcanoes",
    "the water cycle", "a family reunion", "time management for students", "honey bees",
    "the Roman aqueducts", "social media and teenagers", "renewable energy at home",
    "a rainy afternoon in a big city", "cooking for one person", "the Moon landing",
    "a lost wallet returned by a stranger", "chess", "the benefits of walking every day",
    "an old lighthouse", "starting a podcast", "how vaccines work", "the Silk Road",
    "moving to a new country", "a village market", "jazz music", "sleep and memory",
    "a robot that learns to paint", "recycling plastic", "coral reefs", "the stock market",
    "a school science fair", "photography for beginners", "a long train journey",
    "the human heart", "artificial intelligence in hospitals", "ancient Egyptian pyramids",
    "a neighbourhood clean-up day", "composting", "video games and learning",
    "a haunted house", "the Olympic Games", "building a treehouse", "desert plants",
    "a job interview", "the importance of bees to farming", "minimalism", "a snowstorm",
    "learning to play the guitar", "black holes", "a street food festival",
    "the French Revolution", "budgeting for a wedding", "a friendship that lasted fifty years",
    "solar panels", "the ocean's deepest trench", "a bakery's secret recipe",
    "the life of a night-shift nurse", "open source software", "a broken smartphone",
    "mountain gorillas", "the first computer", "a vegetable soup", "public transport",
    "a startup that failed", "the Great Wall of China", "mindfulness", "an inventor's notebook",
    "fossils", "a surprise birthday party", "a football match", "rainforests",
    "writing a novel", "cybersecurity for small businesses", "the Renaissance",
    "a ship lost at sea", "hiking safety", "the rise of e-books", "a city at night",
    "a conversation with a grandparent", "earthquakes", "team sports for children",
    "a museum after closing time", "wind turbines", "a summer job", "penguins",
)  # fmt: skip

TEMPLATES = (
    "Write an engaging blog post about {s}.",
    "Write a short story about {s}.",
    "Compose a poem about {s}.",
    "Write a persuasive essay about {s}.",
    "Draft a professional email to a colleague about {s}.",
    "Explain {s} to a ten-year-old.",
    "Give me a step-by-step guide related to {s}.",
    "What are the pros and cons of {s}? Answer in detail.",
    "Write a news article about {s}.",
    "Imagine you are a tour guide. Describe {s} to a group of visitors.",
    "Pretend you are a scientist and explain what people get wrong about {s}.",
    "Write a dialogue between two friends discussing {s}.",
    "Summarize the most important facts about {s} in a few paragraphs.",
    "Create a lesson plan for a high school class about {s}.",
    "Write a speech for a community event about {s}.",
    "Describe {s} using vivid sensory details.",
    "Give five creative ideas connected to {s}, with a short explanation of each.",
    "Write a letter to your future self about {s}.",
    "Compare two different points of view on {s}.",
    "Write a product description for something inspired by {s}.",
    "Act as a career coach and give advice to someone interested in {s}.",
    "Write a travel itinerary that includes {s}.",
    "Write a social media post announcing an event about {s}.",
    "What questions would a journalist ask about {s}? List them and answer each.",
    "Write a review of a book about {s}.",
)

NAMES = ("Ana", "Ben", "Chloe", "David", "Emma", "Farid", "Grace", "Hiro", "Ines", "Jonas")
WORD_PROBLEMS = (
    "{n} buys {a} notebooks at ${b} each and {c} pens at ${d} each. How much does {n} spend in "
    "total? Explain your reasoning step by step.",
    "A train travels {a} km in {b} hours. At the same speed, how far does it travel in {c} hours? "
    "Show your work.",
    "{n} has {a} marbles and gives away {b}% of them. How many marbles are left? Explain.",
    "A rectangle is {a} cm long and {b} cm wide. What are its area and perimeter? Show each step.",
    "The sum of two numbers is {a} and their difference is {c}. What are the numbers? Explain "
    "how you found them.",
    "{n} saves ${a} every week. How many weeks does it take to save ${e}? Explain your answer.",
    "Solve for x: {b}x + {c} = {e}. Show each step.",
    "A recipe needs {a} eggs for {b} people. How many eggs are needed for {d} people? Explain.",
)


def writing_prompts(seed: int = 0) -> list[list[Message]]:
    """Every template x subject once, plus as many word problems with seeded numbers, shuffled."""
    rng = random.Random(f"writing:{seed}")
    texts = [t.format(s=s) for t in TEMPLATES for s in SUBJECTS]
    for i in range(len(SUBJECTS) * 4):
        a, b, c, d = (rng.randint(2, 40) for _ in range(4))
        e = rng.randint(2, 50) * a
        texts.append(
            WORD_PROBLEMS[i % len(WORD_PROBLEMS)].format(
                n=rng.choice(NAMES), a=a, b=b, c=c, d=d, e=e
            )
        )
    rng.shuffle(texts)
    return [_user(t) for t in texts]


# Questions of the kinds chat benchmarks ask besides writing (STEM, humanities, reasoning,
# extraction), all written for this file: templates x concepts, and extraction tasks over short
# records built from seeded random names, places, dates and amounts.
CONCEPTS = (
    "entropy", "photosynthesis", "natural selection", "the Doppler effect", "plate tectonics",
    "supply and demand", "inflation", "the greenhouse effect", "Newton's third law",
    "electric circuits", "the immune system", "DNA replication", "black-body radiation",
    "compound interest", "the Pythagorean theorem", "prime numbers", "probability",
    "machine learning", "encryption", "the French Revolution", "the Industrial Revolution",
    "democracy in ancient Athens", "the printing press", "existentialism", "utilitarianism",
    "impressionist painting", "the Cold War", "the scientific method", "opportunity cost",
    "the water cycle", "chemical bonds", "acids and bases", "gravity", "the speed of light",
    "sorting algorithms", "recursion", "the human brain", "vaccination", "game theory",
    "the Renaissance", "colonialism", "the Silk Road", "climate feedback loops", "statistics",
)  # fmt: skip
QUESTION_TEMPLATES = (
    "Explain {c} in simple terms, then give a real-world example.",
    "What is {c}? Describe how it works step by step.",
    "Write a short essay on the history and importance of {c}.",
    "What are common misconceptions about {c}? Correct each one.",
    "Describe {c} to a high school student and suggest an experiment or exercise about it.",
    "Compare {c} with a related idea and explain the key differences.",
    "How has {c} influenced the modern world? Give three examples.",
    "Create three quiz questions about {c} and answer them.",
)
PLACES = ("Lisbon", "Nairobi", "Osaka", "Toronto", "Lima", "Oslo", "Hanoi", "Cairo", "Perth")
ITEMS = ("laptops", "chairs", "books", "bicycles", "lamps", "phones", "tables", "jackets")
RECORD_TASKS = (
    "Extract every name, city, date and amount from the text below as a table.",
    "Return the records below as a JSON list with keys name, item, city, date.",
    "Who spent the most in the records below, and how much was spent in total?",
)


def knowledge_prompts(seed: int = 0) -> list[list[Message]]:
    """Every question template x concept, plus as many extraction and reasoning tasks over
    seeded random records, shuffled."""
    rng = random.Random(f"knowledge:{seed}")
    texts = [t.format(c=c) for t in QUESTION_TEMPLATES for c in CONCEPTS]
    for i in range(len(texts)):
        rows = [
            f"{rng.choice(NAMES)} bought {rng.randint(2, 90)} {rng.choice(ITEMS)} in "
            f"{rng.choice(PLACES)} on 2023-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} "
            f"for ${rng.randint(20, 5000)}."
            for _ in range(rng.randint(3, 6))
        ]
        task = RECORD_TASKS[i % len(RECORD_TASKS)]
        texts.append(f"{task} Explain briefly.\n\n{' '.join(rows)}")
    rng.shuffle(texts)
    return [_user(t) for t in texts]


def python_version() -> str:
    return f"python{sys.version_info.major}.{sys.version_info.minor}"
