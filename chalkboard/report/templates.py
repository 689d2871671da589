"""The two Jinja2 environments the documents are rendered with (HTML, and Typst with its own
delimiters), their filters, and each template as Jinja2 compiled it kept with SymPy's work: the
text that reaches the reader passes through here (no raw control characters, no unsafe link)."""
from __future__ import annotations

import re
from pathlib import Path

import jinja2

from ..data.loader import SAFE_URL
from ..data.safety import CONTROL_CHARS, visible
from .pdf import typst_display
from .reader import cite_lecture, code_html, code_typst, linked, prose_html, prose_typst


def _finalize(v):
    """Applied to every value a template prints (before HTML escaping): no raw control characters,
    and the lecture's notes cited by their time in the lecture, not by their file."""
    if isinstance(v, str):
        v = cite_lecture(v)
        if CONTROL_CHARS.search(v):
            return type(v)(visible(v))  # a Markup stays Markup
    return v


def web_link(url) -> str:
    """``url`` if it is an http(s) address, else "": no javascript:, data: or file: links."""
    u = "" if url is None else str(url).strip()
    return u if SAFE_URL.match(u) and not CONTROL_CHARS.search(u) else ""


def page_link(href) -> str:
    """An href for the HTML page: an anchor in the page (#...) or an http(s) address, else ""."""
    h = "" if href is None else str(href).strip()
    return h if re.fullmatch(r"#[\w.:-]+", h) else web_link(h)


def _typst_str(s) -> str:
    from ..typeset.printers import typst_str  # loads the derivations: imported when rendering, not before
    return typst_str("" if s is None else str(s))


def _typst_text(s) -> str:
    """Data text in Typst markup: a string literal, shown verbatim; ';' ends the expression."""
    return f"#{_typst_str(s)};"


class KeptTemplates(jinja2.BytecodeCache):
    """Each template as Jinja2 compiled it, kept with SymPy's work (chalkboard/cache/symcache.py)
    under the template's name, all that decides the compiled code besides the template's source
    (the delimiters, whitespace and escaping, whether each filter, test and the finalize function
    is handed the context or the environment, the compiler's policies, async) and Jinja2's
    version; Jinja2 itself takes the kept code only if it was compiled from the template's source
    as it is now, by this Python. Compiling the templates costs about 0.13 s a build."""

    def __init__(self, env: jinja2.Environment):
        def passes(f) -> str:   # how Jinja2 calls it, decided when a template is compiled
            return str(getattr(f, "jinja_pass_arg", None))
        self.reads = (env.block_start_string, env.block_end_string, env.variable_start_string,
                      env.variable_end_string, env.comment_start_string, env.comment_end_string,
                      env.line_statement_prefix, env.line_comment_prefix, env.trim_blocks, env.lstrip_blocks,
                      env.newline_sequence, env.keep_trailing_newline, env.autoescape, env.optimized,
                      env.is_async, None if env.finalize is None else passes(env.finalize),
                      tuple(sorted((n, passes(f)) for n, f in env.filters.items())),
                      tuple(sorted((n, passes(f)) for n, f in env.tests.items())),
                      tuple(sorted((k, v) for k, v in env.policies.items()
                                   if v is None or isinstance(v, (str, int, float, bool)))),
                      tuple(sorted(env.extensions)), jinja2.__version__)

    def get_cache_key(self, name: str, filename=None) -> str:
        return name   # one folder of templates: the name is enough, wherever the project is

    def _key(self, bucket) -> tuple:
        return ("template", bucket.key, self.reads)

    def load_bytecode(self, bucket) -> None:
        from derivations import REGISTRY

        kept = REGISTRY.fresh.get(self._key(bucket)) or REGISTRY.saved.get(self._key(bucket))
        if kept is not None:
            bucket.bytecode_from_string(kept)   # reset (compiled again) if the source changed

    def dump_bytecode(self, bucket) -> None:
        from derivations import REGISTRY

        REGISTRY.fresh[self._key(bucket)] = bucket.bytecode_to_string()


def environments(root: Path):
    loader = jinja2.FileSystemLoader(str(root / "templates"))
    html = jinja2.Environment(loader=loader, autoescape=True, undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True, finalize=_finalize)
    typ = jinja2.Environment(loader=loader, autoescape=False, undefined=jinja2.StrictUndefined, finalize=_finalize,
                             block_start_string="<%", block_end_string="%>",
                             variable_start_string="<<", variable_end_string=">>",
                             comment_start_string="<#", comment_end_string="#>",
                             trim_blocks=True, lstrip_blocks=True)
    for env in (html, typ):
        env.filters["first_upper"] = lambda s: s[:1].upper() + s[1:] if s else s
        env.filters["web_link"] = web_link
    html.filters["page_link"] = page_link
    html.filters["links"] = linked
    typ.filters["tstr"] = _typst_str
    typ.filters["tx"] = _typst_text
    typ.filters["txcode"] = lambda s: code_typst(s, _typst_str)
    typ.filters["prose"] = lambda s: prose_typst(s, _typst_str)
    html.filters["prose"] = prose_html
    html.filters["code"] = code_html
    typ.filters["display"] = typst_display
    for env in (html, typ):   # (an escaping decided by a function would be code the key cannot read)
        env.bytecode_cache = KeptTemplates(env) if isinstance(env.autoescape, bool) else None
    return html, typ
