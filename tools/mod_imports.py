#!/usr/bin/env python3
"""The module import graph of one crate, and its cycles.

    python3 tools/mod_imports.py state-derive/src

For each module (file) under the crate's src/: the crate modules it names
(`crate::m`, `super::m`, `super::{..}`, a child's `child::..`) and the
modules it declares (`mod m;`). A module and its own submodules are one
unit (the parent holds what its children share): a child naming its parent
is no cycle, but a cycle may go down from a module into its child (`a`
uses `b`, whose child `b::c` uses `a`). Test modules (after `#[cfg(test)]`)
and comments are left out.
"""
import os
import re
import sys


def modules(root):
    mods = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            if not f.endswith('.rs'):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), root)[:-3]
            if rel.endswith('/mod'):
                rel = rel[:-4]
            name = 'crate' if rel in ('lib', 'main') else rel.replace('/', '::')
            mods[name] = open(os.path.join(dirpath, f)).read()
    return mods


def graph(mods):
    out = {}
    for m, src in mods.items():
        src = re.sub(r'//.*', '', src)
        src = re.sub(r'#\[cfg\(test\)\]\s*mod[\s\S]*', '', src)
        uses, declares = set(), set()
        for path in re.findall(r'crate::((?:\w+::)*\w+)', src):
            parts = path.split('::')
            for k in range(len(parts), 0, -1):  # the longest module prefix
                if '::'.join(parts[:k]) in mods:
                    uses.add('::'.join(parts[:k]))
                    break
        parent = m.rsplit('::', 1)[0] if '::' in m else 'crate'
        names = re.findall(r'super::\{([^}]*)\}', src) + re.findall(r'super::(\w+)', src)
        for group in names:
            for t in re.findall(r'\w+', group):
                sibling = f'{t}' if parent == 'crate' else f'{parent}::{t}'
                uses.add(sibling if sibling in mods else parent)
        for t in re.findall(r'^\s*(?:pub(?:\([^)]*\))?\s+)?mod (\w+);', src, re.M):
            declares.add(t if m == 'crate' else f'{m}::{t}')
        for child in declares:
            short = child.rsplit('::', 1)[-1]
            if re.search(r'(?<![\w:])' + short + r'::', src):
                uses.add(child)
        uses.discard(m)
        out[m] = (sorted(uses), sorted(declares))
    return out


def cycles(g):
    found = set()

    def related(a, b):
        return a.startswith(b + '::') or b.startswith(a + '::') or 'crate' in (a, b)

    def walk(node, path):
        for d in g[node][0]:
            # A parent's use of its child is walked (the unit's edges go
            # on from the child); other edges within a unit are not.
            if related(node, d) and not d.startswith(node + '::'):
                continue
            if d in path:
                c = path[path.index(d):]
                k = c.index(min(c))
                found.add(tuple(c[k:] + c[:k]))
            elif d in g and len(path) < 16:
                walk(d, path + [d])

    for m in g:
        walk(m, [m])
    return sorted(found)


def main():
    g = graph(modules(sys.argv[1]))
    for m in sorted(g):
        uses, declares = g[m]
        decl = f'   [declares {", ".join(declares)}]' if declares else ''
        print(f'{m:24} -> {", ".join(uses)}{decl}')
    cs = cycles(g)
    print('cycles:', ' ; '.join(' -> '.join(c + (c[0],)) for c in cs) if cs else 'none')


main()
