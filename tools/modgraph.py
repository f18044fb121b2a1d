#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The module-level import graph of each kernel crate, and a check that it has no cycle.

Reads a crate root, follows its `mod` declarations (with `#[path]`) to every file of
the crate, and turns each `crate::`, `super::` and `self::` path of a file's code
(`use` lines and paths in expressions; comments are skipped) into an edge from that
file to the file of the module the path names. A file is a node: inline modules
(`mod tests { ... }`) belong to the file that holds them.

    tools/modgraph.py                 the graph of every crate, then the cycle check
    tools/modgraph.py --check         the cycle check alone (what `make check` runs)
    tools/modgraph.py --dot CRATE     Graphviz of one crate (core, mlx5)
    tools/modgraph.py --self-test     the checks on a small tree with one fault of each kind

The check fails (exit 1) on a cycle among the files of one group: a group is a
top-level folder of the tree (`core/`, `uverbs/`, `mlx5/`, `rust/`), so the check
holds the one-way rule of each folder, whatever crate compiles it. Edges between
groups are printed but not checked here (`core` mounts `uverbs/`, which calls back
into `core`: that is the crate's module tree, not a file cycle of one folder).
"""

import os
import re
import sys

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

# Folders that sit below others: an edge from a file of the lower folder into the upper
# one is an upward import, which the check refuses unless listed in UPWARD_ALLOWED.
# `uverbs/` is compiled into the core crate and built on it; `core/` reaches uverbs
# only through extension points the uverbs side fills in. Crate roots are exempt
# (they mount every folder).
LOWER_UPPER = [("core", "uverbs")]
UPWARD_ALLOWED = set()

CRATES = {
    "core": "core/ib_core_rs.rs",
    "mlx5": "mlx5/mlx5_ib_rs.rs",
}

MOD_RE = re.compile(
    r"((?:#\[[^\]]*\]\s*)*)(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*([;{])"
)
PATH_ATTR_RE = re.compile(r'#\[path\s*=\s*"([^"]+)"\s*\]')


def strip_comments(text, keep_strings=False):
    """The code of a file: comments (and string literals unless kept) blanked."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
            continue
        if text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append("\n" * text.count("\n", i, j))
            i = j
            continue
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if keep_strings:
                out.append(text[i:j + 1])
            else:
                out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
            continue
        if c == "r" and re.match(r'r#*"', text[i:i + 8]) and (i == 0 or not text[i - 1].isalnum()):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
            continue
        if c == "'":
            # A char literal ('a', '\n', '\''), not a lifetime ('a).
            m = re.match(r"'(?:\\.|[^\\'])'", text[i:i + 4]) or re.match(r"'\\u\{[0-9a-fA-F]+\}'", text[i:i + 12])
            if m:
                out.append("' '")
                i += len(m.group(0))
                continue
        out.append(c)
        i += 1
    return "".join(out)


class Crate:
    def __init__(self, name, root):
        self.name = name
        self.files = {}  # module path (tuple) -> file (relative to TOP)
        self.mods_of_file = {}  # file -> module path
        self.walk(os.path.join(TOP, root), (), True)

    def walk(self, path, modpath, is_root):
        rel = os.path.relpath(path, TOP)
        if modpath in self.files:
            return
        self.files[modpath] = rel
        self.mods_of_file.setdefault(rel, modpath)
        try:
            code = strip_comments(open(path).read(), keep_strings=True)
        except OSError:
            return
        here = os.path.dirname(path)
        stem = os.path.splitext(os.path.basename(path))[0]
        # Only modules at the file's top level, not those inside inline blocks.
        depth = 0
        pos = 0
        for m in MOD_RE.finditer(code):
            depth += code.count("{", pos, m.start()) - code.count("}", pos, m.start())
            pos = m.start()
            if depth != 0:
                continue
            attrs, name, term = m.group(1), m.group(2), m.group(3)
            if term == "{":
                continue
            pm = PATH_ATTR_RE.search(attrs)
            if pm:
                child = os.path.normpath(os.path.join(here, pm.group(1)))
                # A file loaded through #[path] owns its directory, as mod.rs does.
                self.walk(child, modpath + (name,), True)
                continue
            elif is_root or stem == "mod":
                child = os.path.join(here, name + ".rs")
                if not os.path.exists(child):
                    child = os.path.join(here, name, "mod.rs")
            else:
                child = os.path.join(here, stem, name + ".rs")
                if not os.path.exists(child):
                    child = os.path.join(here, stem, name, "mod.rs")
            self.walk(child, modpath + (name,), False)

    def resolve(self, segs):
        """The file of the longest module prefix of an absolute path."""
        for k in range(len(segs), -1, -1):
            f = self.files.get(tuple(segs[:k]))
            if f is not None:
                return f
        return None


USE_RE = re.compile(r"\buse\s+([^;]+);")
PATH_RE = re.compile(r"\b(crate|super|self)((?:\s*::\s*[A-Za-z_][A-Za-z0-9_]*)+)")


def expand_use(tree):
    """`a::{b::{c, d}, e as f}` -> [a::b::c, a::b::d, a::e]."""
    tree = re.sub(r"\s*(::|\{|\}|,)\s*", r"\1", tree.strip())
    out = []

    def rec(prefix, s):
        i = s.find("{")
        if i < 0:
            out.append(prefix + s.split(" as ", 1)[0].strip())
            return
        head = s[:i]
        depth, j, start, parts = 0, i + 1, i + 1, []
        while j < len(s):
            if s[j] == "{":
                depth += 1
            elif s[j] == "}":
                if depth == 0:
                    parts.append(s[start:j])
                    break
                depth -= 1
            elif s[j] == "," and depth == 0:
                parts.append(s[start:j])
                start = j + 1
            j += 1
        for part in parts:
            if part:
                rec(prefix + head, part)

    rec("", tree)
    return out


def edges_of(crate, rel):
    modpath = crate.mods_of_file[rel]
    code = strip_comments(open(os.path.join(TOP, rel)).read())
    paths = []
    for m in USE_RE.finditer(code):
        for p in expand_use(m.group(1)):
            paths.append(p)
    code_nouse = USE_RE.sub(" ", code)
    for m in PATH_RE.finditer(code_nouse):
        paths.append(m.group(1) + re.sub(r"\s+", "", m.group(2)))
    out = set()
    for p in paths:
        segs = [s for s in p.split("::") if s]
        if not segs:
            continue
        if segs[0] == "crate":
            abs_segs = segs[1:]
        elif segs[0] in ("super", "self"):
            base = list(modpath)
            while segs and segs[0] in ("super", "self"):
                if segs[0] == "super":
                    base = base[:-1]
                segs = segs[1:]
            abs_segs = base + segs
        else:
            continue
        target = crate.resolve(abs_segs)
        if target is not None and target != rel:
            out.add(target)
    return out


SAFE_GROUPS = ("core", "uverbs", "mlx5")
ALLOW_RE = re.compile(r"#\[allow\(unsafe_code\)\]")


def unsafe_boundary(crate):
    """The unsafe boundary of a crate: problems as lines (empty when it holds).

    The root denies `unsafe_code`; a file of `core/`, `uverbs/` or `mlx5/` has no `unsafe`
    keyword in its code, and an `allow(unsafe_code)` there stands only on a `rust/` mount
    (in the root) or on a `#[pinned_drop]` impl (which pin-init's macro makes an
    `unsafe impl`)."""
    out = []
    root = CRATES[crate.name]
    raw = strip_comments(open(os.path.join(TOP, root)).read(), keep_strings=True)
    if not re.search(r"#!\[(deny|forbid)\(unsafe_code\)\]", raw):
        out.append("%s: no #![deny(unsafe_code)]" % root)
    for rel in sorted(crate.mods_of_file):
        if group(rel) not in SAFE_GROUPS:
            continue
        text = strip_comments(open(os.path.join(TOP, rel)).read(), keep_strings=True)
        for m in ALLOW_RE.finditer(text):
            after = text[m.end():m.end() + 200].lstrip()
            line = text.count("\n", 0, m.start()) + 1
            if rel == root and re.match(r'(#\[cfg\([^\]]*\)\]\s*)?#\[path = "\.\./rust/', after):
                continue
            if rel != root and after.startswith("#[pinned_drop]"):
                continue
            out.append("%s:%d: allow(unsafe_code) on something other than a rust/ mount or a #[pinned_drop] impl" % (rel, line))
        code = strip_comments(open(os.path.join(TOP, rel)).read())
        for m in re.finditer(r"\bunsafe\b", code):
            line = code.count("\n", 0, m.start()) + 1
            out.append("%s:%d: unsafe outside rust/" % (rel, line))
    return out


def group(rel):
    return rel.split("/", 1)[0]


def sccs(nodes, adj):
    index, low, stack, on, res, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in adj.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            res.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            strong(v)
    return res


def graph(name):
    crate = Crate(name, CRATES[name])
    adj = {}
    for rel in sorted(crate.mods_of_file):
        adj[rel] = edges_of(crate, rel)
    return crate, adj


def check(graphs, out):
    """The cycle, upward-import and unsafe-boundary checks over `graphs` (crate name ->
    (crate, adjacency)); each problem is printed through `out`. Returns the count."""
    bad = 0
    by_group = {}
    roots = set(CRATES.values())
    for name, (crate, adj) in graphs.items():
        for a, bs in adj.items():
            by_group.setdefault(group(a), {}).setdefault(a, set()).update(
                b for b in bs if group(b) == group(a))
            if a in roots:
                continue
            for b in sorted(bs):
                if (group(a), group(b)) in LOWER_UPPER and (a, b) not in UPWARD_ALLOWED:
                    bad += 1
                    out("modgraph: upward import %s -> %s" % (a, b))
        problems = unsafe_boundary(crate)
        for p in problems:
            bad += 1
            out("modgraph: unsafe boundary: " + p)
        if not problems:
            out("modgraph: %s crate: unsafe only in rust/ mounts" % name)
    for g in sorted(by_group):
        adj = by_group[g]
        cyc = [c for c in sccs(list(adj), adj) if len(c) > 1]
        for c in cyc:
            bad += 1
            out("modgraph: cycle in %s/ (%d files): %s" % (g, len(c), " ".join(c)))
        if not cyc:
            out("modgraph: %s/: %d files, no import cycle" % (g, len(adj)))
    return bad


SELF_TEST_TREE = {
    "core/ib_core_rs.rs": "#![deny(unsafe_code)]\nmod a;\nmod b;\n"
    "#[path = \"../uverbs/uverbs.rs\"]\nmod uverbs;\n"
    "#[allow(unsafe_code)]\n#[path = \"../rust/x.rs\"]\nmod x;\n",
    "core/a.rs": "use crate::b::B;\npub(crate) struct A;\n",
    "core/b.rs": "pub(crate) struct B(crate::a::A);\nfn f() { crate::uverbs::u(); }\n",
    "uverbs/uverbs.rs": "pub(crate) fn u() {}\n",
    "rust/x.rs": "pub(crate) fn x() { unsafe { core::hint::unreachable_unchecked() } }\n",
    "mlx5/mlx5_ib_rs.rs": "mod m;\n#[allow(unsafe_code)]\nmod n;\n",
    "mlx5/m.rs": "// unsafe in a comment is fine\nfn f() { let _ = \"unsafe\"; unsafe { g() } }\n",
    "mlx5/n.rs": "fn n() {}\n",
}

SELF_TEST_EXPECT = [
    "modgraph: upward import core/b.rs -> uverbs/uverbs.rs",
    "modgraph: cycle in core/ (2 files): core/a.rs core/b.rs",
    "modgraph: unsafe boundary: mlx5/mlx5_ib_rs.rs: no #![deny(unsafe_code)]",
    "modgraph: unsafe boundary: mlx5/mlx5_ib_rs.rs:2: allow(unsafe_code) on something other "
    "than a rust/ mount or a #[pinned_drop] impl",
    "modgraph: unsafe boundary: mlx5/m.rs:2: unsafe outside rust/",
    "modgraph: core crate: unsafe only in rust/ mounts",
]


def self_test():
    """The checks on a small tree with one of each fault: each must be reported, and the
    same tree without the faults must pass."""
    import tempfile
    global TOP
    saved = TOP
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        TOP = tmp
        for rel, text in SELF_TEST_TREE.items():
            os.makedirs(os.path.join(tmp, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(tmp, rel), "w") as f:
                f.write(text)
        lines = []
        bad = check({n: graph(n) for n in CRATES}, lines.append)
        for want in SELF_TEST_EXPECT:
            ok = want in lines
            failed += not ok
            print("%s modgraph self-test: reports %s" % ("ok" if ok else "not ok", want[10:]))
        ok = bad == len(SELF_TEST_EXPECT) - 1
        failed += not ok
        print("%s modgraph self-test: %d problems on the faulty tree" % ("ok" if ok else "not ok", bad))
        # The faults removed: b no longer names a nor uverbs, m no unsafe, the root denies.
        fixes = {
            "core/b.rs": "pub(crate) struct B;\n",
            "mlx5/m.rs": "fn f() {}\n",
            "mlx5/mlx5_ib_rs.rs": "#![deny(unsafe_code)]\nmod m;\nmod n;\n",
        }
        for rel, text in fixes.items():
            with open(os.path.join(tmp, rel), "w") as f:
                f.write(text)
        lines = []
        bad = check({n: graph(n) for n in CRATES}, lines.append)
        ok = bad == 0
        failed += not ok
        print("%s modgraph self-test: the repaired tree passes%s" % (
            "ok" if ok else "not ok", "" if ok else ": " + "; ".join(lines)))
    TOP = saved
    return 1 if failed else 0


def main(argv):
    if "--self-test" in argv:
        return self_test()
    if "--dot" in argv:
        name = argv[argv.index("--dot") + 1]
        _, adj = graph(name)
        print("digraph %s {" % name)
        for a in sorted(adj):
            for b in sorted(adj[a]):
                print('  "%s" -> "%s";' % (a, b))
        print("}")
        return 0
    graphs = {name: graph(name) for name in CRATES}
    if "--check" not in argv:
        for name, (_, adj) in graphs.items():
            print("crate %s (%s): %d files" % (name, CRATES[name], len(adj)))
            for a in sorted(adj):
                print("  %s -> %s" % (a, " ".join(sorted(adj[a])) or "-"))
    return 1 if check(graphs, print) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
