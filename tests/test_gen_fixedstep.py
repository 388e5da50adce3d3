# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The viperdrive contributors
"""mcu/fixedstep.py is tools/gen_fixedstep.py's output for the template in tools/fixedstep/ (an outline and one file
per mechanism), every line of it leads back to its template line, and the generator's macros compute what the
template says they do.

The checked-in file is what the board runs, so it is compared byte for byte (the way pbio checks its generated
tables). The macros are checked with numbers: their expansions are executed by CPython, whose integers do not
overflow, against the exact values (floor(x*m/2**s), the signed value of a zero-extended 32-bit load). And every
copy of the gain block and of the sign extension in the output comes from a macro: a hand-pasted copy in the
template fails here."""
from __future__ import annotations

import importlib.util
import random
import re
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
SB = -(1 << 31)


def load_gen():
    spec = importlib.util.spec_from_file_location("gen_fixedstep", ROOT / "tools" / "gen_fixedstep.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


gen = load_gen()


def code_of(text: str) -> str:
    """text without comments (for counting code constructs)."""
    return "\n".join(line.split("#", 1)[0] for line in text.splitlines())


def test_checked_in_fixedstep_is_the_generators_output():
    want = gen.generate(gen.TEMPLATE.read_text(), gen.TEMPLATE)
    have = gen.OUTPUT.read_text()
    assert have == want, "mcu/fixedstep.py is not the template's expansion: run python tools/gen_fixedstep.py"


def test_check_mode_passes_on_the_tree_and_names_the_fix_on_a_difference(tmp_path, monkeypatch):
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_fixedstep.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    stale = tmp_path / "fixedstep.py"
    stale.write_text(gen.OUTPUT.read_text().replace("if sh >= 15:", "if sh > 15:", 1))
    monkeypatch.setattr(gen, "OUTPUT", stale)
    assert gen.main(["--check"]) == 1
    assert stale.read_text().count("if sh > 15:") == 1          # --check never writes


def comments_of(text: str) -> Counter:
    """Every comment of text (full-line or trailing, from its #), with how often it occurs."""
    return Counter(line[line.index("#"):].rstrip() for line in text.splitlines()
                   if "#" in line and not line.lstrip().startswith("#@"))


def test_output_says_it_is_generated_and_keeps_every_template_comment():
    out = gen.OUTPUT.read_text()
    tmpl = comments_of(gen.template_text())
    assert out.splitlines()[2].startswith("# GENERATED FILE, do not edit: made by tools/gen_fixedstep.py from "
                                          "tools/fixedstep/*.py.in")   # after the SPDX lines
    assert sum(tmpl.values()) > 150
    assert tmpl - comments_of(out) == Counter()
    assert "#@" not in out


def test_every_gain_block_and_sign_extension_of_the_step_comes_from_a_macro():
    """The output's gain blocks (their `if sh >= 15:` test) and sign extensions are exactly as many as the
    template's GAIN and SX uses: none is a hand-written copy."""
    tmpl = code_of(gen.template_text())
    out = code_of(gen.OUTPUT.read_text())
    gains = len(re.findall(r"\bGAIN\(", tmpl))
    sxs = len(re.findall(r"\bSX\(", tmpl))
    assert gains == 8 and sxs == 50                       # the control law's terms; every signed ptr32 load
    assert out.count("if sh >= 15:") == gains
    assert len(re.findall(r"\^ sb\) - sb", out)) == sxs
    assert "if sh >= 15:" not in tmpl and "^ sb) - sb" not in tmpl
    assert not re.search(r"\b(GAIN|SX|CLAMP)\(", out)


MECHANISMS = ("layout", "requests", "moves", "intake", "setpoint", "encoder", "pid", "checks", "move_end_all", "log")


def test_the_template_is_an_outline_and_one_file_per_mechanism():
    """tools/fixedstep/fixedstep.py.in includes each mechanism's file once, in the order the step runs them; every
    file in the folder is included (none is left behind), and the outline itself is short."""
    outline = gen.TEMPLATE.read_text()
    included = [m["name"] for m in gen.INCLUDE.finditer(outline)]
    assert included == [f"{n}.py.in" for n in MECHANISMS]
    assert sorted(p.name for p in gen.TEMPLATE.parent.glob("*.py.in")) == sorted(included + ["fixedstep.py.in"])
    assert len(outline.splitlines()) < 120


def test_every_line_of_the_output_leads_back_to_its_template_line():
    """generate_with_origins() maps each output line to the template file and line it comes from (what --where
    prints): the template line, expanded alone, holds the output line; a `# >> FILE:LINE` marker names the line that
    follows it; every block is marked."""
    text, origins = gen.generate_with_origins(gen.TEMPLATE.read_text(), gen.TEMPLATE)
    out = text.splitlines()
    assert len(origins) == len(out) and origins[:3] == [None] * 3
    files: dict = {}
    markers = 0
    for k, (line, origin) in enumerate(zip(out, origins, strict=True)):
        if origin is None:
            continue
        path, n = origin
        src = files.setdefault(path, path.read_text().splitlines())[n - 1]
        if line.lstrip().startswith(gen.MARKER):
            markers += 1
            assert line.strip() == f"{gen.MARKER}{path.relative_to(ROOT)}:{n}", line
            assert src.strip() and origins[k + 1] == origin, (k, line)
            continue
        pieces = gen.expand_statement(src, n) or [src]
        assert line.strip() in {gen.expand_sx(p, n).strip() for p in pieces}, (k + 1, line, path.name, n, src)
    assert markers == len(MECHANISMS) + 4        # each block, and the outline each of the 4 times it resumes
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_fixedstep.py"), "--where", str(len(out))],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("tools/fixedstep/log.py.in:39"), proc.stdout


@pytest.mark.parametrize("n, said", [("0", "has lines 1.."), ("-3", "has lines 1.."), ("9" * 40, "has lines 1.."),
                                     ("12.5", "invalid int"), ("nan", "invalid int"), ("", "invalid int")])
def test_where_outside_the_output_is_one_line_and_exit_2(n, said):
    """--where takes a line of mcu/fixedstep.py: no line, a huge one or not a number is one line and exit 2."""
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_fixedstep.py"), "--where", n],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stdout == "", proc
    assert said in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_an_include_that_is_missing_or_includes_itself_is_an_error_naming_it(tmp_path):
    outline = tmp_path / "fixedstep.py.in"
    (tmp_path / "loop.py.in").write_text("x = 1\n#@include loop.py.in\n")
    for text, why in (("#@include gone.py.in\n", "#@include gone.py.in: No such file"),
                      ("a = 1\n#@include loop.py.in\n", "#@include loop.py.in includes itself")):
        outline.write_text(text)
        with pytest.raises(gen.TemplateError, match=re.escape(why)):
            gen.generate(text, outline)
    (tmp_path / "bad.py.in").write_text("#@ a mechanism\ndef f():\n    t = GAIN(err)\n")
    with pytest.raises(gen.TemplateError, match="line 3: GAIN takes") as e:
        gen.generate("#@include bad.py.in\n", outline)
    assert e.value.path == tmp_path / "bad.py.in"


def block(lines: list[str]):
    """The expansion's lines compiled as a module-level block."""
    return compile(textwrap.dedent("\n".join(lines) + "\n"), "<expansion>", "exec")


def run_block(lines, env: dict) -> dict:
    exec(lines if not isinstance(lines, list) else block(lines), {}, env)
    return env


def gain_lines(stmt: str) -> list[str]:
    lines = gen.expand_statement(stmt, 1)
    assert lines is not None
    return [gen.expand_sx(line, 1) for line in lines]


def test_gain_is_the_exact_floor_of_the_clamped_product():
    """floor(clamp(x0, xl) * m / 2**s) for inputs of |x| < 2**30, m <= 2**15 and every s in 0..45, both of the
    block's shift variants, negative inputs included (the floor, not truncation toward zero)."""
    rnd = random.Random(15)
    lines = block(gain_lines("        t = GAIN(a - b, K_P)"))
    k_p = 3
    checked = 0
    for s in range(46):
        for _ in range(300):
            m = rnd.choice((0, 1, 16384, 32768, rnd.randint(16384, 32768)))
            xl = rnd.choice(((1 << 30) - 1, rnd.randint(1, (1 << 30) - 1)))
            x0 = rnd.choice((rnd.randint(-(1 << 30) + 1, (1 << 30) - 1), rnd.randint(-40000, 40000), -1, 0, 1))
            k = [0] * 96
            k[k_p:k_p + 3] = [m, s, xl]
            env = run_block(lines, {"k": k, "kb": 0, "K_P": k_p, "a": x0, "b": 0, "int": int})
            xc = max(-xl, min(xl, x0))
            assert env["t"] == (xc * m) // (1 << s), (x0, m, s, xl, env["t"])
            assert env["x"] == xc
            checked += 1
    assert checked == 46 * 300


def test_gain_with_the_input_and_the_multiplier_already_loaded():
    plain = gain_lines("    t = GAIN(x, K_A)")
    assert plain[0] == "    m = int(k[kb + K_A])"                              # x is the input: no copy
    preloaded = gain_lines("    td = GAIN(df, K_D, md)")
    assert preloaded[0] == "    x = df"
    assert not any(re.match(r"\s*(m|md) = ", line) for line in preloaded)     # md is used, not reloaded
    assert "* md)" in preloaded[-1] and "* m)" not in "".join(preloaded)
    k = [0] * 96
    k[15:18] = [20000, 20, 1 << 20]                                           # K_D = 15: m is not read
    env = run_block(preloaded, {"k": k, "kb": 0, "K_D": 15, "df": -123456, "md": 30000, "int": int})
    assert env["td"] == (-123456 * 30000) >> 20


def wrap(v: int, bits: int) -> int:
    """v in the machine's signed word of that many bits (viper ints are machine words)."""
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def test_sx_sign_extends_a_zero_extended_word_and_keeps_a_signed_one():
    """The 64-bit unix port's ptr32 load gives the word zero-extended (SX makes it signed); a 32-bit board's is
    already signed, and SX changes nothing in its 32-bit arithmetic."""
    whole = gen.expand_sx("        v = SX(st[b + W_VEL])", 1)
    assert whole == "        v = (int(st[b + W_VEL]) ^ sb) - sb"
    inner = gen.expand_sx("        dl = SX(st[W_SPC]) - spl  # comment SX(stays)", 1)
    assert inner == "        dl = ((int(st[W_SPC]) ^ sb) - sb) - spl  # comment SX(stays)"
    forms = [gen.expand_sx(f, 1) for f in ("v = SX(st[0])", "d = SX(st[0]) - spl", "h = (SX(st[0]) + 128) >> 8")]
    for signed in (0, 1, -1, 12345, -12345, (1 << 31) - 1, -(1 << 31)):
        for bits, word in ((64, signed & 0xFFFFFFFF), (32, signed)):
            env = {"st": [word], "sb": SB, "int": int, "spl": 7}
            for f in forms:
                exec(f, {}, env)
            # ^, + and - wrap the same whether taken per operation or at the end; >> does not, so the shifted
            # form is checked where nothing wraps (the 64-bit port)
            assert (wrap(env["v"], bits), wrap(env["d"], bits)) == (signed, wrap(signed - 7, bits)), (bits, word)
            if bits == 64:
                assert env["h"] == (signed + 128) >> 8, word


def test_clamp_limits_both_ways_and_carries_a_trailing_comment():
    lines = gen.expand_statement("            CLAMP(jump, TERM_MAX)     # bounded before the shift", 1)
    assert lines[0] == "            if jump > TERM_MAX:     # bounded before the shift"
    for v, want in ((5, 5), (262145, 262144), (-262145, -262144), (-3, -3)):
        env = run_block(lines, {"jump": v, "TERM_MAX": 262144})
        assert env["jump"] == want


def test_end_move_records_the_end_after_the_last_three_and_frees_the_slot():
    """END_MOVE appends (id, reason) to the ring of the last four ends (MOVE_STATE), the count written after the
    entry, and frees the slot; run on a plain list standing in for the ptr32 state array."""
    fx = {m[1]: int(m[2], 0) for m in re.finditer(r"^(\w+) = const\(([0-9xA-Fa-f]+)\)", gen.template_text(),
                                                  re.M)}
    names = {n: fx[n] for n in ("M_NENDS", "M_ENDS", "S_ID", "S_ST", "TMASK")}
    lines = gen.expand_statement("        END_MOVE(o, why)", 1)
    st = [0] * fx["ST_LEN"]
    o = fx["M_SLOTS"] + 2 * fx["SLS"]
    for n, mid in enumerate((7, 8, 9, 10, 11)):
        st[o + fx["S_ID"]] = mid
        st[o + fx["S_ST"]] = 2
        run_block(lines, dict(names, st=st, o=o, why=n + 1))
        assert st[fx["M_NENDS"]] == n + 1 and st[o + fx["S_ST"]] == 0
    # the fifth end overwrote the first: the ring holds ends 2..5, slot (count & 3) * 2
    ends = fx["M_ENDS"]
    assert [(st[ends + 2 * (i & 3)], st[ends + 2 * (i & 3) + 1]) for i in range(1, 5)] == \
        [(8, 2), (9, 3), (10, 4), (11, 5)]


@pytest.mark.parametrize("line, why", [
    ("    GAIN(err, K_P)", "out = GAIN"),
    ("    t = GAIN(err)", "GAIN takes"),
    ("    t = GAIN(err, kp)", "GAIN takes"),
    ("    x = GAIN(err, K_P)", "scratch local"),
    ("    t = GAIN(err, K_P) + 1", "nothing may follow"),
    ("    t = 2 * GAIN(err, K_P)", "stands on its own line"),
    ("    y = CLAMP(x, 5)", "no value"),
    ("    CLAMP(x + 1, 5)", "CLAMP takes"),
    ("    CLAMP(x, 5", "unbalanced"),
    ("    v = SX()", "SX() needs"),
    ("    v = SX(st[b]", "unbalanced"),
    ("    t = GAIN(err, , K_P)", "empty macro argument"),
    ("    x = END_MOVE(o, why)", "END_MOVE takes"),
    ("    END_MOVE(o + 1, why)", "END_MOVE takes"),
])
def test_a_malformed_macro_use_is_an_error_naming_its_line(line, why):
    tmpl = "x = 1\n" + line + "\n"
    with pytest.raises(gen.TemplateError, match=re.escape(why)) as e:
        gen.generate(tmpl)
    assert str(e.value).startswith("line 2:")


def test_template_error_from_the_command_line_names_the_file(tmp_path, monkeypatch, capsys):
    bad = tmp_path / "fixedstep.py.in"
    bad.write_text("def f():\n    t = GAIN(err)\n")
    out = tmp_path / "fixedstep.py"
    monkeypatch.setattr(gen, "TEMPLATE", bad)
    monkeypatch.setattr(gen, "OUTPUT", out)
    monkeypatch.setattr(gen, "ROOT", tmp_path)
    assert gen.main([]) == 2
    assert "fixedstep.py.in: line 2: GAIN takes" in capsys.readouterr().err
    assert not out.exists()
