#!/usr/bin/env python3
"""mutate.py — mutation testing of the kernels, the CPU ops and the handwritten backward passes
(run through scripts/mutate.sh; docs/mutation.md has the campaign's results).

A mutant is one small edit of one source line (tests/mutation/mutants.tsv, one per row):

    id  file  line  occ  kind  from  to  text

`from` is replaced by `to` at its occ-th occurrence (1 = first) in line `line` of `file` (a path
from the repository root); `text` is that line as it was when the mutant was written, leading
blanks removed. When the file has changed since, the mutant follows its line: the line whose text
is `text` nearest to `line` is mutated, and a mutant whose line is gone is reported "stale"
(exit 2) rather than run. kind names the mutant's class (docs/mutation.md lists them).

For each mutant the tool never touches the working tree: it writes the mutated file into a mirror
of src/ and tests/ (OUT/tree), recompiles, with the build folder's own flags
(compile_commands.json), only the objects of the test program whose dependency files name the
mutated file, links the program again with those objects placed before the libraries (so that
they replace the library's members of the same source; OUT/bin), and runs the tests the plan
(tests/mutation/plans.txt: a build, a test program, its arguments) names for that file, in
order, until one fails. A header's plan is its own lines followed by those of every source file
that includes it, directly or through other headers (plan_for): a helper in a header is tested by
whatever uses it. The builds: cpu (build/), simt (build-simt/), asan (build-asan/) and
simt-asan (build-simt-asan/), each configured and built beforehand as scripts/test.sh,
scripts/simt.sh and scripts/sanitize.sh do (--build NAME=DIR names another folder; only the
builds a plan reaches are needed). Verdicts:

    killed         a test failed: a failed check, a crash, an emulation error (a barrier not
                   reached, a bad shuffle) or a time-out (10 x the unmutated run + 30 s)
    survived       every planned test passed
    same-code      every recompiled object is byte for byte the unmutated one: the edit changed
                   no code (counted with the survivors; an equivalent mutant by construction)
    build-failed   the mutated file does not compile or link (not counted as killed)
    stale          the mutant's line is no longer in the file

Before the first mutant of a file, each planned test is run once through the same pipeline with
the file unmutated (a mutant with no edit); it must pass, else the run stops: a test that fails
unmutated cannot kill anything. Tests run with TEST_FAIL_FAST=1 (tests/testutil.h), from the
repository root, with OPENBLAS_NUM_THREADS=1 as under CTest (and in a sanitizer build with
TRAINER_SANITIZE=1 and the sanitizers' options, leak checking off).

Usage (from anywhere; paths are relative to the repository root):
  mutate.py [--ids ID,...] [--files GLOB,...] [--sample] [--list FILE] [--results FILE]
            [--cpu-build DIR] [--simt-build DIR] [--build NAME=DIR] [--out DIR]
  mutate.py --show ID            print the mutant's file, line and edit as a diff
  mutate.py --add FILE LINE KIND FROM TO [--occ N] [--id ID]    append a mutant to the list
  mutate.py --report RESULTS     the per-file table of a results file (markdown)
  mutate.py --check              every mutant applies, and no two make the same edit

--sample runs the ids of tests/mutation/ci_sample.txt and exits 1 unless every one is killed
(scripts/test.sh's mutate step; its results in a fresh OUT/sample.tsv). It first checks the whole
list, as --check does: every mutant's line is found (none stale) and no two mutants make the same
edit (a line whose text occurs more than once in its file can draw a mutant to another copy when
the code moves); either fault exits 2, naming the mutants. Otherwise the exit code
is 0 when every mutant ran (killed, survived or not), 2 on a usage error, a stale mutant or a
test that fails unmutated. Results go to RESULTS (default OUT/results.tsv; one row per mutant:
id, file, line, kind, status, the test that killed it, seconds), appended as each mutant
finishes, and a summary to stdout. OUT is build-mutate/ unless --out says otherwise.
"""
import argparse
import fnmatch
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MUT_DIR = os.path.join(ROOT, "tests", "mutation")
COLUMNS = ["id", "file", "line", "occ", "kind", "from", "to", "text"]
KINDS = {
    "sync": "a __syncthreads() or __syncwarp() removed",
    "bound": "a loop bound or a limit off by one",
    "stride": "a loop or reduction stride off by one (or halved)",
    "cmp": "< turned into <= (or the reverse), > into >=",
    "index": "+ turned into - (or the reverse) in an index or offset",
    "mask": "a mask, causal or padding condition inverted",
    "scale": "a scale factor dropped (1/sqrt(d), 1/N, label smoothing)",
    "shuffle": "a shuffle width, offset or lane mask changed",
    "accum": "an accumulation += turned into =",
    "term": "one term of a handwritten backward dropped",
    "sign": "a sign flipped in a formula",
    "init": "an initial value changed (a running max, a sum's start)",
}


def die(msg, code=2):
    print("mutate: " + msg, file=sys.stderr)
    sys.exit(code)


# ---------------------------------------------------------------------------------------------
# the list of mutants

def read_mutants(path):
    muts = []
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) != len(COLUMNS):
                die(f"{path}:{n}: {len(cols)} tab-separated columns, want {len(COLUMNS)} "
                    f"({' '.join(COLUMNS)})")
            m = dict(zip(COLUMNS, cols))
            m["line"], m["occ"] = int(m["line"]), int(m["occ"])
            if m["kind"] not in KINDS:
                die(f"{path}:{n}: unknown kind '{m['kind']}' ({', '.join(KINDS)})")
            for key in ("from", "to", "text"):
                m[key] = unescape(m[key])
            muts.append(m)
    ids = [m["id"] for m in muts]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        die(f"{path}: duplicate ids: {', '.join(sorted(dup))}")
    return muts


def escape(s):
    return s.replace("\\", "\\\\").replace("\t", "\\t")


def unescape(s):
    return re.sub(r"\\(.)", lambda m: "\t" if m.group(1) == "t" else m.group(1), s)


def locate(m, lines):
    """The 0-based index of the line the mutant edits in lines, or None (stale)."""
    want = m["text"]
    i = m["line"] - 1
    if 0 <= i < len(lines) and lines[i].strip() == want:
        return i
    hits = [j for j, l in enumerate(lines) if l.strip() == want]
    if not hits:
        return None
    return min(hits, key=lambda j: abs(j - i))


def apply(m, text):
    """The mutated text of a file, or raises ValueError (stale)."""
    lines = text.split("\n")
    i = locate(m, lines)
    if i is None:
        raise ValueError(f"{m['file']}:{m['line']}: no line reads '{m['text']}' any more")
    l, pos = lines[i], -1
    for _ in range(m["occ"]):
        pos = l.find(m["from"], pos + 1)
        if pos < 0:
            raise ValueError(f"{m['file']}:{i + 1}: '{m['from']}' occurs fewer than {m['occ']} "
                             f"times")
    lines[i] = l[:pos] + m["to"] + l[pos + len(m["from"]):]
    return "\n".join(lines), i + 1


def check_list(muts):
    """The faults of the list: stale mutants, and mutants that make the same edit as an earlier
    one (same file, same line, same mutated text); a list of messages, empty when none."""
    faults, seen, texts = [], {}, {}
    for m in muts:
        if m["file"] not in texts:
            try:
                with open(os.path.join(ROOT, m["file"]), encoding="utf-8") as f:
                    texts[m["file"]] = f.read()
            except OSError as e:
                texts[m["file"]] = None
                faults.append(f"{m['id']}: {e}")
        if texts[m["file"]] is None:
            continue
        try:
            new, ln = apply(m, texts[m["file"]])
        except ValueError as e:
            faults.append(f"{m['id']}: stale: {e}")
            continue
        key = (m["file"], ln, new.split("\n")[ln - 1])
        if key in seen:
            faults.append(f"{m['id']}: the same edit as {seen[key]} ({m['file']}:{ln}); give it "
                          f"its own line's number and text")
        else:
            seen[key] = m["id"]
    return faults


def show(m):
    with open(os.path.join(ROOT, m["file"]), encoding="utf-8") as f:
        text = f.read()
    new, ln = apply(m, text)
    a, b = text.split("\n")[ln - 1], new.split("\n")[ln - 1]
    print(f"{m['id']} ({m['kind']}: {KINDS[m['kind']]})\n--- {m['file']}:{ln}\n-{a}\n+{b}")


# ---------------------------------------------------------------------------------------------
# test plans

BUILDS = {"cpu": "build", "simt": "build-simt", "asan": "build-asan",
          "simt-asan": "build-simt-asan"}


def read_plans():
    """[(pattern, build, env, target, args)] of tests/mutation/plans.txt; env may hold "exit",
    the status the unmutated test exits with (default 0)."""
    plans = []
    path = os.path.join(MUT_DIR, "plans.txt")
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            parts = shlex.split(line)
            env = {}
            while len(parts) > 2 and "=" in parts[2]:
                k, v = parts.pop(2).split("=", 1)
                env[k] = v
            if len(parts) < 3 or parts[1] not in BUILDS or not env.get("exit", "0").isdigit():
                die(f"{path}:{n}: want PATTERN BUILD [VAR=VALUE...] [exit=N] TARGET [ARGS...], "
                    f"BUILD one of {', '.join(BUILDS)}")
            plans.append((parts[0], parts[1], env, parts[2], parts[3:]))
    return plans


INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"', re.M)
_includes = None


def includes():
    """{repository path: the repository paths of src/ it includes}, for every file of src/."""
    global _includes
    if _includes is None:
        _includes = {}
        for d, _, names in os.walk(os.path.join(ROOT, "src")):
            for name in names:
                full = os.path.join(d, name)
                rel = os.path.relpath(full, ROOT)
                try:
                    with open(full, encoding="utf-8", errors="replace") as f:
                        text = f.read()
                except OSError:
                    continue
                found = []
                for inc in INCLUDE.findall(text):  # relative to src/, else to the file's folder
                    for cand in (os.path.join("src", inc), os.path.join(os.path.dirname(rel), inc)):
                        if os.path.isfile(os.path.join(ROOT, cand)):
                            found.append(os.path.normpath(cand))
                            break
                _includes[rel] = found
    return _includes


def includers(path):
    """The files of src/ that include path, directly or through other headers, sorted."""
    inc, seen, todo = includes(), set(), [path]
    while todo:
        cur = todo.pop()
        for f, deps in inc.items():
            if cur in deps and f not in seen:
                seen.add(f)
                todo.append(f)
    return sorted(seen)


def plan_for(path, plans):
    """The tests for a mutant of path: its own plan lines, then, for a header, those of every
    file that includes it (each test once); the plain builds' tests before the sanitized ones,
    which are slower and built later (scripts/test.sh)."""
    out = []
    for src in [path] + (includers(path) if path.endswith((".h", ".cuh")) else []):
        for pat, b, e, t, a in plans:
            step = (b, e, t, a)
            if fnmatch.fnmatch(src, pat) and step not in out:
                out.append(step)
    return sorted(out, key=lambda step: step[0] in ("asan", "simt-asan"))


# ---------------------------------------------------------------------------------------------
# builds: recompiling the objects that depend on one file, linking one test program

CONFIGURE = {"cpu": "cmake -S . -B build && cmake --build build",
             "simt": "SIMT_PHASES=plain bash scripts/simt.sh",
             "asan": "bash scripts/sanitize.sh",
             "simt-asan": "SIMT_PHASES=asan bash scripts/simt.sh"}


class Build:
    def __init__(self, kind, d):
        self.kind, self.dir = kind, os.path.abspath(d)
        cc = os.path.join(self.dir, "compile_commands.json")
        if not os.path.isfile(cc):
            die(f"{self.dir}: no compile_commands.json; configure and build it first "
                f"({CONFIGURE[kind]})")
        try:
            with open(os.path.join(self.dir, "CMakeCache.txt")) as f:
                self.sanitized = "TRAINER_SANITIZE:BOOL=ON" in f.read()
        except OSError:
            self.sanitized = False
        with open(cc) as f:
            self.cmds = {}
            for e in json.load(f):
                out = e.get("output") or re.search(r"\s-o\s+(\S+)", e["command"]).group(1)
                self.cmds[os.path.normpath(os.path.join(e["directory"], out))] = e
        self.built = set()

    def ensure(self, target):
        if target in self.built:
            return
        r = subprocess.run(["cmake", "--build", self.dir, "--target", target, "--",
                            "--no-print-directory"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if r.returncode:
            die(f"cmake --build {self.dir} --target {target} failed:\n{r.stdout[-3000:]}")
        self.built.add(target)

    def link_line(self, target):
        with open(os.path.join(self.dir, "CMakeFiles", target + ".dir", "link.txt")) as f:
            return shlex.split(f.read().strip().split("\n")[-1])

    def objects_of(self, target):
        """The objects the target links: its own, and those of the build's static libraries on its
        link line (each 'libNAME.a' is the objects of CMakeFiles/NAME.dir)."""
        objs = []
        for tok in self.link_line(target):
            p = os.path.normpath(os.path.join(self.dir, tok))
            if tok.endswith(".o") and p in self.cmds:
                objs.append(p)
            elif tok.endswith(".a") and os.path.dirname(p) == self.dir:
                lib = os.path.basename(tok)[3:-2]
                pre = os.path.join(self.dir, "CMakeFiles", lib + ".dir") + os.sep
                objs += [o for o in self.cmds if o.startswith(pre)]
        return objs

    def dependents(self, target, src):
        """The target's objects whose dependency file names src (an absolute path)."""
        out = []
        for o in self.objects_of(target):
            try:
                with open(o + ".d") as f:
                    deps = f.read().replace("\\\n", " ").split()
            except OSError:
                die(f"{o}.d: no dependency file; rebuild {self.dir}")
            if src in (os.path.normpath(d if os.path.isabs(d) else os.path.join(self.dir, d))
                       for d in deps[1:]):
                out.append(o)
        return out

    def compile(self, obj, tree, out_obj):
        """Compiles obj's source from the mirror tree into out_obj; (ok, message)."""
        e = self.cmds[obj]
        cmd = e["command"]
        mirror = lambda s: re.sub(re.escape(ROOT) + r"/(src|tests)(?=[/\s\"']|$)",
                                  lambda m: os.path.join(tree, m.group(1)), s)
        cmd = mirror(cmd)
        cmd = re.sub(r"(\s-o\s+)(\S+)", lambda m: m.group(1) + shlex.quote(out_obj), cmd, count=1)
        r = subprocess.run(cmd, shell=True, cwd=e["directory"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        return r.returncode == 0, r.stdout

    def link(self, target, replace, out_bin):
        """Links target into out_bin with the objects of replace ({original: new}) instead of
        the originals: its own objects in place, library members before the first library."""
        toks = self.link_line(target)
        res, extra = [], [v for k, v in replace.items()
                          if os.path.relpath(k, self.dir) not in toks]
        for i, tok in enumerate(toks):
            p = os.path.normpath(os.path.join(self.dir, tok))
            if tok.endswith(".o") and p in replace:
                res.append(replace[p])
            elif tok == "-o":
                res += extra + ["-o"]
            elif i > 0 and toks[i - 1] == "-o":
                res.append(out_bin)
            else:
                res.append(tok)
        r = subprocess.run(res, cwd=self.dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        return r.returncode == 0, r.stdout


# ---------------------------------------------------------------------------------------------
# running one mutant

class Runner:
    def __init__(self, args):
        self.out = os.path.abspath(args.out)
        self.tree = os.path.join(self.out, "tree")
        self.builds = {}
        self.dirs = dict(BUILDS)
        self.dirs["cpu"], self.dirs["simt"] = args.cpu_build, args.simt_build
        for spec in args.build or []:
            name, _, d = spec.partition("=")
            if name not in BUILDS or not d:
                die(f"--build {spec}: want NAME=DIR, NAME one of {', '.join(BUILDS)}")
            self.dirs[name] = d
        self.plans = read_plans()
        self.baseline = {}  # (file, build, target, args) -> seconds
        self.base_objs = {}  # (file, build, target) -> {obj: bytes of the unmutated object}
        self.base_exe = {}  # (file, build, target) -> the program linked from those objects
        self.mirror()

    def mirror(self):
        """OUT/tree: a copy of the repository's src/ and tests/ sources as they are now."""
        if os.path.isdir(self.tree):
            shutil.rmtree(self.tree)
        for top in ("src", "tests"):
            for d, _, files in os.walk(os.path.join(ROOT, top)):
                for fn in files:
                    if fn.endswith((".c", ".h", ".cc", ".cu", ".cuh", ".hpp", ".inc")):
                        s = os.path.join(d, fn)
                        t = os.path.join(self.tree, os.path.relpath(s, ROOT))
                        os.makedirs(os.path.dirname(t), exist_ok=True)
                        shutil.copy2(s, t)

    def build(self, kind):
        if kind not in self.builds:
            self.builds[kind] = Build(kind, os.path.join(ROOT, self.dirs[kind]))
        return self.builds[kind]

    def make_binary(self, file, text, bk, target, tag):
        """The target built with file's text as given; (status, binary path or message, objects
        compiled {original: new})."""
        b = self.build(bk)
        b.ensure(target)
        src = os.path.join(ROOT, file)
        deps = b.dependents(target, src)
        if not deps:
            return "build-failed", f"no object of {target} in {b.dir} depends on {file}", {}
        mpath = os.path.join(self.tree, file)
        with open(mpath, "w", encoding="utf-8") as f:
            f.write(text)
        odir = os.path.join(self.out, "obj", tag)
        os.makedirs(odir, exist_ok=True)
        repl = {}
        try:
            for o in deps:
                no = os.path.join(odir, os.path.relpath(o, b.dir).replace(os.sep, "__"))
                ok, msg = b.compile(o, self.tree, no)
                if not ok:
                    return "build-failed", msg[-2000:], repl
                repl[o] = no
        finally:
            shutil.copy2(src, mpath)  # the mirror holds the unmutated file again
        exe = os.path.join(self.out, "bin", f"{bk}_{target}_{tag}")
        os.makedirs(os.path.dirname(exe), exist_ok=True)
        ok, msg = b.link(target, repl, exe)
        if not ok:
            return "build-failed", msg[-2000:], repl
        return "ok", exe, repl

    def run_test(self, bk, exe, args, timeout, extra_env=None):
        """(passed, how, seconds) of one run of exe args from the repository root; it passes
        when it exits with extra_env's "exit" (default 0)."""
        extra_env = dict(extra_env or {})
        want = int(extra_env.pop("exit", "0"))
        b = self.build(bk)
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", TEST_FAIL_FAST="1",
                   TRAINER_BIN=os.path.join(b.dir, "trainer"), TRAINER_BUILD_DIR=b.dir,
                   TMPDIR=os.path.join(self.out, "tmp"))
        if b.sanitized:  # as CTest runs the sanitizer builds' tests, leaks aside
            env.update(TRAINER_SANITIZE="1", ASAN_OPTIONS="detect_leaks=0:abort_on_error=0",
                       UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
        env.update(extra_env)
        os.makedirs(env["TMPDIR"], exist_ok=True)
        t0 = time.time()
        p = subprocess.Popen([exe] + args, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, start_new_session=True)
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            return False, f"timed out after {timeout:.0f} s", time.time() - t0
        shutil.rmtree(env["TMPDIR"], ignore_errors=True)
        dt = time.time() - t0
        if p.returncode == want:
            return True, "passed", dt
        text = out.decode("utf-8", "replace")
        first = next((l for l in text.split("\n")
                      if l.startswith(("FAIL ", "simt:", "CUDA_CHECK", "CHECK failed"))
                      or "error" in l.lower() or "Sanitizer" in l), "")
        how = (f"signal {-p.returncode}" if p.returncode < 0 else f"exit {p.returncode}")
        return False, (how + (": " + first.strip()[:160] if first else "")), dt

    def baseline_for(self, file, bk, env, target, args):
        key = (file, bk, tuple(sorted(env.items())), target, tuple(args))
        if key in self.baseline:
            return self.baseline[key]
        if (file, bk, target) not in self.base_objs:
            with open(os.path.join(ROOT, file), encoding="utf-8") as f:
                text = f.read()
            st, exe, repl = self.make_binary(file, text, bk, target, "unmutated")
            if st != "ok":
                die(f"{file}: the unmutated objects of {target} do not build through the "
                    f"mirror:\n{exe}")
            self.base_objs[(file, bk, target)] = {o: open(n, "rb").read()
                                                  for o, n in repl.items()}
            self.base_exe[(file, bk, target)] = exe
        exe = self.base_exe[(file, bk, target)]
        ok, how, dt = self.run_test(bk, exe, args, 3600, env)
        if not ok:
            die(f"{file}: {target} {' '.join(args)} fails unmutated ({how}); a mutant cannot be "
                f"killed by a failing test")
        print(f"  unmutated: {bk} {target} {' '.join(args)}: passed in {dt:.1f} s", flush=True)
        self.baseline[key] = dt
        return dt

    def run(self, m):
        plan = plan_for(m["file"], self.plans)
        if not plan:
            die(f"{m['id']}: no test plan for {m['file']} in tests/mutation/plans.txt")
        with open(os.path.join(ROOT, m["file"]), encoding="utf-8") as f:
            text = f.read()
        try:
            mutated, _ = apply(m, text)
        except ValueError as e:
            return "stale", str(e), 0.0
        t0 = time.time()
        same_code = True
        made = {}
        for bk, env, target, args in plan:
            base = self.baseline_for(m["file"], bk, env, target, args)
            if (bk, target) not in made:
                made[(bk, target)] = self.make_binary(m["file"], mutated, bk, target,
                                                      f"mutant{len(made)}")
            st, exe, repl = made[(bk, target)]
            if st != "ok":
                return "build-failed", exe.strip().split("\n")[-1][:200], time.time() - t0
            orig = self.base_objs[(m["file"], bk, target)]
            if any(open(n, "rb").read() != orig.get(o) for o, n in repl.items()):
                same_code = False
            else:
                continue  # the same code as unmutated: this test cannot tell
            ok, how, _ = self.run_test(bk, exe, args, 10 * base + 30, env)
            if not ok:
                desc = " ".join([f"{k}={v}" for k, v in env.items()] + [target] + args)
                return "killed", f"{bk} {desc}: {how}", time.time() - t0
        return ("same-code" if same_code else "survived"), "", time.time() - t0


# ---------------------------------------------------------------------------------------------
# reports

def report(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for raw in f:
            if raw.startswith("#") or not raw.strip():
                continue
            rows.append(raw.rstrip("\n").split("\t"))
    files = {}
    for r in rows:
        files.setdefault(r[1], []).append(r)
    print("| file | mutants | killed | survived | same code | failed to build |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    tot = [0] * 5
    for fn in sorted(files):
        rs = files[fn]
        c = [len(rs)] + [sum(r[4] == s for r in rs)
                         for s in ("killed", "survived", "same-code", "build-failed")]
        tot = [a + b for a, b in zip(tot, c)]
        print(f"| `{fn}` | " + " | ".join(str(x) for x in c) + " |")
    print("| **all** | " + " | ".join(f"**{x}**" for x in tot) + " |")
    valid = tot[0] - tot[4]
    if valid:
        print(f"\n{tot[1]} of {valid} mutants that build killed ({100.0 * tot[1] / valid:.1f}%).")
    surv = [r for r in rows if r[4] in ("survived", "same-code")]
    if surv:
        print("\nNot killed:")
        for r in surv:
            print(f"- {r[0]} ({r[1]}:{r[2]}, {r[3]}): {r[4]}")


# ---------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--list", default=os.path.join(MUT_DIR, "mutants.tsv"))
    ap.add_argument("--ids", help="comma-separated mutant ids")
    ap.add_argument("--files", help="comma-separated globs of the files whose mutants run")
    ap.add_argument("--sample", action="store_true",
                    help="the ids of tests/mutation/ci_sample.txt; exit 1 unless all are killed")
    ap.add_argument("--results", help="results file (default OUT/results.tsv), appended")
    ap.add_argument("--cpu-build", default="build")
    ap.add_argument("--simt-build", default="build-simt")
    ap.add_argument("--build", action="append", metavar="NAME=DIR",
                    help="the folder of a build of plans.txt (cpu, simt, asan, simt-asan)")
    ap.add_argument("--out", default=os.path.join(ROOT, "build-mutate"))
    ap.add_argument("--show", metavar="ID")
    ap.add_argument("--add", nargs=5, metavar=("FILE", "LINE", "KIND", "FROM", "TO"))
    ap.add_argument("--occ", type=int, default=1)
    ap.add_argument("--id")
    ap.add_argument("--report", metavar="RESULTS")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()

    if args.report:
        report(args.report)
        return 0
    if args.add:
        file, line, kind, frm, to = args.add
        if kind not in KINDS:
            die(f"unknown kind '{kind}' ({', '.join(KINDS)})")
        with open(os.path.join(ROOT, file), encoding="utf-8") as f:
            lines = f.read().split("\n")
        text = lines[int(line) - 1]
        if text.count(frm) < args.occ:
            die(f"{file}:{line}: '{frm}' occurs {text.count(frm)} times: {text.strip()}")
        muts = read_mutants(args.list) if os.path.exists(args.list) else []
        stem = os.path.splitext(os.path.basename(file))[0]
        if args.id:
            mid = args.id
        else:
            series = f"{os.path.basename(os.path.dirname(file))}/{stem}"
            nums = [int(m["id"].rsplit(".", 1)[1]) for m in muts
                    if m["id"].rsplit(".", 1)[0] == series and m["id"].rsplit(".", 1)[1].isdigit()]
            mid = f"{series}.{max(nums, default=0) + 1}"  # after the largest: ids of deleted rows stay unused
        if any(m["id"] == mid for m in muts):
            die(f"id {mid} exists")
        m = dict(id=mid, file=file, line=int(line), occ=args.occ, kind=kind, to=to, text=text.strip())
        m["from"] = frm
        apply(m, "\n".join(lines))  # checks it applies
        with open(args.list, "a", encoding="utf-8") as f:
            f.write("\t".join(escape(str(m[c])) for c in COLUMNS) + "\n")
        show(m)
        return 0

    muts = read_mutants(args.list)
    if args.show:
        m = next((m for m in muts if m["id"] == args.show), None)
        if not m:
            die(f"no mutant {args.show} in {args.list}")
        show(m)
        return 0

    if args.check or args.sample:
        faults = check_list(muts)
        for f in faults:
            print(f"mutate: {f}", file=sys.stderr)
        if faults:
            die(f"{len(faults)} faults in {args.list}")
        if args.check:
            print(f"mutate: {len(muts)} mutants, each applies and makes its own edit")
            return 0

    sel = muts
    if args.sample:
        with open(os.path.join(MUT_DIR, "ci_sample.txt")) as f:
            want = [l.split("#")[0].strip() for l in f if l.split("#")[0].strip()]
        sel = [m for m in muts if m["id"] in want]
        missing = set(want) - {m["id"] for m in sel}
        if missing:
            die(f"ci_sample.txt names ids not in the list: {', '.join(sorted(missing))}")
    if args.ids:
        want = set(args.ids.split(","))
        sel = [m for m in sel if m["id"] in want]
        if want - {m["id"] for m in sel}:
            die(f"no such ids: {', '.join(sorted(want - {m['id'] for m in sel}))}")
    if args.files:
        globs = args.files.split(",")
        sel = [m for m in sel if any(fnmatch.fnmatch(m["file"], g) for g in globs)]
    if not sel:
        die("no mutant selected")

    runner = Runner(args)
    res_path = args.results or os.path.join(runner.out,
                                            "sample.tsv" if args.sample else "results.tsv")
    os.makedirs(os.path.dirname(os.path.abspath(res_path)), exist_ok=True)
    if args.sample and not args.results and os.path.exists(res_path):
        os.remove(res_path)  # the sample's results are this run's alone
    new = not os.path.exists(res_path)
    counts, stale, t_all = {}, 0, time.time()
    with open(res_path, "a", encoding="utf-8") as res:
        if new:
            res.write("# id\tfile\tline\tkind\tstatus\tkilled by\tseconds\n")
        for k, m in enumerate(sel, 1):
            st, how, dt = runner.run(m)
            counts[st] = counts.get(st, 0) + 1
            stale += st == "stale"
            print(f"[{k}/{len(sel)}] {m['id']} {m['file']}:{m['line']} {m['kind']} "
                  f"'{m['from']}' -> '{m['to']}': {st.upper()}" + (f" ({how})" if how else "")
                  + f" {dt:.1f} s", flush=True)
            res.write("\t".join([m["id"], m["file"], str(m["line"]), m["kind"], st,
                                 how.replace("\t", " "), f"{dt:.1f}"]) + "\n")
            res.flush()
    print(f"mutate: {len(sel)} mutants in {time.time() - t_all:.0f} s: " +
          ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) + f"; results in {res_path}")
    if stale:
        return 2
    if args.sample and counts.get("killed", 0) != len(sel):
        print("mutate: a mutant of the CI sample was not killed: the tests no longer catch it, "
              "or the tool no longer works", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
