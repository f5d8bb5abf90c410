"""The test tiers of tests/conftest.py: every test named in the tier table exists, and `make test`
selects the fast tier the table defines, so that a renamed test cannot fall silently into the fast tier."""

from __future__ import annotations

import ast
import re

from conftest import FAST_TIER, ROOT, TIER_OF, TIERS


def test_every_test_the_tier_table_names_exists():
    for name, tier in TIER_OF.items():
        assert tier in TIERS, name
        module, _, test = name.partition("::")
        path = ROOT / "tests" / module
        assert path.is_file(), f"{name}: no such test module"
        if test:
            defined = {node.name for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                       if isinstance(node, ast.FunctionDef)}
            assert test in defined, f"{name}: no such test"


def test_make_test_runs_the_fast_tier_and_test_slow_the_others():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    slow = re.search(r"^SLOW_TIERS := (.+)$", makefile, re.M).group(1)
    assert slow.split(" or ") == list(TIERS)
    assert f"not ({slow})" == FAST_TIER
    assert re.search(r'^test: lint\n\t\$\(BIN\)/python -m pytest -n auto -m "not \(\$\(SLOW_TIERS\)\)"$',
                     makefile, re.M)
    # the slow tiers: every one but bench in parallel, then bench alone; together, every slow tier
    assert re.search(r'^test-slow: .*\n\t\$\(BIN\)/python -m pytest -n [23] --dist loadfile '
                     r'-m "\(\$\(SLOW_TIERS\)\) and not bench" .*\n\t\$\(BIN\)/python -m pytest -m bench ',
                     makefile, re.M)
    assert "bench" in TIERS


def test_ci_runs_every_tier():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^step make test$", ci, re.M) and re.search(r"^step make test-slow$", ci, re.M)
