# Sphinx config of the project's website (`make site`; site/build.py stages the source and runs Sphinx with it).
# The notebooks are read with their committed outputs (myst-nb, nb_execution_mode = 'off'); the sidebar comes from
# site/toc.yml; nothing on a page loads from the network: MathJax is the local copy build.py puts in _static/.
from pathlib import Path

project = 'mgrpo-ref'
author = 'mgrpo-ref developers'
extensions = ['myst_nb']
root_doc = 'index'
exclude_patterns = ['_build', '**.ipynb_checkpoints']   # docs/*.md are pages too (results.md includes them; the guides link them)

nb_execution_mode = 'off'                      # never run a notebook: its committed outputs are the page
nb_merge_streams = True                        # one block per cell for consecutive prints
highlight_language = 'none'                    # a fenced block without a language (pseudocode) is plain text; code cells are Python
myst_enable_extensions = ['dollarmath', 'amsmath', 'colon_fence']
myst_heading_anchors = 3                       # `[text](#a-heading)` links inside a page
suppress_warnings = ['mystnb.unknown_mime_type', 'toc.not_included']   # docs/*.md and the repository pages the guides link to are pages outside the sidebar, on purpose

mathjax_path = 'mathjax/tex-chtml.js'          # relative to _static/: the local copy, never a CDN
html_theme = 'sphinx_book_theme'
html_title = 'mgrpo-ref'
html_static_path = [str(Path(__file__).parent.parent/'build'/'site'/'src'/'_static')]   # staged by build.py (its --work)
html_css_files = ['custom.css']
html_last_updated_fmt = None
html_theme_options = {
    'home_page_in_toc': False,                 # index is the first entry of the first section (toc.yml)
    'show_navbar_depth': 1,
    'show_toc_level': 2,
    'use_download_button': False,
    'use_fullscreen_button': False,
    'navigation_with_keys': False,
}
html_sidebars = {'**': ['navbar-logo.html', 'search-field.html', 'sbt-sidebar-nav.html']}
html_copy_source = False                       # no _sources/ copies of the notebooks (3 MB): the repository has them
html_show_sourcelink = False
