# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
# Parameter values on the board: the table is shared/params.py (ids, names, types, ranges, defaults); this
# module holds the current values, validates changes against the table, and stores them as JSON on the
# board's filesystem. A missing or broken file is normal (first boot, power cut while writing on a port whose
# rename is not atomic): it falls back to defaults and says so, it never stops the board from booting.
import json
import os
import struct

from .shared import params as table


class Params:
    """values: {name: value} for every parameter in the table; defaulted: the last load fell back to defaults;
    stored: the values a reset would load (those of the last load or save), for unsaved().

    Values are floats for "f" parameters and ints for "H" parameters, always inside the table's [min, max].
    """

    def __init__(self):
        self.values = table.defaults()
        self.stored = dict(self.values)
        self._differ = set()    # names whose live value differs from the stored one (unsaved())
        self.defaulted = False
        self.problems = []      # what the last load() replaced by defaults, as text (for the REPL and logs)

    def load(self, path):
        """Read path; True when every value came from the file.

        Per entry: an unknown name is ignored, a wrong type or out-of-range value falls back to that
        parameter's default, a parameter missing from the file gets its default; each of these sets
        defaulted. A missing, unreadable or non-JSON file (or one not holding an object) -> all defaults.
        Never raises.
        """
        self.values = table.defaults()
        self.stored = dict(self.values)     # what a reset gives when the file cannot be read: the defaults
        self._differ = set()
        self.problems = []
        try:
            with open(path) as f:
                d = json.loads(f.read())
        except (OSError, ValueError) as e:
            self.problems.append("%s unreadable (%s): all defaults" % (path, e))
            self.defaulted = True
            return False
        except Exception as e:  # e.g. MemoryError on a huge file: still boot on defaults
            self.problems.append("%s failed to load (%r): all defaults" % (path, e))
            self.defaulted = True
            return False
        if not isinstance(d, dict):
            self.problems.append("%s does not hold a JSON object: all defaults" % path)
            self.defaulted = True
            return False
        for p in table.TABLE:
            name = p[table.NAME]
            if name not in d:
                self.problems.append("%s missing: default %s" % (name, p[table.DEFAULT]))
                continue
            value = _coerce(p, d[name])
            reason = "not a number" if value is None else table.check(p[table.ID], value)
            if reason is not None:
                self.problems.append("%s: %s: default %s" % (name, reason, p[table.DEFAULT]))
                continue
            self.values[name] = value
        self.stored = dict(self.values)
        self.defaulted = bool(self.problems)
        return not self.defaulted

    def save(self, path):
        """Write every value as JSON to path + ".tmp", then rename it over path (atomic on LittleFS/FAT
        renames: a power cut leaves the old file or the new one, never half of one). OSError on a storage
        error (the caller NACKs with NACK_STORAGE); the old file is then untouched."""
        tmp = path + ".tmp"
        text = json.dumps(self.values)
        with open(tmp, "w") as f:
            f.write(text)
        try:
            os.rename(tmp, path)
        except OSError:
            # FAT (some ports) refuses to rename over an existing file: remove it first. The window in between
            # is covered by load() falling back to defaults and flagging it.
            try:
                os.remove(path)
            except OSError:
                pass
            os.rename(tmp, path)
        self.stored = dict(self.values)
        self._differ = set()
        # the file now holds every value: a reset would load them, not defaults (DIAG_PARAMS_DEFAULTED clears)
        self.defaulted = False
        self.problems = []

    def unsaved(self):
        """True when a live value differs from the stored one (a reset would change it): DIAG_PARAMS_UNSAVED.
        Kept up to date by set(), load() and save(), so GET_DIAG does not compare the whole table: on an RP2040
        that took ~15 ms of the slow loop per GET_DIAG (and the allocations a collection, at the first one)."""
        return bool(self._differ)

    def _track(self, p):
        """Whether parameter p's live value differs from the stored one, compared as the wire has them (f32,
        u16): a value the host read and set back counts as unchanged even on a port whose floats are doubles."""
        name = p[table.NAME]
        a, b = self.values[name], self.stored[name]
        if (struct.pack("<f", a) != struct.pack("<f", b)) if p[table.TYPE] == "f" else a != b:
            self._differ.add(name)
        else:
            self._differ.discard(name)

    def set(self, pid, value):
        """Validate value for parameter id pid and apply it: None, or the reason it was refused (NACK 3/6)."""
        p = table.by_id(pid)
        if p is None:
            return "unknown parameter id %d" % pid
        v = _coerce(p, value)
        if v is None:
            return "%s must be a number" % p[table.NAME]
        reason = table.check(pid, v)
        if reason is not None:
            return reason
        self.values[p[table.NAME]] = v
        self._track(p)
        return None

    def get(self, pid):
        """The value of parameter id pid; KeyError for an id not in the table."""
        p = table.by_id(pid)
        if p is None:
            raise KeyError(pid)
        return self.values[p[table.NAME]]

    def set_by_name(self, name, value):
        """Like set(), by name: None or the reason text."""
        p = table.by_name(name)
        if p is None:
            return "unknown parameter %s" % name
        return self.set(p[table.ID], value)

    def get_by_name(self, name):
        return self.values[name]

    def __getitem__(self, name):
        return self.values[name]


def _coerce(p, value):
    # the table's type: "f" -> float, "H" -> int (a whole-valued float like 100.0 from a host is accepted; 100.5
    # is left as a float so check() names it "must be a whole number"). None: not a number at all.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if p[table.TYPE] == "f":
        return float(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")) or int(value) != value:
            return value
        return int(value)
    return value
