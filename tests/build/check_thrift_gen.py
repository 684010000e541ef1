#!/usr/bin/python3
"""check_thrift_gen.py: the c_glib code of one IDL carries thrift-gen.py's mends, once each.

Usage: check_thrift_gen.py THRIFT-GEN.PY STEM GENERATED-FILE...

What thrift-gen.py adds to the 0.17 generator's output decides how every
generated object is freed and how maps hash their keys, and a mend that is
missing or doubled still compiles.  So this reads the generated files and
fails, saying where, unless:
- every struct finalizer chains up to GObject's exactly once (twice frees
  each object's GObject state twice), and every finalizer a class_init
  installs was found, so none was skipped;
- every map keyed by binary (freed with thrift_string_free) hashes the
  pointer, only a string key (freed with g_free) hashes as a C string,
  and no string or number key lost its hashing by content;
- <STEM>_register_types() exists and calls every *_get_type() the IDL's
  headers declare, once each;
- running thrift-gen.py's patch again changes nothing;
- no private generation directory was left behind in the output directory.
"""
import importlib.util
import os
import re
import sys

FINALIZER = re.compile(r'^(\w+_finalize) \(GObject \*object\)\n\{\n(.*?)\n\}\n',
                       re.M | re.S)
INSTALLED = re.compile(r'->finalize = (\w+);')
CHAIN_UP = 'G_OBJECT_CLASS (g_type_class_peek (THRIFT_TYPE_STRUCT))->finalize (object);'
NEW_MAP = re.compile(r'g_hash_table_new_full \((\w+), (\w+), (\w+), (\w+)\)')
GET_TYPE = re.compile(r'^GType (\w+_get_type) \(void\);$', re.M)
CALL = re.compile(r'^  \(void\) (\w+) \(\);$', re.M)

errors = []


def fail(msg):
    errors.append(msg)


def load_generator(path):
    spec = importlib.util.spec_from_file_location('thrift_gen', path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def check_finalizers(name, text):
    found = FINALIZER.findall(text)
    if not found:
        fail('%s: no finalizers found' % name)
    for fn, body in found:
        n = body.count(CHAIN_UP)
        if n != 1:
            fail('%s: %s chains up %d times, not once' % (name, fn, n))
        elif not body.endswith('\n' + '  ' + CHAIN_UP):
            fail('%s: %s does not chain up last' % (name, fn))
    missed = set(INSTALLED.findall(text)) - {fn for fn, _ in found}
    for fn in sorted(missed):
        fail('%s: finalizer %s was not recognised, so not checked' % (name, fn))
    total = text.count(CHAIN_UP)
    if total != len(found):
        fail('%s: %d chain-up calls for %d finalizers' % (name, total, len(found)))
    return len(found)


def check_maps(name, text):
    binary = 0
    for m in NEW_MAP.finditer(text):
        hash_fn, equal_fn, key_free = m.group(1), m.group(2), m.group(3)
        line = text.count('\n', 0, m.start()) + 1
        if key_free == 'thrift_string_free':
            # a GByteArray * key: g_str_hash would read the struct as a string
            binary += 1
            if (hash_fn, equal_fn) != ('g_direct_hash', 'g_direct_equal'):
                fail('%s:%d: binary-keyed map hashed with %s' % (name, line, hash_fn))
        elif hash_fn == 'g_str_hash' and key_free != 'g_free':
            fail('%s:%d: g_str_hash on keys freed by %s' % (name, line, key_free))
        elif hash_fn == 'g_direct_hash' and key_free == 'g_free':
            # the generator keys strings and numbers by content; only
            # binary keys are meant to lose that
            fail('%s:%d: a string or number key hashed by pointer' % (name, line))
    if 'g_hash_table_new_full (g_str_hash, g_str_equal, thrift_string_free' in text:
        fail('%s: an unpatched binary-keyed map the pattern missed' % name)
    return binary


def check_register(stem, files):
    headers = sorted(n for n in files if n.endswith('.h')
                     and not n.endswith('_register.h'))
    declared = []
    for h in headers:
        declared += GET_TYPE.findall(files[h])
    src = files.get(stem + '_register.c')
    hdr = files.get(stem + '_register.h')
    if src is None or hdr is None:
        fail('%s_register.{c,h} not among the generated files' % stem)
        return 0
    if ('void %s_register_types (void);' % stem) not in hdr:
        fail('%s_register.h does not declare %s_register_types' % (stem, stem))
    head = 'void\n%s_register_types (void)\n{\n' % stem
    if head not in src:
        fail('%s_register.c does not define %s_register_types' % (stem, stem))
        return 0
    calls = CALL.findall(src.split(head, 1)[1].split('\n}\n', 1)[0])
    if sorted(calls) != sorted(declared):
        missing = sorted(set(declared) - set(calls))
        extra = sorted(c for c in set(calls) if calls.count(c) != declared.count(c))
        fail('%s_register_types: missing %s, wrong count %s'
             % (stem, missing[:5], extra[:5]))
    for h in headers:
        if ('#include "%s"' % h) not in src:
            fail('%s_register.c does not include %s' % (stem, h))
    return len(calls)


def main():
    gen_path, stem, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
    gen = load_generator(gen_path)
    files = {}
    for p in paths:
        with open(p) as f:
            files[os.path.basename(p)] = f.read()

    types = sorted(n for n in files if n.endswith('_types.c'))
    if not types:
        fail('no *_types.c among the generated files')
    finalizers = binary = 0
    for name in types:
        finalizers += check_finalizers(name, files[name])
        again, _ = gen.patch_types(files[name])
        if again != files[name]:
            fail('%s: patching it again changes it (not idempotent)' % name)
    for name in sorted(n for n in files if n.endswith('.c')):
        binary += check_maps(name, files[name])
    registered = check_register(stem, files)

    for d in {os.path.dirname(os.path.abspath(p)) for p in paths}:
        left = [n for n in os.listdir(d) if n.startswith('.thrift-gen-')]
        if left:
            fail('%s: generation directories left behind: %s' % (d, left))

    for e in errors:
        print('FAIL ' + e)
    print('%s: %d finalizers, %d binary-keyed maps, %d types registered: %s'
          % (stem, finalizers, binary, registered,
             'FAILED (%d problems)' % len(errors) if errors else 'ok'))
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
