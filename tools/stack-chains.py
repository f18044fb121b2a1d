#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Stack frames of a module and the deepest chain of direct calls below some of its functions
(Documentation/performance.md, "Stack frames").

    tools/stack-chains.py MODULE.ko REGEX

For each function whose (mangled) symbol matches REGEX: the bytes of the deepest chain of direct
calls below it, then each function of that chain with its own frame. A frame is the return
address, 8 bytes per `push` and the first `sub $n,%rsp` (`objdump -dr`); a call through a
pointer (`dyn`, a function pointer) is not followed, a tail `jmp` counts as its callee's chain
in the caller's place, and recursion is cut at its first repeat. Names print demangled
(`c++filt`)."""
import re
import subprocess
import sys

HDR = re.compile(r'^[0-9a-f]+ <(.+)>:$')
SUB = re.compile(r'sub\s+\$0x([0-9a-f]+),%rsp')
TARGET = re.compile(r'<([^>+]+)(\+0x[0-9a-f]+)?>')


def parse(ko):
    """Frames, direct calls and tail jumps of every function of `ko`."""
    out = subprocess.run(["objdump", "-dr", "--no-show-raw-insn", ko],
                         capture_output=True, text=True, check=True).stdout
    frames, calls, tails, subbed = {}, {}, {}, set()
    cur, pending = None, None
    for line in out.splitlines():
        m = HDR.match(line)
        if m:
            cur, pending = m.group(1), None
            frames[cur], calls[cur], tails[cur] = 8, set(), set()
            continue
        if cur is None:
            continue
        if 'R_X86_64' in line:
            # The relocation of a call or jmp to another section names its target.
            if pending:
                sym = re.sub(r'[-+]0x[0-9a-f]+$', '', line.split()[-1])
                (calls if pending == 'call' else tails)[cur].add(sym)
            pending = None
            continue
        parts = line.split('\t')
        ins = parts[1].strip() if len(parts) > 1 else ''
        op = ins.split()[0] if ins else ''
        pending = None
        if op == 'push':
            frames[cur] += 8
        elif op == 'sub' and cur not in subbed:
            m = SUB.match(ins)
            if m:
                frames[cur] += int(m.group(1), 16)
                subbed.add(cur)
        elif op in ('call', 'jmp') and '*' not in ins:
            m = TARGET.search(ins)
            if m and not m.group(2) and m.group(1) != cur:
                (calls if op == 'call' else tails)[cur].add(m.group(1))
            elif m is None or m.group(2):
                pending = op
    return frames, calls, tails


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    frames, calls, tails = parse(sys.argv[1])
    memo, active = {}, set()
    sys.setrecursionlimit(100000)

    def deepest(f):
        if f in memo:
            return memo[f]
        if f in active or f not in frames:
            return 0, []
        active.add(f)
        best = (frames[f], [f])
        for c in calls[f]:
            d, p = deepest(c)
            if frames[f] + d > best[0]:
                best = (frames[f] + d, [f] + p)
        for c in tails[f]:
            d, p = deepest(c)
            if d > best[0]:
                best = (d, p)
        active.discard(f)
        memo[f] = best
        return best

    pat = re.compile(sys.argv[2])
    picked = [f for f in frames if pat.search(f) and not f.startswith('__pfx_')]
    names = subprocess.run(['c++filt'], input='\n'.join(frames), capture_output=True,
                           text=True).stdout.splitlines()
    name = dict(zip(frames, names))
    for f in picked:
        d, path = deepest(f)
        print(f"{d:6d} {name.get(f, f)}")
        for x in path:
            print(f"    {frames[x]:6d} {name.get(x, x)}")


if __name__ == '__main__':
    main()
