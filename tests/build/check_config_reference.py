#!/usr/bin/python3
"""check_config_reference.py: the configuration reference is the parser's.

Usage: check_config_reference.py PROXY SRCDIR

conf/reference.md is the one place a configuration key is described (the
man page hbase-salt-proxy.conf(5) and the summary in conf/README.md are
generated from it).  This fails when:

- a key the parser knows is missing from the reference, or a key of the
  reference is one the parser does not know.  What the parser knows is
  asked of the binary itself: a file with an unknown key in a group gets
  "unknown key (known here: ...)", the group's list, and a key of the
  reference written into its group (with a value no key accepts) must get
  any answer but "unknown key";
- daemon/config.c takes a key (config_take*(c, g, "key", ...)) that the
  group lists do not name (the lists are what users see in the message);
- conf/hbase-salt-proxy.conf, the commented sample, sets (or shows
  commented out) a key its group does not know, or leaves a key out;
- conf/README.md's configuration summary is not what the reference says.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

PROBE = 'zz_not_a_key'


def run_check(proxy, text, workdir):
    path = os.path.join(workdir, 'probe.conf')
    with open(path, 'w') as f:
        f.write(text)
    p = subprocess.run([proxy, '-c', path, '--check-config'],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=30)
    return p.returncode, p.stdout + p.stderr


def group_header(group):
    return '[table:t]' if group == '[table:NAME]' else group


def parser_keys(proxy, groups, workdir):
    """{group: set(keys)} as the parser's "unknown key" message lists."""
    known = {}
    for g in groups:
        rc, out = run_check(proxy, '%s\n%s = 1\n' % (group_header(g), PROBE),
                            workdir)
        m = re.search(r'unknown key \(known here: ([^)]*)\)', out)
        if rc == 0 or not m:
            raise SystemExit('FAIL %s: no "unknown key (known here: ...)" '
                             'for %s: %r' % (g, PROBE, out))
        known[g] = set(k.strip() for k in m.group(1).split(','))
    return known


def main():
    proxy, src = sys.argv[1], sys.argv[2]
    sys.path.insert(0, os.path.join(src, 'conf'))
    import gen_docs

    ref_text = open(os.path.join(src, 'conf', 'reference.md')).read()
    ref = {}
    for group, names, _, _, _ in gen_docs.reference_keys(
            gen_docs.parse_blocks(ref_text)):
        ref.setdefault(group, set()).update(names)
    problems = []
    workdir = tempfile.mkdtemp(prefix='hsp-config-ref-')

    # the parser's groups: an unknown group's message does not list them,
    # so the reference's groups plus every group config.c compares with
    # or lists in its table of groups ({ "name", config_parse_name })
    config_c = open(os.path.join(src, 'daemon', 'config.c')).read()
    groups = set(ref)
    for g in re.findall(r'strcmp\((?:g|group), "([a-z0-9]+)"\) == 0',
                        config_c):
        groups.add('[%s]' % g)
    table = re.findall(r'\{ "([a-z0-9]+)", config_parse_\w+ \}', config_c)
    if not table:
        problems.append('daemon/config.c: no table of groups '
                        '({ "name", config_parse_name }) found')
    for g in table:
        groups.add('[%s]' % g)
    groups.add('[table:NAME]')
    known = parser_keys(proxy, sorted(groups), workdir)

    for g in sorted(groups):
        for k in sorted(known[g] - ref.get(g, set())):
            problems.append('%s %s: the parser knows it, conf/reference.md '
                            'does not describe it' % (g, k))
    for g in sorted(ref):
        for k in sorted(ref[g]):
            if k not in known.get(g, set()):
                problems.append('%s %s: in conf/reference.md, but the parser '
                                'does not list it' % (g, k))
            # the parser itself: the key is taken, whatever its value
            rc, out = run_check(proxy, '%s\n%s = \\x01\x01\n%s = 1\n'
                                % (group_header(g), k, PROBE), workdir)
            if rc == 0 or re.search(r'\] %s: unknown key' % re.escape(k),
                                    out):
                problems.append('%s %s: in conf/reference.md, but the parser '
                                'calls it unknown: %s' % (g, k, out.strip()))

    # what config.c takes, by name, must be in some group's list
    taken = set(re.findall(r'config_take\w*\(\s*c,\s*g,\s*"([a-z0-9_]+)"',
                           config_c))
    if len(taken) < 20:
        problems.append('daemon/config.c: found only %d config_take*(c, g, '
                        '"key") calls: update the pattern of '
                        'tests/build/check_config_reference.py' % len(taken))
    listed = set().union(*known.values())
    for k in sorted(taken - listed):
        problems.append('daemon/config.c takes "%s", which no group\'s '
                        '"known here" list names (config_known_keys)' % k)

    # the commented sample
    sample = os.path.join(src, 'conf', 'hbase-salt-proxy.conf')
    group, seen = None, {}
    for n, line in enumerate(open(sample), 1):
        m = re.match(r'^#?\[([a-z0-9]+)(:[^\]]+)?\]\s*$', line)
        if m:
            group = '[%s%s]' % (m.group(1), ':NAME' if m.group(2) else '')
            seen.setdefault(group, '')
            continue
        if group is None:
            continue
        seen[group] += line
        m = re.match(r'^(?:#|#\s{2,})?([a-z][a-z0-9_]*) = ', line)
        if m and m.group(1) not in known.get(group, ()):
            problems.append('conf/hbase-salt-proxy.conf:%d: %s %s: not a key '
                            'of the group' % (n, group, m.group(1)))
    for g in sorted(ref):
        for k in sorted(ref[g]):
            if not re.search(r'(?<![\w\]])%s(?!\w)' % re.escape(k),
                             seen.get(g, '')):
                problems.append('conf/hbase-salt-proxy.conf: %s %s: missing '
                                'from the sample' % (g, k))

    # the summary in conf/README.md
    md_path = os.path.join(src, 'conf', 'README.md')
    md = open(md_path).read()
    if gen_docs.with_summary(md, gen_docs.summary(ref_text)) != md:
        problems.append('conf/README.md: the configuration summary is not '
                        'what conf/reference.md says; run conf/gen_docs.py '
                        'write-summary conf/reference.md conf/README.md')

    shutil.rmtree(workdir, ignore_errors=True)
    n = sum(len(v) for v in ref.values())
    for p in problems:
        print('FAIL ' + p)
    print('%d keys in %d groups: %s' % (n, len(ref),
                                        'FAILED (%d problems)' % len(problems)
                                        if problems else 'ok'))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
