#!/usr/bin/env python3
"""Checks that no function of the core calls itself, directly or through
others, in a linked firmware binary.

Reads `objdump -d -C` of an ELF, builds the graph of direct calls (`bl`,
`blx`, and branches to another function's entry, which are tail calls),
and reports every strongly connected component of more than one function,
or one function calling itself, that contains a `spatium` symbol. Indirect
calls (`blx rN`) are counted and reported: the core has no function
pointers or `dyn` calls, so a nonzero count inside it is also a failure.

Usage: no_recursion.py OBJDUMP ELF...
"""

import re
import subprocess
import sys

FUNC = re.compile(r"^([0-9a-f]+) <(.+)>:$")
CALL = re.compile(r"\t(bl|blx|b|b\.w|b\.n)(?:\.w)?\s+([0-9a-f]+) <([^>+]+)(\+0x[0-9a-f]+)?>")
INDIRECT = re.compile(r"\tblx\s+r\d+")


def graph(objdump, elf):
    out = subprocess.run([objdump, "-d", "-C", elf], check=True, capture_output=True, text=True).stdout
    return parse(out)


def parse(out):
    edges, current, indirect = {}, None, {}
    for line in out.splitlines():
        m = FUNC.match(line)
        if m:
            current = m.group(2)
            edges.setdefault(current, set())
            continue
        if current is None:
            continue
        c = CALL.search(line)
        # A branch with an offset stays inside a function (a loop or an
        # `if`); a branch to another symbol's entry is a call or tail call.
        if c and c.group(4) is None and c.group(3) != current:
            edges[current].add(c.group(3))
        elif c and c.group(4) is None and c.group(1) in ("bl", "blx"):
            edges[current].add(c.group(3))  # a real self-call
        if INDIRECT.search(line):
            indirect[current] = indirect.get(current, 0) + 1
    return edges, indirect


def sccs(edges):
    """Tarjan's algorithm, iterative (no recursion here either)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges.get(root, ())))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(edges.get(w, ()))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
    return out


def self_test():
    """The checker finds a cycle through two functions, a direct self-call
    and an indirect call, and ignores loops (branches inside a function)."""
    text = """
00000100 <spatium::a>:
 100:	f000 f800 	bl	200 <spatium::b>
 104:	d1fc      	bne.n	100 <spatium::a>
 106:	e7fb      	b.n	100 <spatium::a+0x6>
00000200 <spatium::b>:
 200:	f000 b800 	b.w	100 <spatium::a>
00000300 <spatium::c>:
 300:	f7ff fffe 	bl	300 <spatium::c>
00000400 <spatium::d>:
 400:	4798      	blx	r3
 402:	f000 f800 	bl	100 <spatium::a>
00000500 <main>:
 500:	f000 f800 	bl	400 <spatium::d>
"""
    edges, indirect = parse(text)
    cycles = sorted(sorted(c) for c in sccs(edges) if len(c) > 1 or c[0] in edges.get(c[0], ()))
    assert cycles == [["spatium::a", "spatium::b"], ["spatium::c"]], cycles
    assert indirect == {"spatium::d": 1}, indirect
    assert edges["main"] == {"spatium::d"}, edges


def main():
    self_test()
    objdump, elves = sys.argv[1], sys.argv[2:]
    failed = False
    for elf in elves:
        edges, indirect = graph(objdump, elf)
        core = [f for f in edges if "spatium::" in f]
        cycles = [
            c for c in sccs(edges)
            if any("spatium::" in f for f in c) and (len(c) > 1 or c[0] in edges.get(c[0], ()))
        ]
        ind = {f: n for f, n in indirect.items() if "spatium::" in f}
        print(f"{elf}: {len(edges)} functions, {len(core)} of spatium, "
              f"{sum(len(e) for e in edges.values())} direct call edges")
        for c in cycles:
            failed = True
            print("  RECURSION: " + " -> ".join(sorted(c)))
        for f, n in ind.items():
            failed = True
            print(f"  INDIRECT CALL ({n}) in {f}")
        if not cycles and not ind:
            print("  no recursion and no indirect calls in spatium functions")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
