#!/usr/bin/python3
"""check_test_helpers.py: one test library, not a copy per test file.

Usage: check_test_helpers.py TESTS-DIR [--list]

Every Python file under TESTS-DIR (tests/lib, the shared library itself,
aside) is read for its top-level functions and classes, less what every
test has of its own (main, setUpModule, the unittest.TestCase classes).
Prints each name defined in more than one file, and two counts: every
name repeated, and the copies among them (a repeated name is not a copy
when each of its definitions only specializes tests/lib: a class derived
from one of its classes, such as a test's Emu with its own tables, or a
function of at most 3 statements that calls it, such as a client() with
the test's own timeout).  Fails when a file defines one of the SHARED
helpers, which tests/lib provides, or an Emu or Proxy class of its own
rather than one derived from tests/lib's: a test that needs one imports
it, and a change in how ports are picked, the Thrift modules loaded or
the programs started and stopped is then made once.
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
    'read_port_file',
    # certificates
    'openssl',
}

# Classes that start hbase-emu or the proxy: derived from tests/lib's.
PROGRAMS = {'Emu', 'Proxy'}

# What each test file has of its own by nature.
OWN = {'main', 'setUpModule', 'tearDownModule', 'load_tests'}

SKIP_DIRS = {'lib', '__pycache__', 'node_modules'}
LIB_MODULES = {'hsptest', 'krb5lib'}


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


def lib_names(tree):
    """The names a file has from tests/lib: hsptest (or krb5lib) itself
    and what it imports from them."""
    names = set()
    for n in tree.body:
        if isinstance(n, ast.Import):
            names |= {a.asname or a.name for a in n.names
                      if a.name in LIB_MODULES}
        elif isinstance(n, ast.ImportFrom) and n.module in LIB_MODULES:
            names |= {a.asname or a.name for a in n.names}
    return names


def uses(node, names):
    return any(isinstance(x, ast.Name) and x.id in names
               for x in ast.walk(node))


def specializes(node, lib, derived):
    """node only specializes tests/lib: a class derived from one of its
    classes, or a function of at most 3 statements that calls it."""
    if isinstance(node, ast.ClassDef):
        return any(uses(b, lib) or (isinstance(b, ast.Name)
                                    and b.id in derived)
                   for b in node.bases)
    body = [b for b in node.body if not (isinstance(b, ast.Expr) and
                                         isinstance(b.value, ast.Constant))]
    return len(body) <= 3 and uses(node, lib)


def top_level(path):
    """[(name, line, specializes tests/lib)] of the helpers path defines
    at top level."""
    with open(path, encoding='utf-8') as f:
        tree = ast.parse(f.read(), path)
    lib = lib_names(tree)
    cases, derived = set(), set()
    out = []
    for n in tree.body:
        if isinstance(n, ast.ClassDef) and is_test_case(n, cases):
            cases.add(n.name)
        elif isinstance(n, (ast.FunctionDef, ast.ClassDef)) \
                and n.name not in OWN:
            spec = specializes(n, lib, derived)
            if spec and isinstance(n, ast.ClassDef):
                derived.add(n.name)
            out.append((n.name, n.lineno, spec))
    return out


def main():
    root = sys.argv[1]
    defs = collections.defaultdict(list)
    bad = []
    for path in test_files(root):
        rel = os.path.relpath(path, root)
        for name, line, spec in top_level(path):
            where = '%s:%d' % (rel, line)
            defs[name].append((where, spec))
            if name in SHARED:
                bad.append('%s: defines %s, which tests/lib/hsptest.py '
                           'provides: import it' % (where, name))
            elif name in PROGRAMS and not spec:
                bad.append('%s: class %s starts a program by itself: '
                           'derive it from hsptest.%s' % (where, name,
                                                          name))
    repeated = {k: v for k, v in defs.items() if len(v) > 1}
    copies = {k for k, v in repeated.items() if not all(s for _, s in v)}
    for name in sorted(repeated, key=lambda k: (-len(repeated[k]), k)):
        print('%-20s %d%s: %s' % (
            name, len(repeated[name]), '' if name in copies else
            ' (each specializes tests/lib)',
            ' '.join(w for w, _ in repeated[name])))
    print('%d helper names defined in more than one test file, %d of them '
          'copies' % (len(repeated), len(copies)))
    for line in sorted(bad):
        print(line)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
