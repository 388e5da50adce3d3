# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""`make test` runs the suite on pytest-xdist workers with `--dist loadgroup`, and conftest.py puts every
emulated-Pico test in one group (one flash, one rig at a time) and every module with a module-scoped fixture in
a group of its own (its tests build on the fixture's state). pytest 9.2.0 broke that silently: xdist 3.8.0 marks
a group by rewriting the test's node id, pytest 9.2 ignores the rewrite, and the tests are spread over the
workers as if unmarked (pytest-xdist issue 1386). This runs a small suite the way `make test` does and asserts
the groups stay on one worker, so a dependency update that breaks it again fails here, not as flaky tests."""
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.unit

pytest.importorskip("xdist")


def test_loadgroup_keeps_a_group_on_one_worker(tmp_path):
    (tmp_path / "conftest.py").write_text(textwrap.dedent('''
        import pytest

        @pytest.hookimpl(tryfirst=True)
        def pytest_collection_modifyitems(config, items):
            # as the repo's conftest does: a group mark added at collection time
            for item in items:
                if item.path.name == "test_dynamic.py":
                    item.add_marker(pytest.mark.xdist_group("dyn"))
    '''))
    body = textwrap.dedent('''
        import os
        import pytest

        @pytest.mark.parametrize("i", range(6))
        def test_one(i):
            with open(os.environ["PROBE_OUT"], "a") as f:
                f.write(f"{__name__} {os.environ['PYTEST_XDIST_WORKER']}\\n")
    ''')
    (tmp_path / "test_static.py").write_text('import pytest\npytestmark = pytest.mark.xdist_group("st")\n' + body)
    (tmp_path / "test_dynamic.py").write_text(body)
    out = tmp_path / "workers.txt"
    # two workers show a group spread (what 3.8.0 under pytest 9.2 did); only xdist loaded (the others cost
    # start-up time in every worker and are not under test)
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "xdist.plugin", "-n", "2",
                        "--dist", "loadgroup", "-q", str(tmp_path)], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120, env={**os.environ, "PROBE_OUT": str(out), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert r.returncode == 0, r.stdout + r.stderr
    seen: dict[str, set[str]] = {}
    for line in out.read_text().splitlines():
        module, worker = line.split()
        seen.setdefault(module, set()).add(worker)
    assert set(seen) == {"test_static", "test_dynamic"}
    assert all(len(w) == 1 for w in seen.values()), f"a group ran on several workers: {seen}"
