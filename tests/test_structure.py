"""The code's structure: no import circle, in the Python package (every
import, at module level or in a function, under TYPE_CHECKING too) or in
the engine crate (`use crate::...` and `crate::` paths, test modules
included), and no source file so long it wants splitting.

Standard library only: `ast` reads the Python, a regular expression the
Rust."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "python" / "cnsim"
CRATE = ROOT / "crates" / "cnsim-core" / "src"
MAX_LINES = 900


# ------------------------------------------------------------------ graphs


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of `graph` (its nodes in order, the first repeated at the
    end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if state.get(start):
            continue
        path = [start]
        todo = [iter(sorted(graph.get(start, ())))]
        state[start] = 1
        while todo:
            nxt = next(todo[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                todo.pop()
            elif state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                todo.append(iter(sorted(graph.get(nxt, ()))))
    return None


def _shown(cycle: list[str] | None) -> str:
    return " -> ".join(cycle or [])


# ------------------------------------------------------------------ Python


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def python_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports, as a reader sees them.
    `import P.M` and `from P.M import N` import P.M (a package: its
    __init__); `from P import N` imports the module P.N when there is such
    a source file, else the name N from P's __init__ (`from . import
    _core`: no `_core.py` is there to read). `cnsim._core`, the compiled
    engine, is a module without imports."""
    files = {_module_name(p, root): p for p in root.rglob("*.py")}
    known = set(files) | {f"{root.name}._core"}
    graph: dict[str, set[str]] = {m: set() for m in known}
    for mod, path in files.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    src = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    src = node.module or ""
                subs = [f"{src}.{a.name}" for a in node.names]
                targets = [s if s in files else src for s in subs]
            graph[mod] |= {t for t in targets if t in known and t != mod}
    return graph


# ------------------------------------------------------------------ Rust

_USE = re.compile(r"\buse\s+(crate|super)::([^;]*);", re.S)
_PATH = re.compile(r"\b(crate|super)::((?:[A-Za-z_][A-Za-z_0-9]*::)*[A-Za-z_][A-Za-z_0-9]*!?)")
_TESTS = re.compile(r"^\s*#\[cfg\(test\)\]\s*\n\s*(pub(\([^)]*\))?\s+)?mod\s+\w+", re.M)


def _use_paths(tree: str) -> Iterable[str]:
    """The paths a use tree names: `a::{b, c::{d, e}}` -> a::b, a::c::d, a::c::e."""
    tree = re.sub(r"\s+", "", tree)
    if "{" not in tree:
        yield tree
        return
    head, _, rest = tree.partition("{")
    body = rest[: rest.rindex("}")]
    depth, item = 0, ""
    for ch in body + ",":
        if ch == "," and depth == 0:
            if item:
                yield from (head + p for p in _use_paths(item))
            item = ""
            continue
        depth += (ch == "{") - (ch == "}")
        item += ch
    return


def _code(text: str) -> str:
    """The text without comments (doc comments name paths they do not use)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def rust_graph(src: Path, with_tests: bool = True) -> dict[str, set[str]]:
    """File -> the crate's files it uses. `crate::a::b::X` is the file of the
    longest module path (a/b.rs, a/b/mod.rs, a.rs, a/mod.rs), lib.rs for an
    item of the root (a root re-export is its target's file); `super::` is
    the parent module, or the file itself inside its `#[cfg(test)]` module
    (ignored); a `#[macro_export]` macro is the file that defines it. A
    parent's own paths into its children (`bcn::table()` in scheme/mod.rs)
    are how Rust lays out a module, not read. `with_tests=False`: without the
    test modules' uses."""
    files = {p.relative_to(src).as_posix(): p for p in src.rglob("*.rs")}

    def module_of(rel: str) -> list[str]:
        parts = rel[:-3].split("/")
        if parts[-1] in ("mod", "lib"):
            parts.pop()
        return parts

    def file_of(parts: list[str]) -> str | None:
        for n in range(len(parts), 0, -1):
            stem = "/".join(parts[:n])
            for cand in (f"{stem}.rs", f"{stem}/mod.rs"):
                if cand in files:
                    return cand
        return None

    lib = _code(files["lib.rs"].read_text())
    reexports = {}
    for m in re.finditer(r"pub\s+use\s+([^;]*);", lib):
        for p in _use_paths(m.group(1)):
            *mod, name = p.split("::")
            if mod and file_of(mod):
                reexports[name] = file_of(mod)
    macros = {}
    for rel, path in files.items():
        for m in re.finditer(r"#\[macro_export\]\s*macro_rules!\s*(\w+)", path.read_text()):
            macros[m.group(1) + "!"] = rel

    # A test module kept in its own file (`#[cfg(test)] mod tests;` in
    # sim.rs is sim/tests.rs): all of that file is test code.
    test_files = set()
    for rel, path in files.items():
        for m in re.finditer(r"#\[cfg\(test\)\]\s*mod\s+(\w+)\s*;", _code(path.read_text())):
            stem = (
                rel[:-3]
                if not rel.endswith(("mod.rs", "lib.rs"))
                else rel.rsplit("/", 1)[0]
                if "/" in rel
                else ""
            )
            for cand in (f"{stem}/{m.group(1)}.rs".lstrip("/"), f"{stem}/{m.group(1)}/mod.rs".lstrip("/")):
                if cand in files:
                    test_files.add(cand)

    graph: dict[str, set[str]] = {rel: set() for rel in files}
    for rel, path in files.items():
        if rel == "lib.rs":  # the crate's face: its modules and re-exports, no use of its own
            continue
        text = _code(path.read_text())
        tests = _TESTS.search(text)
        cut = 0 if rel in test_files else tests.start() if tests else len(text)
        here = module_of(rel)
        for m in [*_USE.finditer(text), *_PATH.finditer(text)]:
            in_tests = m.start() >= cut
            if in_tests and not with_tests:
                continue
            kind = m.group(1)
            if kind == "super" and in_tests:
                continue  # the file itself
            paths = _use_paths(m.group(2)) if m.re is _USE else [m.group(2)]
            for p in paths:
                parts = [x for x in p.split("::") if x and x != "self" and x != "*"]
                if kind == "super":
                    base = here[:-1]
                    while parts and parts[0] == "super":
                        parts, base = parts[1:], base[:-1]
                    parts = base + parts
                if not parts:
                    continue
                if parts[0] in macros:
                    target = macros[parts[0]]
                elif file_of(parts) is not None:
                    target = file_of(parts)
                elif len(parts) >= 1 and parts[0] in reexports:
                    target = reexports[parts[0]]
                else:
                    target = "lib.rs"
                if target != rel:
                    graph[rel].add(target)
    return graph


# ------------------------------------------------------------------ tests


def test_the_python_package_has_no_import_circle() -> None:
    cycle = find_cycle(python_graph(PACKAGE))
    assert cycle is None, f"import circle: {_shown(cycle)}"


def test_the_engine_crate_has_no_use_circle() -> None:
    cycle = find_cycle(rust_graph(CRATE))
    assert cycle is None, f"use circle: {_shown(cycle)}"


def test_the_readers_find_what_they_should() -> None:
    """The readers see the arrows that matter, so that a circle would be
    found: a scheme uses the parameter declarations, the network build
    uses the schemes and (through a macro) scheme/mod.rs; a package import
    is one of its __init__."""
    rust = rust_graph(CRATE)
    assert "params.rs" in rust["scheme/params.rs"]
    assert {"scheme/params.rs", "error.rs", "scheme/mod.rs"} <= rust["scheme/bcn.rs"]
    assert "scheme/mod.rs" in rust["net/build.rs"]
    assert "config.rs" in rust["net/build.rs"]
    assert "io/events.rs" in rust["sections.rs"]  # crate::io::events::Kind
    assert "frame.rs" in rust["io/wire.rs"]
    py = python_graph(PACKAGE)
    assert "cnsim.scenario" in py["cnsim.runner"] or "cnsim.scenario.core" in py["cnsim.runner"]
    assert "cnsim._core" in py["cnsim.engine"]
    assert "cnsim.scenario.analysis_sections" in py["cnsim.scenario.model"]  # from . import analysis_sections
    assert "cnsim" not in py["cnsim.fluid"]  # the engine's module, not a name of cnsim's __init__
    assert "cnsim.fluid" in py["cnsim"]  # under TYPE_CHECKING


#: The engine crate's layers, lowest first: a file uses files of its own
#: layer or below, never above (test modules may: a fixture builds a whole
#: network). Within a layer the circle test keeps the order.
RUST_LAYERS: list[tuple[str, ...]] = [
    ("engine/", "error.rs"),  # time, event queue, random streams; the config error
    (
        "params.rs",
        "outputs.rs",
        "columns.rs",
        "frame.rs",
        "io/mod.rs",
        "io/parquet.rs",
        "io/pcap.rs",
        "io/events.rs",
        "io/matrix.rs",
    ),  # vocabularies, files
    # the declarations and the schemes; a collective job's plan (data)
    (
        "sections.rs",
        "generators.rs",
        "workloads.rs",
        "scheme/",
        "collective/section.rs",
        "collective/plan.rs",
    ),
    # the resolved configuration and its compiler; frames' headers; the flow-level model's settings
    # collective jobs planned as flows (collective/mod.rs)
    (
        "config.rs",
        "flow_control.rs",
        "transport_config.rs",
        "compile.rs",
        "io/wire.rs",
        "flow/params.rs",
        "collective/mod.rs",
        "collective/tests.rs",
    ),
    # the event hook and recorder; the run's statistics (a collective's figures)
    ("trace/", "stats.rs", "class_stats.rs", "collective/metrics.rs"),
    # the network model at either fidelity: Sim::new (net/sim.rs) chooses the flow-level
    # model, which runs the packet engine on its links (handed net::run::PacketRuns)
    ("net/", "flow/"),
    ("bench.rs", "fluid.rs"),  # workloads and the fluid models, over the config
    ("lib.rs",),  # the crate's face
]


def _layer(rel: str) -> int:
    for i, layer in enumerate(RUST_LAYERS):
        if any(rel == p or (p.endswith("/") and rel.startswith(p)) for p in layer):
            return i
    raise AssertionError(f"{rel}: in no layer of RUST_LAYERS")


def test_the_engine_crate_uses_no_layer_above() -> None:
    up = sorted(
        f"{a} -> {b}"
        for a, targets in rust_graph(CRATE, with_tests=False).items()
        for b in targets
        if _layer(b) > _layer(a)
    )
    assert not up, f"uses of a higher layer: {up}"


def test_a_planted_circle_is_found(tmp_path: Path) -> None:
    """Both readers report a circle, function-level Python imports and
    `#[cfg(test)]` Rust uses included."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n"
    )
    (pkg / "a.py").write_text("from .sub.b import f\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("def f():\n    from .. import a\n")
    assert _shown(find_cycle(python_graph(pkg))) == "pkg.a -> pkg.sub.b -> pkg.a"
    (pkg / "sub" / "b.py").write_text("def f():\n    from . import c\n")
    (pkg / "sub" / "c.py").write_text("x = 1\n")
    assert find_cycle(python_graph(pkg)) is None
    (pkg / "sub" / "c.py").write_text("from .. import x\n")  # a name of the package's __init__
    assert _shown(find_cycle(python_graph(pkg))) == "pkg -> pkg.a -> pkg.sub.b -> pkg.sub.c -> pkg"

    src = tmp_path / "src"
    (src / "s").mkdir(parents=True)
    (src / "lib.rs").write_text("pub mod c;\npub mod s;\n")
    (src / "c.rs").write_text("use crate::s::{x::X, Y};\n")
    (src / "s" / "mod.rs").write_text("pub mod x;\npub struct Y;\n")
    (src / "s" / "x.rs").write_text("use super::Y;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n")
    assert find_cycle(rust_graph(src)) is None
    (src / "s" / "x.rs").write_text(
        "use super::Y;\npub struct X;\n#[cfg(test)]\nmod tests {\n    use crate::c::Z;\n}\n"
    )
    assert _shown(find_cycle(rust_graph(src))) == "c.rs -> s/x.rs -> c.rs"


def _lines_before_tests(path: Path) -> int:
    text = path.read_text()
    m = _TESTS.search(text) if path.suffix == ".rs" else None
    return text[: m.start()].count("\n") if m else text.count("\n")


def test_no_source_file_is_too_long() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for top in (ROOT / "crates", ROOT / "python")
        for p in [*top.rglob("*.rs"), *top.rglob("*.py")]
        if "target" not in p.parts and (n := _lines_before_tests(p)) > MAX_LINES
    }
    assert not long, f"over {MAX_LINES} lines before the tests: {long}"


def test_the_engine_stub_names_what_the_binding_exports() -> None:
    """python/cnsim/_core.pyi lists every name `cnsim._core` exports, and the
    public methods of its classes, no more and no fewer."""
    import cnsim._core as _core

    stub = ast.parse((PACKAGE / "_core.pyi").read_text())
    declared = {n.name: n for n in stub.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    exported = {n for n in dir(_core) if not n.startswith("_")}
    assert set(declared) == exported
    for name, node in declared.items():
        if isinstance(node, ast.ClassDef):
            cls = getattr(_core, name)
            own = {n for n in vars(cls) if not n.startswith("_")}
            members = {
                m.name for m in node.body if isinstance(m, ast.FunctionDef) and not m.name.startswith("_")
            }
            fields = {
                m.target.id
                for m in node.body
                if isinstance(m, ast.AnnAssign) and isinstance(m.target, ast.Name)
            }
            assert members == own, name
            if issubclass(cls, BaseException):  # set on each error the binding raises
                assert fields == {"path", "message"}, name
