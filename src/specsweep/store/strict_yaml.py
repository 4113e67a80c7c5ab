"""YAML from outside, read strictly: a regular file (never a FIFO or a device) of at most
``MAX_FILE_BYTES`` (``read_yaml_file``), then ``load_yaml``: duplicate keys refused, nesting at most
``MAX_DEPTH`` deep, and alias bombs stopped (aliases that expand past ``MAX_NODES`` values or
``MAX_EXPANDED_BYTES`` bytes), counted while the document is composed. Experiment, traffic, profile
and scenario files are all read here (docs/reliability.md); the experiment file's own checks are
specsweep.experiment.checks."""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import Composer
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode

from specsweep.errors import ConfigError
from specsweep.store import inputs

MAX_DEPTH = 64  # an experiment file needs about 6 levels

MAX_NODES = 1_000_000  # YAML nodes after aliases are expanded

MAX_FILE_BYTES = 1 << 20  # an experiment file is a few KB; parsing 1 MiB of YAML takes seconds

MAX_EXPANDED_BYTES = 4 << 20  # bytes of values after aliases are expanded


# ---- YAML ---------------------------------------------------------------------------------------
class _Bound(yaml.YAMLError):
    """A bound on the expanded document was passed (composition stops at once)."""


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that counts nesting depth, refuses duplicate keys, and keeps a running count of the
    document as it would be once its aliases are expanded: values (nodes) and bytes of scalar values.
    An alias adds the whole size of the node it names; each node's size is known once it is composed
    (an alias to a node still being composed is a recursive alias). So an alias bomb is refused as
    soon as it passes ``MAX_NODES`` or ``MAX_EXPANDED_BYTES``, before the rest of the file is read."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._nodes = 0
        self._bytes = 0
        self._sizes: dict[int, tuple[int, int]] = {}  # id(anchored node) -> (nodes, bytes), once composed

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        self._depth += 1
        if self._depth > MAX_DEPTH:
            mark = self.peek_event().start_mark
            raise yaml.YAMLError(
                f"nesting deeper than {MAX_DEPTH} levels (line {mark.line + 1}); "
                "an experiment file needs about 6"
            )
        try:
            if self.check_event(AliasEvent):
                mark = self.peek_event().start_mark
                node = Composer.compose_node(self, parent, index)
                size = self._sizes.get(id(node))
                if size is None:
                    raise yaml.YAMLError(f"a recursive alias (line {mark.line + 1}): it would expand forever")
                self._count(*size)
                return node
            anchored = getattr(self.peek_event(), "anchor", None) is not None
            start = (self._nodes, self._bytes)
            node = Composer.compose_node(self, parent, index)
            self._count(1, len(node.value) if isinstance(node, ScalarNode) else 0)
            if anchored:  # only a node with an anchor can be named by an alias
                self._sizes[id(node)] = (self._nodes - start[0], self._bytes - start[1])
            return node
        finally:
            self._depth -= 1

    def _count(self, nodes: int, size: int) -> None:
        self._nodes += nodes
        self._bytes += size
        if self._nodes > MAX_NODES:
            raise _Bound(
                f"the YAML aliases (*name) expand to more than {MAX_NODES:,} values (bound on values "
                "after expansion); write the values out or use fewer aliases"
            )
        if self._bytes > MAX_EXPANDED_BYTES:
            raise _Bound(
                f"the YAML aliases (*name) expand to more than {MAX_EXPANDED_BYTES:,} bytes of values "
                "(bound on the expanded size); write the values out or use fewer aliases"
            )

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node)
            line = key_node.start_mark.line + 1
            try:
                first = seen.get(key)
                seen.setdefault(key, line)
            except TypeError:  # an unhashable key: the constructor reports it
                continue
            if first is not None:
                raise yaml.YAMLError(
                    f"duplicate key {key!r} (line {line}; first at line {first}); "
                    "each key may appear once in a mapping"
                )
        return super().construct_mapping(node, deep=deep)


def read_yaml_file(path: inputs.Source, what: str) -> Any:
    """A YAML file from outside (``what``: "experiment file", "traffic file", ...) -> data: a regular
    file of at most MAX_FILE_BYTES (the rest is never read), UTF-8, then ``load_yaml``."""
    try:
        raw = inputs.read_bytes(path, MAX_FILE_BYTES)
    except OSError as e:
        raise ConfigError(f"cannot read {what}: {e.strerror or e}", file=str(path)) from e
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"not UTF-8 text (byte {e.start}): {e.reason}", file=str(path)) from e
    return load_yaml(text, file=str(path))


def load_yaml(text: str, *, file: str | None = None) -> Any:
    """One YAML document -> data; a ConfigError for bad YAML, duplicate keys, nesting too deep, or
    aliases that expand past MAX_NODES nodes or MAX_EXPANDED_BYTES bytes (a "billion laughs" file)."""
    try:
        loader = _StrictLoader(text)
    except yaml.YAMLError as e:  # e.g. a control character the reader refuses
        raise ConfigError(f"not valid YAML: {e}", file=file) from e
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        return loader.construct_document(node)
    except _Bound as e:
        raise ConfigError(str(e), file=file) from e
    except yaml.YAMLError as e:
        raise ConfigError(f"not valid YAML: {e}", file=file) from e
    except RecursionError as e:  # belt and braces: MAX_DEPTH should stop it first
        raise ConfigError(f"nesting too deep (more than {MAX_DEPTH} levels)", file=file) from e
    finally:
        loader.dispose()
