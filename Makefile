# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# viperdrive: `make test` sets up everything (venv, pinned packages) and runs every check; `make demo` runs the
# virtual board demo; `make bench` prints the benchmark lines.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
STUBS := $(VENV)/mpy-stubs
STUBS_STAMP := $(STUBS)/.installed
export PATH := $(abspath $(VENV))/bin:$(PATH)
# Python caches the bytecode it compiles (in __pycache__, git-ignored) even where the environment says not to: the
# suite starts hundreds of Python processes (every CLI test is one) and three workers, each of which would
# otherwise compile the package and pytest would rewrite every test module again. `make check` measured idle on 2
# cores: 150.8 s of pytest with PYTHONDONTWRITEBYTECODE=1, 121.5 s on the first run without it, 108.0 s after.
unexport PYTHONDONTWRITEBYTECODE
# MicroPython rp2 stubs go to their own folder: in the venv's site-packages they would shadow CPython modules.
RP2_STUBS := micropython-rp2-stubs==1.29.0.post1 micropython-stdlib-stubs==1.29.0.post2

.PHONY: all setup test check lint typecheck pytest bench demo clean debs hil-pico hil-circuitpython node-debs browser-debs dist \
	uf2 uf2-if-kit arm-debs

all: test

$(STAMP): requirements.lock pyproject.toml
	@test -n "$(PYTHON)" || { echo "make: no python3.11 or python3 on PATH"; exit 1; }
	@test -x $(PY) || $(PYTHON) -c 'import ensurepip' 2>/dev/null || $(MAKE) --no-print-directory debs
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.lock
	$(PY) -m pip install -q --disable-pip-version-check --no-deps -e .
	@touch $@

$(STUBS_STAMP): $(STAMP)
	$(PY) -m pip install -q --disable-pip-version-check --no-deps --upgrade --target $(STUBS) $(RP2_STUBS)
	@touch $@

# the emulated Pico rig (sim/pico/): rp2040js pinned by its package-lock, installed like the venv (ignored folder)
NODE_STAMP := sim/pico/node_modules/.installed
$(NODE_STAMP): sim/pico/package.json sim/pico/package-lock.json
	@command -v npm >/dev/null || $(MAKE) --no-print-directory node-debs
	cd sim/pico && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# the dashboard's tests drive Debian's Chromium (Playwright, pinned in requirements.lock, downloads no browser)
CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	@$(MAKE) --no-print-directory browser-debs

# the Pico image with the firmware frozen in (tools/build_uf2.py): offline from the MicroPython source kit
# ($$VIPERDRIVE_MICROPYTHON_SRC, else micropython-src beside the emulated Pico's images), into build/uf2/; a run with
# nothing changed does no work. make setup builds it when the kit is there (the Arm compiler installed first) and
# says in one line when not; make uf2 fails without the kit.
ARM_GCC := /usr/bin/arm-none-eabi-gcc
$(ARM_GCC):
	@$(MAKE) --no-print-directory arm-debs

uf2: $(STAMP) $(ARM_GCC)
	$(PY) tools/build_uf2.py

uf2-if-kit: $(STAMP)
	@if $(PY) tools/build_uf2.py --kit-present; then \
	  test -x $(ARM_GCC) || $(MAKE) --no-print-directory arm-debs; $(PY) tools/build_uf2.py; \
	else $(PY) tools/build_uf2.py --if-kit; fi

setup: $(STAMP) $(STUBS_STAMP) $(NODE_STAMP) $(CHROMIUM) uf2-if-kit

lint: $(STAMP)
	$(VENV)/bin/ruff check .

# Two mypy runs, one [tool.mypy] (pyproject.toml): mcu/ as MicroPython sees it (the rp2 stubs as its typeshed,
# docs/firmware-typecheck.md), then the host package as CPython sees it. mypy cannot follow the editable install's
# import hook (viperdrive.shared is the repo's shared/), so the host run checks a tree of symlinks laid out like
# the installed package (rebuilt every run: a new module is checked at once); paths are printed as in the repo.
# The firmware is checked as the board holds it: one package (lib/viperdrive/ on a board; here named firmware, as the
# host's viperdrive.* settings are not the firmware's) with shared/ as its subpackage, in a tree of symlinks like
# the host's (mcu/tests, the board configs and main.py, whose one line imports the board's package name, left out).
HOST_TREE := $(VENV)/typecheck-host
MCU_TREE := $(VENV)/typecheck-mcu
typecheck: $(STUBS_STAMP)
	@rm -rf $(MCU_TREE) && mkdir -p $(MCU_TREE) && cp -as $(CURDIR)/mcu $(MCU_TREE)/firmware \
	  && cp -as $(CURDIR)/shared $(MCU_TREE)/firmware/shared \
	  && rm -rf $(MCU_TREE)/firmware/tests $(MCU_TREE)/firmware/boards $(MCU_TREE)/firmware/shared/tests \
	    $(MCU_TREE)/firmware/main.py && find $(MCU_TREE) -name __pycache__ -prune -exec rm -rf {} +
	set -o pipefail; cd $(MCU_TREE) && MYPYPATH=$(abspath $(STUBS)) $(CURDIR)/$(VENV)/bin/mypy \
	  --config-file $(CURDIR)/pyproject.toml --custom-typeshed-dir $(abspath $(STUBS)) -p firmware \
	  | sed -e 's#^firmware/shared/#shared/#' -e 's#^firmware/#mcu/#'
	@rm -rf $(HOST_TREE) && mkdir -p $(HOST_TREE) && cp -as $(CURDIR)/host/viperdrive $(HOST_TREE)/viperdrive \
	  && cp -as $(CURDIR)/shared $(HOST_TREE)/viperdrive/shared && rm -rf $(HOST_TREE)/viperdrive/shared/tests \
	  && find $(HOST_TREE) -name __pycache__ -prune -exec rm -rf {} +
	set -o pipefail; MYPYPATH=$(abspath $(HOST_TREE)) $(VENV)/bin/mypy --config-file pyproject.toml -p viperdrive \
	  | sed -e 's#^$(HOST_TREE)/viperdrive/shared/#shared/#' -e 's#^$(HOST_TREE)/#host/#'

# Pytest workers: the cores the machine gives us plus one. Cores: nproc (the CPU affinity), capped by a cgroup CPU
# quota when one is set (/sys/fs/cgroup/cpu.max, as in a container). Plus one because the suite partly waits: its
# boards run in real time (board time paced on the host's clock). On 2 cores, idle, three workers kept 1.6 cores
# busy (757 s of CPU in 7 min 55 s); four kept 1.9 busy and saved 21 s of 9 min 36 s in the same hour, and two
# live-EKF tests failed there (a pose fix rejected after its re-acquisition, a second re-acquisition: not yet
# understood), so the one extra worker stays one.
# PYTEST_WORKERS=0 runs it in one process. Every test is in one group (unit, board, ros2, pico: pyproject.toml):
# TEST_GROUP=unit runs one of them.
CORES := $(shell n=$$(nproc 2>/dev/null || echo 2); read q p 2>/dev/null < /sys/fs/cgroup/cpu.max \
	&& [ "$$q" != max ] && c=$$(( (q + p - 1) / p )) && [ $$c -lt $$n ] && n=$$c; echo $$n)
PYTEST_WORKERS ?= $(shell echo $$(( $(CORES) + 1 )))
TEST_GROUP ?=
# --durations: every run ends with the 25 slowest tests (5 s or more), where the suite's time goes
pytest: setup
	$(VENV)/bin/pytest $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadgroup) \
	  --durations=25 --durations-min=5 $(if $(TEST_GROUP),-m $(TEST_GROUP)) $(PYTEST_ARGS)

test: setup lint typecheck pytest

# the quick tier for the inner loop: lint, both type checks and the tests that need no board, chip or browser
# (the unit group: host logic, the tree's checks, the firmware's pieces on the MicroPython unix port). make test
# stays the whole suite, and CI runs make test.
check: setup lint typecheck
	$(VENV)/bin/pytest $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadgroup) -m unit -q \
	  $(PYTEST_ARGS)

# the release artifacts into dist/: sdist, wheel, firmware bundles, SHA256SUMS (tools/dist.py). Refused when the
# versions disagree or CHANGELOG.md's heading for this version has no date; SNAPSHOT=1 builds an unreleased one.
dist: setup
	$(PY) tools/dist.py dist $(if $(SNAPSHOT),--snapshot)

bench: setup
	$(PY) bench/run_all.py

# every hil check and the users' path on the emulated Pico (make test runs a subset; this takes ~10 min)
hil-pico: setup
	$(VENV)/bin/pytest hil_tests tests/test_pico_rig.py -k pico --pico-all -rP $(PYTEST_ARGS)

hil-circuitpython: setup
	$(VENV)/bin/pytest hil_tests tests/test_circuitpython_rig.py -k circuitpython --circuitpython-all -rP $(PYTEST_ARGS)

demo: setup
	$(PY) -m viperdrive.demo

# Debian's python3.11 comes without ensurepip (python3.11-venv): install it when we may, else say how.
debs:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing Debian packages: python3-venv (ensurepip for $(PYTHON))"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv \
	    "$$(basename $$(readlink -f $(PYTHON)))-venv" || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv; \
	else \
	  echo "make: $(PYTHON) cannot create a venv (no ensurepip). Run: sudo apt-get install python3-venv"; exit 1; \
	fi

browser-debs:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing Debian packages: chromium (the dashboard's browser tests)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	else \
	  echo "make: the dashboard's browser tests need Chromium at $(CHROMIUM). Run: sudo apt-get install chromium"; exit 1; \
	fi

# the Pico image with the firmware frozen in (tools/build_uf2.py): Debian's Arm cross compiler and cmake
arm-debs:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing Debian packages: the Arm cross toolchain and cmake (make uf2)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc-arm-none-eabi \
	    libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib binutils-arm-none-eabi cmake build-essential; \
	else \
	  echo "make: make uf2 needs: sudo apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi" \
	    "libstdc++-arm-none-eabi-newlib binutils-arm-none-eabi cmake build-essential"; exit 1; \
	fi

node-debs:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing Debian packages: nodejs npm (the emulated Pico rig)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm; \
	else \
	  echo "make: the emulated Pico rig needs Node.js and npm. Run: sudo apt-get install nodejs npm"; exit 1; \
	fi

clean:
	rm -rf sim/pico/node_modules
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info host/*.egg-info
