"""Build the project's website (`make site`): every notebook of nbs/ as a page with its committed outputs, the
pages of site/, the tables and figures of docs/, into _site/. Nothing is executed and nothing is downloaded.

1. stage: copy nbs/*.ipynb into build/site/src, with nbdev's directives turned into the tags myst-nb reads
   (`#| hide` hides a cell, a cell holding only `#| default_exp` is hidden as nbdev's own docs hide it,
   `#| code-fold: true` folds its code behind a "Show code" toggle as Quarto's option does, other `#| ...` lines
   are dropped from the code shown), progress-bar widget outputs dropped (their state is not
   saved, so they would render as a stale "0%"), and links to `../x` (the repository root, seen from nbs/)
   made relative to the staged root, where docs/ is copied; copy site/*.md the same way, leaving out includes
   and figures of docs/ that are not committed; append the sidebar, built from site/toc.yml, to index.
2. copy MathJax (a local copy, `--mathjax`: the npm package's es5/ folder) into the site's _static/.
3. sphinx-build (myst-nb, sphinx-book-theme; the config is site/conf.py), then move the HTML to _site/.
"""
import argparse, json, re, shutil, subprocess, sys, time
from pathlib import Path

import nbformat, yaml

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT/'site'                     # the site's source: toc.yml, conf.py, the pages written by hand
NBS = ROOT/'nbs'
DOCS = ROOT/'docs'
WIDGET = 'application/vnd.jupyter.widget-view+json'
DIRECTIVE = re.compile(r'^\s*#\|\s*([\w-]+)\s*:?\s*(.*?)\s*$')
# the parts of MathJax 3's es5/ folder a page loads: the TeX + CommonHTML bundle, its fonts, and the components it
# may load later (TeX extensions by autoload, the menu's accessibility parts and their speech rules)
REPO_PAGES = ['bench/RESULTS.md', 'configs/README.md', 'mgrpo_ref/checkpoints/README.md']   # other markdown of the repository that pages link to
MATHJAX_PARTS = ['tex-chtml.js', 'input/tex/extensions', 'output/chtml/fonts/woff-v2', 'ui', 'a11y', 'sre']


def load_toc(path: Path = SITE/'toc.yml') -> list[dict]:
    "The sidebar's sections: [{'caption': str, 'pages': [name, ...]}, ...] in reading order."
    toc = yaml.safe_load(path.read_text())['sections']
    for s in toc:
        if not s.get('caption') or not s.get('pages'): raise ValueError(f"each section of {path} needs a caption and pages, got {s}")
    return toc


def page_sources(toc: list[dict]) -> dict[str, Path]:
    "Each page of the toc and the file it is built from: nbs/NAME.ipynb or site/NAME.md."
    out = {}
    for s in toc:
        for name in s['pages']:
            if name in out: raise ValueError(f"page {name!r} is listed twice in the toc")
            cands = [p for p in (NBS/f'{name}.ipynb', SITE/f'{name}.md', ROOT/f'{name}.md') if p.exists() and p != SITE/'README.md']
            if len(cands) != 1: raise ValueError(f"page {name!r} of the toc should be one of nbs/{name}.ipynb, site/{name}.md or {name}.md (e.g. docs/guide/...), found {cands}")
            out[name] = cands[0]
    return out


def root_links(md: str) -> str:
    """Links and includes written from nbs/ or site/ to `../x` (the repository root) point to `x` at the staged root,
    and `../nbs/x` (a notebook, seen from site/) to `x`, since the notebooks are staged at the root."""
    md = re.sub(r'\]\(\.\./(?:nbs/)?', '](', md)
    return re.sub(r'^(```\{include\}\s+)\.\./', r'\1', md, flags=re.M)


def stage_cell(cell) -> None:
    "nbdev's directives as myst-nb tags, in place."
    if cell.cell_type == 'markdown':
        cell.source = root_links(cell.source)
        return
    if cell.cell_type != 'code': return
    lines = cell.source.splitlines()
    dirs = {m[1]: m[2] for m in map(DIRECTIVE.match, lines) if m}
    code = [l for l in lines if not DIRECTIVE.match(l)]
    tags = set(cell.metadata.get('tags', []))
    if 'hide' in dirs or dirs.get('include') == 'false' or ('default_exp' in dirs and not ''.join(code).strip()): tags.add('remove-cell')
    if dirs.get('echo') == 'false': tags.add('remove-input')
    if dirs.get('code-fold') == 'true': tags.add('hide-input')              # myst-nb: the code in a closed toggle, the output shown
    if dirs.get('output') == 'false': tags.add('remove-output')
    cell.source = '\n'.join(code).strip('\n')
    if tags: cell.metadata['tags'] = sorted(tags)
    cell.outputs = [o for o in cell.get('outputs', []) if WIDGET not in o.get('data', {})]


def stage_notebook(src: Path, dst: Path) -> None:
    nb = nbformat.read(src, as_version=4)
    nb.metadata.pop('widgets', None)
    nb.metadata['kernelspec'] = {'name': 'python3', 'display_name': 'Python 3', 'language': 'python'}   # nbdev-clean drops both;
    nb.metadata['language_info'] = {'name': 'python', 'pygments_lexer': 'ipython3'}                    # the code's highlighting
    for c in nb.cells: stage_cell(c)
    nbformat.write(nb, dst)


def stage_markdown(src: Path, dst: Path, staged: Path, rebase: bool = True) -> None:
    "A page of site/ (`rebase`: links to the repository root made staged-root-relative) or of docs/ (staged where it is); a missing docs/ file is said, not broken."
    md = root_links(src.read_text()) if rebase else src.read_text()
    said = lambda path: f"*`{path}` is not committed yet.*"
    md = re.sub(r'^```\{include\}\s+(\S+)[ \t]*\n(?:.*\n)*?```[ \t]*$', lambda m: m[0] if (staged/m[1]).exists() else said(m[1]), md, flags=re.M)
    md = re.sub(r'^!\[[^\]]*\]\(([^)\s]+)\)[ \t]*$', lambda m: m[0] if (staged/m[1]).exists() else said(m[1]), md, flags=re.M)
    dst.write_text(md)


def sidebar(toc: list[dict], titles: dict[str, str]) -> str:
    "The toctrees that make the sidebar: one per section, captioned; index itself is `self`; a page's title by default."
    blocks = []
    for s in toc:
        refs = ['self' if p == 'index' else p for p in s['pages']]
        entries = '\n'.join(f'{titles[p]} <{r}>' if p in titles else r for p, r in zip(s['pages'], refs))
        blocks.append(f"```{{toctree}}\n:hidden:\n:caption: {s['caption']}\n\n{entries}\n```")
    return '\n\n'.join(blocks)


def stage(out: Path, mathjax: Path | None) -> None:
    toc = load_toc()
    pages = page_sources(toc)
    missing = sorted(p.stem for p in NBS.glob('*.ipynb') if p.stem not in pages and not p.name.startswith(('_', '.')))
    if missing: raise ValueError(f"notebooks missing from site/toc.yml: {missing}")
    if 'index' not in pages: raise ValueError("site/toc.yml must list index (the home page)")
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    shutil.copytree(DOCS, out/'docs')                    # tables, figures, CSVs: pages include and link them
    for rel in REPO_PAGES:                                # repository pages the guides link to, at their own paths
        (out/rel).parent.mkdir(parents=True, exist_ok=True); shutil.copy(ROOT/rel, out/rel)
    for name, src in pages.items():
        if src.suffix == '.ipynb': stage_notebook(src, out/src.name)
        elif src.parent == SITE: stage_markdown(src, out/src.name, out)
        else: stage_markdown(src, out/src.relative_to(ROOT), out, rebase=False)
    nb = nbformat.read(out/'index.ipynb', as_version=4)
    titles = yaml.safe_load((SITE/'toc.yml').read_text()).get('titles') or {}
    nb.cells.append(nbformat.v4.new_markdown_cell(sidebar(toc, titles), id='site-sidebar'))
    nbformat.write(nb, out/'index.ipynb')
    static = out/'_static'
    static.mkdir()
    shutil.copy(SITE/'custom.css', static/'custom.css')
    if mathjax is not None:
        for part in MATHJAX_PARTS:
            src = mathjax/part
            if not src.exists(): raise FileNotFoundError(f"{src} not found: --mathjax should be MathJax 3's es5/ folder")
            dst = static/'mathjax'/part
            dst.parent.mkdir(parents=True, exist_ok=True)
            (shutil.copytree if src.is_dir() else shutil.copy)(src, dst)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--out', default=str(ROOT/'_site'), help='the built site')
    p.add_argument('--work', default=str(ROOT/'build'/'site'), help="the staged source, Sphinx's doctrees and HTML (rebuilt each time)")
    p.add_argument('--mathjax', default=str(ROOT/'build'/'npm'/'node_modules'/'mathjax'/'es5'), help="MathJax 3's es5/ folder")
    p.add_argument('--stage-only', action='store_true', help='stage the source, do not run Sphinx')
    a = p.parse_args()
    t0 = time.time()
    work, out = Path(a.work).resolve(), Path(a.out).resolve()
    src, html = work/'src', work/'html'     # myst-nb writes beside the HTML folder (jupyter_execute/): keep it in work/
    stage(src, None if a.stage_only else Path(a.mathjax))
    print(f"staged {len(list(src.glob('*.ipynb')))} notebooks and {len(list(src.glob('*.md')))} pages in {src} ({time.time()-t0:.1f} s)")
    if a.stage_only: return
    shutil.rmtree(html, ignore_errors=True)
    cmd = [sys.executable, '-m', 'sphinx', '-b', 'html', '-q', '-E', '-c', str(SITE), '-D', f'html_static_path={src/"_static"}',
           '-d', str(work/'doctrees'), str(src), str(html)]
    r = subprocess.run(cmd)
    if r.returncode: sys.exit(r.returncode)
    (html/'.nojekyll').touch()
    shutil.rmtree(out, ignore_errors=True)
    shutil.move(html, out)
    print(f"site built in {out} ({time.time()-t0:.1f} s): open {out/'index.html'}")


if __name__ == '__main__': main()
