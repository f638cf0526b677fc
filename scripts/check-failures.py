#!/usr/bin/env python3
"""How failures leave chute (issue 34, item 3), checked on the sources.

cmd/: a command's failure is a struct ch_error with its kind, reported by
cmd_fail; cmd_exit_status (cmd/out.c, a table indexed by kind) is the one
place a kind becomes an exit status.  So no cmd/ file writes
`return EXIT_...`, `return cmd_error(...)` or `status < 0 ? 0 : status`
(the issue's grep finds nothing), and the EXIT_ constants appear in no .c
file but cmd/out.c.

lib/: a message says what is wrong in the library's own terms; which
command-line flag set it is for cmd/ to say.  So no string literal in lib/
names a flag ("--seed", "use --force"); a failure about a setting names
it by key (ch_error_setting, ch_error_remedy: "seed"), which cmd_fail
turns into the option of the running command's table.  So every such key
is the long name of an option in some table of cmd/.

Usage: check-failures.py [--root DIR]; exit 0, or 1 naming each breach.
"""
import argparse
import os
import re
import sys

EXIT_MAP = 'cmd/out.c'


def strip_comments(text):
    """text with comments blanked (newlines kept) and strings kept."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return ''.join(out)


HAND_MADE = (
    (re.compile(r'<\s*0\s*\?\s*0\b'),
     'an exit status made by hand (< 0 ? 0): cmd_fail says it'),
    (re.compile(r'\breturn\s+cmd_error\s*\('),
     'return cmd_error(...): fill a struct ch_error, report it with '
     'cmd_fail'),
    (re.compile(r'\breturn\s+EXIT_[A-Z]+\b'),
     f'return EXIT_...: give the failure its kind ({EXIT_MAP} maps it)'),
)


def check_cmd(root, rel, bad):
    text = strip_comments(open(os.path.join(root, rel)).read())
    for k, line in enumerate(text.split('\n')):
        for pattern, why in HAND_MADE:
            if pattern.search(line):
                bad.append(f'{rel}:{k + 1}: {why}')
                break
        else:
            if rel.endswith('.c') and rel != EXIT_MAP and \
                    re.search(r'\bEXIT_[A-Z]+\b', line):
                bad.append(f'{rel}:{k + 1}: an exit status outside '
                           f'cmd_exit_status ({EXIT_MAP}): give the '
                           f'failure its kind')


# The long names of cmd/'s options: the rows of the tables (CMD_OPT_*
# and cmd/stream_rows.h's X) and the options every command takes.
OPTION_ROW = re.compile(r'(?:\bCMD_OPT_[A-Z0-9]+|\bX)\(\s*(?:[A-Z_0-9]+\s*,'
                        r'\s*)?(?:\'.\'|0)\s*,\s*"([a-z0-9-]+)"')


def option_names(root):
    names = set()
    for rel in sources(root, 'cmd', ('.c', '.h')):
        names.update(OPTION_ROW.findall(open(os.path.join(root, rel))
                                        .read()))
    return names


SETTING = re.compile(r'\bch_error_(?:setting|remedy)\s*\(([^;]*)')
LITERAL = re.compile(r'"([^"\\\n]*)"')


FLAG = re.compile(r'"(?:[^"\\\n]|\\.)*?(?<![\w-])--[a-z](?:[^"\\\n]|\\.)*"')


def check_lib(root, rel, bad, options):
    text = strip_comments(open(os.path.join(root, rel)).read())
    for k, line in enumerate(text.split('\n')):
        for m in FLAG.finditer(line):
            bad.append(f'{rel}:{k + 1}: a message names a command-line '
                       f'flag: {m.group(0)} (say it in the library\'s '
                       f'terms; name the setting with ch_error_setting)')
        for call in SETTING.findall(line):
            for key in ' '.join(LITERAL.findall(call)).split():
                if key not in options:
                    bad.append(f'{rel}:{k + 1}: setting \'{key}\' is no '
                               f'option of cmd/\'s tables: cmd_fail '
                               f'could not name it')


def sources(root, top, exts):
    for d, _, files in os.walk(os.path.join(root, top)):
        for f in sorted(files):
            if f.endswith(exts):
                yield os.path.relpath(os.path.join(d, f), root)


def main():
    ap = argparse.ArgumentParser(description='How failures leave chute.')
    ap.add_argument('--root', default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), '..'))
    args = ap.parse_args()
    bad = []
    ncmd = nlib = 0
    for rel in sorted(sources(args.root, 'cmd', ('.c', '.h'))):
        check_cmd(args.root, rel, bad)
        ncmd += 1
    options = option_names(args.root)
    for rel in sorted(sources(args.root, 'lib', ('.c', '.h'))):
        check_lib(args.root, rel, bad, options)
        nlib += 1
    for line in bad:
        print(line)
    if bad:
        return 1
    print(f'failures ok: {ncmd} cmd/ files, {nlib} lib/ files')
    return 0


if __name__ == '__main__':
    sys.exit(main())
