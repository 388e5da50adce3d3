# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# Runs inside the MicroPython unix port: imports one test module and runs its test_* functions.
# Invoked by the pytest plugin in conftest.py as:
#   micropython tests/mp_runner.py REPO_ROOT TEST_FILE [NAME ...]
# and reports each test between marker lines the plugin parses:
#   @@VD-BEGIN name / (test output) / @@VD-PASS name us | @@VD-FAIL name + traceback / @@VD-END name
import sys
import time


def main():
    root = sys.argv[1]
    path = sys.argv[2]
    wanted = sys.argv[3:]
    d, _, fname = path.rpartition("/")
    modname = fname[:-3]
    # the board's import layout: the firmware is the package viperdrive (mcu/), the protocol its subpackage
    # viperdrive.shared (sim/firmware_package.py); shared/'s own tests import it as the package shared
    for p in (d, root + "/sim", root):
        sys.path.insert(0, p)
    try:
        try:
            import firmware_package
        except ImportError:
            firmware_package = None     # a tree without the firmware (the harness's own tests)
        if firmware_package is not None:
            firmware_package.mount(root)
        mod = __import__(modname)
    except BaseException as e:  # noqa: B036 - report any import failure as every test failing
        for name in wanted:
            print("@@VD-BEGIN", name)
            print("@@VD-FAIL", name)
            sys.print_exception(e)
            print("@@VD-END", name)
        return
    names = wanted or sorted(n for n in dir(mod) if n.startswith("test_"))
    for name in names:
        fn = getattr(mod, name, None)
        print("@@VD-BEGIN", name)
        if fn is None:
            print("@@VD-FAIL", name)
            print("no such test in", path)
            print("@@VD-END", name)
            continue
        t0 = time.ticks_us()
        try:
            fn()
        except BaseException as e:  # noqa: B036
            try:
                import micropython
                # heap_lock nests; undo every level the test left so the report and the next tests can allocate.
                # heap_unlock() on an unlocked heap underflows the depth and locks it for good, so read the depth
                # first: lock once more, and the unlock returns the depth the test left.
                micropython.heap_lock()
                depth = micropython.heap_unlock()
                while depth > 0:
                    depth = micropython.heap_unlock()
            except (ImportError, AttributeError):
                pass
            print("@@VD-FAIL", name)
            sys.print_exception(e)
        else:
            print("@@VD-PASS", name, time.ticks_diff(time.ticks_us(), t0))
        print("@@VD-END", name)


main()
