"""The website's sources cannot rot: the sidebar (site/toc.yml) lists every notebook once, the cheat sheet's signatures
are the package's, the staging turns nbdev's directives into what the site shows, and the link check finds what it
should. Nothing here runs Sphinx or a browser (`make site`, `make site-check` do)."""
import importlib, importlib.util, inspect, re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT/'site'


def load(name: str):
    "site/NAME.py as a module (site/ is no package, and `site` is a module of the standard library)."
    spec = importlib.util.spec_from_file_location(f'mgrpo_site_{name}', SITE/f'{name}.py')
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


build, check = load('build'), load('check')


def test_toc_lists_every_notebook_exactly_once():
    toc = build.load_toc()
    listed = [p for s in toc for p in s['pages']]
    notebooks = sorted(p.stem for p in (ROOT/'nbs').glob('*.ipynb') if not p.name.startswith(('_', '.')))
    assert sorted(p for p in listed if p in notebooks) == notebooks, "every notebook of nbs/ once in site/toc.yml"
    assert len(listed) == len(set(listed)), f"pages listed twice: {sorted({p for p in listed if listed.count(p) > 1})}"
    sources = build.page_sources(toc)               # every page is a notebook or a page of site/
    assert listed[0] == 'index' and {'cheatsheet', 'glossary', 'results'} <= set(sources)
    assert all(s['caption'] for s in toc) and len(toc) >= 3


def short_signature(obj) -> str:
    "`inspect.signature` as the cheat sheet writes it: without the `mgrpo_ref.<module>.` and `typing.` prefixes."
    return re.sub(r'\b(?:mgrpo_ref\.\w+|typing)\.', '', str(inspect.signature(obj)))


def cheatsheet_signatures() -> list[tuple[str, str, str]]:
    "(module, name, signature) of every signature in the cheat sheet's python blocks: a line `name(...)` whose name the block imports."
    text = (SITE/'cheatsheet.md').read_text()
    section = text[text.index('## The functions you import'):]
    out = []
    for block in re.findall(r'```python\n(.*?)```', section, flags=re.S):
        imported = {}
        for line in re.sub(r',\n    (?=\S)', ', ', block).splitlines():      # a long signature continues on lines indented by 4
            if m := re.match(r'from (mgrpo_ref\.\w+) import (.*)', line): imported.update({n.strip(): m[1] for n in m[2].split(',')})
            elif (m := re.match(r'([A-Za-z_]\w*)(\.\w+)?\(', line)) and m[1] in imported:
                out.append((imported[m[1]], m[1] + (m[2] or ''), line))
    return out


def test_cheatsheet_signatures_match_the_package():
    sigs = cheatsheet_signatures()
    names = {n for _, n, _ in sigs}
    for required in ('main_reward', 'sub_reward', 'align_to_dmax', 'group_advantages', 'main_advantages', 'sub_advantages',
                     'clipped_surrogate', 'AgentTrainer.update', 'Trainer'):
        assert required in names, f"the cheat sheet lost the signature of {required}"
    for module, name, line in sigs:
        obj = importlib.import_module(module)
        for part in name.split('.'): obj = getattr(obj, part)
        assert line == name + short_signature(obj), f"site/cheatsheet.md is out of date for {module}.{name}:\n  page: {line}\n  code: {name + short_signature(obj)}"


def test_signature_check_can_fail():
    from mgrpo_ref.rewards import main_reward
    def main_reward_renamed(format_ok: bool, prediction: str | None, gold: str): pass
    assert short_signature(main_reward) != short_signature(main_reward_renamed)
    assert 'RewardConfig = RewardConfig(' in short_signature(main_reward)      # the prefixes are gone, the defaults stay


def test_staging_hides_what_nbdev_hides(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell('# T\n> sub\n\n![fig](../docs/results.png)'),
                nbformat.v4.new_code_cell('#| default_exp thing'),
                nbformat.v4.new_code_cell('#| hide\nimport secret'),
                nbformat.v4.new_code_cell('#| code-fold: true\nassert 1 + 1 == 2'),
                nbformat.v4.new_code_cell('#| export\ndef f(): return 1', outputs=[
                    nbformat.v4.new_output('display_data', data={'application/vnd.jupyter.widget-view+json': {}, 'text/plain': '0%'}),
                    nbformat.v4.new_output('stream', text='kept\n')])]
    nb.metadata['widgets'] = {'state': {}}
    nbformat.write(nb, tmp_path/'a.ipynb')
    build.stage_notebook(tmp_path/'a.ipynb', tmp_path/'b.ipynb')
    out = nbformat.read(tmp_path/'b.ipynb', as_version=4)
    assert 'widgets' not in out.metadata and out.metadata.language_info['pygments_lexer'] == 'ipython3'
    assert '](docs/results.png)' in out.cells[0].source                        # ../x seen from nbs/ is x at the staged root
    assert [c.metadata.get('tags') for c in out.cells[1:]] == [['remove-cell'], ['remove-cell'], ['hide-input'], None]
    assert out.cells[3].source == 'assert 1 + 1 == 2'                          # folded, not removed: the code is one click away
    assert out.cells[4].source == 'def f(): return 1' and [o.output_type for o in out.cells[4].outputs] == ['stream']


def test_a_missing_docs_file_is_named_not_broken(tmp_path):
    (tmp_path/'docs').mkdir()
    (tmp_path/'docs'/'here.md').write_text('| a |\n|---|\n| 1 |\n')
    (SITE_PAGE := tmp_path/'page.md').write_text('# P\n\n```{include} ../docs/here.md\n```\n\n```{include} ../docs/gone.md\n```\n\n'
                                                 '![x](../docs/gone.png)\n\n[results](../nbs/21_experiments.ipynb)\n')
    build.stage_markdown(SITE_PAGE, tmp_path/'staged.md', tmp_path)
    md = (tmp_path/'staged.md').read_text()
    assert '```{include} docs/here.md\n```' in md
    assert '*`docs/gone.md` is not committed yet.*' in md and '*`docs/gone.png` is not committed yet.*' in md
    assert '{include} docs/gone.md' not in md and '[results](21_experiments.ipynb)' in md


def test_sidebar_has_one_captioned_toctree_per_section():
    toc = build.load_toc()
    bar = build.sidebar(toc, {'index': 'Start'})
    assert bar.count('```{toctree}') == len(toc) and bar.count(':hidden:') == len(toc)
    assert 'Start <self>' in bar and all(f":caption: {s['caption']}" in bar for s in toc)


def test_link_check_finds_broken_links_anchors_and_network_loads(tmp_path):
    (tmp_path/'index.html').write_text('<html><head><link rel="stylesheet" href="s.css"></head><body id="top">'
                                       '<a href="b.html#sec">b</a><a href="#top">top</a><a href="https://example.org">ext</a></body></html>')
    (tmp_path/'b.html').write_text('<html><body><h2 id="sec">S</h2><img src="f.png"></body></html>')
    (tmp_path/'s.css').write_text('/* https://in.a.comment */ body { color: red }')
    (tmp_path/'f.png').write_bytes(b'\x89PNG\r\n\x1a\n')
    assert check.check_links(tmp_path) == []
    (tmp_path/'b.html').write_text('<html><body><h2 id="other">S</h2><img src="g.png">'
                                   '<script src="https://cdn.example.org/x.js"></script></body></html>')
    (tmp_path/'s.css').write_text('@import "https://fonts.example.org/f.css";')
    errors = '\n'.join(check.check_links(tmp_path))
    assert "no id 'sec'" in errors and 'g.png' in errors
    assert 'loads https://cdn.example.org/x.js' in errors and 'loads https://fonts.example.org/f.css' in errors


def test_typeset_check_reads_mathjax_output():
    done, raw = check.Typeset(), check.Typeset()
    done.feed('<p><span class="math notranslate">x<mjx-container jax="CHTML"><mjx-math></mjx-math></mjx-container></span>'
              '<code>$$ in code is fine</code></p>')
    raw.feed('<p><span class="math notranslate">\\(x\\)</span> and $$y$$, $z$ <mjx-merror></mjx-merror></p>')
    assert (done.math, done.typeset, done.errors, done.raw) == (1, 1, 0, [])
    assert (raw.math, raw.typeset, raw.errors) == (1, 0, 1) and len(raw.raw) == 3
