#!/usr/bin/env python3
"""embed_page.py IN.html OUT.h NAME: the page as a C string, so the daemon
serves it from its own binary (no file to install, none to go missing)."""
import sys


def main():
    src, out, name = sys.argv[1:4]
    with open(src, 'rb') as f:
        data = f.read()
    lines = ['/* generated from %s by embed_page.py: do not edit */' %
             src.rsplit('/', 1)[-1],
             'static const char %s[] =' % name]
    for line in data.split(b'\n'):
        esc = ''.join(c if 32 <= ord(c) < 127 and c not in '"\\?'
                      else '\\%03o' % ord(c)
                      for c in (line + b'\n').decode('latin-1'))
        lines.append('    "%s"' % esc)
    lines[-1] += ';'
    with open(out, 'w') as f:
        f.write('\n'.join(lines) + '\n')


if __name__ == '__main__':
    main()
