#!/usr/bin/python3
"""thrift-gen.py: run the Thrift compiler for one IDL and language.

For c_glib it mends two defects of the 0.17 generator:
- maps keyed by binary (GByteArray *) hash the GByteArray struct as if it
  were a C string, which only works by accident: they get pointer hashing
  (nothing in this project looks a generated map up by content);
- struct finalizers never chain up to GObject's, so every object leaks
  what GObject frees there: each gets the missing call.
"""
import os
import re
import subprocess
import sys

FINALIZE = re.compile(r'^(\w+_finalize) \(GObject \*object\)\n\{\n(.*?)\n\}\n',
                      re.M | re.S)


def chain_up(m):
    # generated structs derive from ThriftStruct and are never subclassed
    return ('%s (GObject *object)\n{\n%s\n'
            '  G_OBJECT_CLASS (g_type_class_peek (THRIFT_TYPE_STRUCT))'
            '->finalize (object);\n}\n' % (m.group(1), m.group(2)))


def main():
    thrift, gen, idl, outdir = sys.argv[1:5]
    os.makedirs(outdir, exist_ok=True)
    subprocess.run([thrift, '--gen', gen, '-out', outdir, idl], check=True)
    if gen != 'c_glib':
        return
    for name in os.listdir(outdir):
        if not name.endswith('_types.c'):
            continue
        path = os.path.join(outdir, name)
        with open(path) as f:
            text = f.read()
        text = text.replace('g_hash_table_new_full (g_str_hash, g_str_equal',
                            'g_hash_table_new_full (g_direct_hash, g_direct_equal')
        text, n = FINALIZE.subn(chain_up, text)
        if n == 0:
            sys.exit('thrift-gen.py: no finalizers found in ' + name)
        with open(path, 'w') as f:
            f.write(text)


if __name__ == '__main__':
    main()
