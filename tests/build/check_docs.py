#!/usr/bin/python3
"""check_docs.py: the documents stay what they say they are.

Usage: check_docs.py SRCDIR

- README.md stays short (at most 300 lines) and keeps the quick start:
  the two commands for a fresh Debian bookworm machine, each a mode
  .ci/quickstart has;
- every link between the documents (README.md, conf/README.md,
  conf/reference.md, daemon/README.md, daemon/migrate/hbase-salt-migrate.md,
  tests/emu/README.md, tests/bench/BENCHMARKS.md) names a file that exists
  and, with #anchor, a heading of that file.
"""
import os
import re
import sys

DOCS = ['README.md', 'conf/README.md', 'conf/reference.md',
        'daemon/README.md', 'daemon/migrate/hbase-salt-migrate.md',
        'tests/emu/README.md', 'tests/bench/BENCHMARKS.md']
QUICKSTART = ['bash .ci/quickstart run', 'bash .ci/quickstart test']


def slug(heading):
    """GitHub's anchor of a heading."""
    h = re.sub(r'[^\w\- ]', '', heading.strip().lower())
    return h.replace(' ', '-')


def anchors(text):
    text = re.sub(r'```.*?```', '', text, flags=re.S)
    return {slug(h) for h in re.findall(r'^#{1,6} (.*)$', text, re.M)}


def main():
    src = sys.argv[1]
    problems = []
    readme = open(os.path.join(src, 'README.md')).read()
    n = readme.count('\n')
    if n > 300:
        problems.append('README.md: %d lines, more than 300: move the '
                        'details to the document of their readers' % n)
    script = open(os.path.join(src, '.ci', 'quickstart')).read()
    for cmd in QUICKSTART:
        if not re.search(r'^%s\b' % re.escape(cmd), readme, re.M):
            problems.append('README.md: the quick start lacks "%s"' % cmd)
        mode = cmd.split()[-1]
        if not re.search(r'^%s\)' % mode, script, re.M):
            problems.append('.ci/quickstart has no mode "%s" (README.md '
                            'says "%s")' % (mode, cmd))
    for doc in DOCS:
        path = os.path.join(src, doc)
        if not os.path.exists(path):
            problems.append('%s: missing' % doc)
            continue
        text = open(path).read()
        for m in re.finditer(r'\]\(([^)\s]+)\)', text):
            link = m.group(1)
            if re.match(r'^[a-z]+:', link):
                continue
            target, _, anchor = link.partition('#')
            tpath = os.path.normpath(os.path.join(os.path.dirname(path),
                                                  target)) if target else path
            if not os.path.exists(tpath):
                problems.append('%s: link to %s: no such file' % (doc, link))
                continue
            if anchor and tpath.endswith('.md') and \
                    anchor not in anchors(open(tpath).read()):
                problems.append('%s: link to %s: no such heading'
                                % (doc, link))
    for p in problems:
        print('FAIL ' + p)
    print('README.md %d lines; links of %d documents: %s'
          % (n, len(DOCS), 'FAILED (%d problems)' % len(problems)
             if problems else 'ok'))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
