"""No import circle among the product's modules, imports inside functions included (grimp sees them all).

Most circles are the import-linter contract's to find (pyproject.toml's `acyclic_siblings`, run by `make lint`): it
forbids a circle between the children of any package of the four apps, at any depth. Two kinds are no sibling's
business and it does not see them, so they are checked here with grimp's own queries: a circle through a package's
own `__init__` and one of its descendants, and a circle across two apps. An import a -> b closes a circle exactly
when b reaches a again.
"""
from __future__ import annotations

import copy
import json
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import grimp
import pytest
from importlinter import configuration
from importlinter.contracts.acyclic_siblings import AcyclicSiblingsContract

PRODUCT = ("chat", "tools", "payloads", "pages")
PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def _app(module: str) -> str:
    return module.split(".")[0]


def _is_ancestor(package: str, module: str) -> bool:
    return module.startswith(package + ".")


def _unseen_by_the_contract(importer: str, imported: str) -> bool:
    """An import the sibling contract cannot place in a circle: into one of the importer's own packages, or across apps."""
    return _is_ancestor(imported, importer) or _app(imported) != _app(importer)


def _circles_the_contract_misses(graph: grimp.ImportGraph) -> list[tuple[str, ...]]:
    """Each circle closed by such an import, as the chain back from the imported module to the importer."""
    found = []
    for importer in sorted(m for m in graph.modules if _app(m) in PRODUCT):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            if _app(imported) in PRODUCT and _unseen_by_the_contract(importer, imported):
                back = graph.find_shortest_chain(importer=imported, imported=importer)
                if back is not None:
                    found.append((importer, *back))
    return found


def contract_kept(extra_imports: list[list[str]]) -> list[bool]:
    """Whether pyproject.toml's acyclic_siblings contract is kept, checked as `lint-imports` checks it, on the product's
    graph with each [importer, imported] added in turn."""
    configuration.configure()
    options: dict[str, Any] = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]
    (contract,) = [c for c in options["contracts"] if c["type"] == "acyclic_siblings"]
    check = AcyclicSiblingsContract(
        name=contract["name"], session_options={k: v for k, v in options.items() if k != "contracts"},
        contract_options={k: v for k, v in contract.items() if k not in ("name", "type")})
    graph = grimp.build_graph(*PRODUCT, include_external_packages=False)
    return [check.check(_with_import(graph, importer, imported), verbose=False).kept for importer, imported in extra_imports]


def _contract_kept(*extra_imports: tuple[str, str]) -> list[bool]:
    # In a process of its own: import-linter's option check trips over the zope.interface marker that Twisted (loaded
    # with Django, as in this test process) puts on abc.ABC, the base of its contracts.
    code = "import json, sys; from tests.test_architecture import contract_kept; print(json.dumps(contract_kept(json.loads(sys.argv[1]))))"
    done = subprocess.run([sys.executable, "-c", code, json.dumps(extra_imports)], cwd=PYPROJECT.parent, capture_output=True, text=True,
                          timeout=120, check=True)
    return [bool(kept) for kept in json.loads(done.stdout)]


def _with_import(graph: grimp.ImportGraph, importer: str, imported: str) -> grimp.ImportGraph:
    changed = copy.deepcopy(graph)
    changed.add_import(importer=importer, imported=imported, line_number=1, line_contents=f"import {imported}")
    return changed


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(*PRODUCT, include_external_packages=False)


def test_no_circle_through_a_package_init_or_across_apps(graph: grimp.ImportGraph) -> None:
    assert _circles_the_contract_misses(graph) == []


def test_the_contract_finds_a_circle_between_siblings(graph: grimp.ImportGraph) -> None:
    """What the hand-written search here used to find is the contract's: an import back between two siblings."""
    importer, imported = next((a, b) for a in sorted(graph.modules) if _app(a) == "chat"
                              for b in sorted(graph.find_modules_directly_imported_by(a))
                              if b.count(".") == a.count(".") == 1 and _app(b) == "chat")
    assert _contract_kept((importer, imported), (imported, importer)) == [True, False]


def test_the_circles_the_contract_misses_are_found_here(graph: grimp.ImportGraph) -> None:
    package, child = next((p, c) for p in sorted(graph.modules) if _app(p) in PRODUCT
                          for c in sorted(graph.find_modules_directly_imported_by(p)) if _is_ancestor(p, c))
    importer, imported = next((a, b) for a in sorted(graph.modules) if _app(a) in PRODUCT
                              for b in sorted(graph.find_modules_directly_imported_by(a)) if _app(b) in PRODUCT and _app(b) != _app(a))
    assert _contract_kept((child, package), (imported, importer)) == [True, True]  # unseen there...
    assert _circles_the_contract_misses(_with_import(graph, child, package)) != []  # ...found here
    assert _circles_the_contract_misses(_with_import(graph, imported, importer)) != []
