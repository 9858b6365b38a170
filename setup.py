"Packaging for mgrpo-ref: metadata from settings.ini, version from mgrpo_ref/__init__.py."
import re
from configparser import ConfigParser
from pathlib import Path
from setuptools import setup, find_packages

here = Path(__file__).parent
cfg = ConfigParser(delimiters=['='])
cfg.read(here/'settings.ini', encoding='utf-8')
cfg = cfg['DEFAULT']
version = re.search(r'^__version__\s*=\s*"([^"]+)"', (here/cfg['lib_path']/'__init__.py').read_text(), re.M)[1]
licenses = {'apache2': 'Apache-2.0'}  # SPDX identifiers
statuses = ['Planning', 'Pre-Alpha', 'Alpha', 'Beta', 'Production/Stable']

setup(
    name=cfg['lib_name'],
    version=version,
    description=cfg['description'],
    long_description=(here/'README.md').read_text(encoding='utf-8'),
    long_description_content_type='text/markdown',
    author=cfg['author'], author_email=cfg['author_email'],
    license=licenses[cfg['license']],
    keywords=cfg['keywords'].split(),
    classifiers=[f"Development Status :: {cfg['status']} - {statuses[int(cfg['status'])]}",
                 'Programming Language :: Python :: 3'],
    python_requires=f">={cfg['min_python']}",
    packages=find_packages(include=[cfg['lib_path'], cfg['lib_path'] + '.*'], exclude=[cfg['lib_path'] + '.checkpoints*']),
    # the shipped warm start (mgrpo_ref/checkpoints/, every file at any depth) is package data, not a package: its folders
    # hold no Python, so they are left out of `packages` and named by one recursive glob. include_package_data stays off:
    # with it on, setuptools takes each data folder for an undeclared package and prints a "Package would be ignored" box.
    include_package_data=False,
    package_data={cfg['lib_path']: ['checkpoints/**/*']},
    # the flat layout said explicitly: `pip install -e .` then puts this folder on sys.path (a .pth file, what `setup.py
    # develop` did) instead of installing a meta path finder, which setuptools announces with an "Editable installation"
    # box on every install. The wheel is the same either way (tests/test_package.py).
    package_dir={'': '.'},
    install_requires=cfg['requirements'].split(),
    extras_require={'dev': cfg['dev_requirements'].split(), 'bench': cfg['bench_requirements'].split(),
                    'track': cfg['track_requirements'].split(), 'site': cfg['site_requirements'].split()},
    entry_points={'console_scripts': cfg['console_scripts'].split(),
                  'nbdev': [f"{cfg['lib_path']}={cfg['lib_path']}._modidx:d"]},
    zip_safe=False,
)
