#!/usr/bin/env python3
"""check-layout.py - the shape of the C tree, checked (issue 19).

    check-layout.py [--root DIR] [BUILD]

DIR is the tree to check (default: this repository); BUILD the folder make
built, relative to DIR unless absolute (default build).

1. The public boundary: cmd/ includes only its own headers and those under
   include/; a header under include/ includes nothing private.
2. Modules: lib/ holds folders only, each with a README.md whose line
   "May call: A, B" names the modules whose functions it may use (or
   "May call: nothing").  What each object file really calls is read with
   nm from BUILD/lib/MODULE/*.o and held against that line.
3. No circles: no file of lib/ or cmd/ reaches itself through the
   functions it calls (a file calling its own module's files is fine, in
   one direction); cmd/'s calls are read from BUILD/cmd/*.o.
4. One header a module: include/chute/M.h declares functions that lib/M/
   defines, and no other (include/chute/M_PART.h, a part of M's, the
   same); a header there whose name is no module's fails.
5. No dead code: every function the objects export is called from
   another file of lib/ or cmd/; one used only in its own file is
   static; one that only tests/ call (and perhaps its own file) is
   declared in its module's testing header, lib/MODULE/testing.h.  A
   use in its own file is its name there anywhere but where it is
   declared (a line starting with it or its type); static functions
   nobody calls the compiler refuses already (-Wunused-function).

Prints one line per breach and exits 1 if there is any, 2 if it cannot run.
"""
import argparse
import collections
import glob
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def cannot(why):
    print('check-layout: %s' % why, file=sys.stderr)
    sys.exit(2)


def boundary():
    bad = []
    for path in sorted(glob.glob('cmd/*.[ch]')):
        for name in INCLUDE.findall(open(path, encoding='utf-8').read()):
            if not (os.path.isfile(os.path.join('cmd', name)) or
                    os.path.isfile(os.path.join('include', name))):
                bad.append('%s: includes "%s", which is not public '
                           '(include/) nor cmd/\'s own' % (path, name))
    for path in sorted(glob.glob('include/**/*.h', recursive=True)):
        for name in INCLUDE.findall(open(path, encoding='utf-8').read()):
            if not os.path.isfile(os.path.join('include', name)):
                bad.append('%s: a public header includes "%s", which is '
                           'not public' % (path, name))
    return bad


def modules():
    """{module: set of modules it may call}, and the breaches found."""
    bad, allowed = [], {}
    loose = [p for p in glob.glob('lib/*') if not os.path.isdir(p)
             and not p.endswith('README.md')]
    bad += ['%s: lib/ holds module folders only' % p for p in sorted(loose)]
    for folder in sorted(glob.glob('lib/*/')):
        mod = os.path.basename(folder.rstrip('/'))
        readme = os.path.join(folder, 'README.md')
        if not os.path.isfile(readme):
            bad.append('%s: no README.md saying what it owns' % folder)
            continue
        m = re.search(r'^May call: (.*)$', open(readme).read(), re.M)
        if not m:
            bad.append('%s: no "May call:" line' % readme)
            continue
        names = m.group(1).strip().rstrip('.')
        allowed[mod] = set() if names == 'nothing' else {
            n.strip() for n in names.split(',')}
    return allowed, bad


def symbols(build):
    """The functions and data each object defines and uses.  A unit is
    named by its module and file under lib/ ("check/verify"), or
    "cmd/FILE" for cmd/."""
    defs, uses, funcs = {}, collections.defaultdict(set), set()
    objs = sorted(glob.glob(os.path.join(build, 'lib', '*', '*.o')))
    if not objs:
        cannot('no objects under %s/lib: run make first' % build)
    objs += sorted(glob.glob(os.path.join(build, 'cmd', '*.o')))
    # one nm for every object (a process each took most of the time): it
    # prints "OBJ:" before the symbols of each when there are several
    out = subprocess.run(['nm', '--'] + objs, capture_output=True, text=True,
                         check=True).stdout
    unit_of = {}
    for obj in objs:
        unit = os.path.relpath(obj, os.path.join(build, 'lib'))[:-2]
        unit_of[obj + ':'] = unit[3:] if unit.startswith('../cmd/') else unit
    unit = unit_of[objs[0] + ':']
    for line in out.splitlines():
        if line in unit_of:
            unit = unit_of[line]
            continue
        f = line.split()
        if len(f) == 3 and f[1] in 'TDBRC':
            defs[f[2]] = unit
            if f[1] == 'T':
                funcs.add(f[2])
        elif len(f) == 2 and f[0] == 'U':
            uses[unit].add(f[1])
    calls = collections.defaultdict(set)
    for unit, names in uses.items():
        for name in names:
            other = defs.get(name)
            if other and other != unit:
                calls[unit].add((other, name))
    return set(defs.values()) | set(uses), calls, {
        name: defs[name] for name in funcs}


def source(unit):
    """The source file of a unit."""
    return '%s.c' % (unit if unit.startswith('cmd/') else 'lib/' + unit)


def layering(units, calls, allowed):
    bad = []
    for unit in sorted(units):
        mod = unit.split('/')[0]
        if mod == 'cmd':
            continue
        for other, name in sorted(calls[unit]):
            omod = other.split('/')[0]
            if omod != mod and omod not in allowed.get(mod, set()):
                bad.append('lib/%s.c calls %s (lib/%s.c): module %s may not '
                           'call %s (lib/%s/README.md)' %
                           (unit, name, other, mod, omod, mod))
    return bad


def circles(units, calls):
    """Strongly connected components of more than one file (Tarjan)."""
    graph = {u: sorted({o for o, _ in calls[u]}) for u in units}
    index, low, stack, on, found = {}, {}, [], set(), []
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, []):
            if w not in index:
                visit(w)
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
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    bad = []
    for comp in sorted(found):
        links = ['%s -> %s (%s)' % (source(a), source(b),
                                    min(n for o, n in calls[a] if o == b))
                 for a in comp for b in comp if b in graph[a]]
        bad.append('circle: %s' % '; '.join(links))
    return bad


# Comments, strings and characters, blanked before names are counted
BLANKS = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'
                    r"'(?:\\.|[^'\\\n])*'", re.S)
# A name, not after struct/enum/union (a tag is no use of a function)
NAME = re.compile(r'\b(struct\s+|enum\s+|union\s+)?([A-Za-z_]\w*)')
# A declaration or definition: a line starting with the name or its type
DECLARED = re.compile(r'^(?:[A-Za-z_][^\n;=]*?\b)?([A-Za-z_]\w*)\s*\(',
                      re.M)


def names(paths):
    """How often each name is used in the files, and the names they
    declare (or define)."""
    count, declared = collections.Counter(), set()
    for path in paths:
        with open(path, encoding='utf-8', errors='replace') as f:
            text = BLANKS.sub(' ', f.read())
        count.update(n for tag, n in NAME.findall(text) if not tag)
        found = DECLARED.findall(text)
        count.subtract(found)
        declared.update(found)
    return count, declared


def unused(calls, funcs):
    """Functions no other file calls: dead, static in waiting, or
    test-only without their testing header."""
    callers = collections.defaultdict(set)
    for unit, pairs in calls.items():
        for _, name in pairs:
            callers[name].add(unit)
    tests = names(glob.glob('tests/**/*.[ch]', recursive=True))[0]
    testing = names(glob.glob('lib/*/testing.h'))[1]
    bad, own = [], {}
    for name, unit in sorted(funcs.items()):
        if callers[name] or name == 'main':
            continue
        path = source(unit)
        if path not in own:
            own[path] = names([path])[0] if os.path.isfile(path) else {}
        if tests[name] > 0 and name in testing:
            continue
        if tests[name] > 0:
            bad.append('%s: %s is called only by tests: declare it in '
                       'lib/%s/testing.h' % (path, name, unit.split('/')[0]))
        elif own[path][name] > 0:
            bad.append('%s: %s is used only in its own file: make it '
                       'static' % (path, name))
        else:
            bad.append('%s: %s is defined but nothing calls it' %
                       (path, name))
    return bad


# A preprocessor line, continuations included
DIRECTIVE = re.compile(r'^[ \t]*#(?:[^\n]*\\\n)*[^\n]*', re.M)


def declared_functions(path):
    """The functions a header declares: the name before the first '(' of
    each statement outside braces, but for typedefs, pointers to
    functions and functions defined there (static inline)."""
    with open(path, encoding='utf-8', errors='replace') as f:
        text = DIRECTIVE.sub(' ', BLANKS.sub(' ', f.read()))
    found, stmt, head, depth = [], [], '', 0
    for ch in text:
        if ch == '{':
            head = head or ''.join(stmt)
            depth += 1
        elif ch == '}':
            depth -= 1
            if depth == 0 and head.rstrip().endswith(')'):
                stmt = []  # a body: a definition, not a declaration
            head = '' if depth == 0 else head
        elif depth:
            continue
        elif ch != ';':
            stmt.append(ch)
        else:
            s, stmt = ''.join(stmt), []
            paren = s.find('(')
            m = re.search(r'([A-Za-z_]\w*)\s*$', s[:paren])
            if (paren < 0 or not m or re.match(r'\s*typedef\b', s) or
                    s[paren + 1:].lstrip().startswith('*') or
                    m.group(1).startswith('__')):
                continue
            found.append(m.group(1))
    return found


def public_headers(funcs, allowed):
    """Each include/chute/M.h against what lib/M/ defines."""
    bad = []
    for path in sorted(glob.glob('include/chute/*.h')):
        stem = os.path.basename(path)[:-2]
        mods = [m for m in allowed if stem == m or stem.startswith(m + '_')]
        if not mods:
            bad.append('%s: names no module of lib/: a public header is '
                       'include/chute/MODULE.h' % path)
            continue
        mod = max(mods, key=len)
        for name in declared_functions(path):
            unit = funcs.get(name)
            if unit is None:
                bad.append('%s: declares %s, which nothing defines' %
                           (path, name))
            elif unit.split('/')[0] != mod:
                bad.append('%s: declares %s, defined in %s, not in lib/%s/' %
                           (path, name, source(unit), mod))
    return bad


def main():
    ap = argparse.ArgumentParser(description='The shape of the C tree.')
    ap.add_argument('--root', default=os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), help='the tree (default: the repo)')
    ap.add_argument('build', nargs='?', default='build',
                    help='the folder make built, relative to the root')
    args = ap.parse_args()
    build = args.build
    try:
        os.chdir(args.root)
    except OSError as e:
        cannot('%s: %s' % (args.root, e.strerror))
    allowed, bad = modules()
    bad += boundary()
    units, calls, funcs = symbols(build)
    bad += layering(units, calls, allowed)
    bad += circles(units, calls)
    bad += public_headers(funcs, allowed)
    bad += unused(calls, funcs)
    for line in bad:
        print(line)
    if bad:
        print('check-layout: %d problem%s' % (len(bad), 's'[len(bad) == 1:]))
        return 1
    ncmd = sum(u.startswith('cmd/') for u in units)
    nheaders = len(glob.glob('include/chute/*.h'))
    print('check-layout: %d files in %d modules and %d in cmd/: boundary, '
          'calls and no circles ok; %d functions, each called; %d public '
          'headers, each declaring its module\'s own' %
          (len(units) - ncmd, len(allowed), ncmd, len(funcs), nheaders))
    return 0


if __name__ == '__main__':
    sys.exit(main())
