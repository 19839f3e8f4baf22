"""The API reference (docs/reference/) documents every public name of every package.

A public module is a module of ``packages/*/src`` whose path has no component starting with ``_`` (the
conformance suite ``burn_backend.testing`` aside); its public names are its ``__all__``. The reference
renders modules with mkdocstrings directives (``::: burn_nn``), which show every name of the module's
``__all__`` unless a ``members:`` option narrows them. These tests read the pages and the source
statically (nothing is imported, so burn_cuda counts without CuPy), and check that:

- every public module has a directive on a reference page, and every page is in the site's nav;
- every public name is rendered: by its module's directive (without a ``members:`` list, or listed in
  it) or by a directive of its own (``::: burn_nn.Linear``);
- every directive names something that exists;
- the meta-package's page says, for each namespace of ``burn``, which package's names it holds;
- with griffe installed (the docs session and the development environment), the static analysis the
  site is built with resolves every public name to an object.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "reference"
MKDOCS = ROOT / "mkdocs.yml"
META = "burn"  # the meta-package: namespaces re-exporting the others, documented on reference/burn.md
DIRECTIVE = re.compile(r"^::: *(?P<target>[\w.]+) *$")


@dataclass
class PublicModule:
    """A public module: its dotted name, its file, and its public names."""

    name: str
    path: Path
    names: list[str]


@dataclass
class Directive:
    """A ``::: target`` line of a page and its ``members`` option (``None``: not narrowed; ``[]`` for
    ``members: false``)."""

    page: str
    line: int
    target: str
    members: list[str] | None = field(default=None)


def module_names(path: Path, modules: dict[str, PublicModule] | None = None) -> list[str]:
    """A module's public names: its ``__all__`` or, without one, its top-level names that do not start
    with an underscore (submodules aside).

    ``__all__`` may be a literal list, borrowed from another module (``from burn_nn import __all__``: that
    module's names, looked up in ``modules``) and extended (``__all__ = [*__all__, "LoadArgs"]``), as the
    meta-package's namespaces do, also inside ``try`` statements.
    """
    tree = ast.parse(path.read_text())
    names: list[str] | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(alias.name == "__all__" for alias in node.names):
            borrowed = (modules or {}).get(node.module or "")
            names = (names or []) + (borrowed.names if borrowed is not None else [])
        elif isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            names = (names or []) + [
                element.value
                for element in ast.walk(node.value)
                if isinstance(element, ast.Constant) and isinstance(element.value, str)
            ]
    if names is not None:
        return list(dict.fromkeys(names))
    defined = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.append(node.name)
        elif isinstance(node, ast.Assign):
            defined += [target.id for target in node.targets if isinstance(target, ast.Name)]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            defined += [alias.asname or alias.name for alias in node.names if alias.name != "*"]
    return [name for name in defined if not name.startswith("_")]


def public_modules() -> dict[str, PublicModule]:
    """Every public module of every package, the meta-package's namespaces included."""
    modules = {}
    for source in sorted(ROOT.glob("packages/*/src")):
        for path in sorted(source.rglob("*.py")):
            parts = list(path.relative_to(source).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if any(part.startswith("_") for part in parts) or "testing" in parts:
                continue
            name = ".".join(parts)
            modules[name] = PublicModule(name, path, [])
    # the package modules first, so that the meta-package's namespaces can borrow their __all__
    for module in sorted(modules.values(), key=lambda module: module.name.split(".")[0] == META):
        module.names = module_names(module.path, modules)
    return modules


def directives() -> list[Directive]:
    """Every mkdocstrings directive of the reference pages, with its ``members`` option."""
    found = []
    for page in sorted(REFERENCE.glob("*.md")):
        lines = page.read_text().split("\n")
        for index, line in enumerate(lines):
            match = DIRECTIVE.match(line)
            if match is None:
                continue
            directive = Directive(page.name, index + 1, match["target"])
            options = []
            for option in lines[index + 1 :]:
                if option.strip() and not option.startswith((" ", "\t")):
                    break
                options.append(option)
            directive.members = _members_option(options)
            found.append(directive)
    return found


def _members_option(options: list[str]) -> list[str] | None:
    for index, line in enumerate(options):
        match = re.match(r"^\s+members:\s*(?P<value>.*)$", line)
        if match is None:
            continue
        value = match["value"].strip()
        if value in ("false", "False", "[]"):
            return []
        if value in ("true", "True"):
            return None
        if value.startswith("["):
            return [item.strip().strip("'\"") for item in value.strip("[]").split(",") if item.strip()]
        listed = []
        for item in options[index + 1 :]:
            entry = re.match(r"^\s+-\s*(?P<name>[\w]+)\s*$", item)
            if entry is None:
                break
            listed.append(entry["name"])
        return listed
    return None


def documented() -> set[str]:
    """The dotted names the reference renders: ``module.name`` for every name it shows."""
    modules = public_modules()
    shown: set[str] = set()
    for directive in directives():
        if directive.target in modules:
            module = modules[directive.target]
            if directive.members is None:
                shown.update(f"{module.name}.{name}" for name in module.names)
            else:
                shown.update(f"{module.name}.{name}" for name in directive.members)
        else:
            shown.add(directive.target)
    return shown


def test_every_public_module_has_a_reference_page_in_the_nav() -> None:
    modules = [name for name in public_modules() if name.split(".")[0] != META]
    targets = {directive.target for directive in directives()}
    assert not [name for name in modules if name not in targets], "public modules without a ::: directive"
    nav = MKDOCS.read_text()
    pages = sorted(page.relative_to(ROOT / "docs").as_posix() for page in REFERENCE.glob("*.md"))
    unlisted = [page for page in pages if f" {page}\n" not in nav]
    assert not unlisted, "reference pages missing from mkdocs.yml nav"


def test_every_public_name_is_rendered() -> None:
    shown = documented()
    missing = [
        f"{module.name}.{name}"
        for module in public_modules().values()
        if module.name.split(".")[0] != META
        for name in module.names
        if f"{module.name}.{name}" not in shown
    ]
    assert not missing, f"public names the reference does not render: {missing}"


def test_every_directive_names_something_that_exists() -> None:
    modules = public_modules()
    names = {f"{module.name}.{name}" for module in modules.values() for name in module.names}
    stale = []
    for directive in directives():
        if directive.target in modules:
            unknown = [name for name in directive.members or [] if f"{directive.target}.{name}" not in names]
            stale += [f"{directive.page}:{directive.line}: {directive.target}.{name}" for name in unknown]
        elif directive.target not in names:
            stale.append(f"{directive.page}:{directive.line}: {directive.target}")
    assert not stale, f"directives naming nothing: {stale}"


def meta_sources(module: PublicModule) -> dict[str, str]:
    """For a namespace of the meta-package: each of its names -> the public module that defines it."""
    tree = ast.parse(module.path.read_text())
    sources: dict[str, str] = {}
    modules = public_modules()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.module is None or node.level:
            continue
        if node.module.split(".")[0] in (META, "__future__"):
            continue
        for alias in node.names:
            if alias.name == "*":
                sources.update(dict.fromkeys(modules[node.module].names, node.module))
            elif alias.name != "__all__":
                sources[alias.asname or alias.name] = node.module
    if module.name == f"{META}.backend":  # the backends, imported on first use (burn._reexport)
        reexport = ast.parse((module.path.parent / "_reexport.py").read_text())
        for node in ast.walk(reexport):
            if (
                isinstance(node, ast.AnnAssign)
                and getattr(node.target, "id", "") == "BACKEND_PROVIDERS"
                and node.value is not None
            ):
                providers = ast.literal_eval(node.value)
                sources.update({name: provider[0] for name, provider in providers.items()})
    return sources


def test_the_meta_package_page_maps_each_namespace_to_documented_names() -> None:
    page = (REFERENCE / f"{META}.md").read_text()
    rows = {}
    for line in page.split("\n"):
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].startswith("`"):
            for namespace in re.findall(r"`([\w.]+)`", cells[0]):
                rows[namespace] = set(re.findall(r"\]\(([\w.]+)\.md\)", cells[1]))
    shown = documented()
    problems = []
    for module in public_modules().values():
        if module.name.split(".")[0] != META or module.name == META:
            continue
        sources = meta_sources(module)
        if module.name not in rows:
            problems.append(f"reference/{META}.md has no row for {module.name}")
            continue
        for name in module.names:
            source = sources.get(name)
            if source is None:
                problems.append(f"{module.name}.{name}: no package module provides it")
            elif f"{source}.{name}" not in shown:
                problems.append(f"{module.name}.{name}: {source}.{name} is not rendered")
            elif source not in rows[module.name]:
                problems.append(f"reference/{META}.md's row for {module.name} does not link {source}.md")
    assert not problems, "\n".join(problems)


def test_the_site_build_resolves_every_public_name_statically() -> None:
    griffe = pytest.importorskip("griffe", reason="griffe (mkdocstrings' analysis) is in the docs session")
    paths = [str(source) for source in sorted(ROOT.glob("packages/*/src"))]
    loader = griffe.GriffeLoader(search_paths=paths, allow_inspection=False)
    unresolved = []
    modules = [module for module in public_modules().values() if module.name.split(".")[0] != META]
    for package in sorted({module.name.split(".")[0] for module in modules}):
        loader.load(package)
    loader.resolve_aliases(implicit=False, external=False)
    for module in modules:
        for name in module.names:
            try:
                target = loader.modules_collection[f"{module.name}.{name}"]
                if isinstance(target, griffe.Alias):
                    target = target.final_target
            except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError) as error:
                unresolved.append(f"{module.name}.{name} ({type(error).__name__})")
    assert not unresolved, f"names mkdocstrings cannot find without importing: {unresolved}"


def test_the_members_option_narrows_what_a_directive_renders() -> None:
    # the parsing the coverage tests rely on: a member list (block or inline), false, and no option
    block = [
        "    options:",
        "      members:",
        "        - Linear",
        "        - Conv2d",
        "      show_source: true",
    ]
    assert _members_option(block) == ["Linear", "Conv2d"]
    assert _members_option(["    options:", "      members: [Linear, 'Embedding']"]) == [
        "Linear",
        "Embedding",
    ]
    assert _members_option(["    options:", "      members: false"]) == []
    assert _members_option(["    options:", "      show_root_heading: false"]) is None
    # a module without __all__: its top-level names, private ones left out
    names = module_names(Path(__file__))
    assert "test_the_members_option_narrows_what_a_directive_renders" in names
    assert "_members_option" not in names
