"""Rendering a subtree as text: expand-to-length, serialize, and the ancestor path of get-root.

Expand-to-length follows the reference docmem exactly. Nodes are ranked by
"reverse BFS" (the start node, then each depth level from last child to first),
the ranking is consumed until the first node whose tokens do not fit (the walk
stops there; later small nodes never fill the gap), and the included nodes are
rendered in preorder, skipping any excluded node with its whole subtree. Only
content is counted, so metadata lines come on top of the budget.
"""

from __future__ import annotations

from ..errors import ValidationError
from .nodes import Docmem, Node


def _ranked(store: Docmem, start: Node, budget: int) -> tuple[set[str], dict[str, list[Node]]]:
    """Ids that fit the budget in reverse-BFS priority, and the children read on the way.

    Levels are read only while the budget lasts, a whole level at a time; the
    children of nodes whose level was not reached are never needed.
    """
    included: set[str] = set()
    children: dict[str, list[Node]] = {}
    total = 0
    level = [start]
    while level:
        for node in reversed(level):
            if total + node.token_count > budget:
                return included, children
            total += node.token_count
            included.add(node.id)
        children.update(store.children_of([node.id for node in level]))
        level = [child for node in level for child in children[node.id]]
    return included, children


def render_block(node: Node) -> str:
    """The metadata line, then the trimmed content when there is any."""
    content = node.content.strip()
    return node.metadata_line() + ("\n" + content if content else "")


def _preorder(start: Node, children: dict[str, list[Node]], keep: set[str] | None = None) -> list[Node]:
    """The start node, then its descendants depth first; a node outside ``keep`` is cut with its subtree."""
    result: list[Node] = []
    stack = [start]
    while stack:
        node = stack.pop()
        if keep is not None and node.id not in keep and node is not start:
            continue
        result.append(node)
        stack.extend(reversed(children.get(node.id, [])))
    return result


def expand_to_length(store: Docmem, node_id: str, budget: int) -> str:
    """The subtree of ``node_id`` rendered within ``budget`` content tokens."""
    if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
        raise ValidationError("token_budget must be a positive number.")
    start = store.get(node_id)
    included, children = _ranked(store, start, budget)
    return "\n\n".join(render_block(node) for node in _preorder(start, children, included))


def serialize(store: Docmem, node_id: str) -> str:
    """The content of every descendant (not the node itself), preorder, untrimmed, blank ones left out."""
    start = store.get(node_id)
    children: dict[str, list[Node]] = {}
    level = [start]
    while level:
        children.update(store.children_of([node.id for node in level]))
        level = [child for node in level for child in children[node.id]]
    return "\n\n".join(node.content for node in _preorder(start, children)[1:] if node.content.strip())


def ancestor_path(store: Docmem, node_id: str) -> str:
    """The root-to-node path as indented structure lines: ``"  " * depth + "- " + metadata``."""
    return "\n".join("  " * depth + "- " + node.metadata_line()
                     for depth, node in enumerate(store.ancestors(node_id)))
