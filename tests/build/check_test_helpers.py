#!/usr/bin/python3
"""check_test_helpers.py: one test library, not a copy per test file.

Usage: check_test_helpers.py TESTS-DIR [--list]

Every Python file under TESTS-DIR (tests/lib, the shared library itself,
aside) is read for its top-level functions and classes, less what every
test has of its own (main, setUpModule, the unittest.TestCase classes).
Prints each name defined in more than one file, and the count of them:
a name repeated is a helper copied rather than shared, or a clash of
names to look at.  Fails when a file defines one of the SHARED helpers,
which tests/lib provides: a test that needs one imports it (a change in
how ports are picked or the Thrift modules are loaded is then made once).
"""
import ast
import collections
import os
import sys

# Helpers tests/lib/hsptest.py provides; a test defines none of them.
SHARED = {
    # ports and waiting
    'free_port', 'free_ports', 'wait_for', 'can_connect', 'wait_port',
    'read_port', 'wait_port_file',
    # the generated Thrift modules
    'load_thrift', 'load_modules', 'import_thrift', 'Thrift',
    'make_protocol',
    # protobuf Filters
    'pb_varint', 'pb_field', 'pb_filter', 'pb_compare', 'pb_binary',
    # processes
    'start_backend', 'EmuBackend', 'RealBackend', 'Daemon',
}

# What each test file has of its own by nature.
OWN = {'main', 'setUpModule', 'tearDownModule', 'load_tests'}

SKIP_DIRS = {'lib', '__pycache__', 'node_modules'}


def test_files(root):
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS
                         and not (rel == '.' and x == 'lib'))
        for f in sorted(files):
            if f.endswith('.py'):
                yield os.path.join(d, f)


def is_test_case(node, cases):
    for b in node.bases:
        name = b.attr if isinstance(b, ast.Attribute) else getattr(
            b, 'id', '')
        if name.endswith('TestCase') or name in cases:
            return True
    return False


def top_level(path):
    """[(name, line)] of the helpers path defines at top level."""
    with open(path, encoding='utf-8') as f:
        tree = ast.parse(f.read(), path)
    cases = set()
    out = []
    for n in tree.body:
        if isinstance(n, ast.ClassDef) and is_test_case(n, cases):
            cases.add(n.name)
        elif isinstance(n, (ast.FunctionDef, ast.ClassDef)) \
                and n.name not in OWN:
            out.append((n.name, n.lineno))
    return out


def main():
    root = sys.argv[1]
    defs = collections.defaultdict(list)
    for path in test_files(root):
        for name, line in top_level(path):
            defs[name].append('%s:%d' % (os.path.relpath(path, root), line))
    repeated = {k: v for k, v in defs.items() if len(v) > 1}
    for name in sorted(repeated, key=lambda k: (-len(repeated[k]), k)):
        print('%-20s %d: %s' % (name, len(repeated[name]),
                                ' '.join(repeated[name])))
    print('%d helper names defined in more than one test file'
          % len(repeated))
    bad = sorted((where, name) for name in SHARED & set(defs)
                 for where in defs[name])
    for where, name in bad:
        print('%s: defines %s, which tests/lib/hsptest.py provides: '
              'import it' % (where, name))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
