#!/usr/bin/python3
"""thrift-gen.py: run the Thrift compiler for one IDL and language.

For c_glib it also replaces g_str_hash/g_str_equal on maps keyed by
binary (GByteArray *) with pointer hashing: the 0.17 generator hashes the
GByteArray struct as if it were a C string, which only works by accident.
Nothing in this project looks a generated map up by content.
"""
import os
import subprocess
import sys


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
        with open(path, 'w') as f:
            f.write(text)


if __name__ == '__main__':
    main()
