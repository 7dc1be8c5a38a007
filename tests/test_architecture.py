"""No import circle among the product's modules, imports inside functions included (grimp sees them all)."""
from __future__ import annotations

import grimp

PRODUCT = ("chat", "tools", "payloads", "pages")


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    modules = sorted(m for m in graph.modules if m.split(".")[0] in PRODUCT)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in modules:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child.split(".")[0] not in PRODUCT:
                    continue
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_import_cycles_among_product_modules() -> None:
    graph = grimp.build_graph(*PRODUCT, include_external_packages=False)
    assert _cycles(graph) == []


def test_a_cycle_through_a_deferred_import_would_be_found() -> None:
    graph = grimp.build_graph(*PRODUCT, include_external_packages=False)
    graph.add_import(importer="chat.limits", imported="chat.services", line_number=1, line_contents="from chat import services")
    assert any({"chat.limits", "chat.services"} <= set(c) for c in _cycles(graph))
