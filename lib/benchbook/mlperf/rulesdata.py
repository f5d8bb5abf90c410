"""The MLPerf Training rules as data: each round's benchmarks, the runs each needs, and each quality target,
read from the files mlperf-logging ships and written to `params/references/mlperf/rules/training.yaml`
(`python -m benchbook.mlperf.rulesdata --write`), which scoring reads (`rules`) without mlperf-logging.

The runs: `benchmark_meta.py`'s `_ALL_RESULT_FILE_COUNTS['training']` for each benchmark of the round's
`_ALL_ALLOWED_BENCHMARKS['training'][round]`. The target: the closed division's compliance rule,
`compliance_checker/training_<round>.0/closed_<benchmark>.yaml`, the `ATLEAST_ONE_CHECK` of its accuracy key
(one evaluation must pass it), a Python expression that mlperf-logging evaluates. It is read here with `ast`
into bounds per metric (`v['value'] >= 0.72 and v['value'] < 1.0`: accuracy from 0.72, below 1.0; `v['value']
['BBOX'] >= 0.377 ...`: per metric; `A if s['global_batch_size'] < 8192 else B`: a bound per batch range).
The setup limit: the round's `common.yaml` check of `init_stop` against the first `init_start` (20 minutes
to v0.7, then 30; from v2.0 `s['compile_time_mins']`, 240 in the open division), in minutes per division.
An expression of another form is kept as text with the reason it is not read (the run's own
`s['target_accuracy']`), so that no target is made up. Every entry names its file and line.
A target over a key no log holds, built by the file's BEGIN block from other records (Stable Diffusion's
`aggregated_eval_accuracy`: the `eval_accuracy` records whose metadata names a `metric`, one per
`samples_count`, or per `step_num` in 3.1.0), keeps how it is built (`aggregate`), read from that code.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import sys
from pathlib import Path

import yaml

from ..core import project

DATA = project.REFERENCES / "mlperf" / "rules" / "training.yaml"
PACKAGE = "mlperf_logging"


class NotBounds(ValueError):
    """A check that is not a conjunction of bounds on the evaluation's value (the reason)."""


_LOWER = {ast.GtE: True, ast.Gt: False}  # value >= n: inclusive lower bound
_UPPER = {ast.LtE: True, ast.Lt: False}
_MIRROR = {ast.GtE: ast.LtE, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.Lt: ast.Gt}


def _subject(node: ast.expr) -> str | None:
    """'accuracy' for v['value'], the metric for v['value']['BBOX']; None for anything else."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        if isinstance(node.value, ast.Name) and node.value.id == "v" and node.slice.value == "value":
            return "accuracy"
        if _subject(node.value) == "accuracy" and isinstance(node.slice.value, str):
            return node.slice.value
    return None


def _number(node: ast.expr) -> float | None:
    return float(node.value) if isinstance(node, ast.Constant) and type(node.value) in (int, float) else None


def _bounds(node: ast.expr, into: dict) -> None:
    """Add the bounds of a comparison chain or a conjunction of them to `into` (metric -> bound)."""
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        for each in node.values:
            _bounds(each, into)
        return
    if not isinstance(node, ast.Compare):
        raise NotBounds(f"not a comparison: {ast.unparse(node)}")
    terms = [node.left, *node.comparators]
    for left, op, right in zip(terms, node.ops, terms[1:], strict=False):
        metric, number, kind = _subject(left), _number(right), type(op)
        if metric is None:
            metric, number, kind = _subject(right), _number(left), _MIRROR.get(kind)
        if metric is None or number is None or kind not in (*_LOWER, *_UPPER):
            raise NotBounds(f"not a bound on the value: {ast.unparse(node)}")
        bound = into.setdefault(metric, {"metric": metric})
        side = ("min", _LOWER[kind]) if kind in _LOWER else ("max", _UPPER[kind])
        bound[side[0]], bound[f"{side[0]}_inclusive"] = number, side[1]


def clauses(check: str) -> list[dict]:
    """The check as clauses: [{batch: None or {below: N} or {at_least: N}, bounds: [...]}]."""
    tree = ast.parse(check.strip(), mode="eval").body
    parts = tree.values if isinstance(tree, ast.BoolOp) and isinstance(tree.op, ast.And) else [tree]
    branch = [p for p in parts if isinstance(p, ast.IfExp)]
    rest = [p for p in parts if not isinstance(p, ast.IfExp)]
    if len(branch) > 1:
        raise NotBounds("more than one conditional")
    cases: list[tuple[dict | None, list[ast.expr]]] = [(None, rest)]
    if branch:
        test = branch[0].test
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Lt)
                and ast.unparse(test.left) == "s['global_batch_size']" and _number(test.comparators[0])):
            raise NotBounds(f"a condition other than s['global_batch_size'] < N: {ast.unparse(test)}")
        limit = _number(test.comparators[0])
        cases = [({"below": limit}, [branch[0].body, *rest]), ({"at_least": limit}, [branch[0].orelse, *rest])]
    out = []
    for batch, nodes in cases:
        bounds: dict = {}
        for node in nodes:
            _bounds(node, bounds)
        out.append({"batch": batch, "bounds": list(bounds.values())})
    return out


def _literal(tree: ast.Module, name: str) -> ast.Dict:
    return next(n.value for n in tree.body if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == name for t in n.targets))


def _training(node: ast.Dict) -> ast.Dict:
    return next(v for k, v in zip(node.keys, node.values, strict=True) if ast.literal_eval(k) == "training")


def _target(path: Path, shown: str) -> dict | None:
    """The closed rule's ATLEAST_ONE_CHECK (key, check, file:line, clauses or why not read; how its key
    is built where the BEGIN block builds it)."""
    if not path.is_file():
        return None
    for name, key in _entries(path).items():
        check = key.get("ATLEAST_ONE_CHECK")
        if check is None:
            continue
        found = {"key": name, "check": check.value.strip(), "source": f"{shown}:{check.start_mark.line + 1}"}
        try:
            found["clauses"] = clauses(check.value)
        except (NotBounds, SyntaxError) as exc:
            found["unread"] = f"not a bound benchbook can check: {exc}"
        begin = _begin(path)
        if begin is not None and f'"{name}"' in begin.value.replace("'", '"'):
            try:
                found["aggregate"] = {**aggregate(begin.value), "source": f"{shown}:{begin.start_mark.line + 1}"}
            except (NotBounds, SyntaxError) as exc:
                found.pop("clauses", None)
                found["unread"] = f"{name} is built by the BEGIN block in a way benchbook does not read: {exc}"
        return found
    return None


def _begin(path: Path, block: str = "BEGIN", field: str = "CODE") -> yaml.ScalarNode | None:
    """The BEGIN block's CODE node (or another block's field) of a compliance file, if it has one."""
    for item in getattr(yaml.compose(path.read_text(encoding="utf-8")), "value", []):
        for k, v in getattr(item, "value", []):
            if isinstance(k, yaml.ScalarNode) and k.value == block:
                return next((c for n, c in getattr(v, "value", []) if n.value == field), None)
    return None


# Rounds whose weights_initialization checks the round's own review read as warnings (mlperf-logging made them
# warnings for ruleset 1.1.0, failures again for 2.0 on) while 4.1.68 fails them: benchbook keeps the tensors
# those checks ask for, to say where the official tool differs (`official.differences`).
WEIGHTS_WARNED = ("1.1",)


def _tensors(path: Path, shown: str) -> dict | None:
    """The tensors a closed rule's END check asks weights_initialization records to name (`sorted(s['initialized_
    tensors']) == sorted([...])`), with file:line; None where the file has no such check."""
    if not path.is_file():
        return None
    end = _begin(path, "END", "CHECK")
    if end is None or "initialized_tensors" not in end.value:
        return None
    tree = ast.parse(end.value.strip(), mode="eval").body
    if not (isinstance(tree, ast.Compare) and isinstance(tree.comparators[0], ast.Call)
            and tree.comparators[0].args and isinstance(tree.comparators[0].args[0], ast.List)):
        return None
    names = sorted(ast.literal_eval(tree.comparators[0].args[0]))
    return {"names": names, "source": f"{shown}:{end.start_mark.line + 1}"}


def aggregate(code: str) -> dict:
    """How a BEGIN block builds a virtual key from other records, read from its code: the records of key
    `from` whose metadata has the field `metric` (its value names the metric), grouped by the metadata
    field `by`, each group one record of key `key` whose value maps each metric to its last value
    (training_5.0.0/closed_stable_diffusion.yaml's loop). NotBounds when the code is not that loop."""
    found: dict[str, str] = {}
    for node in ast.walk(ast.parse(code.strip())):
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "new_line.key" \
                and isinstance(node.value, ast.Constant):
            found["key"] = node.value.value
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.comparators[0], ast.Constant):
            if isinstance(node.ops[0], ast.Eq) and ast.unparse(node.left) == "line.key":
                found["from"] = node.comparators[0].value
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.In) \
                and isinstance(node.left, ast.Constant) and ast.unparse(node.comparators[0]) == \
                "line.value['metadata']":
            found["metric"] = node.left.value
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Subscript) \
                and ast.unparse(node.value.value) == "line.value['metadata']" \
                and isinstance(node.value.slice, ast.Constant):
            found["by"] = node.value.slice.value
    missing = [k for k in ("key", "from", "metric", "by") if not isinstance(found.get(k), str)]
    if missing or found["by"] == found["metric"]:
        raise NotBounds(f"no {', '.join(missing) or 'distinct group'} found in the loop")
    return {"from": found["from"], "metric": found["metric"], "by": found["by"], "key": found["key"]}


def _entries(path: Path) -> dict[str, dict]:
    """A compliance file's KEY records by NAME: field -> its YAML node (which knows its line)."""
    out = {}
    for item in getattr(yaml.compose(path.read_text(encoding="utf-8")), "value", []):
        entry = dict((k.value, v) for k, v in getattr(item, "value", []) if isinstance(k, yaml.ScalarNode))
        key = dict((k.value, v) for k, v in getattr(entry.get("KEY"), "value", []))
        if "NAME" in key:
            out[key["NAME"].value] = key
    return out


def _strings(node) -> list[yaml.ScalarNode]:
    return [node] if isinstance(node, yaml.ScalarNode) else list(getattr(node, "value", []))


def _value(node: ast.expr, names: dict[str, float]) -> float:
    """A product of numbers and s['compile_time_mins'] (what the init limits are written as)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _value(node.left, names) * _value(node.right, names)
    if _number(node) is not None:
        return _number(node)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value in names:
        return names[node.slice.value]
    raise NotBounds(f"not a product of numbers: {ast.unparse(node)}")


def _compile_minutes(entries: dict) -> tuple[dict[str, float], str | None]:
    """s['compile_time_mins'] per division, from submission_division's POST (`240 if open else 30`)."""
    post = entries.get("submission_division", {}).get("POST")
    for node in ast.walk(ast.parse(post.value.strip())) if post is not None else ():
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "s['compile_time_mins']" \
                and isinstance(node.value, ast.IfExp) and "'open'" in ast.unparse(node.value.test):
            return {"open": _number(node.value.body), "closed": _number(node.value.orelse)}, \
                f"{post.start_mark.line + 1}"
    return {}, None


def _init_limit(path: Path, shown: str, per_second: float) -> dict | None:
    """The setup limit (first init_start to init_stop) of a round's common.yaml, in minutes per division."""
    if not path.is_file():
        return None
    entries = _entries(path)
    minutes, post_line = _compile_minutes(entries)
    for check in _strings(entries.get("init_stop", {}).get("CHECK")):
        for node in ast.walk(ast.parse(check.value.strip(), mode="eval")):
            if isinstance(node, ast.Compare) and "s['first_init_start']" in ast.unparse(node.left) \
                    and isinstance(node.ops[0], ast.Lt):
                limit = node.comparators[0]
                out = {division: _value(limit, {"compile_time_mins": m}) / per_second / 60
                       for division, m in (minutes or {"closed": 0, "open": 0}).items()}
                where = f"{shown}:{check.start_mark.line + 1}" + (f" and :{post_line}" if post_line else "")
                return {"minutes": out, "check": ast.unparse(node), "source": where}
    return None


def generate(package_dir: Path) -> dict:
    """The rules of every training round, as mlperf-logging's files in `package_dir` give them."""
    meta_path = package_dir / "benchmark_meta.py"
    tree = ast.parse(meta_path.read_text(encoding="utf-8"))
    counts = _training(_literal(tree, "_ALL_RESULT_FILE_COUNTS"))
    runs = {ast.literal_eval(k): (ast.literal_eval(v), k.lineno) for k, v in zip(counts.keys, counts.values,
                                                                                  strict=True)}
    allowed = ast.literal_eval(_training(_literal(tree, "_ALL_ALLOWED_BENCHMARKS")))
    rounds = {}
    for round_, benchmarks in allowed.items():
        entries = {}
        for benchmark in benchmarks:
            count, line = runs[benchmark]
            shown = f"{PACKAGE}/compliance_checker/training_{round_}.0/closed_{benchmark}.yaml"
            entries[benchmark] = {"runs": count, "runs_source": f"{PACKAGE}/benchmark_meta.py:{line}",
                                  "target": _target(package_dir / shown.split("/", 1)[1], shown)}
            if round_ in WEIGHTS_WARNED and (tensors := _tensors(package_dir / shown.split("/", 1)[1], shown)):
                entries[benchmark]["weights_initialization"] = tensors
        shown = f"{PACKAGE}/compliance_checker/training_{round_}.0/common.yaml"
        limit = _init_limit(package_dir / shown.split("/", 1)[1], shown, 1.0 if round_ == "0.6" else 1000.0)
        rounds[round_] = {"init_limit": limit, **entries} if limit else entries
    return rounds


def _package() -> tuple[Path, str]:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{PACKAGE} is not installed (pip install 'benchbook[mlperf]')")
    from importlib.metadata import version

    return Path(next(iter(spec.submodule_search_locations))), version("mlperf-logging")


def text(package_dir: Path, version: str) -> str:
    head = (f"# The MLPerf Training rules as mlperf-logging {version} ships them: per round, each benchmark's runs\n"
            "# (benchmark_meta.py) and quality target (the closed compliance rule's ATLEAST_ONE_CHECK, read as\n"
            "# clauses of bounds). Generated by `python -m benchbook.mlperf.rulesdata --write`; do not edit.\n")
    return head + yaml.safe_dump({"package": f"mlperf-logging {version}", "rounds": generate(package_dir)},
                                 sort_keys=False, width=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"write {DATA} (else print it)")
    args = parser.parse_args(argv)
    if args.write and project.INSTALLED:  # the installed files are read only: never written into site-packages
        parser.error(f"--write updates a checkout's {DATA.relative_to(project.ROOT)}; this benchbook is installed "
                     "from a wheel: run it from a checkout, or without --write to print the file")
    out = text(*_package())
    if args.write:
        DATA.parent.mkdir(parents=True, exist_ok=True)
        DATA.write_text(out, encoding="utf-8")
    else:
        sys.stdout.write(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
