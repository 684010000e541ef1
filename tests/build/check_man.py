#!/usr/bin/python3
"""check_man.py: a man page renders without a word from groff.

Usage: check_man.py PAGE

Runs `man --warnings -l PAGE` (groff's -ww: every warning) and fails on
any line it prints to standard error, or a failed exit.
"""
import os
import subprocess
import sys


def main():
    env = dict(os.environ, MANPAGER='cat', PAGER='cat', MANWIDTH='80',
               LC_ALL='C.UTF-8')
    p = subprocess.run(['man', '--warnings', '-l', sys.argv[1]],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, env=env)
    if p.returncode != 0 or p.stderr.strip():
        print('FAIL %s: man exit %d\n%s' % (sys.argv[1], p.returncode,
                                           p.stderr))
        return 1
    print('%s: %d lines, no warnings' % (sys.argv[1],
                                         p.stdout.count('\n')))
    return 0


if __name__ == '__main__':
    sys.exit(main())
