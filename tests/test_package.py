"The package's shape: modules short enough to read (issue 18 targets about 350 lines) and imports without a cycle."
import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import mgrpo_ref

PKG = Path(mgrpo_ref.__file__).parent
MODULES = {p.stem: p for p in PKG.glob('*.py') if not p.stem.startswith('_')}
MAX_LINES = 380   # the target is about 350; past this a module wants cutting in two


def imports(path: Path) -> set[str]:
    "Package modules that `path` imports anywhere (module level or inside a function), itself left out."
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module: found.add(node.module.split('.')[0])
            elif (node.level == 1 and not node.module) or node.module == 'mgrpo_ref':
                found |= {a.name for a in node.names}
            elif node.module and node.module.startswith('mgrpo_ref.'): found.add(node.module.split('.')[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.split('.')[1] for a in node.names if a.name.startswith('mgrpo_ref.')}
    return (found & set(MODULES)) - {path.stem}


def test_no_module_is_too_long_to_read():
    long = {m: n for m, p in MODULES.items() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_imports_have_no_cycle():
    graph = {m: imports(p) for m, p in MODULES.items()}
    assert graph['world'] == {'relations'} and 'world' in graph['oracle']   # the parser sees real edges
    try: order = list(TopologicalSorter(graph).static_order())
    except CycleError as e: raise AssertionError(f"import cycle: {e.args[1]}") from None
    assert set(order) == set(MODULES)
