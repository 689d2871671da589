"""What a user's file may hold before chalkboard reads it: PyYAML's safe loader bounded (its size,
nesting and alias expansion, plain keys, no key given twice), and the control and bidirectional-override
characters a text may carry, escaped or made visible wherever it is shown. Apart from loader.py, which
reads the files through it, because the claims file, a config.json and the page rely on it too.
"""
from __future__ import annotations

import re

import yaml

# PyYAML's C parser when it is built with libyaml (about 10x faster), its pure-Python one otherwise;
# both with the safe constructor: no Python tags, no objects.
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

MAX_YAML_BYTES = 16 * 2**20      # a data or claims file larger than this is refused, not read
MAX_YAML_DEPTH = 48              # nesting of lists and mappings
MAX_YAML_NODES = 1_000_000       # values once aliases are expanded (an alias bomb stops here)
CONTROL_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f"
                           "\u202a-\u202e\u2066-\u2069]")


def escaped(text: str) -> str:
    """Control and bidirectional-override characters written as escapes, ESC as \\x1b, U+202E as
    \\u202e: plain ASCII that every terminal, page, font and figure shows as it is."""
    return CONTROL_CHARS.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                             else f"\\u{ord(m.group()):04x}", text)


def visible(text: str) -> str:
    """Control and bidirectional-override characters made visible: ESC as ␛, U+202E as �."""
    def show(m):
        c = ord(m.group())
        return chr(0x2400 + c) if c < 0x20 else "␡" if c == 0x7F else "�"
    return CONTROL_CHARS.sub(show, text)


class UniqueKeyLoader(_SafeLoader):
    """PyYAML's safe loader, except that a key given twice in one mapping is an error, keys are
    plain values, and nesting, size and alias expansion are bounded (checked before anything
    is constructed)."""

    def construct_document(self, node):
        _check_tree(node)
        return super().construct_document(node)

    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as e:  # a 5,000-digit integer, a 13th month, ...
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read this value ({str(e).splitlines()[0]})", node.start_mark) from None


def _check_tree(root) -> None:
    """Reject recursive aliases, deep nesting, non-scalar keys and alias bombs, iteratively."""
    def fail(node, message):
        raise yaml.constructor.ConstructorError(None, None, message, node.start_mark)

    size: dict[int, int] = {}
    path: set[int] = set()                   # the nodes from the root to the current one
    stack = [(root, False)]
    while stack:
        node, leaving = stack.pop()
        nid = id(node)
        if isinstance(node, yaml.ScalarNode):
            size[nid] = 1
            continue
        pairs = node.value if isinstance(node, yaml.MappingNode) else [(None, c) for c in node.value]
        children = [c for kv in pairs for c in kv if c is not None]
        if leaving:
            path.discard(nid)
            size[nid] = 1 + sum(size[id(c)] for c in children)
            if size[nid] > MAX_YAML_NODES:
                fail(node, f"more than {MAX_YAML_NODES:,} values once aliases are expanded (an alias bomb?)")
            continue
        if nid in size:
            continue
        path.add(nid)
        if len(path) > MAX_YAML_DEPTH:
            fail(node, f"nested more than {MAX_YAML_DEPTH} levels deep")
        stack.append((node, True))
        for k, _ in pairs:
            if k is not None and not isinstance(k, yaml.ScalarNode):
                fail(k, "a mapping key must be a plain value (text or a number), not a list or mapping")
        for c in children:
            if id(c) in path:
                fail(c, "an alias refers to a list or mapping that contains it (recursive alias)")
            if id(c) not in size:
                stack.append((c, False))


def _no_duplicates(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (line {mark.line + 1})", mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)
