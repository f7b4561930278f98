#!/usr/bin/env python3
"""check_calls.py — no two source files of a program call each other in a circle.

    tests/check_calls.py OBJECT...     the objects of one program (a ';'-separated list is split)
    tests/check_calls.py --self-test   compile a.c and b.c, which call each other, and c.c, which
                                       b.c calls, and expect that circle and no other

File A calls file B when A leaves undefined a symbol that B defines as code (nm type T; weak and
data symbols do not count: a table of function pointers is data). Prints every circle (files that
reach each other through calls) with the calls inside it and exits 1, or exits 0. A file is named
by its path below its CMake target's folder (CMakeFiles/T.dir/src/model/rnn.c.o: src/model/rnn.c).
"""
import os, re, subprocess, sys, tempfile


def graph(objs):  # {file: {callee file: [symbols]}}
    defs, undefs = {}, {}
    for o in objs:
        f = re.sub(r"^.*?\.dir/", "", o).removesuffix(".o")
        out = subprocess.run(["nm", "-P", o], capture_output=True, text=True, check=True).stdout
        undefs[f] = set()
        for sym, kind in (line.split()[:2] for line in out.splitlines()):
            if kind == "T":
                defs[sym] = f
            elif kind == "U":
                undefs[f].add(sym)
    g = {f: {} for f in undefs}
    for f, syms in undefs.items():
        for s in sorted(syms):
            if defs.get(s, f) != f:
                g[f].setdefault(defs[s], []).append(s)
    return g


def reach(g, a):  # the files a reaches through one call or more
    seen, todo = set(), list(g[a])
    while todo:
        b = todo.pop()
        if b not in seen:
            seen.add(b), todo.extend(g[b])
    return seen


def check(objs):
    g = graph(objs)
    r = {a: reach(g, a) for a in g}
    circles = sorted({tuple(sorted({a} | {b for b in r[a] if a in r[b]})) for a in g if a in r[a]})
    for c in circles:
        print("check_calls: these files call each other in a circle: " + ", ".join(c))
        for a in c:
            for b, syms in sorted(g[a].items()):
                if b in c:
                    print(f"  {a} calls {b}: {', '.join(syms)}")
    if not circles:
        pairs = sum(map(len, g.values()))
        print(f"check_calls: no circle among {len(g)} files ({pairs} calling pairs)")
    return circles


def self_test():
    src = {"a.c": "void b(void); void a(void) { b(); }", "c.c": "void c(void) {}",
           "b.c": "void a(void); void c(void); void b(void) { a(); c(); }"}
    with tempfile.TemporaryDirectory() as d:
        for f, text in src.items():
            open(os.path.join(d, f), "w").write(text + "\n")
            subprocess.run([os.environ.get("CC", "cc"), "-c", f, "-o", f + ".o"], cwd=d, check=True)
        found = check([os.path.join(d, f + ".o") for f in sorted(src)])
    ok = [[os.path.basename(f) for f in c] for c in found] == [["a.c", "b.c"]]
    print("check_calls: self-test " + ("passed: the circle a.c, b.c was found" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    objs = [o for arg in sys.argv[1:] for o in arg.split(";") if o]
    if not objs:
        sys.exit(__doc__)
    sys.exit(1 if check(objs) else 0)
