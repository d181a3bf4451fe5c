"""docmem trees: nodes in ``docmem_nodes`` and the operations that create, change and reshape them.

A docmem root is a node without a parent. Siblings are ordered by a decimal
``order_value`` (:mod:`.ordering`). Every tree belongs to one project; ids are
unique in the whole database.

Readonly means no operation changes or deletes the node's own row (content,
context, parent, order): updates, deletes (of it or of an ancestor), moves and
summaries refuse. New nodes may still be put next to or under it, which is how
an agent annotates text it may not edit. (One exception: when decimals run out
between two siblings, all siblings are renumbered 1, 2, ... in the same order.) Virtual nodes (:mod:`.virtual`) are
readonly because their rows belong to the memory store; a summary may still
file them under itself: that is recorded in ``docmem_placements``, beside the
captured row, and undone by deleting the summary.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
from dataclasses import dataclass, replace
from typing import Any

from .. import clock
from ..db import Database
from ..errors import NotFoundError, ValidationError
from ..redaction import redact
from . import ordering, virtual

MODES = ("append-child", "before", "after")
MAX_CONTEXT_CHARS = 24
MAX_NODE_CHARS = 100_000
ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
ID_LENGTH = 8
_ROOT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_LOOKUP_HINT = "Check the id with docmem_query_nodes (e.g. SELECT id, content FROM nodes WHERE parent_id IS NULL)."

_COLUMNS = ("id, parent_id, content, order_value, token_count, created_at, updated_at, "
            "context_type, context_name, context_value, readonly, hash, 'docmem' AS kind")


def token_count(content: str) -> int:
    """Tokens as docmem counts them: characters / 4, rounded up."""
    return (len(content) + 3) // 4


def _js_number(value: float) -> str:
    """A number spelled as JavaScript's ``String(n)`` would, so 1.0 hashes as "1"."""
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return repr(value)


def node_hash(parent_id: str | None, context: tuple[str, str, str], content: str, order_value: float) -> str:
    """Base64 SHA-512 of the fields that place and describe a node (readonly is not hashed)."""
    text = "|".join((parent_id or "", *context, content, _js_number(order_value)))
    return base64.b64encode(hashlib.sha512(text.encode("utf-8")).digest()).decode("ascii")


@dataclass(slots=True)
class Node:
    """One node as the operations see it, whether stored or virtual."""

    id: str
    parent_id: str | None
    content: str
    order_value: float
    token_count: int
    created_at: str
    updated_at: str
    context_type: str
    context_name: str
    context_value: str
    readonly: bool
    hash: str | None
    kind: str

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "Node":
        return cls(row["id"], row["parent_id"], row["content"] or "", float(row["order_value"]), row["token_count"],
                   row["created_at"], row["updated_at"], row["context_type"], row["context_name"],
                   row["context_value"], bool(row["readonly"]), row["hash"], row["kind"])

    @property
    def is_virtual(self) -> bool:
        return self.kind != "docmem"

    @property
    def context(self) -> tuple[str, str, str]:
        return (self.context_type, self.context_name, self.context_value)

    def metadata_line(self) -> str:
        """``<id> <type>:<name>:<value> <updated_at>``, the first line of every rendered block."""
        return f"{self.id} {self.context_type}:{self.context_name}:{self.context_value} {self.updated_at}"


def check_context(context_type: Any, context_name: Any, context_value: Any) -> tuple[str, str, str]:
    """The three context fields, each text of 0 to 24 characters."""
    fields = (context_type, context_name, context_value)
    if any(not isinstance(field, str) for field in fields):
        raise ValidationError(
            "All context fields (context_type, context_name, context_value) are required as text; "
            "use '' for an empty one."
        )
    # The limit holds for the stored text: redaction may lengthen it (a short secret, a lone surrogate).
    stored = tuple(field if len(field) > MAX_CONTEXT_CHARS else redact(field) for field in fields)
    if any(len(field) > MAX_CONTEXT_CHARS for field in stored):
        raise ValidationError(
            f"Context fields must be 0 to {MAX_CONTEXT_CHARS} characters; got "
            f"{', '.join(repr(f) for f in stored if len(f) > MAX_CONTEXT_CHARS)}."
        )
    return stored  # type: ignore[return-value]


def _check_content(content: Any) -> str:
    """Node text as stored: bounded, with private spans and secrets removed."""
    if not isinstance(content, str):
        raise ValidationError(f"Content must be text, got {type(content).__name__}.")
    if len(content) <= MAX_NODE_CHARS:
        content = redact(content)  # the limit holds for the stored text, which redaction may lengthen
    if len(content) > MAX_NODE_CHARS:
        raise ValidationError(f"Content is {len(content):,} characters; a node holds at most {MAX_NODE_CHARS:,}. "
                              "Split it into several nodes.")
    return content


def _check_mode(mode: Any) -> str:
    if mode not in MODES:
        raise ValidationError(f"Mode must be one of {', '.join(MODES)}; got {mode!r}.")
    return mode


class Docmem:
    """The docmem trees of one project (plus its virtual trees) over an open database."""

    def __init__(self, db: Database, project_id: int) -> None:
        self.db = db
        self.project_id = project_id

    # ------------------------------------------------------------------ reading

    def find(self, node_id: str) -> Node | None:
        """The node with this id in this project, or None."""
        if not isinstance(node_id, str) or not node_id:
            return None
        if virtual.is_virtual(node_id):
            row = virtual.get(self.db, self.project_id, node_id)
            return self._placed(Node.from_row(row)) if row else None
        row = self.db.one(f"SELECT {_COLUMNS} FROM docmem_nodes WHERE id = ? AND project_id = ?",
                          (node_id, self.project_id))
        return Node.from_row(row) if row else None

    def get(self, node_id: str, *, what: str = "Node") -> Node:
        """The node with this id; NotFoundError with guidance when there is none."""
        node = self.find(node_id)
        if node is None:
            raise NotFoundError(f"{what} '{node_id}' not found in this project. {_LOOKUP_HINT}")
        return node

    def children(self, node_id: str) -> list[Node]:
        """The children of a node in reading order: docmem nodes, virtual ones and those placed here."""
        return self.children_of([node_id])[node_id]

    def children_of(self, node_ids: list[str]) -> dict[str, list[Node]]:
        """The children of several nodes at once (a few queries per tree level, not per node)."""
        found: dict[str, list[Node]] = {node_id: [] for node_id in node_ids}
        listed = json.dumps(node_ids)
        for node in self._nodes(
                f"SELECT {_COLUMNS} FROM docmem_nodes WHERE parent_id IN (SELECT value FROM json_each(?)) "
                "AND project_id = ?", (listed, self.project_id)):
            assert node.parent_id is not None  # every node found here has its parent among node_ids
            found[node.parent_id].append(node)
        kids = [Node.from_row(row) for node_id in node_ids if virtual.has_children(node_id)
                for row in virtual.children(self.db, self.project_id, node_id)]
        moved = self._placement_rows([k.id for k in kids])
        for kid in kids:
            if kid.id not in moved:
                assert kid.parent_id is not None
                found[kid.parent_id].append(kid)
        for row in self.db.rows(
                "SELECT node_id FROM docmem_placements WHERE parent_id IN (SELECT value FROM json_each(?)) "
                "AND project_id = ?", (listed, self.project_id)):
            placed = self.find(row["node_id"])
            if placed is not None:
                assert placed.parent_id is not None
                found[placed.parent_id].append(placed)
        for siblings in found.values():
            siblings.sort(key=lambda n: (n.order_value, n.created_at, n.id))
        return found

    def roots(self, *, limit: int = 100, offset: int = 0) -> list[Node]:
        """The project's stored docmem roots, newest first (virtual session and document trees are not listed)."""
        return self._nodes(f"SELECT {_COLUMNS} FROM docmem_nodes WHERE parent_id IS NULL AND project_id = ? "
                           "ORDER BY created_at DESC LIMIT ? OFFSET ?", (self.project_id, limit, offset))

    def _nodes(self, sql: str, params: tuple[Any, ...]) -> list[Node]:
        return [Node.from_row(row) for row in self.db.rows(sql, params)]

    def ancestors(self, node_id: str) -> list[Node]:
        """The path from the node's root down to the node itself."""
        path = [self.get(node_id)]
        seen = {path[0].id}
        while path[-1].parent_id is not None and path[-1].parent_id not in seen:
            parent = self.find(path[-1].parent_id)
            if parent is None:
                break
            seen.add(parent.id)
            path.append(parent)
        return path[::-1]

    def subtree(self, node_id: str) -> list[Node]:
        """The node and all its descendants, level by level (parents before their children)."""
        result: list[Node] = []
        level = [self.get(node_id)]
        while level:
            result += level
            children = self.children_of([node.id for node in level])
            level = [child for node in level for child in children[node.id]]
        return result

    def _placement_rows(self, node_ids: list[str]) -> dict[str, dict[str, Any]]:
        if not node_ids:
            return {}
        rows = self.db.rows(
            "SELECT node_id, parent_id, order_value FROM docmem_placements "
            "WHERE node_id IN (SELECT value FROM json_each(?)) AND project_id = ?",
            (json.dumps(node_ids), self.project_id))
        return {r["node_id"]: r for r in rows}

    def _placed(self, node: Node) -> Node:
        """A virtual node with the parent and order a summary gave it, if any."""
        where = self._placement_rows([node.id]).get(node.id)
        if where is None:
            return node
        return replace(node, parent_id=where["parent_id"], order_value=float(where["order_value"]))

    # ------------------------------------------------------------------ placing

    def _new_id(self) -> str:
        while True:
            candidate = "".join(secrets.choice(ID_ALPHABET) for _ in range(ID_LENGTH))
            if self.db.scalar("SELECT 1 FROM docmem_nodes WHERE id = ?", (candidate,)) is None:
                return candidate

    def _position(self, target: Node, mode: str, *, moving: str | None = None) -> tuple[str, float]:
        """(parent id, order) for a node put relative to ``target``; renumbers siblings if floats run out."""
        if mode == "append-child":
            parent_id = target.id
            siblings = [n for n in self.children(parent_id) if n.id != moving]
            return parent_id, ordering.append(siblings[-1].order_value if siblings else None)
        if target.parent_id is None:
            raise ValidationError(
                f"Cannot insert {mode} root node '{target.id}'; use mode append-child to add under it."
            )
        parent_id = target.parent_id
        value, fits = self._beside(target, mode, moving)
        if not fits:
            self._renumber([n for n in self.children(parent_id) if n.id != moving])
            value, _ = self._beside(self.get(target.id), mode, moving)
        return parent_id, value

    def _beside(self, target: Node, mode: str, moving: str | None) -> tuple[float, bool]:
        """The order just before or after ``target`` among its siblings, and whether it is strictly between."""
        assert target.parent_id is not None  # _position refuses a root
        siblings = [n for n in self.children(target.parent_id) if n.id != moving]
        index = next(i for i, n in enumerate(siblings) if n.id == target.id)
        if mode == "before":
            low = siblings[index - 1].order_value if index > 0 else None
            value = ordering.before(target.order_value, low)
            return value, ordering.fits_between(value, low, target.order_value)
        high = siblings[index + 1].order_value if index + 1 < len(siblings) else None
        value = ordering.after(target.order_value, high)
        return value, ordering.fits_between(value, target.order_value, high)

    def _renumber(self, siblings: list[Node]) -> None:
        """Give siblings orders 1, 2, ... in their current order (when decimals run out of room)."""
        fixed = [n.id for n in siblings if n.is_virtual and n.parent_id is not None
                 and not self._placement_rows([n.id])]
        if fixed:
            raise ValidationError(
                f"No room left between these nodes (their order follows captured memory such as '{fixed[0]}'). "
                "Insert at another place, or under a note with mode append-child."
            )
        for node, value in zip(siblings, ordering.renumbered(len(siblings))):
            if node.is_virtual:
                self.db.execute("UPDATE docmem_placements SET order_value = ? WHERE node_id = ?", (value, node.id))
            else:
                self.db.execute("UPDATE docmem_nodes SET order_value = ?, hash = ? WHERE id = ?",
                                (value, node_hash(node.parent_id, node.context, node.content, value), node.id))

    def _insert(self, *, node_id: str, parent_id: str | None, order_value: float, content: str,
                context: tuple[str, str, str], readonly: bool) -> None:
        stamp = clock.now()
        self.db.execute(
            "INSERT INTO docmem_nodes(id, project_id, parent_id, order_value, content, token_count, context_type, "
            "context_name, context_value, readonly, hash, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (node_id, self.project_id, parent_id, order_value, content, token_count(content), *context,
             int(readonly), node_hash(parent_id, context, content, order_value), stamp, stamp),
        )

    @staticmethod
    def _refuse_readonly(node: Node, action: str) -> None:
        if node.readonly:
            source = ("it mirrors captured memory" if node.is_virtual else "it is readonly")
            raise ValidationError(
                f"Cannot {action} node '{node.id}': {source}. Add a note next to it with docmem_create_node "
                f"(mode after), or copy it with docmem_copy_node and change the copy."
            )

    # ------------------------------------------------------------------ operations

    def create(self, root_id: str | None = None) -> Node:
        """A new empty docmem root, named ``root_id`` or given a random 8-character id."""
        with self.db.transaction():
            if root_id is None or root_id == "":
                root_id = self._new_id()
            elif not isinstance(root_id, str) or not _ROOT_ID.fullmatch(root_id):
                raise ValidationError(
                    f"Invalid root id {root_id!r}: use 1-64 letters, digits, '_', '-' or '.', starting with a "
                    "letter or digit (':' is reserved for virtual trees)."
                )
            elif self.find(root_id) is not None:
                raise ValidationError(f"A node with id '{root_id}' already exists; choose another root id.")
            elif self.db.scalar("SELECT 1 FROM docmem_nodes WHERE id = ?", (root_id,)) is not None:
                # Ids are unique in the whole store, so another project's id cannot be taken; say so
                # without telling this project that the id exists (or anything about its node).
                raise ValidationError(f"The root id '{root_id}' cannot be used here; choose another root id, or "
                                      "leave root_id out for a random one.")
            self._insert(node_id=root_id, parent_id=None, order_value=ordering.FIRST, content="",
                         context=("", "", ""), readonly=False)
        return self.get(root_id)

    def create_node(self, target_id: str, content: str, context: tuple[str, str, str], mode: str,
                    readonly: bool = False) -> Node:
        """A new node as the last child of ``target_id`` or as its sibling just before or after it."""
        content, context, mode = _check_content(content), check_context(*context), _check_mode(mode)
        with self.db.transaction():
            target = self.get(target_id, what="Target node")
            parent_id, order_value = self._position(target, mode)
            node_id = self._new_id()
            self._insert(node_id=node_id, parent_id=parent_id, order_value=order_value, content=content,
                         context=context, readonly=readonly)
        return self.get(node_id)

    def delete(self, node_id: str) -> int:
        """Delete a docmem node and its subtree; returns how many docmem nodes went.

        Virtual nodes placed under it by a summary return to their own place.
        """
        with self.db.transaction():
            node = self.get(node_id)
            self._refuse_readonly(node, "delete")
            doomed = [n for n in self.subtree(node_id) if not n.is_virtual]
            locked = [n.id for n in doomed if n.readonly]
            if locked:
                raise ValidationError(
                    f"Cannot delete '{node_id}': its subtree holds readonly node(s) {', '.join(locked)}, "
                    "which are never deleted. Delete the other nodes of the subtree one by one instead."
                )
            for descendant in reversed(doomed):
                self.db.execute("DELETE FROM docmem_nodes WHERE id = ?", (descendant.id,))
        return len(doomed)

    def update_content(self, node_id: str, content: str) -> Node:
        content = _check_content(content)
        with self.db.transaction():
            node = self.get(node_id)
            self._refuse_readonly(node, "update content of")
            self.db.execute(
                "UPDATE docmem_nodes SET content = ?, token_count = ?, hash = ?, updated_at = ? WHERE id = ?",
                (content, token_count(content), node_hash(node.parent_id, node.context, content, node.order_value),
                 clock.now(), node_id))
        return self.get(node_id)

    def update_context(self, node_id: str, context: tuple[str, str, str]) -> Node:
        context = check_context(*context)
        with self.db.transaction():
            node = self.get(node_id)
            self._refuse_readonly(node, "update context of")
            self.db.execute(
                "UPDATE docmem_nodes SET context_type = ?, context_name = ?, context_value = ?, hash = ?, "
                "updated_at = ? WHERE id = ?",
                (*context, node_hash(node.parent_id, context, node.content, node.order_value), clock.now(), node_id))
        return self.get(node_id)

    def copy_node(self, source_id: str, target_id: str, mode: str) -> Node:
        """Deep-copy a subtree (of any tree, virtual ones included) to a place relative to ``target_id``.

        The copy gets new ids and timestamps; its descendants are numbered 1, 2, ...
        under their parents. Copies of docmem nodes keep ``readonly``; copies of
        virtual nodes are ordinary editable nodes.
        """
        mode = _check_mode(mode)
        with self.db.transaction():
            source = self.get(source_id, what="Source node")
            target = self.get(target_id, what="Target node")
            plan = self._copy_plan(source)
            parent_id, order_value = self._position(target, mode)
            new_ids: dict[str, str] = {}
            for node, new_parent, value in plan:
                new_ids[node.id] = self._new_id()
                self._insert(node_id=new_ids[node.id],
                             parent_id=parent_id if new_parent is None else new_ids[new_parent],
                             order_value=order_value if new_parent is None else value, content=node.content,
                             context=node.context, readonly=node.readonly and not node.is_virtual)
        return self.get(new_ids[source.id])

    def _copy_plan(self, source: Node) -> list[tuple[Node, str | None, float]]:
        """(node, id of its parent in the source, order in the copy) for the whole subtree, parents first."""
        plan: list[tuple[Node, str | None, float]] = [(source, None, ordering.FIRST)]
        index = 0
        while index < len(plan):
            node = plan[index][0]
            kids = self.children(node.id)
            plan.extend((kid, node.id, value) for kid, value in zip(kids, ordering.renumbered(len(kids))))
            index += 1
        return plan

    def move_node(self, source_id: str, target_id: str, mode: str) -> Node:
        """Move a node (with its subtree) within its own tree to a place relative to ``target_id``."""
        mode = _check_mode(mode)
        with self.db.transaction():
            source = self.get(source_id, what="Source node")
            target = self.get(target_id, what="Target node")
            self._refuse_readonly(source, "move")
            if source.id == target.id:
                raise ValidationError(f"Cannot move node '{source.id}' relative to itself; pick another target.")
            source_path, target_path = self.ancestors(source.id), self.ancestors(target.id)
            if source_path[0].id != target_path[0].id:
                raise ValidationError(
                    f"Cannot move '{source.id}' (tree '{source_path[0].id}') to '{target.id}' (tree "
                    f"'{target_path[0].id}'): moves stay within one tree. Use docmem_copy_node, then docmem_delete."
                )
            if any(n.id == source.id for n in target_path):
                raise ValidationError(
                    f"Cannot move '{source.id}' {mode} '{target.id}': the target is inside the node being moved."
                )
            parent_id, order_value = self._position(target, mode, moving=source.id)
            self.db.execute(
                "UPDATE docmem_nodes SET parent_id = ?, order_value = ?, hash = ?, updated_at = ? WHERE id = ?",
                (parent_id, order_value, node_hash(parent_id, source.context, source.content, order_value),
                 clock.now(), source.id))
        return self.get(source.id)

    def add_summary(self, start_id: str, end_id: str, content: str, context: tuple[str, str, str]) -> Node:
        """Put a summary node in place of a run of leaf siblings and file the run under it.

        The run is every sibling whose order lies between the two endpoints
        (either may come first). The summary takes the run's middle order; the
        summarized nodes keep their content and are renumbered 1, 2, ... under
        it, so deleting nothing is lost and the summary can be undone.
        """
        content, context = _check_content(content), check_context(*context)
        with self.db.transaction():
            start = self.get(start_id, what="Start node")
            end = self.get(end_id, what="End node")
            if start.parent_id is None or end.parent_id is None:
                raise ValidationError("Cannot summarize a root node; pick sibling nodes under a common parent.")
            if start.parent_id != end.parent_id:
                raise ValidationError(
                    f"Nodes '{start.id}' and '{end.id}' have different parents; a summary covers siblings only."
                )
            low, high = sorted((start.order_value, end.order_value))
            run = [n for n in self.children(start.parent_id) if low <= n.order_value <= high]
            for node in run:
                if self.children(node.id):
                    raise ValidationError(
                        f"Node '{node.id}' has children and cannot be summarized; summarize leaf nodes only."
                    )
                if not node.is_virtual:
                    self._refuse_readonly(node, "summarize")
            summary_id = self._new_id()
            self._insert(node_id=summary_id, parent_id=start.parent_id, order_value=(low + high) / 2,
                         content=content, context=context, readonly=False)
            stamp = clock.now()
            for node, value in zip(run, ordering.renumbered(len(run))):
                if node.is_virtual:
                    self.db.execute(
                        "INSERT OR REPLACE INTO docmem_placements(node_id, project_id, parent_id, order_value, "
                        "updated_at) VALUES (?, ?, ?, ?, ?)", (node.id, self.project_id, summary_id, value, stamp))
                else:
                    self.db.execute(
                        "UPDATE docmem_nodes SET parent_id = ?, order_value = ?, hash = ?, updated_at = ? "
                        "WHERE id = ?",
                        (summary_id, value, node_hash(summary_id, node.context, node.content, value), stamp, node.id))
        return self.get(summary_id)

