"""Check the built website (`make site-check`) as a reader's browser sees it, offline.

1. Links and figures, pure Python over every HTML page of the site: each internal `href`/`src` names a file of the
   site and, with a `#fragment`, an id on that page; nothing a page loads (scripts, stylesheets, images, frames,
   fonts in CSS) comes from the network; every figure a notebook shows and every committed figure of docs/ that
   the results page names is an image on its page.
2. A real headless Chromium, with every host name unresolvable (so a load from the network would fail and
   show), opens the pages named by `--pages` from file://, runs their scripts for a virtual time budget, and
   dumps the DOM: every math element is typeset by MathJax (an `mjx-container` inside it), none is a TeX error,
   no raw `$$`, `$x$`, `\\(` or `\\[` is left in the text, and the page has the figures it should. It then takes a
   screenshot of each page into `<site>/_check/`.
"""
import argparse, importlib.util, re, shutil, subprocess, sys, tempfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat

ROOT = Path(__file__).resolve().parent.parent
LOADS = {('script', 'src'), ('link', 'href'), ('img', 'src'), ('iframe', 'src'), ('source', 'src'), ('video', 'src'),
         ('audio', 'src'), ('embed', 'src'), ('object', 'data')}
BROWSERS = ('chromium-headless-shell', 'chromium', 'chromium-browser', 'google-chrome')
# what a page must show once typeset: (page, least math elements, least figures)
PAGES = {'index.html': (10, 0), '10_advantages.html': (5, 1)}


class Page(HTMLParser):
    "The ids, the links and the loads of one HTML page."
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids, self.links, self.loads = set(), [], []
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get('id'): self.ids.add(a['id'])
        if tag == 'a' and a.get('name'): self.ids.add(a['name'])
        for t, attr in LOADS:
            if tag == t and a.get(attr) and (tag != 'link' or 'stylesheet' in a.get('rel', '') or 'preload' in a.get('rel', '')
                                              or 'icon' in a.get('rel', '')):
                self.loads.append(a[attr])
        if tag == 'a' and a.get('href'): self.links.append(a['href'])
        if tag == 'link' and a.get('href'): self.links.append(a['href'])
        if tag in ('img', 'script') and a.get('src'): self.links.append(a['src'])


def parse(path: Path) -> Page:
    p = Page()
    p.feed(path.read_text(encoding='utf-8', errors='replace'))
    return p


def external(url: str) -> bool: return bool(urlsplit(url).scheme) or url.startswith('//')


def check_links(site: Path) -> list[str]:
    "Every problem with the site's links and loads, as lines; [] when there is none."
    # the site's pages; the HTML files under _static/ are the theme's template fragments, not pages
    pages = {p: parse(p) for p in sorted(site.rglob('*.html')) if not {'_check', '_static'} & set(p.relative_to(site).parts)}
    errors, n = [], 0
    for path, page in pages.items():
        rel = path.relative_to(site)
        for url in page.loads:
            if external(url) and not url.startswith('data:'): errors.append(f"{rel}: loads {url} from the network")
        for url in page.links:
            if external(url) or url.startswith(('mailto:', 'javascript:')): continue
            n += 1
            parts = urlsplit(url)
            target = (path.parent/unquote(parts.path)).resolve() if parts.path else path
            if not target.exists(): errors.append(f"{rel}: broken link {url} (no file {target})"); continue
            if target.is_dir() and not (target := target/'index.html').exists(): errors.append(f"{rel}: broken link {url}"); continue
            if parts.fragment and target.suffix == '.html':
                ids = (pages.get(target) or parse(target)).ids
                if unquote(parts.fragment) not in ids: errors.append(f"{rel}: link {url}: no id {parts.fragment!r} on {target.name}")
    for css in site.rglob('*.css'):
        text = re.sub(r'/\*.*?\*/', '', css.read_text(errors='replace'), flags=re.S)
        for url in re.findall(r'(?:url\(\s*[\'"]?|@import\s+[\'"])(https?://[^\'")\s]+)', text):
            errors.append(f"{css.relative_to(site)}: loads {url} from the network")
    print(f"links: {len(pages)} pages, {n} internal links and anchors checked, {len(errors)} problems")
    return errors


def check_figures(site: Path) -> list[str]:
    "Every figure a notebook's shown cells hold (a PNG output) is an image on its page; every figure of docs/ the results page names is shown."
    spec = importlib.util.spec_from_file_location('mgrpo_site_build', Path(__file__).with_name('build.py'))
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    errors, figures = [], 0
    for nb_path in sorted(build.NBS.glob('*.ipynb')):
        page = site/f'{nb_path.stem}.html'
        if nb_path.name.startswith(('_', '.')): continue
        if not page.exists(): errors.append(f"{nb_path.name}: no page {page.name}"); continue
        nb = nbformat.read(nb_path, as_version=4)
        for c in nb.cells: build.stage_cell(c)
        want = sum('image/png' in o.get('data', {}) for c in nb.cells if 'remove-cell' not in c.metadata.get('tags', [])
                   for o in c.get('outputs', []))
        have = sum(src.startswith('_images/') for src in Typeset.images_of(page))
        figures += have
        if have < want: errors.append(f"{page.name}: {have} images, but the notebook shows {want} figures")
    results = site/'results.html'
    if results.exists():
        named = re.findall(r'^!\[[^\]]*\]\(\.\./(docs/[^)\s]+)\)', (build.SITE/'results.md').read_text(), flags=re.M)
        want = sum((build.ROOT/d).exists() for d in named)
        have = len(Typeset.images_of(results))
        figures += have
        if have < want: errors.append(f"results.html: {have} images, but {want} figures of docs/ are committed")
    print(f"figures: {figures} images on the notebooks' pages and the results page, {len(errors)} problems")
    return errors


class Typeset(HTMLParser):
    "What MathJax did to a page's DOM: math elements, those typeset, TeX errors, raw TeX left in the text, figures."
    VOID = {'area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'source', 'track', 'wbr'}
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.math, self.typeset, self.errors, self.images, self.raw = [], 0, 0, 0, [], []
    @classmethod
    def images_of(cls, page: Path) -> list[str]:
        t = cls()
        t.feed(page.read_text(encoding='utf-8', errors='replace'))
        return t.images
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == 'img': self.images.append(a.get('src', ''))
        if tag in self.VOID: return
        is_math = tag in ('span', 'div') and 'math' in (a.get('class') or '').split()
        if is_math: self.math += 1
        if tag == 'mjx-container':
            for frame in reversed(self.stack):
                if frame[1] and not frame[2]: frame[2] = True; self.typeset += 1; break
        if tag == 'mjx-merror': self.errors += 1
        self.stack.append([tag, is_math, False])
    def handle_endtag(self, tag):
        if tag in self.VOID: return
        while self.stack:
            if self.stack.pop()[0] == tag: break
    def handle_data(self, data):
        if any(f[0] in ('pre', 'code', 'script', 'style', 'mjx-assistive-mml') for f in self.stack): return
        for tex in ('$$', '\\(', '\\['):
            if tex in data: self.raw.append(data.strip()[:80])
        self.raw += [m[0][:80] for m in re.finditer(r'(?<![\w$])\$[^\s$][^$]*?\$', data)]     # $x$ that no parser took for math


def browser() -> str:
    for b in BROWSERS:
        if shutil.which(b): return shutil.which(b)
    sys.exit(f"no headless browser found (looked for {', '.join(BROWSERS)}): apt-get install -y chromium-headless-shell")


def chrome(exe: str, args: list[str], url: str) -> subprocess.CompletedProcess:
    "Headless Chromium on `url` with a fresh profile and no network: every host name fails to resolve."
    with tempfile.TemporaryDirectory() as profile:
        cmd = [exe, '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
               '--disable-component-update', '--disable-sync', '--disable-extensions', f'--user-data-dir={profile}',
               '--host-resolver-rules=MAP * ~NOTFOUND', '--window-size=1280,1800', '--virtual-time-budget=15000', *args, url]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def check_page(exe: str, site: Path, name: str, min_math: int, min_images: int, shots: Path) -> list[str]:
    url = (site/name).resolve().as_uri()
    r = chrome(exe, ['--dump-dom'], url)
    if r.returncode or '<html' not in r.stdout: return [f"{name}: the browser failed ({r.returncode}): {r.stderr[-500:]}"]
    t = Typeset()
    t.feed(r.stdout)
    local = [s for s in t.images if s and not external(s)]
    errors = []
    if t.math < min_math: errors.append(f"{name}: {t.math} math elements, expected at least {min_math}")
    if t.typeset != t.math: errors.append(f"{name}: MathJax typeset {t.typeset} of {t.math} math elements")
    if t.errors: errors.append(f"{name}: {t.errors} TeX errors (mjx-merror)")
    if t.raw: errors.append(f"{name}: raw TeX left in the text: {t.raw[:3]}")
    if len(local) < min_images: errors.append(f"{name}: {len(local)} images, expected at least {min_images}")
    for src in local:
        f = (site/name).parent/unquote(urlsplit(src).path)
        if not f.exists() or f.stat().st_size == 0: errors.append(f"{name}: image {src} is missing or empty")
        elif f.suffix == '.png' and f.read_bytes()[:8] != b'\x89PNG\r\n\x1a\n': errors.append(f"{name}: image {src} is not a PNG")
    shot = shots/name.replace('.html', '.png')
    s = chrome(exe, [f'--screenshot={shot}'], url)
    if s.returncode or not shot.exists(): errors.append(f"{name}: no screenshot ({s.returncode}): {s.stderr[-300:]}")
    print(f"browser: {name}: {t.math} math elements, {t.typeset} typeset by MathJax, {t.errors} TeX errors, "
          f"{len(t.raw)} raw TeX, {len(local)} images; screenshot {shot.relative_to(site.parent) if shot.exists() else '-'}")
    return errors


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--site', default=str(ROOT/'_site'), help='the built site (make site)')
    p.add_argument('--pages', default=','.join(PAGES), help='pages to open in the browser, comma separated')
    p.add_argument('--links-only', action='store_true', help='only the pure-Python link check, no browser')
    a = p.parse_args()
    site = Path(a.site).resolve()
    if not (site/'index.html').exists(): sys.exit(f"{site}/index.html not found: run `make site` first")
    errors = check_links(site) + check_figures(site)
    if not a.links_only:
        exe = browser()
        v = subprocess.run([exe, '--version'], capture_output=True, text=True).stdout.strip()
        print(f"browser: {v or exe}")
        shots = site/'_check'
        shots.mkdir(exist_ok=True)
        for name in a.pages.split(','):
            errors += check_page(exe, site, name, *PAGES.get(name, (0, 0)), shots)
    for e in errors: print('  ' + e)
    if errors: sys.exit(f"site check failed: {len(errors)} problems")
    print("site check passed")


if __name__ == '__main__': main()
