#!/usr/bin/env python3
"""Fail when the modules of a crate import each other in a cycle.

Usage: scripts/module-cycles.py <crate src dir>...

A module is a file (`a/b.rs`, or `a/b/mod.rs`); module A depends on module B when A's code
(comments and `#[cfg(test)] mod tests` left out) names a path into B: `use crate::b::…`,
`super::b::f(…)`, `crate::b::C`. A module naming one of its own ancestors (a child using
its parent's types) is the usual shape and not counted. Every strongly connected group of
more than one module is printed with its edges, and the exit code is 1 when there is any.
"""

import os
import re
import sys

PATH = re.compile(r"\b((?:crate|super|self)(?:::(?:super|[A-Za-z_][A-Za-z0-9_]*))+)")
GROUP = re.compile(r"use\s+((?:crate|super|self)(?:::\w+)*)::\{([^;]*)\};", re.S)


def modules(root):
    found = {}
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(".rs"):
                path = os.path.join(d, f)
                parts = os.path.relpath(path, root)[:-3].split(os.sep)
                if parts[-1] in ("mod", "lib", "main"):
                    parts = parts[:-1]
                found[tuple(parts)] = path
    return found


def resolve(mods, here, segments):
    """The module a path from module `here` lands in (its longest module prefix)."""
    head, rest = segments[0], segments[1:]
    if head == "crate":
        base = ()
    elif head == "self":
        base = here
    else:  # super
        base, rest = here[:-1], rest
        while rest and rest[0] == "super":
            base, rest = base[:-1], rest[1:]
    full = base + tuple(rest)
    for i in range(len(full), -1, -1):
        if full[:i] in mods:
            return full[:i]
    return None


def edges_of(mods):
    edges = {m: set() for m in mods}
    for here, path in mods.items():
        src = open(path, encoding="utf-8").read()
        tests = src.find("#[cfg(test)]\nmod tests")
        if tests >= 0:
            src = src[:tests]
        src = re.sub(r"//[^\n]*", "", src)
        paths = [m.group(1) for m in PATH.finditer(src)]
        for group in GROUP.finditer(src):
            for item in group.group(2).split(","):
                item = item.strip().split(" as ")[0].strip("{} \n")
                if item:
                    paths.append(group.group(1) + "::" + item.split("::{")[0])
        for p in paths:
            to = resolve(mods, here, p.split("::"))
            if to is not None and to != here and here[: len(to)] != to:
                edges[here].add(to)
    return edges


def cycles(edges):
    """Strongly connected groups of more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []
    sys.setrecursionlimit(100000)

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in edges:
        if v not in index:
            visit(v)
    return found


def main(roots):
    failed = False
    for root in roots:
        mods = modules(root)
        edges = edges_of(mods)
        for group in cycles(edges):
            failed = True
            name = lambda m: "/".join(m) or "(crate root)"
            print(f"{root}: import cycle among {', '.join(name(m) for m in group)}:")
            for a in group:
                for b in sorted(edges[a]):
                    if b in group:
                        print(f"    {name(a)} -> {name(b)}")
    if failed:
        print("move what both sides need into a module of its own (see ARCHITECTURE.md)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["core/src", "bridges/src", "src", "tests/harness/src"]))
